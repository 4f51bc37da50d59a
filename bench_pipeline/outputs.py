"""Writing a processed run's files: metrics.json, attempts.jsonl, summary.md, report.html.

Two ways in. ``write_run_outputs`` writes the files of a run already processed (the Dagster
assets do the same stage by stage). ``process_and_write`` is what `bench-pipeline process`
runs: the per-attempt share of the files (attempts.jsonl lines, report.html rows) is made
right where each chunk of attempts is derived, so on a large run it is spread over the
worker processes with the derivation, and only the small, run-level rest is left for the end.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .bulk import fork_map, gc_paused
from . import process
from .process import (
    BackgroundWrite,
    ProcessedRun,
    assemble,
    attempt_record,
    derive_chunks,
    encode_records,
    write_metrics_files,
)
from .reports import (
    AttemptRows,
    duplicate_lines,
    join_attempt_rows,
    render_attempt_rows,
    report_view,
    write_report_html,
    write_summary_md,
)
from .run_reader import read_run

OUTPUT_FILES = ("metrics.json", "attempts.jsonl", "summary.md", "report.html")

#: Evidence only the per-attempt outputs show (report details, attempts.jsonl, Langfuse):
#: once those are made, ``process_and_write`` keeps attempts without it (on a large run,
#: worker processes then send back less).
BULKY_EVIDENCE = ("tool_calls", "final_response", "hard_assertions", "rubric_spec", "trace_observations",
                  "episode_id", "trace_id", "started_at", "finished_at")


@dataclass
class Rendered:
    """The per-attempt share of the output files for consecutive attempts, made where
    those attempts were derived."""

    attempt_lines: bytes  # attempts.jsonl lines
    rows: AttemptRows  # report.html attempt-table rows


@gc_paused()
def write_run_outputs(
    out_dir: Path, processed: ProcessedRun, workers: int = 1,
    rows: AttemptRows | None = None, attempts_file: BackgroundWrite | None = None,
) -> dict[str, Path]:
    """Every per-run output file into ``out_dir``; returns {file name: path}.

    With ``workers`` > 1 and a run that is not small, report.html (the largest) is written
    by this process while a forked child writes metrics.json and summary.md. ``rows``:
    report.html's attempt rows, already rendered; ``attempts_file``: attempts.jsonl, being
    written (both from ``process_and_write``).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    metrics, raw = processed.metrics, processed.raw
    records = processed.attempts  # attempt rows carry every attempts.jsonl field (and "observations")
    view = report_view(out_dir, metrics, records, raw.manifest, raw.run_id, run_dir=raw.run_dir)
    # attempts.jsonl, when a thread writes it, is finished before any fork (a child gets no threads).
    attempts_written = attempts_file.wait() if attempts_file is not None else None

    def report_html() -> dict[str, Path]:
        return write_report_html(out_dir, view, metrics, records, workers, rows=rows)

    def the_rest() -> dict[str, Path]:
        return {**write_metrics_files(out_dir, metrics, processed.attempts, attempts_written),
                **write_summary_md(out_dir, view)}

    def run(_start: int, jobs: list[Callable[[], dict[str, Path]]]) -> dict[str, Path]:
        return {name: path for job in jobs for name, path in job().items()}

    parallel = workers > 1 and len(records) >= process.PARALLEL_MIN_ROWS  # a small run's files take less than a fork
    parts = fork_map(run, [report_html, the_rest], workers=2 if parallel else 1, chunk_size=1)
    written = {name: path for part in parts for name, path in part.items()}
    return {name: written[name] for name in OUTPUT_FILES}


@gc_paused()
def process_and_write(
    run_dir: Path | str,
    out_dir: Path,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    keep_evidence: bool = False,
) -> tuple[ProcessedRun, dict[str, Path]]:
    """Process one run folder and write every output file: `bench-pipeline process`.

    The same stages and files as ``process_run`` + ``write_run_outputs`` (byte-identical,
    tested). Without ``keep_evidence`` the returned attempts lack BULKY_EVIDENCE, which
    nothing after the files needs (publication does: it passes ``keep_evidence=True``).
    """
    raw = read_run(run_dir)
    dup_info = duplicate_lines(raw.duplicate_rows)

    def render(start: int, attempts: list[dict]) -> tuple[list[dict], Rendered]:
        records = [attempt_record(a) for a in attempts]
        unsafe_lines = {a["line"] for a in attempts if a["evidence"]["findings"]["unsafe_dir"] is not None}
        rendered = Rendered(encode_records(records), render_attempt_rows(start, records, dup_info, unsafe_lines))
        if not keep_evidence:  # encoded above: the attempts themselves no longer need it
            for a in attempts:
                a["evidence"] = {k: v for k, v in a["evidence"].items() if k not in BULKY_EVIDENCE}
        return attempts, rendered

    chunks = derive_chunks(raw, render, progress, workers)
    # raw.rows are in file order, so the chunks' rows are in line order: the file's and the
    # report's order. attempts.jsonl is written while the run-level rest is computed.
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    attempts_file = BackgroundWrite(Path(out_dir) / "attempts.jsonl", [r.attempt_lines for _, r in chunks])
    processed = assemble(raw, [a for attempts, _ in chunks for a in attempts])
    rows = join_attempt_rows([r.rows for _, r in chunks])
    return processed, write_run_outputs(out_dir, processed, workers, rows, attempts_file)

