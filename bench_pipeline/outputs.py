"""Writing a processed run's files: metrics.json, attempts.jsonl, summary.md, report.html."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .bulk import fork_map, gc_paused
from .process import ProcessedRun, attempt_record, write_metrics_files
from .reports import report_view, write_report_html, write_summary_md


@gc_paused()
def write_run_outputs(out_dir: Path, processed: ProcessedRun, workers: int = 1) -> dict[str, Path]:
    """Every per-run output file into ``out_dir``; returns {file name: path}.

    With ``workers`` > 1, report.html (the largest, its rows in ``workers`` processes) is
    written by this process while a forked child writes metrics.json, attempts.jsonl and
    summary.md.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    metrics, raw = processed.metrics, processed.raw
    records = [attempt_record(a) for a in processed.attempts]
    view = report_view(out_dir, metrics, records, raw.manifest, raw.run_id, run_dir=raw.run_dir)

    def report_html() -> dict[str, Path]:
        return write_report_html(out_dir, view, metrics, records, workers)

    def the_rest() -> dict[str, Path]:
        return {**write_metrics_files(out_dir, metrics, processed.attempts), **write_summary_md(out_dir, view)}

    def run(_start: int, jobs: list[Callable[[], dict[str, Path]]]) -> dict[str, Path]:
        return {name: path for job in jobs for name, path in job().items()}

    parts = fork_map(run, [report_html, the_rest], workers=min(workers, 2), chunk_size=1)
    written = {name: path for part in parts for name, path in part.items()}
    order = ("metrics.json", "attempts.jsonl", "summary.md", "report.html")
    return {name: written[name] for name in order}
