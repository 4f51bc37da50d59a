"""One run partition through the stages: what the per-run Dagster step does for each of its
partitions, and the worker processes it does it in.

``process_partition`` runs ``pipeline.run_stages`` and ``pipeline.publish`` (the one
composition of the stages), validates and stores each stage's frame or document where its
IO manager loads it from, evaluates the data-quality checks and returns, for each stage
that completed, the metadata of its materialization: a small picklable ``PartitionOutcome``.
In a worker process it also sends the stages before the publication as soon as they are
stored (``StagesStored``): the step records them while the run is still being published,
which over the network to Langfuse can take far longer than the stages. A broken run
folder is an outcome with a located error, never an exception, so the other partitions of
the same Dagster run go on.

``run_partitions`` runs the jobs in worker processes started by a fork server: a Dagster
run process has threads (event writers, log capture), and forking it could copy a lock
that another thread holds; the fork server is a fresh single-threaded process, and its
children may fork in turn (``bulk.fork_map``) to derive a large run on every core.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pandera.errors

from .. import object_store
from ..bulk import can_fork, default_workers, fork_map, fork_server_context, gc_paused
from ..comparison import ComparisonInputError, Side
from ..comparison_inputs import ComparisonInputs
from ..data_quality import data_quality_findings
from ..derivation import PARALLEL_MIN_ROWS, workers_for
from ..formula import FORMULA_VERSION
from ..layouts import results_file_name
from ..frames import attempts_frame, raw_results_frame, tasks_frame
from ..pipeline import ProcessedRun, publish, run_stages
from ..publication.result import PublicationError
from ..publication.settings import LangfuseSettings
from ..data_quality_checks import CheckOutcome, run_checks
from ..reports.compared import gate_statement
from ..resources.io_managers import store_partition
from ..run_reader import NotARunFolderError
from ..schemas import AttemptMetricsSchema, RawResultsSchema, TaskGroupsSchema
from ..stored_values import stored_baseline

#: The per-run stage assets, in stage order (each depends on the one before).
STAGES = ("raw_results", "attempt_metrics", "task_groups", "capability_aggregates", "run_comparison", "reports",
          "langfuse_publication")

#: The pandera model each stored frame is validated with (frames.py).
FRAME_SCHEMAS = {"raw_results": RawResultsSchema, "attempt_metrics": AttemptMetricsSchema,
                 "task_groups": TaskGroupsSchema}

#: The headline rates of metrics.json capability, charted per run in the Dagster UI.
HEADLINE_RATES = ("pass_at_1", "pass_at_k", "pass_pow_k", "attempt_success_rate")

#: capability_aggregates' groups of metadata entries, in the order a person reads them; the
#: rank of each (1 to 6) starts its labels (``headline_label``).
HEADLINE_GROUPS = (*HEADLINE_RATES, "coverage", "data_quality_findings")

#: Decimals of the rates and bounds in metadata (metrics.json keeps full precision).
METADATA_DIGITS = 4


@dataclass(frozen=True)
class PartitionJob:
    """Everything a worker needs to process one run partition (plain, picklable values)."""

    key: str
    run_dir: str
    out_dir: str
    storage_base: str
    langfuse: LangfuseSettings
    fingerprint: str | None
    workers: int = 1
    baseline: str | None = None  # the baseline's run id (baselines.py), None: no comparison
    baseline_reason: str = "no baseline"
    after: str | None = None  # a partition of the same step whose values are stored first (the baseline)
    # Roots in a bucket (assets/bucket_io.py): run_dir is then the run's local copy, out_dir a
    # local staging folder the step uploads from.
    baseline_run_dir: str | None = None  # the baseline's run folder (its local copy), for links
    run_files: tuple = ()  # data_quality run_files findings of the copy (refused object keys)
    source_error: str | None = None  # the run's objects could not be read: the partition fails
    #: what the comparison is computed from (comparison.json ``inputs``, run_comparison's tags)
    comparison_inputs: ComparisonInputs | None = None


@dataclass
class PartitionOutcome:
    """One partition's result: the metadata of each stage that completed (in stage order),
    the check outcomes, and where and why it stopped when it did."""

    key: str
    fingerprint: str | None
    materialized: dict[str, dict[str, Any]] = field(default_factory=dict)
    checks: list[CheckOutcome] = field(default_factory=list)
    failed_stage: str | None = None
    error: str | None = None
    seconds: float = 0.0
    attempts: int = 0
    #: run_comparison's data version: the inputs it was computed from (ComparisonInputs.version)
    comparison_version: str | None = None
    #: the run's data-quality findings (``data_quality_findings`` of its metrics.json), once derived
    findings: int | None = None


@dataclass
class StagesStored:
    """Sent while a partition is being published: its stages before the publication are
    stored (``outcome.materialized`` holds them, up to the first that failed, and
    ``outcome.checks`` the check outcomes), so that the step records them without waiting
    for the publication. The partition's final PartitionOutcome repeats them."""

    outcome: PartitionOutcome


