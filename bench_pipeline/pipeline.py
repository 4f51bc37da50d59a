"""The one composition of the stages: what the Dagster assets, `bench-pipeline process` and the
tests all run.

read_run (1) -> derive attempts in chunks (2) -> task groups (3) and the aggregates (4), in
two halves -> with a baseline, the paired comparison (``comparison``) -> the output files (5)
-> Langfuse publication (6, ``publish``).
The Dagster assets run these per partition in ``assets.partition_work``.

``run_stages`` makes the per-attempt share of the output files (attempts.jsonl lines,
report.html rows) right where each chunk of attempts is derived, so on a large run it is
spread over worker processes with the derivation; the run-level rest is split in two
halves (what needs the task groups, what needs the attempt rows alone) computed side by
side. Without an output folder it stops after stage 4 (``run_stages(run_dir).processed``). Parallel work
forks only where forking is safe (``bulk.can_fork``); elsewhere the same work runs in this
process, with the same result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .bulk import fork_map, gc_paused
from .capability import attempt_sections, combine_sections, task_sections
from .comparison import Comparison, check_max_drop, comparison_of
from .comparison_sides import Side, side_from_processed, with_run_dir
from .data_quality import data_quality
from .derivation import derive_chunks, workers_for
from .jsonio import encode_records, write_atomic
from .metrics_files import attempt_record, metrics_document
from .outputs import BULKY_EVIDENCE, Rendered, ReportParts, write_run_outputs
from .planning import TARGETS
from .reports import (
    attempt_facts,
    duplicate_lines,
    histograms,
    join_attempt_rows,
    render_attempt_rows,
    task_facts,
    view_k,
)
from .processed import ProcessedRun
from .run_reader import RawRun, read_run
from .task_groups import group_tasks

if TYPE_CHECKING:  # the Langfuse SDK is loaded only by a publication (about 0.3 s)
    from .publication.result import PublicationResult
    from .publication.settings import LangfuseSettings


@dataclass
class RunResult:
    """A run through the stages: every stage's output and the files written."""

    processed: ProcessedRun
    written: dict[str, Path]  # {file name: path}; empty without an output folder
    comparison: dict | None = None  # comparison.json's content; None without a baseline


