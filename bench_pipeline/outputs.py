"""Stage 5, writing a processed run's files: metrics.json, attempts.jsonl, summary.md, report.html,
and with a baseline comparison.json and comparison.md.

``pipeline.run_stages`` calls ``write_run_outputs`` with the per-attempt share of the files
(attempts.jsonl, report.html's rows) and the reports' counts already made where the
attempts were derived.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .bulk import fork_map, gc_paused
from .comparison import Comparison
from .derivation import workers_for
from .jsonio import dumps, write_atomic
from .metrics_files import write_metrics_files
from .system_folders import REPEATS_FILES
from .reports import AttemptRows, report_view, write_comparison_md, write_report_html, write_summary_md

if TYPE_CHECKING:  # pipeline.py imports this module
    from .processed import ProcessedRun

OUTPUT_FILES = ("metrics.json", "attempts.jsonl", "summary.md", "report.html")
#: The OUTPUT_FILES that show the comparison (its "Compared with <baseline>" section).
COMPARED_REPORTS = ("summary.md", "report.html")
#: The files a run compared with a baseline gets besides OUTPUT_FILES.
COMPARISON_FILES = ("comparison.json", "comparison.md")

#: Evidence only the per-attempt outputs show (report details, attempts.jsonl, Langfuse):
#: once those are made, ``pipeline.run_stages`` keeps attempts without it (on a large run,
#: worker processes then send back less).
BULKY_EVIDENCE = ("tool_calls", "final_response", "hard_assertions", "rubric_spec", "trace_observations",
                  "episode_id", "trace_id", "started_at", "finished_at")


@dataclass
class Rendered:
    """The per-attempt share of the output files for consecutive attempts, made where
    those attempts were derived."""

    attempt_lines: bytes  # attempts.jsonl lines
    rows: AttemptRows  # report.html attempt-table rows


@dataclass
class ReportParts:
    """What the reports need beyond the processed run, made alongside the metrics
    (``_run_level``): reports.attempt_facts, reports.task_facts and report.html's histograms."""

    facts: dict
    per_task_facts: dict
    charts: list[dict]


@gc_paused()
def write_run_outputs(
    out_dir: Path, processed: ProcessedRun, workers: int = 1,
    rows: AttemptRows | None = None, attempts_written: Path | None = None,
    parts: ReportParts | None = None, comparison: Comparison | None = None,
    reports_only: bool = False, not_compared: str | None = None,
) -> dict[str, Path]:
    """Every per-run output file into ``out_dir``; returns {file name: path}.

    With ``comparison`` (the run compared with a baseline), both reports get their
    "Compared with <baseline>" section and comparison.json and comparison.md are written too;
    without, those of an earlier processing are removed (the run has no baseline now), and
    with ``not_compared`` both reports say why the run is not compared.

    With ``workers`` > 1 and a run that is not small, report.html (the largest) is written
    by this process while a forked child writes metrics.json and summary.md. From
    ``pipeline.run_stages``: ``rows``, report.html's attempt rows already rendered;
    ``attempts_written``, attempts.jsonl already written; ``parts``, the reports' counts
    and charts already made. With ``reports_only`` (the comparison made again from a run's
    stored values, ``pipeline.compare_stored``), metrics.json and attempts.jsonl, which no
    comparison changes, are left as they are: only COMPARED_REPORTS and the comparison's are
    written.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if comparison is None:
        for name in COMPARISON_FILES:
            (out_dir / name).unlink(missing_ok=True)
    metrics, raw = processed.metrics, processed.raw
    records = processed.attempts  # attempt rows carry every attempts.jsonl field (and "observations")
    view = report_view(out_dir, metrics, records, raw.manifest, raw.run_id, run_dir=raw.run_dir,
                       facts=parts.facts if parts else None, per_task_facts=parts.per_task_facts if parts else None,
                       comparison=comparison, not_compared=not_compared)
    charts = parts.charts if parts else None

    def report_html() -> dict[str, Path]:
        return write_report_html(out_dir, view, metrics, records, workers, rows=rows, charts=charts)

    def the_rest() -> dict[str, Path]:
        files = {} if reports_only else write_metrics_files(out_dir, metrics, processed.attempts, attempts_written)
        files.update(write_summary_md(out_dir, view))
        if comparison is not None:
            files.update(write_comparison_files(out_dir, comparison))
        return files

    def run(_start: int, jobs: list[Callable[[], dict[str, Path]]]) -> dict[str, Path]:
        return {name: path for job in jobs for name, path in job().items()}

    # report.html beside the rest (a small run's files take less than a fork)
    done = fork_map(run, [report_html, the_rest], workers=min(2, workers_for(len(records), workers)), chunk_size=1)
    written = {name: path for files in done for name, path in files.items()}
    names = COMPARED_REPORTS if reports_only else OUTPUT_FILES
    return {name: written[name] for name in (*names, *(COMPARISON_FILES if comparison else ()))}


def write_comparison_files(out_dir: Path, comparison: Comparison) -> dict[str, Path]:
    """comparison.json (``jsonio.dumps``, the one JSON writer) and comparison.md (links
    relative to ``out_dir``) into ``out_dir``; returns {file name: path}."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "comparison.json"
    write_atomic(path, dumps(comparison.result) + b"\n")
    return {"comparison.json": path, **write_comparison_md(out_dir, comparison)}