@gc_paused()
def process_partition(job: PartitionJob, log: Callable[[str], None],
                      outputs_ready: Callable[[], None] | None = None,
                      stages_stored: Callable[[StagesStored], None] | None = None,
                      baseline_stored: Callable[[str], None] | None = None) -> PartitionOutcome:
    """Stages 1-6 for one run partition; never raises for a broken run (see module doc).

    The baseline's stored values are read when the comparison needs them, after stage 4;
    with ``job.after`` (the baseline is a partition of this step, processed beside this
    one), ``baseline_stored(job.after)`` first waits until that partition's values are
    stored. After ``run_stages``, the stage frames are validated and stored while the run is
    published (two processes for a large run, as ``pipeline.run_stages`` splits its own
    work; one after the other otherwise, storing first). ``stages_stored`` is called as soon
    as they are stored, from whichever process stored them. The collector stays paused
    throughout, as in the command line (bulk.gc_paused).
    """
    started = time.monotonic()
    outcome = PartitionOutcome(job.key, job.fingerprint)
    progress = _every_tenth(lambda done, total: log(f"{job.key}: attempts derived: {done}/{total}"))
    baseline_reason = job.baseline_reason
    inputs = job.comparison_inputs
    if job.source_error is not None:  # the run's objects could not be fetched (bucket_io)
        outcome.failed_stage, outcome.error = STAGES[0], job.source_error
        outcome.seconds = time.monotonic() - started
        return outcome

    def baseline() -> Side | None:
        """The baseline's stored values, as its own processing stored them (None: no comparison)."""
        nonlocal baseline_reason, inputs
        if job.after is not None and baseline_stored is not None:
            baseline_stored(job.after)
        try:
            return stored_baseline(job.storage_base, job.baseline)
        except ComparisonInputError as exc:  # they cannot be read: no comparison
            baseline_reason = f"no baseline: the stored values of baseline {job.baseline!r} cannot be read ({exc})"
            if inputs is not None:
                inputs = replace(inputs, baseline=None, baseline_version=None, baseline_choice=baseline_reason)
            return None

    try:
        baseline_run_dir = Path(job.baseline_run_dir) if job.baseline_run_dir else None
        result = run_stages(job.run_dir, Path(job.out_dir), workers=job.workers, keep_evidence=True,
                            progress=progress, baseline=baseline if job.baseline else None,
                            baseline_run_dir=baseline_run_dir, run_files=job.run_files,
                            comparison_inputs=inputs.record() if inputs is not None else None)
    except Exception as exc:  # noqa: BLE001 - one broken run must not stop the others
        outcome.failed_stage, outcome.error = STAGES[0], _failure(job, STAGES[0], exc)
        outcome.seconds = time.monotonic() - started
        return outcome
    if outputs_ready is not None:  # metrics.json and attempts.jsonl are written (a bucket's are
        outputs_ready()             # uploaded while the frames are stored)
    processed = result.processed
    outcome.attempts = len(processed.attempts)
    if inputs is not None:
        outcome.comparison_version = inputs.version()
    outcome.checks = run_checks(processed.raw, processed.attempts, processed.metrics["data_quality"])
    outcome.findings = data_quality_findings(processed.metrics)

    def stored() -> tuple[dict[str, dict], str | None, str | None]:
        materialized, failed_stage, error = _store_stages(job, processed, result.written, result.comparison,
                                                          baseline_reason)
        if stages_stored is not None:
            stages_stored(StagesStored(PartitionOutcome(job.key, job.fingerprint, materialized, outcome.checks,
                                                        failed_stage, error, attempts=outcome.attempts,
                                                        comparison_version=outcome.comparison_version)))
        return materialized, failed_stage, error

    def published() -> tuple[dict | None, str | None]:
        done_word = "published" if job.langfuse.configured else "written to the outbox (Langfuse not configured)"
        try:
            with _publication_warnings(lambda text: log(f"{job.key}: {text}")):
                return publication_metadata(publish(processed, Path(job.out_dir), job.langfuse, _every_tenth(
                    lambda done, total: log(f"{job.key}: langfuse: {done}/{total} attempts {done_word}")))), None
        except Exception as exc:  # noqa: BLE001
            return None, _failure(job, STAGES[-1], exc)

    # Side by side, this process publishes (its progress lines are this process's) and a
    # forked child stores; one after the other, the stages are stored first.
    side_by_side = min(2, workers_for(len(processed.attempts), job.workers))
    order = [published, stored] if side_by_side > 1 and can_fork() else [stored, published]
    results = dict(zip(order, fork_map(lambda _start, jobs: jobs[0](), order, workers=side_by_side, chunk_size=1)))
    (publication, publication_error), (materialized, failed_stage, error) = results[published], results[stored]
    outcome.materialized = materialized
    if failed_stage is None and publication_error is not None:
        failed_stage, error = STAGES[-1], publication_error
    outcome.failed_stage, outcome.error = failed_stage, error
    outcome.seconds = time.monotonic() - started
    if failed_stage is None:
        outcome.materialized[STAGES[-1]] = {**publication, "run_seconds": round(outcome.seconds, 3)}
    return outcome


