"""The per-run stage assets, partitioned by run folder, computed together in one step.

raw_results -> attempt_metrics -> task_groups -> capability_aggregates -> reports
-> langfuse_publication, each an asset of its own (lineage, metadata, checks, stored
values), all made by the one multi-asset ``per_run_stages``: a run's stages form a chain
over the same data, and one step per run (or per batch of runs) lets it go through
``pipeline.run_stages``, the same composition the command line runs, without re-loading
and re-validating each stage's input. Every asset carries the formula version as its code
version, so a formula change marks every run stale.

One step may cover many partitions (a backfill runs ``PARTITIONS_PER_RUN`` runs per Dagster
run, by the backfill policy): each partition gets its own materializations, metadata and
check results as soon as they are known (in worker processes, the stages before the
publication and the checks once they are stored, while the run is still being published;
the publication when it is done), and a broken run folder fails only its own partition
(its stages are not materialized, the step fails at the end naming it) while the others'
results are kept. The work itself is in ``partition_work`` (one partition) and ``partition_pool`` (the workers).
"""

import os
import warnings

import dagster as dg
from dagster_pandera import pandera_schema_to_dagster_type

from .. import object_store
from ..baselines import RunInfo, as_processed, choose_baseline, load_pins, pins_file, processed_outputs, run_index
from ..comparison_inputs import ComparisonInputs
from ..dagster_internals import DATA_VERSION_TAG, latest_tags_by_partition, provenance_tags
from ..data_quality import findings_note
from ..formula import FORMULA_VERSION
from ..partitions import runs_partitions
from ..reports.format import plural
from ..resources import LangfuseResource, PipelineSettings
from ..run_folders import scan
from ..stored_values import has_stored_values
from . import bucket_io
from .checks import CHECK_SPECS, check_evaluations
from .partition_pool import run_partitions
from .partition_work import FRAME_SCHEMAS, STAGES, PartitionJob, PartitionOutcome, StagesStored
from .stage_metadata import comparison_note

GROUP = "per_run"

#: Run partitions per Dagster run of a backfill, of `scripts/run.sh` and of a sensor's burst
#: (BENCH_PARTITIONS_PER_RUN): each Dagster run pays the start-up of a run process, the planned
#: events and a fork server once for this many run folders, and its step keeps every core busy
#: (its workers take run folder after run folder): larger ranges make a faster backfill
#: (measured in docs/benchmarks.md).
PARTITIONS_PER_RUN = int(os.environ.get("BENCH_PARTITIONS_PER_RUN", "100"))
#: Up to this many runs requested at once by a sensor get a Dagster run each (the lowest latency
#: for a few new runs, side by side in the queue); more are requested as ranges of
#: PARTITIONS_PER_RUN.
REQUESTED_ONE_BY_ONE = 20
#: The tag Dagster gives the runs of a backfill.
BACKFILL_TAG = "dagster/backfill"

def data_version(fingerprint: str) -> str:
    """The data version of a run's stages: what their values were computed from, the run
    folder's fingerprint and the formula version (an unchanged run is not processed again:
    ``up_to_date``)."""
    return f"{fingerprint}@{FORMULA_VERSION}"


