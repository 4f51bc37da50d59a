"""The run-folder sensor on a persistent test instance: new, not ready, changed, deleted."""

from __future__ import annotations

import json
import os
import time

import dagster as dg
import pytest

from bench_pipeline.partitions import runs_partitions

from ..dagster_helpers import make_resources, tick_run_folder_sensor
from ..run_builder import make_run, row


@pytest.fixture()
def instance():
    with dg.instance_for_test() as inst:
        yield inst


def test_new_not_ready_changed_and_deleted_runs(tmp_path, instance):
    resources = make_resources(tmp_path, quiet_seconds=3600)
    runs = tmp_path / "runs"
    make_run(runs, [row("t")], run_id="run-a")
    make_run(runs, [row("t")], run_id="run-b", manifest={"status": "running"})
    make_run(runs, [row("t")], run_id="run-legacy", manifest={})  # no status, just written
    (runs / "not-a-run").mkdir()

    first = tick_run_folder_sensor(instance, resources)
    assert [r.partition_key for r in first.run_requests] == ["run-a"]
    assert instance.get_dynamic_partitions(runs_partitions.name) == ["run-a"]
    cursor = json.loads(first.cursor)
    assert set(cursor) == {"run-a"}

    # Nothing changed: no request, same cursor.
    second = tick_run_folder_sensor(instance, resources, first.cursor)
    assert second.run_requests == []
    assert json.loads(second.cursor) == cursor

    # run-b completes; run-a is re-judged (results rewritten).
    (runs / "run-b" / "manifest.json").write_text(json.dumps({"status": "completed"}))
    results = runs / "run-a" / "results.jsonl"
    results.write_text(results.read_text() + json.dumps(row("u")) + "\n")
    third = tick_run_folder_sensor(instance, resources, second.cursor)
    requested = {r.partition_key: r for r in third.run_requests}
    assert set(requested) == {"run-a", "run-b"}
    assert requested["run-a"].tags["bench/trigger"] == "changed"
    assert requested["run-b"].tags["bench/trigger"] == "new"
    assert requested["run-a"].run_key != first.run_requests[0].run_key
    assert sorted(instance.get_dynamic_partitions(runs_partitions.name)) == ["run-a", "run-b"]

    # run-b is deleted: its partition goes, the cursor forgets it.
    for dirpath, dirnames, filenames in os.walk(runs / "run-b", topdown=False):
        for name in filenames:
            os.remove(os.path.join(dirpath, name))
        os.rmdir(dirpath)
    fourth = tick_run_folder_sensor(instance, resources, third.cursor)
    assert fourth.run_requests == []
    assert instance.get_dynamic_partitions(runs_partitions.name) == ["run-a"]
    assert set(json.loads(fourth.cursor)) == {"run-a"}


def test_legacy_run_is_ready_after_the_quiet_period(tmp_path, instance):
    resources = make_resources(tmp_path, quiet_seconds=60)
    run = make_run(tmp_path / "runs", [row("t")], run_id="legacy", manifest={"schema_version": 1})
    assert tick_run_folder_sensor(instance, resources).run_requests == []
    old = time.time() - 120
    os.utime(run / "results.jsonl", (old, old))
    result = tick_run_folder_sensor(instance, resources)
    assert [r.partition_key for r in result.run_requests] == ["legacy"]


def test_aborted_runs_are_ready_and_unsafe_names_are_ignored(tmp_path, instance):
    resources = make_resources(tmp_path)
    make_run(tmp_path / "runs", [row("t")], run_id="aborted", manifest={"status": "aborted"})
    make_run(tmp_path / "runs", [row("t")], run_id=".hidden", manifest={"status": "completed"})
    result = tick_run_folder_sensor(instance, resources)
    assert [r.partition_key for r in result.run_requests] == ["aborted"]


def test_a_burst_of_runs_is_requested_in_ranges(tmp_path):
    """More runs to process than one Dagster run takes (a first tick over a full runs root)
    become one request per consecutive range of partitions, as a backfill's runs are."""
    from bench_pipeline.partitions import RANGE_END, RANGE_START
    from bench_pipeline.sensors.run_folder_sensor import evaluate_run_folders

    resources = make_resources(tmp_path)
    for name in ("r1", "r2", "r3", "r4", "r5"):
        make_run(tmp_path / "runs", [row("t")], run_id=name)
    few = evaluate_run_folders(resources["settings"], None, [], batch_size=5)
    assert [r.partition_key for r in few.run_requests] == ["r1", "r2", "r3", "r4", "r5"]  # one each
    burst = evaluate_run_folders(resources["settings"], None, ["old"], batch_size=2)
    assert [(r.tags[RANGE_START], r.tags[RANGE_END]) for r in burst.run_requests] == [
        ("r1", "r2"), ("r3", "r4"), ("r5", "r5")]
    assert all(r.partition_key is None and r.tags["bench/trigger"] == "new" for r in burst.run_requests)
    assert len({r.run_key for r in burst.run_requests}) == 3
    assert list(burst.dynamic_partitions_requests[0].partition_keys) == ["r1", "r2", "r3", "r4", "r5"]
    # A folder that changes changes its range's run key: the range is requested again.
    results = tmp_path / "runs" / "r1" / "results.jsonl"
    results.write_text(results.read_text() + json.dumps(row("u")) + "\n")
    again = evaluate_run_folders(resources["settings"], None, ["old"], batch_size=2)
    assert again.run_requests[0].run_key != burst.run_requests[0].run_key
    assert again.run_requests[1].run_key == burst.run_requests[1].run_key


def test_runs_already_materialized_are_recorded_not_requested(tmp_path):
    """After the main command (or a lost cursor) the first tick asks the instance which runs
    are already done with this folder content and formula version."""
    from bench_pipeline.sensors.run_folder_sensor import evaluate_run_folders

    resources = make_resources(tmp_path)
    for name in ("done", "todo"):
        make_run(tmp_path / "runs", [row("t")], run_id=name)
    asked = []

    def already_done(fingerprints):
        asked.append(sorted(fingerprints))
        return {"done"}

    result = evaluate_run_folders(resources["settings"], None, ["done", "todo"], already_done)
    assert asked == [["done", "todo"]]  # one question for every existing, unseen folder
    assert [r.partition_key for r in result.run_requests] == ["todo"]
    assert set(json.loads(result.cursor)) == {"done", "todo"}