@dataclass(frozen=True)
class _Computed:
    """A partition's run through ``run_stages``: what its stages store and show."""

    job: PartitionJob
    processed: ProcessedRun
    written: dict[str, Path]
    comparison: dict | None
    baseline_reason: str


def _store_stages(job: PartitionJob, processed: ProcessedRun, written: dict[str, Path], comparison: dict | None,
                  baseline_reason: str) -> tuple[dict[str, dict], str | None, str | None]:
    """The stored values and materialization metadata of every stage before publication, in
    stage order, up to the first that fails: (metadata by stage, the failed stage, its error)."""
    computed = _Computed(job, processed, written, comparison, baseline_reason)
    materialized: dict[str, dict] = {}
    for stage in STAGES[:-1]:
        try:
            materialized[stage] = STORED_STAGES[stage](stage, computed)
        except Exception as exc:  # noqa: BLE001 - one broken run must not stop the others
            return materialized, stage, _failure(job, stage, exc)
    return materialized, None, None


def _raw_results(stage: str, computed: _Computed) -> dict[str, Any]:
    raw = computed.processed.raw
    frame = raw_results_frame(raw)
    store_partition(computed.job.storage_base, stage, computed.job.key, frame)
    return {
        "dagster/row_count": len(frame),
        "usable_rows": len(raw.rows),
        "bad_rows": len(raw.bad_rows),
        "duplicate_task_attempts": len(raw.duplicate_rows),
        "suite": raw.suite or "unknown",
        "metrics_k": raw.metrics_k if raw.metrics_k is not None else "unknown",
        "run_folder": dg.MetadataValue.path(object_store.location_text(raw.run_dir)),
        "preview": _preview(frame, ["line", "task_id", "attempt", "status", "bad_reason"]),
    }


def _attempt_metrics(stage: str, computed: _Computed) -> dict[str, Any]:
    attempts = computed.processed.attempts
    frame = attempts_frame(attempts)
    store_partition(computed.job.storage_base, stage, computed.job.key, frame)
    return {
        "dagster/row_count": len(frame),
        "eligible_attempts": int(frame["agent_eligible"].sum()),
        "recorded_fallback_values": sum(1 for a in attempts for v in a["provenance"].values() if v == "recorded"),
        "preview": _preview(frame, ["task_id", "attempt", "status", "success", "agent_eligible",
                                    "task_wall_ms", "total_tokens"]),
    }


