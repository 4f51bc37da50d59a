"""The main command's catalog refresh waits for one under way on the instance (in_process_runs.py):
real Dagster runs of a local instance, one in a process of its own that the test kills."""

from __future__ import annotations

import fcntl
import threading
import time
import uuid

import dagster as dg

from bench_pipeline import in_process_runs
from bench_pipeline.definitions import defs
from bench_pipeline.in_process_runs import (REFRESH_LOCK, one_refresh_at_a_time, refreshes_under_way,
                                            wait_for_other_refreshes)

from .support.sleeping_run import killed, local_home, start_sleeping_run, wait_until_started

REFRESH_TAGS = dict(defs.resolve_job_def("refresh_catalog").tags)


def test_the_refresh_job_is_the_one_the_run_queue_limits():
    # the tag the daemon's run queue allows one run of at a time (deploy/dagster.local.yaml)
    assert REFRESH_TAGS == {"bench/kind": "cross_run"}


def test_a_refresh_waits_for_one_under_way_and_not_for_one_whose_process_is_gone(tmp_path):
    home = local_home(tmp_path / "home")
    other = start_sleeping_run(home, REFRESH_TAGS)  # another refresh, under way in a process of its own
    per_run = start_sleeping_run(home, {"bench/kind": "per_run"})  # a run of the per-run job
    try:
        with dg.DagsterInstance.from_config(str(home)) as instance:
            runs = wait_until_started(instance, 2)
            refresh = next(run for run in runs if run.tags.get("bench/kind") == "cross_run")
            assert refreshes_under_way(instance, REFRESH_TAGS) == [refresh.run_id]

            said: list[str] = []
            waiter = threading.Thread(target=wait_for_other_refreshes, args=(instance, REFRESH_TAGS, said.append, 0.1))
            waiter.start()
            time.sleep(2)
            assert waiter.is_alive()  # still waiting, and saying why once
            assert said == [f"catalog: waiting for the refresh under way on this instance (Dagster run {refresh.run_id})"]

            killed(other)  # its process gone: marked failed, no longer waited for
            waiter.join(timeout=30)
            assert not waiter.is_alive()
            assert said[1:] == [f"run {refresh.run_id} of sleeping (partitions run-0001) was left STARTED by process "
                                f"{other.pid}, which is no longer running: marked failed"]
            assert instance.get_run_by_id(refresh.run_id).status == dg.DagsterRunStatus.FAILURE
            assert refreshes_under_way(instance, REFRESH_TAGS) == []  # the per-run run is no refresh
    finally:
        for proc in (other, per_run):
            if proc.poll() is None:
                killed(proc)


def test_a_refresh_left_starting_is_waited_for_only_as_long_as_the_run_monitor_would_let_it_start(monkeypatch):
    with dg.DagsterInstance.ephemeral() as instance:
        run = dg.DagsterRun(job_name="refresh_catalog", run_id=str(uuid.uuid4()),
                            status=dg.DagsterRunStatus.STARTING, tags=REFRESH_TAGS)
        instance.add_run(run)
        assert refreshes_under_way(instance, REFRESH_TAGS) == [run.run_id]  # launched a moment ago
        monkeypatch.setattr(in_process_runs, "STARTING_WAITED", 0)
        assert refreshes_under_way(instance, REFRESH_TAGS) == []  # would have been failed by now
        said: list[str] = []
        wait_for_other_refreshes(instance, REFRESH_TAGS, said.append, 0.1)
        assert said == []


def test_two_commands_refresh_in_turn():
    """The main command's refresh takes turns with another command's on the instance's lock
    file: a second one waits while the first holds it (two ``scripts/run.sh`` at once), and
    says so once."""
    with dg.DagsterInstance.ephemeral() as instance:
        events: list[str] = []
        said: list[str] = []

        def refresh(name: str) -> None:
            with one_refresh_at_a_time(instance, REFRESH_TAGS, said.append):
                events.append(f"{name} starts")
                time.sleep(0.5)
                events.append(f"{name} ends")

        with open(f"{instance.root_directory}/{REFRESH_LOCK}", "a+b") as held:  # another command's refresh
            fcntl.flock(held.fileno(), fcntl.LOCK_EX)
            second = threading.Thread(target=refresh, args=("second",))
            second.start()
            time.sleep(1)
            assert events == [] and said == ["catalog: waiting for the refresh of another command on this instance"]
            fcntl.flock(held.fileno(), fcntl.LOCK_UN)
        second.join(timeout=10)
        assert events == ["second starts", "second ends"]

        # two at once: one after the other, never overlapping
        threads = [threading.Thread(target=refresh, args=(name,)) for name in ("a", "b")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=10)
        assert sorted(events[2:]) == ["a ends", "a starts", "b ends", "b starts"]
        first = events[2].split()[0]
        assert events[3] == f"{first} ends"  # the other started only after it ended
