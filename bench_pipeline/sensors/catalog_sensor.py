"""The sensor that keeps the cross-run assets following the runs.

Each tick: when a per-run materialization is newer than the catalog or another asset of the
refresh (the systems' repeats, the suite pages: ``catalog_behind``) and no run is queued or
under way, it requests one ``refresh_catalog`` run, keyed by what it is behind, so a sensor
tick, a main command and a backfill of a thousand runs all end in one refresh instead of one
per partition. A per-run run that has recorded the reports of every run partition it covers
(``FOLLOWED_STAGE``, the last stage the refresh reads) is not waited for: what is left of it is
the Langfuse publication, which the refresh does not read, so the suite page follows a new
run's report without waiting for its publication (as the main command's early refresh does:
refresh_process.py). A run of the local instance whose process was killed, which would be waited
for for ever, is marked failed first (orphaned_runs.py). Run keys start with
``refresh-after-`` (before the refresh covered the systems and suite pages they started
with ``catalog-after-``, in another key format): an old key is never taken for a new one.
"""

import dagster as dg

from ..assets.cross_run import FOLLOWED_STAGE, catalog_behind
from ..assets.refresh_state import run_keys
from ..orphaned_runs import fail_orphaned_runs
from ..partitions import KIND_TAG, run_partition_keys
from .run_folder_sensor import MINIMUM_INTERVAL_SECONDS

IN_FLIGHT = [
    dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]
#: How many of the runs it waits for a skipped tick names (the newest first).
NAMED = 3


@dg.sensor(
    name="catalog_sensor",
    job_name="refresh_catalog",
    # on every loop of the sensor daemon, as the run folder sensor: a tick is a few indexed
    # queries and the refresh reads only what changed, so a new run's suite page follows its
    # report within seconds; a burst of runs still ends in one refresh (none while a run is
    # under way)
    minimum_interval_seconds=MINIMUM_INTERVAL_SECONDS,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Refreshes the run catalog, trends, systems' repeats and suite pages once new runs are "
                "materialized and no run is under way.",
)
def catalog_sensor(context: dg.SensorEvaluationContext):
    newest = catalog_behind(context.instance)
    if newest is None:
        return dg.SkipReason("the catalog, systems and suite pages are up to date with every materialized run")
    busy = waited_for(context.instance)
    if busy and fail_orphaned_runs(context.instance, context.log.warning):
        # a run a killed process left under way (local instance only) would be waited for for ever
        busy = waited_for(context.instance)
    if busy:
        runs = ", ".join(f"{run.run_id} ({run.status.value})" for run in busy[:NAMED])
        more = f" and {len(busy) - NAMED} more" if len(busy) > NAMED else ""
        return dg.SkipReason(f"new runs materialized; waiting for {len(busy)} queued or running run(s) to finish: "
                             f"{runs}{more}")
    return dg.RunRequest(run_key=f"refresh-after-{newest}")


def waited_for(instance: dg.DagsterInstance) -> list[dg.DagsterRun]:
    """The queued and running Dagster runs the refresh waits for (the newest first): every one
    but a per-run run (job tag ``bench/kind=per_run``) under way that has recorded the reports
    of every partition it covers."""
    waiting = []
    for record in instance.get_run_records(dg.RunsFilter(statuses=IN_FLIGHT)):
        run = record.dagster_run
        if not _reports_recorded(instance, run):
            waiting.append(run)
    return waiting


def _reports_recorded(instance: dg.DagsterInstance, run: dg.DagsterRun) -> bool:
    """Whether ``run`` is a per-run run under way that has recorded FOLLOWED_STAGE for every
    partition it covers (it records nothing more that the refresh reads)."""
    if run.tags.get(KIND_TAG) != "per_run" or run.status != dg.DagsterRunStatus.STARTED:
        return False
    keys = run_partition_keys(run.tags, lambda: run_keys(instance))
    if not keys:
        return False
    followed = dg.AssetKey(FOLLOWED_STAGE)
    records = instance.get_records_for_run(run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION).records
    return set(keys) <= {record.partition_key for record in records if record.asset_key == followed}