def _task_groups(stage: str, computed: _Computed) -> dict[str, Any]:
    frame = tasks_frame(computed.processed.tasks)
    store_partition(computed.job.storage_base, stage, computed.job.key, frame)
    return {
        "dagster/row_count": len(frame),
        "tasks_in_E1": int(frame["in_e1"].sum()),
        "tasks_in_Ek": int(frame["in_ek"].sum()),
        "preview": _preview(frame, ["task_id", "attempts", "eligible_attempts", "passed", "in_e1", "in_ek"]),
    }


def _capability_aggregates(stage: str, computed: _Computed) -> dict[str, Any]:
    metrics, written = computed.processed.metrics, computed.written
    store_partition(computed.job.storage_base, stage, computed.job.key, metrics)
    return {
        **headline_metadata(metrics),
        "formula_version": FORMULA_VERSION,
        "metrics_json": dg.MetadataValue.path(object_store.location_text(written["metrics.json"])),
        "attempts_jsonl": dg.MetadataValue.path(object_store.location_text(written["attempts.jsonl"])),
    }


def _run_comparison(stage: str, computed: _Computed) -> dict[str, Any]:
    metadata = comparison_metadata(computed.comparison, computed.job.baseline, computed.baseline_reason,
                                   computed.written)
    inputs = computed.job.comparison_inputs
    if inputs is not None and computed.comparison is not None:  # what it was computed from
        metadata["candidate_data_version"] = inputs.candidate_version or "unknown"
        metadata["baseline_data_version"] = inputs.baseline_version or "unknown"
    return metadata


def _reports(stage: str, computed: _Computed) -> dict[str, Any]:
    written = computed.written
    summary = Path(written["summary.md"]).read_text(encoding="utf-8")
    return {
        "summary_md": dg.MetadataValue.path(object_store.location_text(written["summary.md"])),
        "report_html": dg.MetadataValue.path(object_store.location_text(written["report.html"])),
        "report_bytes": Path(written["report.html"]).stat().st_size,
        "preview": dg.MetadataValue.md(summary[:4000]),
    }


#: How each stage before the publication is stored (``store_partition``) and what its
#: materialization shows; run in STAGES order.
STORED_STAGES: dict[str, Callable[[str, _Computed], dict[str, Any]]] = {
    "raw_results": _raw_results,
    "attempt_metrics": _attempt_metrics,
    "task_groups": _task_groups,
    "capability_aggregates": _capability_aggregates,
    "run_comparison": _run_comparison,
    "reports": _reports,
}


def _failure(job: PartitionJob, stage: str, exc: Exception) -> str:
    """A located message for a partition that failed at ``stage`` (a run in a bucket is named
    by its URL, not by its local copy)."""
    run = object_store.location_text(job.run_dir)
    if isinstance(exc, NotARunFolderError):
        return str(exc).replace(str(job.run_dir), run)
    if isinstance(exc, PublicationError):
        return f"{run}: Langfuse publication failed: {exc}"
    if isinstance(exc, pandera.errors.SchemaError):
        return f"{run}: the {stage} frame breaks {FRAME_SCHEMAS[stage].__name__}: {exc}"
    ours = [f for f in traceback.extract_tb(exc.__traceback__) if "bench_pipeline" in f.filename]
    where = f" (at {Path(ours[-1].filename).name}:{ours[-1].lineno})" if ours else ""
    return (f"{run}: {stage} failed: {type(exc).__name__}: {exc}{where}\n"
            f"{''.join(traceback.format_exception(exc))}")


def headline_label(group: str, suffix: str = "") -> str:
    """A metadata label of capability_aggregates: its group's rank, the group, the suffix
    (``headline_label("pass_at_1", "ci95_lower") == "1_pass_at_1_ci95_lower"``).

    Dagster's Plots tab (1.13) charts the numeric entries in the order of their labels
    (JavaScript's default sort, by character code), not in the order they are given, so the
    rank puts pass_at_1 first there as the given order does in the metadata table; within
    a rate the suffixes sort as value, ``ci95_lower``, ``ci95_upper``, ``denominator``,
    ``successes``. Ranks are one digit: a tenth group (``10_...``) would sort first of all.
    """
    label = f"{HEADLINE_GROUPS.index(group) + 1}_{group}"
    return f"{label}_{suffix}" if suffix else label


