"""The sensor that keeps the cross-run assets following the runs.

Each tick: when a per-run materialization is newer than the catalog or another asset of the
refresh (the systems' repeats, the suite pages: ``catalog_behind``) and no run is queued or
under way, it requests one ``refresh_catalog`` run, keyed by what it is behind, so a sensor
tick, a main command and a backfill of a thousand runs all end in one refresh instead of one
per partition. A run of the local instance whose process was killed, which would be waited
for for ever, is marked failed first (orphaned_runs.py). Run keys start with
``refresh-after-`` (before the refresh covered the systems and suite pages they started
with ``catalog-after-``, in another key format): an old key is never taken for a new one.
"""

import dagster as dg

from ..assets.cross_run import catalog_behind
from ..orphaned_runs import fail_orphaned_runs
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
    busy = context.instance.get_runs_count(dg.RunsFilter(statuses=IN_FLIGHT))
    if busy and fail_orphaned_runs(context.instance, context.log.warning):
        # a run a killed process left under way (local instance only) would be waited for for ever
        busy = context.instance.get_runs_count(dg.RunsFilter(statuses=IN_FLIGHT))
    if busy:
        named = context.instance.get_run_records(dg.RunsFilter(statuses=IN_FLIGHT), limit=NAMED)
        runs = ", ".join(f"{r.dagster_run.run_id} ({r.dagster_run.status.value})" for r in named)
        more = f" and {busy - len(named)} more" if busy > len(named) else ""
        return dg.SkipReason(f"new runs materialized; waiting for {busy} queued or running run(s) to finish: "
                             f"{runs}{more}")
    return dg.RunRequest(run_key=f"refresh-after-{newest}")
