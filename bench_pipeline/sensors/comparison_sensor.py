"""The sensor that keeps every comparison following its inputs (comparison_inputs.py).

Each tick it finds the runs whose comparison is behind (assets/comparisons.py: a baseline
processed again, another baseline chosen now by the rule or a pin, a baseline's folder
gone) and requests each run processed again (``process_run``: a run whose own stages are
current gets only its comparison and reports made again, from its stored values; tag
``bench/trigger=baseline_changed``), once its baseline is current. The run key names the run,
the baseline version it is to be compared with and the run's latest comparison (its storage
id), so a state is requested once while it is behind, and again if the same state comes back
later (a pin removed and added again: Dagster never launches a run key twice). When the
set of comparisons behind changes, it records an observation on ``run_comparison`` with
their number and the reasons (``comparisons_behind``, on the asset's page), so a comparison
is never shown as current while it is behind.
"""

import hashlib

import dagster as dg

from ..assets.comparisons import COMPARISON_ASSET, behind_markdown, behind_now
from ..assets.run_stages import PARTITIONS_PER_RUN, REQUESTED_ONE_BY_ONE
from ..partitions import runs_partitions
from ..resources import PipelineSettings
from .run_folder_sensor import batched_requests

#: Seconds between ticks: each reads every run's manifest (the baselines' index).
MINIMUM_INTERVAL_SECONDS = 10


def evaluate_comparisons(instance: dg.DagsterInstance, settings: PipelineSettings, cursor: str | None,
                         batch_size: int = PARTITIONS_PER_RUN) -> dg.SensorResult:
    """One tick's decisions (see the module doc); the cursor is a digest of the comparisons
    behind at the last observation."""
    # each run's latest comparison, read before the comparisons behind are: one recorded in
    # between (a run of an earlier tick finishing) is then either seen by behind_now (not
    # behind) or not named in the key either (the key of the earlier tick's request, which
    # Dagster does not launch twice); read after, it made a new key for a state already requested
    partitions = set(instance.get_dynamic_partitions(runs_partitions.name))
    compared_at = instance.get_latest_storage_id_by_partition(
        COMPARISON_ASSET, dg.DagsterEventType.ASSET_MATERIALIZATION, partitions) if partitions else {}
    behind = behind_now(instance, settings)
    digest = hashlib.sha1("|".join(b.key for b in behind).encode()).hexdigest()[:16]
    keys = {b.run_id: f"{b.key}#{compared_at.get(b.run_id, 0)}" for b in behind}
    requests = [dg.RunRequest(partition_key=b.run_id, run_key=f"compare:{keys[b.run_id]}",
                              tags={"bench/trigger": "baseline_changed"}) for b in behind]
    if len(requests) > min(batch_size, REQUESTED_ONE_BY_ONE):
        requests = batched_requests(requests, instance.get_dynamic_partitions(runs_partitions.name), keys, batch_size)
    events = []
    if digest != (cursor or ""):
        events.append(dg.AssetObservation(asset_key=COMPARISON_ASSET, metadata={
            "comparisons_behind": len(behind),
            "behind": dg.MetadataValue.md(behind_markdown(behind)),
        }))
    return dg.SensorResult(
        run_requests=requests, asset_events=events, cursor=digest,
        skip_reason=None if requests or events else "every comparison follows its current inputs",
    )


@dg.sensor(
    name="comparison_sensor",
    job_name="process_run",
    minimum_interval_seconds=MINIMUM_INTERVAL_SECONDS,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Compares a run again (from its stored values when its own stages are current) when its "
                "comparison is behind its inputs: its baseline processed again "
                "(re-judged, backfilled), another baseline chosen (a late run, a pin), a baseline's folder gone.",
)
def comparison_sensor(context: dg.SensorEvaluationContext, settings: PipelineSettings) -> dg.SensorResult:
    result = evaluate_comparisons(context.instance, settings, context.cursor)
    if result.run_requests:
        context.log.info(f"requesting {len(result.run_requests)} run(s) whose comparison is behind")
    return result