def headline_metadata(metrics: dict) -> dict[str, Any]:
    """The numbers a user compares across runs, as numbers (the Plots tab charts them per
    partition) with the formatted text beside them, in the order a person reads them,
    pass_at_1 first (labels: ``headline_label``). Rates and bounds are rounded to
    ``METADATA_DIGITS`` decimals, as their text is; metrics.json keeps full precision. A null
    rate has no number, only its text: unknown is not zero."""
    cap, coverage = metrics["capability"], metrics["coverage"]
    digits = METADATA_DIGITS
    out: dict[str, Any] = {}
    for name in HEADLINE_RATES:
        m = cap[name]
        denominator = m.get("eligible_tasks", m.get("eligible_attempts"))
        if m["value"] is None:
            out[headline_label(name, "text")] = "n/a (no eligible denominator)"
        else:
            value, lower, upper = (round(float(x), digits) for x in (m["value"], m["ci95"]["lower"], m["ci95"]["upper"]))
            out[headline_label(name)] = value
            out[headline_label(name, "ci95_lower")] = lower
            out[headline_label(name, "ci95_upper")] = upper
            out[headline_label(name, "text")] = (f"{value:.{digits}f} [{lower:.{digits}f}, {upper:.{digits}f}] "
                                                 f"({m['successes']}/{denominator})")
        out[headline_label(name, "successes")] = int(m["successes"])
        out[headline_label(name, "denominator")] = int(denominator)
    for name in ("metrics_k", "unique_tasks", "attempts", "agent_eligible_attempts", "invalid_attempts",
                 "planned_attempts", "missing_attempts"):
        value = coverage.get(name)
        if type(value) is int:
            out[headline_label("coverage", name)] = value
    for name in ("pass_at_1", "pass_at_k", "pass_pow_k"):
        value = coverage.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[headline_label("coverage", name)] = round(float(value), digits)
    out[headline_label("data_quality_findings")] = data_quality_findings(metrics)
    return out


#: comparison.json's sections whose verdicts and deltas the run_comparison asset shows.
COMPARED_SECTIONS = ("first_attempt", "pass_at_k", "pass_pow_k", "task_success", "quality")


def comparison_metadata(comparison: dict | None, baseline: str | None, reason: str,
                        written: dict[str, Path]) -> dict[str, Any]:
    """run_comparison's materialization metadata: the baseline, the gate (pass, fail or
    inconclusive, comparison.md), its reason codes and what its result means
    (``gate_statement``: an inconclusive gate says what is missing, a pass without a margin
    names the regression size that could have gone unseen), each section's
    verdict and (as numbers, for the Plots tab) its delta and interval; without a baseline,
    why there is none (a run without a baseline is not a failure)."""
    if comparison is None:
        return {"baseline": "none", "reason": reason, "gate": "no baseline"}
    out: dict[str, Any] = {
        "baseline": comparison["baseline"]["run_id"] or baseline or "unknown",
        "reason": reason,
        "gate": comparison["gate"]["result"],
        "gate_statement": gate_statement(comparison),
        "gate_reasons": ", ".join(comparison["gate"]["reasons"]) or "none",
        "paired_tasks": comparison["tasks"]["paired"],
        "warnings": ", ".join(comparison["warnings"]) or "none",
        "regressed_tasks": len(comparison["regressions"]),
        "improved_tasks": len(comparison["improvements"]),
    }
    for name in COMPARED_SECTIONS:
        section = comparison[name]
        out[f"{name}_verdict"] = section["verdict"] or "n/a (no paired tasks)"
        out[f"{name}_n"] = section["n"]
        for key, value in (("delta", section["delta"]), ("lower", (section["ci95"] or {}).get("lower")),
                           ("upper", (section["ci95"] or {}).get("upper"))):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out[f"{name}_{key}"] = round(float(value), METADATA_DIGITS)  # comparison.json keeps every digit
    for name in ("comparison.json", "comparison.md"):
        if name in written:
            out[name.replace(".", "_")] = dg.MetadataValue.path(object_store.location_text(written[name]))
    return out


