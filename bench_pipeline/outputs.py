"""Writing a processed run's files: metrics.json, attempts.jsonl, summary.md, report.html."""

from __future__ import annotations

from pathlib import Path

from .process import ProcessedRun, attempt_record, write_metrics_files
from .reports import write_reports


def write_run_outputs(out_dir: Path, processed: ProcessedRun, workers: int = 1) -> dict[str, Path]:
    """Every per-run output file into ``out_dir``; returns {file name: path}.

    ``workers`` > 1 lets a large run's report rows be built in forked processes.
    """
    written = write_metrics_files(out_dir, processed.metrics, processed.attempts)
    written.update(
        write_reports(
            out_dir,
            processed.metrics,
            [attempt_record(a) for a in processed.attempts],
            processed.raw.manifest,
            processed.raw.run_id,
            run_dir=processed.raw.run_dir,
            workers=workers,
        )
    )
    return written