_DESCRIPTIONS = {
    "raw_results": "Every non-blank results.jsonl line of the run: usable rows and located bad rows "
                   "(run-directory.md). A folder without results.jsonl fails with its path.",
    "attempt_metrics": "One row per attempt with the derived metrics of reference 3.1-3.6 and the provenance "
                       "(derived from artifacts or recorded) of every history/episode field.",
    "task_groups": "One row per observed task after de-duplication: E1/Ek membership, fixed-k outcomes, "
                   "first success and the per-task aggregate (reference 3.7).",
    "capability_aggregates": "The run's metrics.json (outputs.md): capability with Wilson bounds, coverage, "
                             "failures, diagnostics, categories, observations, distributions, cost to first "
                             "success, per-task aggregate and data quality; metrics.json and attempts.jsonl in "
                             "the run's output folder.",
    "run_comparison": "The run against its baseline, paired by task (comparison.md): verdicts per section, "
                      "the release gate, regressed and improved tasks; comparison.json and comparison.md next "
                      "to the reports. Baseline: the latest earlier processed run of the suite, or the one "
                      "pinned in baselines.json (docs/operations.md); without one, 'no baseline'.",
    "reports": "summary.md and the self-contained report.html (with the comparison when there is a "
               "baseline), next to metrics.json.",
    "langfuse_publication": "The run in Langfuse: a Dataset per suite, an Item per task/attempt, an Experiment "
                            "Run per run with the evaluation of each attempt, and benchmark scores "
                            "(docs/langfuse.md). Without Langfuse settings the exact payloads go to "
                            "langfuse_outbox.jsonl instead; a retry sends only what is missing.",
}
_KINDS = {
    "raw_results": {"python", "pandas"},
    "attempt_metrics": {"python", "pandas"},
    "task_groups": {"python", "pandas"},
    "capability_aggregates": {"python", "json"},
    "run_comparison": {"python", "json"},
    "reports": {"html", "markdown"},
    "langfuse_publication": {"langfuse"},
}

#: Where each stage's value is stored (and loaded from by later readers, the catalog
#: included); reports and publication have files and Langfuse objects instead.
_IO_MANAGERS = {
    "raw_results": "parquet_io_manager",
    "attempt_metrics": "parquet_io_manager",
    "task_groups": "parquet_io_manager",
    "capability_aggregates": "json_io_manager",
}


def _column_schema(name: str) -> dict:
    """The stored frame's pandera model as the asset's column schema: the asset page lists its
    columns, descriptions and checks (dagster-pandera)."""
    if name not in FRAME_SCHEMAS:
        return {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)  # dagster-pandera is marked beta
        dagster_type = pandera_schema_to_dagster_type(FRAME_SCHEMAS[name])
    return {"dagster/column_schema": dagster_type.metadata["schema"].schema}


def _spec(i: int, name: str) -> dg.AssetSpec:
    spec = dg.AssetSpec(
        name,
        deps=[STAGES[i - 1]] if i else [],
        description=_DESCRIPTIONS[name],
        group_name=GROUP,
        code_version=FORMULA_VERSION,
        kinds=_KINDS[name],
        metadata=_column_schema(name),
        partitions_def=runs_partitions,
        skippable=True,  # materialized per partition as each run is done (see module doc)
    )
    return spec.with_io_manager_key(_IO_MANAGERS[name]) if name in _IO_MANAGERS else spec


STAGE_SPECS = [_spec(i, name) for i, name in enumerate(STAGES)]