def publication_metadata(result) -> dict[str, Any]:
    """langfuse_publication's materialization metadata from a PublicationResult."""
    metadata: dict[str, Any] = {
        "status": result.status,
        "dataset": result.dataset,
        "experiment_id": result.experiment_id or "",
        "items": result.items,
        "scores": result.scores,
        "spans": result.spans,
        "already_published": result.skipped_existing,
    }
    if result.http_requests is not None:
        metadata["http_requests"] = result.http_requests
    if result.record_path is not None:
        metadata["publication_record"] = dg.MetadataValue.path(object_store.location_text(result.record_path))
    if result.outbox_path is not None:
        metadata["outbox"] = dg.MetadataValue.path(object_store.location_text(result.outbox_path))
    return metadata


def _preview(frame: pd.DataFrame, columns: list[str], rows: int = 10) -> dg.MetadataValue:
    return dg.MetadataValue.md(frame[columns].head(rows).to_markdown(index=False))


class _Forward(logging.Handler):
    def __init__(self, log: Callable[[str], None]):
        super().__init__(logging.WARNING)
        self._log = log

    def emit(self, record: logging.LogRecord) -> None:
        self._log(record.getMessage())


@contextmanager
def _publication_warnings(log: Callable[[str], None]) -> Iterator[None]:
    """The publication's warnings (logger ``bench_pipeline.publication``, e.g. duplicate
    records ignored) into the partition's log, named by its run, instead of bare lines on
    the worker's stderr."""
    logger, handler = logging.getLogger("bench_pipeline.publication"), _Forward(log)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def _every_tenth(report: Callable[[int, int], None], min_total: int = 1000) -> Callable[[int, int], None]:
    """A progress callback that reports each tenth of a large total once."""
    shown: set[int] = set()

    def progress(done: int, total: int) -> None:
        if total < min_total:
            return
        tenth = done * 10 // total
        if tenth not in shown:
            shown.add(tenth)
            report(done, total)

    return progress


# --- Worker processes ------------------------------------------------------------------

def in_worker_processes(jobs: list[PartitionJob]) -> bool:
    """Whether the jobs are worth worker processes: more than one partition, or one run
    large enough to derive on several cores. A single small run is processed in the step's
    own process (the fork server's start-up, about 1.5 s, would cost more than it saves)."""
    return len(jobs) > 1 or _results_rows(jobs[0].run_dir) >= PARALLEL_MIN_ROWS


def _results_rows(run_dir: str) -> int:
    """The results file's line count (0 when unreadable: the stage itself reports why)."""
    try:
        with open(Path(run_dir) / results_file_name(run_dir), "rb") as fh:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
    except OSError:
        return 0


def run_partitions(jobs: list[PartitionJob], log: Callable[[str], None],
                   processes: int | None = None,
                   on_ready: Callable[[str], None] | None = None) -> Iterator[PartitionOutcome | StagesStored]:
    """Each job's outcome as soon as it is done (any order). Jobs run in up to ``processes``
    (default: one per core) fresh worker processes, one partition per process, or in this
    process when ``in_worker_processes`` says they are not worth it. A job whose ``after``
    names another job of the list is processed beside it and compared once that one's stage
    values are stored (a run is compared with its baseline's stored values as this step makes
    them); here, in this process, after it. ``on_ready(key)`` is
    called in this process once a partition's metrics.json and attempts.jsonl are written
    (the step uploads outputs meant for a bucket there).

    In worker processes, a partition's ``StagesStored`` comes first, while it is still being
    published, then its PartitionOutcome; processed here, only the PartitionOutcome."""
    if not jobs:
        return
    ready = on_ready or (lambda key: None)
    if not in_worker_processes(jobs):
        for job in in_dependency_order(jobs):
            yield process_partition(job, log, lambda key=job.key: ready(key))
        return
    yield from _pooled(jobs, log, processes or default_workers(), ready)


def in_dependency_order(jobs: list[PartitionJob]) -> list[PartitionJob]:
    """``jobs`` with each one after the job its ``after`` names (when that is in the list),
    otherwise in their own order; a cycle of ``after`` links (possible only with pinned
    baselines) is broken in list order."""
    keys = {job.key for job in jobs}
    done: set[str] = set()
    ordered: list[PartitionJob] = []
    waiting = list(jobs)
    while waiting:
        ready = [job for job in waiting if job.after not in keys or job.after in done] or waiting[:1]
        for job in ready:
            ordered.append(job)
            done.add(job.key)
            waiting.remove(job)
    return ordered


