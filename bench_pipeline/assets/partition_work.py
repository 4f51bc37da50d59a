"""One run partition through the stages: what the per-run Dagster step does for each of its
partitions (in the worker processes of partition_pool.py, or in the step's own process).

``process_partition`` runs ``pipeline.run_stages`` and ``pipeline.publish`` (the one
composition of the stages), validates and stores each stage's frame or document where its
IO manager loads it from (stage_values.py), evaluates the data-quality checks and returns,
for each stage that completed, the metadata of its materialization: a small picklable
``PartitionOutcome``. A run whose stages are current (``PartitionJob.stored_stages``) gets
only its comparison and reports made again, from its stored values (``pipeline.compare_stored``).
In a worker process it also sends the stages before the publication as soon as they are
stored (``StagesStored``): the step records them while the run is still being published,
which over the network to Langfuse can take far longer than the stages. A broken run
folder is an outcome with a located error, never an exception, so the other partitions of
the same Dagster run go on.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandera.errors

from .. import object_store
from ..bulk import can_fork, fork_map, gc_paused
from ..comparison_sides import ComparisonInputError, Side
from ..comparison_inputs import ComparisonInputs
from ..data_quality import data_quality_findings
from ..derivation import workers_for
from ..pipeline import compare_stored, publish, run_stages
from ..processed import ProcessedRun
from ..publication.result import PublicationError
from ..publication.settings import LangfuseSettings
from ..data_quality_checks import CheckOutcome, run_checks
from ..run_reader import NotARunFolderError
from ..schemas import AttemptMetricsSchema, RawResultsSchema, TaskGroupsSchema
from ..stored_values import StoredValuesError, stored_baseline, stored_processed
from .stage_metadata import publication_metadata
from .stage_values import STORED_STAGES, Computed, store_stages

#: The per-run stage assets, in stage order (each depends on the one before).
STAGES = ("raw_results", "attempt_metrics", "task_groups", "capability_aggregates", "run_comparison", "reports",
          "langfuse_publication")

#: The pandera model each stored frame is validated with (frames.py).
FRAME_SCHEMAS = {"raw_results": RawResultsSchema, "attempt_metrics": AttemptMetricsSchema,
                 "task_groups": TaskGroupsSchema}


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
    #: the run's stages and publication are current (its folder and the formula unchanged since
    #: they were stored): only its comparison and reports are made again, from its stored values
    stored_stages: bool = False


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
    #: only the comparison and the reports were made again, from the run's stored values
    compared_only: bool = False


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
                inputs = replace(inputs, baseline=None, baseline_version=None, baseline_choice=baseline_reason,
                                 not_compared=f"the stored values of its baseline {job.baseline!r} could not be read")
            return None

    baseline_run_dir = Path(job.baseline_run_dir) if job.baseline_run_dir else None
    if job.stored_stages:
        try:
            processed = stored_processed(job.storage_base, job.key, job.run_dir)
        except StoredValuesError as exc:  # e.g. the storage was cleared: processed in full
            log(f"{job.key}: processed in full, its stored values cannot be read ({exc})")
        else:
            return _compared_again(job, processed, baseline, baseline_run_dir, started,
                                   lambda: (baseline_reason, inputs), outputs_ready)
    try:
        result = run_stages(job.run_dir, Path(job.out_dir), workers=job.workers, keep_evidence=True,
                            progress=progress, baseline=baseline if job.baseline else None,
                            baseline_run_dir=baseline_run_dir, run_files=job.run_files,
                            comparison_inputs=inputs.record() if inputs is not None else None,
                            not_compared=lambda: inputs.not_compared if inputs is not None else None)
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
                                                          baseline_reason, inputs)
        if stages_stored is not None:
            stages_stored(StagesStored(PartitionOutcome(job.key, job.fingerprint, materialized, outcome.checks,
                                                        failed_stage, error, attempts=outcome.attempts,
                                                        comparison_version=outcome.comparison_version)))
        return materialized, failed_stage, error

    def published() -> tuple[dict | None, str | None]:
        done_word = "published" if job.langfuse.configured else "written to the outbox (Langfuse not configured)"
        try:
            with _publication_warnings(lambda text: log(f"{job.key}: {text}")):
                progress = _every_tenth(lambda done, total: log(f"{job.key}: langfuse: {done}/{total} attempts {done_word}"))
                progress.waiting = lambda text: log(f"{job.key}: {text}")  # a lock, rate limit or read-back wait
                return publication_metadata(publish(processed, Path(job.out_dir), job.langfuse, progress)), None
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


def _compared_again(job: PartitionJob, processed: ProcessedRun, baseline: Callable[[], Side | None],
                    baseline_run_dir: Path | None, started: float,
                    chosen: Callable[[], tuple[str, ComparisonInputs | None]],
                    outputs_ready: Callable[[], None] | None = None) -> PartitionOutcome:
    """A partition whose stages are current (``job.stored_stages``): its comparison and
    reports made again from ``processed``, its stored values (``pipeline.compare_stored``);
    only run_comparison and reports are materialized. ``chosen()``: the baseline's reason and
    the comparison's inputs once ``baseline`` was called (it says why there is none when the
    baseline's values cannot be read); ``outputs_ready()`` once the files are written."""
    outcome = PartitionOutcome(job.key, job.fingerprint, attempts=len(processed.attempts), compared_only=True,
                               findings=data_quality_findings(processed.metrics))
    inputs, stage = job.comparison_inputs, "run_comparison"
    try:
        side = baseline() if job.baseline else None
        baseline_reason, inputs = chosen()
        result = compare_stored(processed, Path(job.out_dir), side, workers=job.workers,
                                baseline_run_dir=baseline_run_dir,
                                comparison_inputs=inputs.record() if inputs is not None else None,
                                not_compared=inputs.not_compared if inputs is not None else None)
        if outputs_ready is not None:  # a bucket's are uploaded
            outputs_ready()
        computed = Computed(job.storage_base, job.key, processed, result.written, result.comparison, job.baseline,
                            baseline_reason, inputs)
        for stage in ("run_comparison", "reports"):
            outcome.materialized[stage] = STORED_STAGES[stage](stage, computed)
    except Exception as exc:  # noqa: BLE001 - one broken run must not stop the others
        outcome.failed_stage, outcome.error = stage, _failure(job, stage, exc)
    if inputs is not None:
        outcome.comparison_version = inputs.version()
    outcome.seconds = time.monotonic() - started
    if outcome.failed_stage is None:  # the partition's last materialization says it is done
        outcome.materialized["reports"]["run_seconds"] = round(outcome.seconds, 3)
    return outcome