@dg.multi_asset(
    name="per_run_stages",
    specs=STAGE_SPECS,
    check_specs=CHECK_SPECS,
    partitions_def=runs_partitions,
    can_subset=False,
    backfill_policy=dg.BackfillPolicy.multi_run(max_partitions_per_run=PARTITIONS_PER_RUN),
)
def per_run_stages(context: dg.AssetExecutionContext, settings: PipelineSettings, langfuse: LangfuseResource):
    """Every per-run stage for each run partition of this step."""
    from ..bulk import default_workers

    # a backfill re-processes what it names: every partition it targets is materialized (the
    # backfill counts a partition with only its comparison and reports made again as failed)
    backfill = context.run.tags.get(BACKFILL_TAG) is not None
    jobs = partition_jobs(context.partition_keys, settings, langfuse.settings(), default_workers(),
                          context.instance, derive_all=backfill)
    failed: list[PartitionOutcome] = []
    delivery = bucket_io.Delivery(jobs)  # outputs meant for a bucket: uploaded as they are ready
    recorded: dict[str, int] = {}  # stages recorded from a partition's StagesStored, by partition
    i = 0
    try:
        for item in run_partitions(jobs, context.log.info, on_ready=delivery.ready):
            if isinstance(item, StagesStored):  # recorded now, while the run is being published
                early = delivery.stored(item.outcome)
                recorded[early.key] = len(early.materialized)
                yield from partition_events(early)
                continue
            i += 1
            outcome = delivery.finish(item)
            yield from partition_events(outcome, recorded.get(outcome.key))
            if outcome.error is not None:
                failed.append(outcome)
                context.log.error(f"{outcome.key}: FAILED at {outcome.failed_stage}: {outcome.error}")
            done = "comparison and reports made again from its stored values, " if outcome.compared_only else ""
            context.log.info(f"[{i}/{len(jobs)}] {outcome.key}: {'FAILED' if outcome.error else 'ok'} "
                             f"({done}{plural(outcome.attempts, 'attempt')}, {outcome.seconds:.1f}s)"
                             f"{comparison_note(outcome.materialized.get('run_comparison'))}"
                             f"{findings_note(outcome.findings)}")
    finally:
        delivery.close()
    # The checks' evaluations went out per partition above; their outputs (nothing but the
    # dependency handles Dagster gives every check) are done once for the whole step.
    for output_name in context.assets_def.check_specs_by_output_name:
        yield dg.Output(None, output_name=output_name)
    if failed:
        raise dg.Failure(
            description=f"{len(failed)} of {len(jobs)} run(s) failed: " + "; ".join(
                f"{o.key} at {o.failed_stage}: {o.error.splitlines()[0]}" for o in failed),
            metadata={"failed_runs": dg.MetadataValue.json(
                {o.key: {"stage": o.failed_stage, "error": o.error.splitlines()[0]} for o in failed})},
        )


def partition_jobs(keys: list[str], settings: PipelineSettings, target, workers: int,
                   instance: dg.DagsterInstance | None = None, derive_all: bool = False) -> list[PartitionJob]:
    """One job per partition key, each with its baseline (baselines.py) and the inputs its
    comparison records (comparison_inputs.py: the data versions of both runs' stored values,
    the baseline's from ``instance``). The runs of this step count as processed: a run whose
    baseline is among them is compared once that one's values are stored (``after``); another
    run counts when its outputs are written and, with ``instance``, its values stored
    (baselines.as_processed). Runs and outputs in a bucket are made local first
    (bucket_io.prepare). A run whose stages are current has only its comparison
    and reports made again, unless ``derive_all`` (a backfill)."""
    with object_store.shared(settings.runs_root, settings.output_root):
        return _partition_jobs(keys, settings, target, workers, instance, derive_all)


def stored_versions(instance: dg.DagsterInstance | None, keys: list[str]) -> dict[str, str]:
    """{run id: the data version of its stored stage values} for the runs of ``keys`` whose
    capability_aggregates (the values a comparison reads) were materialized."""
    if instance is None or not keys:
        return {}
    latest = latest_tags_by_partition(instance, dg.AssetKey("capability_aggregates"), [DATA_VERSION_TAG], keys)
    return {key: tags[DATA_VERSION_TAG] for key, tags in latest.items() if tags.get(DATA_VERSION_TAG)}


