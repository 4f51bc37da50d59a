"""The main command's Dagster runs, executed in its own process (``execute_in_process``): the
run config and console logger they share, the first error of a failed step, and the catalog
refresh (``execute_refresh``), which the main command runs here or in a process of its own
(refresh_process.py)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .file_lock import exclusive


def _say(message: str) -> None:
    print(message, flush=True)


#: Run config of this command's Dagster runs: the plain console logger below (the instance
#: keeps every event all the same).
RUN_CONFIG = {"loggers": {"console": {}}}
#: Tags of every Dagster run this command executes: not retried by the daemon's run retries
#: (deploy/dagster.local.yaml), which cannot launch a run executed in a process of its own (it
#: has no code location to launch from: the daemon would only log that it cannot) and need not
#: (the next main command processes again every run folder whose outputs are not current).
RUN_TAGS = {"dagster/max_retries": "0"}


def plain_console():
    """A Dagster logger that prints what the steps log (``context.log``), message only, once.

    It replaces Dagster's console logger for the runs of this command, which prints every
    line in Dagster's format (timestamp, job, run id, step) on top of this command's own.
    Dagster's events (records carrying a ``dagster_event``: step started, materialization,
    step failure, ...) are not printed: the step's own lines and this command's say what
    they mean, and the instance keeps them all (the UI shows them).
    """
    import logging

    import dagster as dg

    class StepLines(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            meta = getattr(record, "dagster_meta", None) or {}
            if meta.get("dagster_event") is None:
                _say(meta.get("orig_message", record.getMessage()))

    @dg.logger(description="What the steps log, message only (bench_pipeline.main).")
    def plain_console(_init_context) -> logging.Logger:
        logger = logging.Logger("bench_pipeline.main", logging.INFO)
        logger.addHandler(StepLines())
        return logger

    return plain_console


def step_error(result) -> str | None:
    """The first line of the first step error that does not name its runs (an error of the
    step itself, not of one run folder), or None."""
    for event in result.get_step_failure_events():
        data = event.step_failure_data
        if data.user_failure_data is not None and "failed_runs" in data.user_failure_data.metadata:
            continue
        error = data.error
        while error is not None and error.cause is not None:  # the user code's error, not Dagster's wrapper
            error = error.cause
        if error is not None:
            return (error.message.strip().splitlines() or ["unknown error"])[0]
    return None


def interrupted(result) -> bool:
    """Whether a Dagster run of this process stopped because the process was interrupted
    (SIGINT, or SIGTERM, which Dagster handles the same way): a step failure whose source
    is the interrupt, not the step's code."""
    return any(getattr(event.step_failure_data.error_source, "name", None) == "INTERRUPT"
               for event in result.get_step_failure_events())


@dataclass(frozen=True)
class Refreshed:
    """How a ``refresh_catalog`` run of this command ended (picklable: it may come from the
    early refresh's process)."""

    success: bool
    run_id: str  # "" when the refresh's process ended before saying which run it made
    error: str | None = None  # the first line of the failure


#: How often a refresh of this command looks whether the one under way has ended (seconds).
REFRESH_WAIT_POLL = 0.5
#: A refresh STARTING for longer than this is not waited for (seconds): the daemon's run
#: monitor fails it 180 s after its launch (deploy/dagster.local.yaml ``run_monitoring``), and
#: without the daemon nothing would ever start it.
STARTING_WAITED = 180


def refreshes_under_way(instance, tags: dict[str, str]) -> list[str]:
    """The run ids of the runs with ``tags`` (the refresh job's) under way on ``instance``:
    STARTED or CANCELING, or STARTING for less than STARTING_WAITED seconds."""
    import dagster as dg

    statuses = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]
    now = time.time()
    return [record.dagster_run.run_id for record in instance.get_run_records(dg.RunsFilter(statuses=statuses, tags=tags))
            if record.dagster_run.status != dg.DagsterRunStatus.STARTING
            or now - record.update_timestamp.timestamp() < STARTING_WAITED]


def wait_for_other_refreshes(instance, tags: dict[str, str], say=_say, poll: float = REFRESH_WAIT_POLL) -> None:
    """Return once no catalog refresh (a run with ``tags``) is under way on ``instance``,
    saying once per run waited for why; a refresh whose process is gone is marked failed
    (orphaned_runs.py) and not waited for."""
    from .orphaned_runs import fail_orphaned_runs

    said: set[str] = set()
    while True:
        under_way = refreshes_under_way(instance, tags)
        if under_way:  # one whose process is gone is marked failed, not waited for
            fail_orphaned_runs(instance, say)
            under_way = refreshes_under_way(instance, tags)
        if not under_way:
            return
        if not said.issuperset(under_way):
            say(f"catalog: waiting for the refresh under way on this instance (Dagster run {', '.join(under_way)})")
            said.update(under_way)
        time.sleep(poll)


#: The file in the instance's folder ($DAGSTER_HOME) this command's refreshes take turns on.
REFRESH_LOCK = ".bench_pipeline-refresh.lock"


@contextlib.contextmanager
def one_refresh_at_a_time(instance, tags: dict[str, str], say=_say) -> Iterator[None]:
    """Hold the block until no other catalog refresh runs on ``instance``, and keep it so.

    Two refreshes at once would each patch what the other keeps (refresh_state.py), and one
    working from an older catalog could write its suite pages over the other's or remove a new
    suite's page. The daemon starts the refreshes it launches (sensor, schedule, backfill,
    launchpad) one at a time: its run queue's limit on the tag ``bench/kind=cross_run``
    (deploy/dagster.local.yaml), which counts every run under way on the instance, this
    command's too. This command's own refresh, executed in its process, does not pass through
    that queue: it takes an exclusive ``flock`` on REFRESH_LOCK in the instance's folder (the
    kernel releases it when the process ends, however it ends), so that two main commands take
    turns, and then waits for a refresh the daemon has under way
    (``wait_for_other_refreshes``). Left open: a refresh the daemon dequeues in the
    milliseconds between that wait and this command's run being recorded."""
    with exclusive(Path(instance.root_directory) / REFRESH_LOCK,
                   lambda: say("catalog: waiting for the refresh of another command on this instance")):
        wait_for_other_refreshes(instance, tags, say)
        yield


def execute_refresh(instance) -> Refreshed:
    """The ``refresh_catalog`` job executed in this process on ``instance``, its step lines
    printed as the per-run job's are, alone on the instance (``one_refresh_at_a_time``)."""
    from .definitions import defs

    job = defs.resolve_job_def("refresh_catalog")
    with one_refresh_at_a_time(instance, dict(job.tags)):
        result = job.with_logger_defs({"console": plain_console()}).execute_in_process(
            instance=instance, raise_on_error=False, run_config=RUN_CONFIG, tags=RUN_TAGS,
        )
    return Refreshed(result.success, result.run_id,
                     None if result.success else step_error(result) or "the Dagster run failed")
