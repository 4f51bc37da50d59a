"""Runs of the local instance left "under way" by a process that no longer exists.

On the embedded default instance (deploy/dagster.local.yaml: SQLite, Dagster's
DefaultRunLauncher, whose started runs Dagster's run monitor cannot check) a run whose
process dies while it runs (kill -9, the out-of-memory killer, a reboot, `scripts/ui.sh`
stopped while a long run was going and killed after its stop timeout) stays STARTED for ever
once nothing watches that process: while the UI runs, Dagster's code server fails a run whose
worker it started and saw die, but not when the code server died too, nor a run
`scripts/run.sh` executes in its own process. The catalog sensor, which refreshes only when no
run is queued or under way, would wait for it for ever: no catalog, systems or suite page
would follow the runs again.

So `scripts/run.sh` and `scripts/ui.sh` (both through the main command) first, and the
catalog sensor when it would wait, mark each such run of their local instance failed, saying
why. Its partitions are then processed again: while the daemon runs, a run it launched is
run again once by the local settings' run retries (no step of it failed;
deploy/dagster.local.yaml ``run_retries``), and the main command processes every run folder
whose outputs are not current (its own runs are not retried: ``in_process_runs.RUN_TAGS``).
A run whose process is still running (another `scripts/run.sh` on the same instance, say) is
left alone, and so is every run of an instance not kept in SQLite on this machine
(deploy/dagster.yaml: its runs' processes live in other containers, and its run monitoring
ends such runs).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from .dagster_internals import local_sqlite_instance, mark_run_failed, run_process
from .partitions import PARTITION_TAG, RANGE_END, RANGE_START

#: The statuses of a run whose process is executing it. A STARTING run is not among them:
#: Dagster records no process for a run before its RUN_START event; a run killed in the
#: second or two of its launch is failed by the daemon's run monitor 180 s after its launch
#: (deploy/dagster.local.yaml ``run_monitoring``).
UNDER_WAY = [dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]


@dataclass(frozen=True)
class OrphanedRun:
    """A run under way whose process (``pid``: the one that executes it) is gone;
    ``partitions``: the one it processes, or the first and last of its range."""

    run_id: str
    job_name: str
    status: str
    pid: int
    partitions: tuple[str, ...]


def process_running(pid: int, since: float) -> bool:
    """Whether process ``pid`` exists and is the one that was running at ``since`` (a Unix
    time): a process started later under the same id (after a reboot, say) is another one."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        pass
    started = _process_start_time(pid)
    return started is None or started <= since + 2  # /proc's times are whole seconds since boot


def _process_start_time(pid: int) -> float | None:
    """When process ``pid`` started (Unix time), from /proc (Linux); None where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = next(line for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime "))
    except (OSError, StopIteration):
        return None
    ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22, starttime: clock ticks after boot
    return int(boot.split()[1]) + ticks / os.sysconf("SC_CLK_TCK")


def find_orphaned_runs(instance: dg.DagsterInstance,
                       running: Callable[[int, float], bool] = process_running) -> list[OrphanedRun]:
    """The runs of ``instance`` under way whose process is no longer running; none on an
    instance that is not a SQLite one on this machine."""
    if not local_sqlite_instance(instance):
        return []
    orphaned = []
    for record in instance.get_run_records(dg.RunsFilter(statuses=UNDER_WAY)):
        run = record.dagster_run
        process = run_process(instance, run.run_id)
        if process is None or running(*process):
            continue  # not known which process runs it, or that process still runs
        orphaned.append(OrphanedRun(run.run_id, run.job_name, run.status.value, process[0], _partitions(run.tags)))
    return orphaned


def _partitions(tags: dict[str, str]) -> tuple[str, ...]:
    """The run's partition, or the first and last of its range (one when they are the same)."""
    if tags.get(PARTITION_TAG):
        return (tags[PARTITION_TAG],)
    return tuple(dict.fromkeys(key for key in (tags.get(RANGE_START), tags.get(RANGE_END)) if key))


def fail_orphaned_runs(instance: dg.DagsterInstance, say: Callable[[str], None],
                       running: Callable[[int, float], bool] = process_running) -> list[OrphanedRun]:
    """Mark each orphaned run of ``instance`` failed, with the reason in its event log, and
    tell ``say`` about it; returns them."""
    orphaned = find_orphaned_runs(instance, running)
    for run in orphaned:
        mark_run_failed(instance, run.run_id,
                        f"bench_pipeline marked this run failed: it was {run.status} but its process "
                        f"(pid {run.pid}) is no longer running (killed, or stopped with the machine or "
                        "the UI while the run was under way). Its partitions are processed again by "
                        "scripts/run.sh, or re-execute this run.")
        where = f" (partitions {' .. '.join(run.partitions)})" if run.partitions else ""
        say(f"run {run.run_id} of {run.job_name}{where} was left {run.status} by process {run.pid}, "
            "which is no longer running: marked failed")
    return orphaned