def _partition_jobs(keys: list[str], settings: PipelineSettings, target, workers: int,
                    instance: dg.DagsterInstance | None, derive_all: bool) -> list[PartitionJob]:
    in_step = set(keys)
    folders = scan(settings.runs_root)
    outputs = processed_outputs(settings.output_root)
    index = run_index(settings.runs_root, settings.output_root, folders=folders, outputs=outputs)
    with_outputs = {r.run_id for r in index if r.processed}  # metrics.json and attempts.jsonl written
    # the data version of each run's stored values (one query); a run whose processing failed
    # before its values were stored is no baseline
    stored = stored_versions(instance, sorted(with_outputs))
    runs = as_processed(index, stored if instance else with_outputs, in_step)
    by_id = {r.run_id: r for r in runs}
    pins = load_pins(pins_file())
    choices = {key: choose_baseline(by_id.get(key, RunInfo(key, None, None, False)), runs, pins) for key in keys}
    folder_versions = {f.run_id: data_version(f.fingerprint) for f in folders}
    fingerprints = {f.run_id: f.fingerprint for f in folders}  # a bucket's too (object_fingerprint)
    # runs whose stages are current: only their comparison and reports are made again
    current = up_to_date(instance, {k: fingerprints[k] for k in keys if fingerprints.get(k)}) \
        if instance and not derive_all else set()
    # ... and whose stored values and output files are there (a cleared storage or output folder:
    # processed in full)
    current = {k for k in current if k in with_outputs and has_stored_values(settings.storage_base, k)}
    derived = in_step - current  # the runs whose values this step stores
    jobs = []
    for key in keys:
        baseline = choices[key]
        # the baseline's version: of the values this step makes for it, else of those stored
        version = (folder_versions.get(baseline.run_id) if baseline.run_id in derived else stored.get(baseline.run_id)
                   ) if baseline.run_id else None
        inputs = ComparisonInputs(key, folder_versions.get(key), baseline.run_id, version, baseline.reason,
                                  baseline.not_compared)
        jobs.append(PartitionJob(
            key, settings.run_location(key), settings.output_location(key), settings.storage_base, target,
            fingerprints.get(key), workers, baseline=baseline.run_id, baseline_reason=baseline.reason,
            after=baseline.run_id if baseline.run_id in derived else None, comparison_inputs=inputs,
            stored_stages=key in current,
        ))
    return bucket_io.prepare(jobs, settings.runs_root, settings.output_root, folders)


def partition_events(outcome: PartitionOutcome, recorded: int | None = None):
    """The materializations (stage order) and check evaluations of one partition; with
    ``recorded``, only the materializations after the first ``recorded`` ones and no check
    evaluation (those went out with the partition's StagesStored).

    Each materialization carries the provenance tags Dagster writes for an asset's output
    (``dagster_internals.provenance_tags``: code version, data version, and the data version
    of the stage it was computed from), so the UI's staleness works as for any asset: fresh
    after processing, stale after a formula change. run_comparison's data version records its
    inputs (``ComparisonInputs.version``: the baseline and both runs' data versions).
    """
    version = data_version(outcome.fingerprint) if outcome.fingerprint is not None else None
    # run_comparison's own data version is its inputs (comparison_inputs.py): the reports'
    # input; every other stage's is the run's
    versions = {stage: outcome.comparison_version if stage == "run_comparison" and outcome.comparison_version
                else version for stage in STAGES}
    for i, (stage, metadata) in enumerate(outcome.materialized.items()):
        if recorded is not None and i < recorded:
            continue
        upstream = STAGES[i - 1] if i else None
        tags = provenance_tags(FORMULA_VERSION, versions[stage] if version is not None else None,
                               dg.AssetKey(upstream) if upstream else None, versions.get(upstream))
        yield dg.AssetMaterialization(asset_key=stage, partition=outcome.key, metadata=metadata, tags=tags)
    if recorded is None:
        yield from check_evaluations(outcome.key, outcome.checks)


def up_to_date(instance: dg.DagsterInstance, fingerprints: dict[str, str]) -> set[str]:
    """The run ids (of ``{run_id: fingerprint}``) whose last stage is materialized from a
    folder with that fingerprint and with this formula version: nothing to do for them."""
    if not fingerprints:
        return set()
    latest = latest_tags_by_partition(instance, dg.AssetKey(STAGES[-1]), [DATA_VERSION_TAG], list(fingerprints))
    return {key for key, tags in latest.items() if tags.get(DATA_VERSION_TAG) == data_version(fingerprints[key])}