def _store_stages(job: PartitionJob, processed: ProcessedRun, written: dict[str, Path], comparison: dict | None,
                  baseline_reason: str, inputs: ComparisonInputs | None
                  ) -> tuple[dict[str, dict], str | None, str | None]:
    """The stored values and materialization metadata of every stage before publication, in
    stage order, up to the first that fails: (metadata by stage, the failed stage, its error).
    ``inputs``: the comparison's inputs as the comparison found them (none when the
    baseline's stored values could not be read)."""
    materialized, failed_stage, exc = store_stages(Computed(job.storage_base, job.key, processed, written, comparison,
                                                            job.baseline, baseline_reason, inputs))
    return materialized, failed_stage, _failure(job, failed_stage, exc) if failed_stage is not None else None


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


class _EveryTenth:
    """A progress callback that reports each tenth of a large total once (``waiting``: where
    the publication's waits are said, state.announce_wait)."""

    def __init__(self, report: Callable[[int, int], None], min_total: int) -> None:
        self.report, self.min_total, self.shown = report, min_total, set()
        self.waiting: Callable[[str], None] | None = None

    def __call__(self, done: int, total: int) -> None:
        if total < self.min_total:
            return
        tenth = done * 10 // total
        if tenth not in self.shown:
            self.shown.add(tenth)
            self.report(done, total)


def _every_tenth(report: Callable[[int, int], None], min_total: int = 1000) -> _EveryTenth:
    """A progress callback that reports each tenth of a large total once."""
    return _EveryTenth(report, min_total)