@gc_paused()
def run_stages(
    run_dir: Path | str,
    out_dir: Path | None = None,
    *,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    keep_evidence: bool = False,
    baseline: Side | Callable[[], Side | None] | None = None,
    max_drop: float | None = None,
    baseline_run_dir: Path | None = None,
    run_files: Sequence[dict] = (),
    comparison_inputs: dict | None = None,
    targets: tuple[float, ...] | None = None,
    not_compared: str | Callable[[], str | None] | None = None,
) -> RunResult:
    """Stages 1-5 on one run folder; raises NotARunFolderError for a folder that is not a run.

    With ``out_dir``, writes metrics.json, attempts.jsonl, summary.md and report.html there;
    without, stops after the metrics. Without ``keep_evidence`` the returned attempts lack
    BULKY_EVIDENCE once the files are written (nothing after the files needs it; publication
    does, so its callers pass ``keep_evidence=True``).

    With ``baseline`` (a processed run as a comparison side, read by the caller before any
    work: ``comparison_sides.side_from_output`` of its output folder on the command line,
    ``stored_values.stored_baseline`` of its stored stage values in the Dagster step), or a
    function that gives it (or None: no comparison) when it is needed, right after stage 4
    (the Dagster step's, which waits there for a baseline processed beside this run), the run
    is compared with that baseline after stage 4 (comparison.md of the specification,
    ``max_drop`` the gate's non-inferiority margin): ``RunResult.comparison`` holds
    comparison.json's content and, with ``out_dir``, both reports get their "Compared with
    <baseline>" section and comparison.json and comparison.md are written beside them
    (ValueError for a margin outside 0..1). ``baseline_run_dir``, the baseline's run folder, only makes
    the reports' links to its evidence folders; by default it is the folder named by the
    baseline's run id beside ``run_dir`` when there is one (the layout of a runs root).

    ``run_files``: findings about the run's files made before it was read (a run in a bucket:
    the object keys refused when it was copied, object_store.mirror), added to
    data_quality.run_files after manifest.json's and suite.json's own.

    ``comparison_inputs``: what the comparison was computed from (comparison_inputs.py),
    written as comparison.json's ``inputs``. ``targets``: the changes the comparison's
    ``planning`` plans for (planning.md; None: planning.TARGETS). ``not_compared``: why the
    run has no baseline (baselines.Baseline.not_compared), or a function that says it once
    the baseline was asked for; both reports say it when the run is not compared.
    """
    raw = read_run(run_dir)
    raw.run_files.extend(run_files)
    check_max_drop(max_drop)
    if out_dir is None:
        chunks = derive_chunks(raw, _Derived(), progress, workers)
        attempts = [a for derived, _ in chunks for a in derived]
        processed, _ = _run_level(raw, attempts, workers, None, [])
        baseline = _baseline_side(baseline, baseline_run_dir, raw.run_dir)
        compared = _compared(baseline, processed, max_drop, comparison_inputs, targets)
        return RunResult(processed, {}, compared.result if compared else None)
    chunks = derive_chunks(raw, _Render(duplicate_lines(raw.duplicate_rows), keep_evidence), progress, workers)
    # raw.rows are in file order, so the chunks' rows are in line order: the file's and the
    # report's order.
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    attempts = [a for derived, _ in chunks for a in derived]
    attempts_path = out_dir / "attempts.jsonl"
    processed, parts = _run_level(raw, attempts, workers, attempts_path, [r.attempt_lines for _, r in chunks])
    rows = join_attempt_rows([r.rows for _, r in chunks])
    baseline = _baseline_side(baseline, baseline_run_dir, raw.run_dir)
    compared = _compared(baseline, processed, max_drop, comparison_inputs, targets)
    written = write_run_outputs(out_dir, processed, workers, rows, attempts_path, parts, compared,
                                not_compared=_not_compared(compared, not_compared))
    return RunResult(processed, written, compared.result if compared else None)


def compare_stored(
    processed: ProcessedRun,
    out_dir: Path,
    baseline: Side | Callable[[], Side | None] | None,
    *,
    workers: int = 1,
    baseline_run_dir: Path | None = None,
    comparison_inputs: dict | None = None,
    targets: tuple[float, ...] | None = None,
    not_compared: str | Callable[[], str | None] | None = None,
) -> RunResult:
    """The comparison and the reports of a run already through stages 1-4 (``processed``:
    ``stored_values.stored_processed``, what its processing stored), when only its
    comparison's inputs changed (its baseline processed again, another baseline chosen):
    the run is compared with ``baseline`` as ``run_stages`` compares it, and summary.md,
    report.html, comparison.json and comparison.md are written into ``out_dir``
    (comparison.json and comparison.md removed when there is no baseline now); metrics.json
    and attempts.jsonl, which no comparison changes, are left as they are. The same
    reports as ``run_stages`` on the same inputs, byte for byte."""
    side = _baseline_side(baseline, baseline_run_dir, processed.raw.run_dir)
    compared = _compared(side, processed, None, comparison_inputs, targets)
    written = write_run_outputs(Path(out_dir), processed, workers, comparison=compared, reports_only=True,
                                not_compared=_not_compared(compared, not_compared))
    return RunResult(processed, written, compared.result if compared else None)


def _compared(baseline: Side | None, processed: ProcessedRun, max_drop: float | None,
              inputs: dict | None, targets: tuple[float, ...] | None = None) -> Comparison | None:
    """The processed run compared with ``baseline`` (None without one), comparison.json's
    ``inputs`` recorded when given."""
    if baseline is None:
        return None
    compared = comparison_of(baseline, side_from_processed(processed), max_drop, targets or TARGETS)
    if inputs is not None:
        compared.result["inputs"] = inputs
    return compared


def _not_compared(compared: Comparison | None, not_compared: str | Callable[[], str | None] | None) -> str | None:
    """Why the run is not compared, for its reports (None when it is compared)."""
    if compared is not None:
        return None
    return not_compared() if callable(not_compared) else not_compared