_messages: Any = None  # a worker's queue of log lines for the step (set by _start_worker)
_stored: dict[str, Any] = {}  # a worker's view of the step's partitions: {key: Event set once stored}

#: The longest a worker waits for its baseline's values before comparing with what is stored
#: (a safeguard: the baseline was started first, and its event is set even when it fails; a
#: comparison made early is behind its inputs, and comparison_sensor makes it again).
BASELINE_WAIT_SECONDS = 3600


def _start_worker(messages: Any, stored: dict[str, Any]) -> None:
    global _messages, _stored
    _messages, _stored = messages, stored


def _worker_log(line: str) -> None:
    _messages.put(("log", line))


def _wait_stored(candidate: str, key: str) -> None:
    """Wait until partition ``key`` of this step (``candidate``'s baseline) has its values
    stored (or has ended)."""
    if not _stored[key].is_set():
        _worker_log(f"{candidate}: waiting for its baseline {key}'s values to be stored, to compare with them")
    if not _stored[key].wait(BASELINE_WAIT_SECONDS):
        _worker_log(f"{candidate}: baseline {key} not stored after {BASELINE_WAIT_SECONDS} s; comparing with its "
                    "values as stored now")


def _work(job: PartitionJob) -> PartitionOutcome:
    """A worker's job: one partition. Its messages to the step (log lines, outputs ready,
    stages stored) go through the queue, from this process or from the child it forks."""
    return process_partition(job, _worker_log, lambda: _messages.put(("ready", job.key)),
                             lambda early: _messages.put(("stored", early)),
                             lambda baseline: _wait_stored(job.key, baseline))


def side_by_side(jobs: list[PartitionJob]) -> list[PartitionJob]:
    """``jobs`` in dependency order, each with ``after`` kept only when it names a job before
    it (a cycle of pinned baselines is broken in list order): started in this order, every
    job a worker waits for was started before it, so none waits for ever."""
    ordered, seen = [], set()
    for job in in_dependency_order(jobs):
        ordered.append(job if job.after is None or job.after in seen else replace(job, after=None))
        seen.add(job.key)
    return ordered


def _pooled(jobs: list[PartitionJob], log: Callable[[str], None], processes: int,
            ready: Callable[[str], None]) -> Iterator[PartitionOutcome | StagesStored]:
    """Every job started at once, in ``side_by_side`` order: a run processed beside its
    baseline derives its stages at the same time and waits only to be compared."""
    context = fork_server_context()
    # A SimpleQueue writes from the calling thread: a Queue would start a feeder thread in the
    # worker, which then could no longer fork for its large run (bulk.can_fork).
    messages = context.SimpleQueue()
    stored = {job.key: context.Event() for job in jobs}
    pool = ProcessPoolExecutor(min(processes, len(jobs)), mp_context=context, initializer=_start_worker,
                               initargs=(messages, stored), max_tasks_per_child=1)
    # Even split of the cores: a worker forks for a large run only when it has cores to itself.
    per_job = max(1, processes // min(processes, len(jobs)))
    futures = {pool.submit(_work, replace(job, workers=per_job)): job for job in side_by_side(jobs)}
    try:
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            early = _drain(messages, log, ready)
            for value in early:
                stored[value.outcome.key].set()
            yield from early  # before the outcomes: a partition's are sent before it ends
            for future in done:
                job = futures[future]
                stored[job.key].set()  # ended, stored or not: a run compared with it goes on
                try:
                    yield future.result()
                except BrokenProcessPool as exc:
                    yield PartitionOutcome(job.key, job.fingerprint, failed_stage=STAGES[0],
                                           error=f"{job.run_dir}: the worker process processing it died ({exc})")
        yield from _drain(messages, log, ready)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _drain(messages: Any, log: Callable[[str], None], on_ready: Callable[[str], None]) -> list[StagesStored]:
    """Log the workers' lines and hand on the partitions whose outputs became ready; returns
    the partitions' stages stored since the last call, in the order they came."""
    stored = []
    while not messages.empty():
        kind, value = messages.get()
        if kind == "ready":
            on_ready(value)
        elif kind == "stored":
            stored.append(value)
        else:
            log(value)
    return stored
