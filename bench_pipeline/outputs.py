"""Writing a processed run's files: metrics.json, attempts.jsonl, summary.md, report.html.

Two ways in. ``write_run_outputs`` writes the files of a run already processed (the Dagster
assets do the same stage by stage). ``process_and_write`` is what `bench-pipeline process`
runs: the per-attempt share of the files (attempts.jsonl lines, report.html rows) is made
right where each chunk of attempts is derived, so on a large run it is spread over the
worker processes with the derivation; the run-level rest is split in two halves (what needs
the task groups, what needs the attempt rows alone) computed side by side.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .bulk import fork_map, gc_paused
from .capability import attempt_sections, combine_sections, task_sections
from .process import (
    ProcessedRun,
    attempt_record,
    data_quality,
    derive_chunks,
    encode_records,
    metric_scope,
    metrics_document,
    write_atomic,
    workers_for,
    write_metrics_files,
)
from .reports import (
    AttemptRows,
    attempt_facts,
    duplicate_lines,
    histograms,
    join_attempt_rows,
    render_attempt_rows,
    report_view,
    task_facts,
    view_k,
    write_report_html,
    write_summary_md,
)
from .run_reader import RawRun, read_run
from .task_groups import group_tasks

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
    parts: ReportParts | None = None,
) -> dict[str, Path]:
    """Every per-run output file into ``out_dir``; returns {file name: path}.

    With ``workers`` > 1 and a run that is not small, report.html (the largest) is written
    by this process while a forked child writes metrics.json and summary.md. From
    ``process_and_write``: ``rows``, report.html's attempt rows already rendered;
    ``attempts_written``, attempts.jsonl already written; ``parts``, the reports' counts
    and charts already made.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    metrics, raw = processed.metrics, processed.raw
    records = processed.attempts  # attempt rows carry every attempts.jsonl field (and "observations")
    view = report_view(out_dir, metrics, records, raw.manifest, raw.run_id, run_dir=raw.run_dir,
                       facts=parts.facts if parts else None, per_task_facts=parts.per_task_facts if parts else None)
    charts = parts.charts if parts else None

    def report_html() -> dict[str, Path]:
        return write_report_html(out_dir, view, metrics, records, workers, rows=rows, charts=charts)

    def the_rest() -> dict[str, Path]:
        return {**write_metrics_files(out_dir, metrics, processed.attempts, attempts_written),
                **write_summary_md(out_dir, view)}

    def run(_start: int, jobs: list[Callable[[], dict[str, Path]]]) -> dict[str, Path]:
        return {name: path for job in jobs for name, path in job().items()}

    # report.html beside the rest (a small run's files take less than a fork)
    done = fork_map(run, [report_html, the_rest], workers=min(2, workers_for(len(records), workers)), chunk_size=1)
    written = {name: path for files in done for name, path in files.items()}
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
    # report's order.
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    attempts = [a for derived, _ in chunks for a in derived]
    attempts_path = out_dir / "attempts.jsonl"
    processed, parts = _run_level(raw, attempts, workers, attempts_path, [r.attempt_lines for _, r in chunks])
    rows = join_attempt_rows([r.rows for _, r in chunks])
    return processed, write_run_outputs(out_dir, processed, workers, rows, attempts_path, parts)


def _run_level(raw: RawRun, attempts: list[dict], workers: int, attempts_path: Path,
               attempt_lines: list[bytes]) -> tuple[ProcessedRun, ReportParts]:
    """Stages 3 and 4 with the reports' counts, in two halves (two processes on a large run).

    This process writes attempts.jsonl (``attempt_lines``), groups the tasks and computes
    what needs them: the metrics' task sections, data_quality and the reports' per-task
    facts (which refer to the attempt rows, so they are made where the rows live). The other
    half needs the attempt rows alone: the metrics' attempt sections, the reports' attempt
    facts and report.html's histograms, small results that a forked child sends back. The
    result equals ``assemble`` + ``build_view``'s own counting (tested).
    """
    def task_half() -> tuple:
        write_atomic(attempts_path, attempt_lines)
        tasks = group_tasks(attempts, raw.metrics_k)
        task_part = task_sections(attempts, tasks, **metric_scope(raw))
        k = view_k({"coverage": task_part["coverage"]}, raw.manifest)
        return tasks, task_part, data_quality(raw, attempts), task_facts(attempts, task_part["aggregate"]["per_task"], k)

    def attempt_half() -> tuple:
        part = attempt_sections(attempts)
        return part, attempt_facts(attempts), histograms({"efficiency": part["efficiency"]}, attempts)

    (tasks, task_part, quality, per_task_facts), (attempt_part, facts, charts) = fork_map(
        lambda _start, jobs: jobs[0](), [task_half, attempt_half],
        workers=min(2, workers_for(len(attempts), workers)), chunk_size=1)
    metrics = metrics_document(raw, combine_sections(task_part, attempt_part), quality)
    return ProcessedRun(raw, attempts, tasks, metrics), ReportParts(facts, per_task_facts, charts)