def write_repeats_files(out_dir: Path, doc: dict, runs: list, reports: dict[str, Path] | None = None,
                        notes: list[str] | tuple = ()) -> dict[str, Path]:
    """repeats.json (``jsonio.dumps``) and repeats.md (links relative to ``out_dir``) of a set
    of runs (``repeats.repeats`` and its ``RepeatRun``s); ``notes``: the runs not pooled, or
    pooled without adding anything, and why, for repeats.md; returns {file name: path}."""
    from .reports.repeated import render_repeats_md

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = (out_dir / name for name in REPEATS_FILES)
    write_atomic(json_path, dumps(doc) + b"\n")
    write_atomic(md_path, render_repeats_md(doc, runs, out_dir, reports, notes).encode())
    return {json_path.name: json_path, md_path.name: md_path}


def write_moved_files(out_dir: Path, moved_to: list[str]) -> dict[str, Path]:
    """repeats.json and repeats.md of a system folder no longer current, its runs now in the
    folders ``moved_to`` (sibling folder names; a second setup of the same agent gave each
    setup a system and a folder of its own): a pointer instead of numbers no refresh updates
    any more (docs/operations.md, "Folder names")."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = (out_dir / name for name in REPEATS_FILES)
    why = ("This system's runs are now in another folder: the same agent (suite, model and git sha) was "
           "measured with more than one setup (judge, platform), or with one again, and each system's folder "
           "names its setup only then. This folder is no longer updated.")
    write_atomic(json_path, dumps({"moved_to": moved_to, "note": why}) + b"\n")
    links = "\n".join(f"- [{name}](<../{name}/repeats.md>)" for name in moved_to)
    write_atomic(md_path, f"# Moved\n\n{why}\n\n{links}\n".encode())
    return {json_path.name: json_path, md_path.name: md_path}


def write_set_comparison_files(out_dir: Path, result: dict, single: dict | None, baseline: list,
                               candidate: list) -> dict[str, Path]:
    """comparison.json and comparison.md in the repeated form (``repeats.compare_sets``);
    ``single``: the comparison of the first run of each side, shown beside."""
    from .reports.repeated import render_set_comparison_md

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / "comparison.json", out_dir / "comparison.md"
    write_atomic(json_path, dumps(result) + b"\n")
    write_atomic(md_path, render_set_comparison_md(result, single, baseline, candidate, out_dir).encode())
    return {"comparison.json": json_path, "comparison.md": md_path}