def _baseline_side(baseline: Side | Callable[[], Side | None] | None, run_dir: Path | None,
                   candidate_run_dir: Path) -> Side | None:
    """The baseline as a side with its run folder (``_with_run_dir``); a function giving it
    is called here."""
    if callable(baseline):
        baseline = baseline()
    return _with_run_dir(baseline, run_dir, candidate_run_dir) if baseline is not None else None


def _with_run_dir(side: Side, run_dir: Path | None, candidate_run_dir: Path) -> Side:
    """The baseline side with its run folder: the one given, else the folder named by its
    run id beside the candidate's run folder when that is a run folder, else none (the
    reports then name the baseline's evidence folders without linking them, and its model
    and code versions as unknown)."""
    if run_dir is None and side.run_id:
        sibling = Path(candidate_run_dir).parent / side.run_id
        if "/" not in side.run_id and side.run_id not in (".", "..") and (sibling / "results.jsonl").is_file():
            run_dir = sibling
    return with_run_dir(side, run_dir) if run_dir is not None else side


def publish(
    processed: ProcessedRun,
    out_dir: Path,
    settings: LangfuseSettings | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> PublicationResult:
    """Stage 6: the processed run in Langfuse (docs/langfuse.md), or its exact payloads in
    ``out_dir``'s outbox without Langfuse keys. ``processed`` needs its full evidence
    (``run_stages(..., keep_evidence=True)``). Raises PublicationError when something could
    not be delivered; calling again sends only what is missing."""
    from .publication.publisher import publish_run

    raw = processed.raw
    return publish_run(
        run_id=raw.run_id,
        metrics=processed.metrics,
        attempts=[attempt_record(a) for a in processed.attempts],
        manifest=raw.manifest or {},
        suite_def=raw.suite_def or {},
        out_dir=Path(out_dir),
        settings=settings,
        progress=progress,
    )


class _Derived:
    """A chunk's follow-up when no file is written: the attempts as derived."""

    def __call__(self, start: int, attempts: list[dict]) -> tuple[list[dict], None]:
        return attempts, None


class _Render:
    """A chunk's follow-up when files are written: its attempts.jsonl lines and report.html
    rows, made in the process that derived the chunk."""

    def __init__(self, dup_info: dict, keep_evidence: bool) -> None:
        self.dup_info, self.keep_evidence = dup_info, keep_evidence

    def __call__(self, start: int, attempts: list[dict]) -> tuple[list[dict], Rendered]:
        records = [attempt_record(a) for a in attempts]
        unsafe_lines = {a["line"] for a in attempts if a["evidence"]["findings"]["unsafe_dir"] is not None}
        rendered = Rendered(encode_records(records), render_attempt_rows(start, records, self.dup_info, unsafe_lines))
        if not self.keep_evidence:  # encoded above: the attempts themselves no longer need it
            for a in attempts:
                a["evidence"] = {k: v for k, v in a["evidence"].items() if k not in BULKY_EVIDENCE}
        return attempts, rendered


def metric_scope(raw: RawRun) -> dict:
    """The run facts the aggregates need besides the rows: k and the planned/missing counts."""
    return {
        "metrics_k": raw.metrics_k,
        "planned_attempts": raw.planned.size if raw.planned is not None else None,
        "missing_attempts": raw.missing_count,
    }


def _run_level(raw: RawRun, attempts: list[dict], workers: int, attempts_path: Path | None,
               attempt_lines: list[bytes]) -> tuple[ProcessedRun, ReportParts]:
    """Stages 3 and 4 with the reports' counts, in two halves (two processes on a large run).

    This process writes attempts.jsonl (``attempt_lines``, when ``attempts_path`` is given),
    groups the tasks and computes what needs them: the metrics' task sections, data_quality
    and the reports' per-task facts (which refer to the attempt rows, so they are made where
    the rows live). The other half needs the attempt rows alone: the metrics' attempt
    sections, the reports' attempt facts and report.html's histograms, small results that a
    forked child sends back.
    """
    def task_half() -> tuple:
        if attempts_path is not None:
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
