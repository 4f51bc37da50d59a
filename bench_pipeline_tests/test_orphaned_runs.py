"""Runs of the local instance left under way by a killed process (orphaned_runs.py): found by
their process, marked failed with the reason, and a run whose process still runs left alone.
The runs are real Dagster runs in processes of their own, one of them killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import dagster as dg
import pytest
import yaml

from bench_pipeline.dagster_internals import run_process
from bench_pipeline.orphaned_runs import fail_orphaned_runs, find_orphaned_runs, process_running

from .support.sleeping_run import (LOCATION, ROOT, killed, local_home, sleeping, start_daemon, start_sleeping_run,
                                   stop_daemon, wait_until_started)


def test_a_process_is_running_only_while_it_is_the_same_process():
    assert process_running(os.getpid(), time.time())
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    assert not process_running(int(done.stdout), time.time())  # exited
    if Path("/proc/self/stat").exists():
        # a process that started after the time it is asked about is not the one that ran then
        assert not process_running(os.getpid(), time.time() - 3600 * 24 * 365)


def test_a_run_whose_process_was_killed_is_marked_failed_and_a_running_one_is_left(tmp_path):
    home = local_home(tmp_path / "home")
    killed_proc, live_proc = start_sleeping_run(home), None
    try:
        with dg.DagsterInstance.from_config(str(home)) as instance:
            (first,) = wait_until_started(instance, 1)
            live_proc = start_sleeping_run(home)
            live = next(r for r in wait_until_started(instance, 2) if r.run_id != first.run_id)
            assert find_orphaned_runs(instance) == []  # both processes run: nothing to end
            killed(killed_proc)

            said: list[str] = []
            (orphan,) = fail_orphaned_runs(instance, said.append)
            assert (orphan.run_id, orphan.job_name, orphan.status, orphan.pid, orphan.partitions) == (
                first.run_id, "sleeping", "STARTED", killed_proc.pid, ("run-0001",))
            assert said == [f"run {first.run_id} of sleeping (partitions run-0001) was left STARTED by process "
                            f"{killed_proc.pid}, which is no longer running: marked failed"]
            assert instance.get_run_by_id(first.run_id).status == dg.DagsterRunStatus.FAILURE
            # no step of it failed: the local settings' run retries would run it again, had the
            # daemon launched it (this test executes it in its own process, as run.sh does its
            # own runs, which say not to: in_process_runs.RUN_TAGS)
            assert instance.get_run_by_id(first.run_id).tags.get("dagster/will_retry") == "true"
            failure = instance.get_records_for_run(first.run_id, of_type=dg.DagsterEventType.RUN_FAILURE).records
            assert len(failure) == 1
            assert f"its process (pid {killed_proc.pid}) is no longer running" in failure[0].event_log_entry.message
            assert instance.get_run_by_id(live.run_id).status == dg.DagsterRunStatus.STARTED

            assert fail_orphaned_runs(instance, said.append) == [] and len(said) == 1  # once
    finally:
        for proc in (killed_proc, live_proc):
            if proc is not None and proc.poll() is None:
                killed(proc)


@pytest.mark.parametrize("pid_reused", [False, True])
def test_the_process_is_asked_with_the_time_its_run_said_it_started(tmp_path, pid_reused):
    """The check is given the run's pid and when it said so: a pid taken since by another
    process (``running`` answers False then) leaves the run orphaned."""
    home = local_home(tmp_path / "home")
    proc = start_sleeping_run(home)
    try:
        with dg.DagsterInstance.from_config(str(home)) as instance:
            (run,) = wait_until_started(instance, 1)
            started = instance.get_run_record_by_id(run.run_id).start_time
            asked = []

            def running(pid: int, since: float) -> bool:
                asked.append((pid, since))
                return not pid_reused

            found = find_orphaned_runs(instance, running)
            assert [r.run_id for r in found] == ([run.run_id] if pid_reused else [])
            ((pid, since),) = asked
            assert pid == proc.pid and abs(since - started) < 5
    finally:
        killed(proc)


def test_scripts_ui_sh_marks_the_runs_a_killed_process_left_before_the_ui_starts(tmp_path):
    """What scripts/ui.sh runs before `dg dev`: `python -m bench_pipeline.main --prepare-ui`."""
    home = local_home(tmp_path / "home")
    proc = start_sleeping_run(home)
    try:
        with dg.DagsterInstance.from_config(str(home)) as instance:
            (run,) = wait_until_started(instance, 1)
    finally:
        killed(proc)
    env = {**os.environ, "DAGSTER_HOME": str(home), "BENCH_HOME": str(tmp_path / "data")}
    for var in ("BENCH_RUNS_ROOT", "BENCH_OUTPUT_ROOT", "BENCH_STORAGE_BASE"):
        env.pop(var, None)
    done = subprocess.run([sys.executable, "-m", "bench_pipeline.main", "--prepare-ui"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (f"run {run.run_id} of sleeping (partitions run-0001) was left STARTED by process {proc.pid}, "
            "which is no longer running: marked failed") in done.stdout.splitlines()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.FAILURE


def test_the_local_instance_fails_a_run_stuck_starting_and_retries_a_run_without_its_process(tmp_path):
    """deploy/dagster.local.yaml as Dagster reads it: the daemon's run monitor fails a run
    still STARTING 180 s after its launch, looking every 30 s, and ends no run for its length;
    a failed run is run again once, unless a step of it failed."""
    with dg.DagsterInstance.from_config(str(local_home(tmp_path / "home"))) as instance:
        assert instance.run_monitoring_enabled
        assert (instance.run_monitoring_start_timeout_seconds, instance.run_monitoring_poll_interval_seconds,
                instance.run_monitoring_max_runtime_seconds) == (180, 30, 0)
        assert instance.run_retries_enabled
        assert (instance.run_retries_max_retries, instance.run_retries_retry_on_asset_or_op_failure) == (1, False)


def _wait_for(what: str, check, daemon: subprocess.Popen, timeout: float = 120):
    """What ``check`` gives once it is something, while the daemon runs."""
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        assert daemon.poll() is None, "the daemon stopped"
        time.sleep(0.5)
    return found


def _starting_run(instance: dg.DagsterInstance) -> str:
    """A run left as a launch killed in its first second leaves it: created, its RUN_STARTING
    event recorded (what ``DagsterInstance.launch_run`` writes before the launcher starts the
    run's process), and nothing after."""
    from dagster._core.events import DagsterEvent, DagsterEventType

    run = instance.create_run_for_job(sleeping, tags={"dagster/partition": "run-0002"})
    instance.report_dagster_event(DagsterEvent(DagsterEventType.PIPELINE_STARTING.value, job_name=run.job_name),
                                  run_id=run.run_id)
    assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.STARTING
    return run.run_id


@pytest.mark.slow
def test_the_daemons_run_monitor_fails_a_run_left_starting_and_leaves_a_running_one(tmp_path):
    """A real `dagster-daemon run` on the local instance's settings, its start timeout and poll
    interval shortened: the run a killed launch left STARTING is failed with Dagster's reason;
    a STARTED run whose process runs is left alone, past that timeout too."""
    home = local_home(tmp_path / "home")
    config = yaml.safe_load((home / "dagster.yaml").read_text())
    config["run_monitoring"].update(start_timeout_seconds=2, poll_interval_seconds=1)
    (home / "dagster.yaml").write_text(yaml.safe_dump(config))
    live_proc, daemon = start_sleeping_run(home), None
    try:
        with dg.DagsterInstance.from_config(str(home)) as instance:
            (live,) = wait_until_started(instance, 1)
            stuck = _starting_run(instance)
            daemon = start_daemon(home)
            _wait_for("the run left STARTING failed", lambda: (
                instance.get_run_by_id(stuck).status == dg.DagsterRunStatus.FAILURE), daemon)
            failure = instance.get_records_for_run(stuck, of_type=dg.DagsterEventType.RUN_FAILURE).records
            assert len(failure) == 1
            assert "Run timed out due to taking longer than 2 seconds to start." in failure[0].event_log_entry.message
            time.sleep(3)  # a few more of the monitor's looks
            assert instance.get_run_by_id(live.run_id).status == dg.DagsterRunStatus.STARTED
    finally:
        if daemon is not None:
            stop_daemon(daemon)
        if live_proc.poll() is None:
            killed(live_proc)


#: Where Dagster's retry daemon keeps how far it has read the run failures.
FAILURE_CURSOR = "EVENT_LOG_CONSUMER_CURSOR-PIPELINE_FAILURE"


def _retry_of(instance: dg.DagsterInstance, run_id: str) -> list[dg.DagsterRun] | str | None:
    """The retry of the failed run ``run_id``; "passed over" when Dagster's retry daemon read
    past its failure without retrying it (the race deploy/README.md describes: it read the
    failure event before the run's FAILURE status); None while it may still come. The cursor
    is read first: the daemon keeps it only after launching the retries of what it read."""
    cursor = instance.daemon_cursor_storage.get_cursor_values({FAILURE_CURSOR}).get(FAILURE_CURSOR)
    retries = instance.get_runs(dg.RunsFilter(tags={"dagster/parent_run_id": run_id}))
    if retries:
        return list(retries)
    if cursor is None or instance.get_run_by_id(run_id).status != dg.DagsterRunStatus.FAILURE:
        return None
    # the failures after the cursor, in the ids the daemon reads them by (with SQLite, not the
    # ids of the run's own event records)
    unread = instance.event_log_storage.get_logs_for_all_runs_by_log_id(
        after_cursor=int(cursor), dagster_event_type={dg.DagsterEventType.RUN_FAILURE})
    return None if any(entry.run_id == run_id for entry in unread.values()) else "passed over"


@pytest.mark.slow
def test_a_run_whose_process_is_killed_while_the_daemon_runs_is_run_again_once(tmp_path):
    """A real `dagster-daemon run` on the local instance's settings: a run launched through its
    queue, whose process is then killed (the out-of-memory killer, say), is failed by Dagster
    and run again, once: its retry, killed too, is not run again."""
    home = local_home(tmp_path / "home")
    env = {**os.environ, "DAGSTER_HOME": str(home), "PYTHONPATH": str(ROOT)}
    daemon = start_daemon(home)
    try:
        with dg.DagsterInstance.from_config(str(home)) as instance:
            launched = subprocess.run([str(Path(sys.executable).parent / "dagster"), "job", "launch", *LOCATION,
                                       "-j", "sleeping"], cwd=ROOT, env=env, capture_output=True, text=True,
                                      timeout=120, check=False)
            assert launched.returncode == 0, launched.stdout + launched.stderr
            (first,) = instance.get_runs()
            chain = [first.run_id]
            for _ in range(2):
                pid, _ = _wait_for("the run's process", lambda: run_process(instance, chain[-1]), daemon)
                os.kill(pid, signal.SIGKILL)
                failed = _wait_for("the killed run failed", lambda: (
                    run := instance.get_run_by_id(chain[-1])).status == dg.DagsterRunStatus.FAILURE
                    and "dagster/will_retry" in run.tags and run, daemon)
                if failed.tags["dagster/will_retry"] == "false":
                    break
                retry = _wait_for("its retry", lambda: _retry_of(instance, chain[-1]), daemon)
                if retry == "passed over":  # Dagster's race, not ours: said, not hidden
                    warnings.warn(f"Dagster's retry daemon passed over the failed run {chain[-1]} "
                                  "(dagster-io/dagster#33741): its retry was not seen")
                    return
                chain.append(retry[0].run_id)
                assert retry[0].tags["dagster/partition"] == "run-0001"
            assert len(chain) == 2  # the run and one retry
            assert [instance.get_run_by_id(r).tags["dagster/will_retry"] for r in chain] == ["true", "false"]
            time.sleep(6)  # the retry daemon looks every few seconds: no second retry
            assert len(instance.get_runs()) == 2
            # the daemon read the retry's failure and rightly left it (what "passed over" reads)
            assert _retry_of(instance, chain[-1]) == "passed over"
    finally:
        stop_daemon(daemon)
