"""The run-folder sensor on a persistent test instance: new, not ready, changed, deleted."""

from __future__ import annotations

import json
import os
import shutil
import time

import dagster as dg
import pytest

from bench_pipeline.partitions import runs_partitions
from bench_pipeline.sensors.run_folder_sensor import GONE, NOT_RUNS

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
    assert set(cursor) == {"run-a", NOT_RUNS}  # and the folder that is not a run

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

    # run-b is deleted: its partition goes, the cursor keeps its entry aside (GONE).
    entry_b = json.loads(third.cursor)["run-b"]
    for dirpath, dirnames, filenames in os.walk(runs / "run-b", topdown=False):
        for name in filenames:
            os.remove(os.path.join(dirpath, name))
        os.rmdir(dirpath)
    fourth = tick_run_folder_sensor(instance, resources, third.cursor)
    assert fourth.run_requests == []
    assert instance.get_dynamic_partitions(runs_partitions.name) == ["run-a"]
    assert json.loads(fourth.cursor)[GONE] == {"run-b": entry_b}
    assert set(json.loads(fourth.cursor)) == {"run-a", NOT_RUNS, GONE}


def test_a_runs_root_that_is_gone_fails_the_tick_and_removes_no_run(tmp_path, instance):
    """A runs root that does not exist while runs processed from it are known (a mistyped
    BENCH_RUNS_ROOT, a missing mount point) fails the tick with the reason: no partition is
    removed, so the catalog, systems and suite pages keep their runs. Back, nothing changed."""
    from bench_pipeline.run_folders import RunsRootError

    resources = make_resources(tmp_path)
    runs = tmp_path / "runs"
    make_run(runs, [row("t")], run_id="run-a")
    first = tick_run_folder_sensor(instance, resources)
    assert instance.get_dynamic_partitions(runs_partitions.name) == ["run-a"]
    runs.rename(tmp_path / "elsewhere")
    with pytest.raises(RunsRootError, match="no such folder, and 1 run"):
        tick_run_folder_sensor(instance, resources, first.cursor)
    assert instance.get_dynamic_partitions(runs_partitions.name) == ["run-a"]
    (tmp_path / "elsewhere").rename(runs)
    back = tick_run_folder_sensor(instance, resources, first.cursor)
    assert back.run_requests == [] and instance.get_dynamic_partitions(runs_partitions.name) == ["run-a"]


def test_a_runs_root_emptied_fails_the_tick_and_removes_no_run(tmp_path, instance):
    """A runs root that holds no run folder any more while runs processed from it are known
    (an empty mount point) fails the tick with the reason and removes no partition; one run
    folder removed from a root that still holds another is that run removed."""
    from bench_pipeline.run_folders import EmptyRunsRootError

    resources = make_resources(tmp_path)
    runs = tmp_path / "runs"
    make_run(runs, [row("t")], run_id="run-a")
    make_run(runs, [row("t")], run_id="run-b")
    first = tick_run_folder_sensor(instance, resources)
    assert sorted(instance.get_dynamic_partitions(runs_partitions.name)) == ["run-a", "run-b"]
    runs.rename(tmp_path / "elsewhere")
    runs.mkdir()  # the mount point, with nothing mounted on it
    with pytest.raises(EmptyRunsRootError, match="holds no run folder: 2 run"):
        tick_run_folder_sensor(instance, resources, first.cursor)
    assert sorted(instance.get_dynamic_partitions(runs_partitions.name)) == ["run-a", "run-b"]
    runs.rmdir()
    (tmp_path / "elsewhere").rename(runs)
    back = tick_run_folder_sensor(instance, resources, first.cursor)
    assert back.run_requests == [] and sorted(instance.get_dynamic_partitions(runs_partitions.name)) == ["run-a", "run-b"]
    shutil.rmtree(runs / "run-b")
    tick_run_folder_sensor(instance, resources, back.cursor)
    assert instance.get_dynamic_partitions(runs_partitions.name) == ["run-a"]


def test_a_folder_that_is_not_a_run_is_said_once(tmp_path, instance):
    """A folder without results.jsonl is named in the log and the skip reason of the tick
    that first sees it, then no more (the cursor keeps it); gone and back, it is said again.
    Hidden folders are not named; a folder that becomes a run is a run."""
    from bench_pipeline.sensors.run_folder_sensor import evaluate_run_folders

    resources = make_resources(tmp_path)
    settings, runs = resources["settings"], tmp_path / "runs"
    make_run(runs, [row("t")], run_id="r", manifest={"status": "running"})
    (runs / "notes").mkdir()
    (runs / ".cache").mkdir()
    said: list[str] = []
    first = evaluate_run_folders(settings, None, [], log=said.append)
    note = "no results.jsonl, so not a run folder (or not one yet), skipped (1): notes"
    assert said == [note]
    assert first.skip_reason.skip_message == f"no new or changed ready runs (1 not ready); {note}"
    assert json.loads(first.cursor)[NOT_RUNS] == ["notes"]

    (runs / "other").mkdir()
    second = evaluate_run_folders(settings, first.cursor, [], log=said.append)
    assert said[1:] == ["no results.jsonl, so not a run folder (or not one yet), skipped (1): other"]
    third = evaluate_run_folders(settings, second.cursor, [], log=said.append)
    assert len(said) == 2 and third.skip_reason.skip_message == "no new or changed ready runs (1 not ready)"

    (runs / "notes").rmdir()
    (runs / "other").rmdir()
    make_run(runs, [row("t")], run_id="other")  # becomes a run: requested, no more a folder to name
    fourth = evaluate_run_folders(settings, third.cursor, [], log=said.append)
    assert [r.partition_key for r in fourth.run_requests] == ["other"] and NOT_RUNS not in json.loads(fourth.cursor)
    (runs / "notes").mkdir()
    fifth = evaluate_run_folders(settings, fourth.cursor, ["other"], log=said.append)
    assert said[2:] == ["no results.jsonl, so not a run folder (or not one yet), skipped (1): notes"]

    long_name = "L" * 250  # a legal folder name, too long for its stored files' names
    make_run(runs, [row("t")], run_id=long_name)
    sixth = evaluate_run_folders(settings, fifth.cursor, ["other"], log=said.append)
    assert said[3:] == [f"{long_name}: not processed: its name is 250 bytes long: the stored values of a run are "
                        "files named <run id>.parquet, so a run id fits in at most 247 bytes; rename the folder"]
    assert long_name not in [r.partition_key for r in sixth.run_requests]
    evaluate_run_folders(settings, sixth.cursor, ["other"], log=said.append)
    assert len(said) == 4  # said once


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


def test_up_to_twenty_runs_get_a_dagster_run_each_and_more_one_range(tmp_path):
    """A few new runs get a Dagster run each (the lowest latency); one more than
    REQUESTED_ONE_BY_ONE, and they are one range of up to PARTITIONS_PER_RUN partitions."""
    from bench_pipeline.assets.run_stages import REQUESTED_ONE_BY_ONE
    from bench_pipeline.partitions import RANGE_END, RANGE_START
    from bench_pipeline.sensors.run_folder_sensor import evaluate_run_folders

    resources = make_resources(tmp_path)
    names = [f"r{i:02d}" for i in range(REQUESTED_ONE_BY_ONE + 1)]
    for name in names[:-1]:
        make_run(tmp_path / "runs", [row("t")], run_id=name)
    few = evaluate_run_folders(resources["settings"], None, [], batch_size=100)
    assert [r.partition_key for r in few.run_requests] == names[:-1]
    make_run(tmp_path / "runs", [row("t")], run_id=names[-1])
    burst = evaluate_run_folders(resources["settings"], None, [], batch_size=100)
    assert [(r.tags[RANGE_START], r.tags[RANGE_END]) for r in burst.run_requests] == [(names[0], names[-1])]


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


#: The runner's manifest: flat keys, no status (run-directory.md "The runner's layout").
RUNNER_MANIFEST = {"run_id": "r", "agent_model": "agent-model-large", "judge_config": None}


def test_runner_runs_are_ready_by_their_outputs_and_requested_again_when_rejudged(tmp_path, instance):
    resources = make_resources(tmp_path, quiet_seconds=3600)
    runs = tmp_path / "runs"
    done = make_run(runs, [row("t")], run_id="runner-done", manifest=RUNNER_MANIFEST)
    (done / "metrics.json").write_text("{}")
    (done / "summary.md").write_text("# run\n")
    writing = make_run(runs, [row("t")], run_id="runner-writing", manifest=RUNNER_MANIFEST)
    running = make_run(runs, [row("t")], run_id="runner-running", manifest={**RUNNER_MANIFEST, "status": "running"})
    (running / "metrics.json").write_text("{}")

    first = tick_run_folder_sensor(instance, resources)
    assert [r.partition_key for r in first.run_requests] == ["runner-done"]  # at once, no quiet wait
    assert set(json.loads(first.cursor)) == {"runner-done"}  # the two others left for later

    # the runner finishes writing: its metrics.json makes the run ready at the next tick
    (writing / "metrics.json").write_text("{}")
    second = tick_run_folder_sensor(instance, resources, first.cursor)
    assert [r.partition_key for r in second.run_requests] == ["runner-writing"]

    # re-judged: the runner writes results.rejudged.jsonl beside results.jsonl
    rejudged = done / "results.rejudged.jsonl"
    rejudged.write_text(json.dumps(row("t", status="failed")) + "\n")
    third = tick_run_folder_sensor(instance, resources, second.cursor)
    assert [r.partition_key for r in third.run_requests] == ["runner-done"]
    assert third.run_requests[0].tags["bench/trigger"] == "changed"
    assert third.run_requests[0].run_key != first.run_requests[0].run_key
    assert tick_run_folder_sensor(instance, resources, third.cursor).run_requests == []  # nothing changed

    # re-judged again (the copy rewritten), then the copy removed: requested each time
    rejudged.write_text(json.dumps(row("t", status="passed")) + "\n\n")
    fourth = tick_run_folder_sensor(instance, resources, third.cursor)
    assert [r.partition_key for r in fourth.run_requests] == ["runner-done"]
    rejudged.unlink()
    fifth = tick_run_folder_sensor(instance, resources, fourth.cursor)
    assert [r.partition_key for r in fifth.run_requests] == ["runner-done"]
    # the folder is back in its first state (the same fingerprint), but the request is a new
    # one: a run key Dagster has not seen (it skips a request whose run key was used before)
    assert json.loads(fifth.cursor)["runner-done"].split("~")[0] == json.loads(first.cursor)["runner-done"]
    keys = [t.run_requests[0].run_key for t in (first, third, fourth, fifth)]
    assert len(set(keys)) == 4 and all(k.startswith("runner-done:") for k in keys)
    assert tick_run_folder_sensor(instance, resources, fifth.cursor).run_requests == []
    # and once more re-judged the same way: still a run key of its own
    rejudged.write_text(json.dumps(row("t", status="failed")) + "\n")
    sixth = tick_run_folder_sensor(instance, resources, fifth.cursor)
    assert sixth.run_requests[0].run_key not in keys
    assert sorted(instance.get_dynamic_partitions(runs_partitions.name)) == ["runner-done", "runner-writing"]


def test_a_folder_back_in_the_state_of_its_first_run_is_processed_again(tmp_path, instance):
    """Re-judged, moved away, its re-judged copy removed, moved back: the folder is as it was
    first processed, but its stored values are the re-judged ones. The request gets a run key
    not used before (Dagster skips one it has seen: the run kept its re-judged numbers)."""

    resources = make_resources(tmp_path, quiet_seconds=3600)
    runs = tmp_path / "runs"
    folder = make_run(runs, [row("t")], run_id="r", manifest=RUNNER_MANIFEST)
    (folder / "metrics.json").write_text("{}")
    (make_run(runs, [row("t")], run_id="s", manifest=RUNNER_MANIFEST) / "metrics.json").write_text("{}")  # stays
    first = tick_run_folder_sensor(instance, resources)
    (folder / "results.rejudged.jsonl").write_text(json.dumps(row("t", status="failed")) + "\n")
    second = tick_run_folder_sensor(instance, resources, first.cursor)
    shutil.move(folder, tmp_path / "aside")
    third = tick_run_folder_sensor(instance, resources, second.cursor)
    assert third.run_requests == [] and instance.get_dynamic_partitions(runs_partitions.name) == ["s"]
    (tmp_path / "aside" / "results.rejudged.jsonl").unlink()
    shutil.move(tmp_path / "aside", folder)
    fourth = tick_run_folder_sensor(instance, resources, third.cursor)
    (request,) = fourth.run_requests
    assert request.partition_key == "r" and request.tags["bench/trigger"] == "changed"
    assert request.run_key not in {first.run_requests[0].run_key, second.run_requests[0].run_key}
    assert sorted(instance.get_dynamic_partitions(runs_partitions.name)) == ["r", "s"]
    assert GONE not in json.loads(fourth.cursor)
    assert tick_run_folder_sensor(instance, resources, fourth.cursor).run_requests == []


def test_a_folder_back_unchanged_and_current_gets_its_partition_without_a_run(tmp_path):
    """Moved away and back as it was, its stored values current (this fingerprint and formula
    version): its partition is added again, nothing is processed."""
    from bench_pipeline.sensors.run_folder_sensor import evaluate_run_folders

    resources = make_resources(tmp_path)
    make_run(tmp_path / "runs", [row("t")], run_id="r")
    first = evaluate_run_folders(resources["settings"], None, [])
    entry = json.loads(first.cursor)["r"]
    away = json.dumps({GONE: {"r": entry}})  # the cursor while the folder was away
    asked = []

    def already_done(fingerprints):
        asked.append(sorted(fingerprints))
        return {"r"}

    back = evaluate_run_folders(resources["settings"], away, [], already_done)
    assert asked == [["r"]] and back.run_requests == []
    (added,) = back.dynamic_partitions_requests
    assert list(added.partition_keys) == ["r"]
    assert json.loads(back.cursor)["r"] != entry  # the chain goes on
    # not current (another formula version, or changed): processed again
    again = evaluate_run_folders(resources["settings"], away, [], lambda fingerprints: set())
    assert [r.partition_key for r in again.run_requests] == ["r"]
    assert again.run_requests[0].run_key != first.run_requests[0].run_key


def test_a_folder_processed_under_another_formula_and_back_after_its_entry_was_lost_is_processed(tmp_path,
                                                                                                monkeypatch):
    """A folder gone before the cursor kept such entries aside (an upgrade), or a cursor
    reset: the folder is new to the cursor, its stored values are from an earlier formula.
    Its request must not reuse the run key of its first processing, which Dagster would
    skip: the run key names the formula version."""
    import sys

    from bench_pipeline.sensors.run_folder_sensor import evaluate_run_folders

    resources = make_resources(tmp_path)
    make_run(tmp_path / "runs", [row("t")], run_id="r")
    before = evaluate_run_folders(resources["settings"], None, []).run_requests[0].run_key
    asked = []
    monkeypatch.setattr(sys.modules["bench_pipeline.sensors.run_folder_sensor"], "FORMULA_VERSION", "next-formula")
    after = evaluate_run_folders(resources["settings"], None, [], lambda fps: asked.append(sorted(fps)) or set())
    assert asked == [["r"]]  # asked whether its stored values are current, although it has no partition
    (request,) = after.run_requests
    assert request.run_key != before and request.run_key.endswith("@next-formula")
    assert list(after.dynamic_partitions_requests[0].partition_keys) == ["r"]


def test_a_cursor_of_bare_fingerprints_reads_the_same(tmp_path, instance):
    """A cursor written before the entries carried digests: unchanged runs stay as they are."""
    resources = make_resources(tmp_path)
    make_run(tmp_path / "runs", [row("t")], run_id="r")
    first = tick_run_folder_sensor(instance, resources)
    entry = first.run_requests[0].run_key.split(":", 1)[1].rsplit("@", 1)[0]
    assert json.loads(first.cursor) == {"r": entry} and "~" not in entry  # a bare fingerprint
    again = tick_run_folder_sensor(instance, resources, first.cursor)
    assert again.run_requests == [] and again.cursor == first.cursor


def test_a_legacy_run_rejudged_waits_for_its_rejudged_copy_to_be_quiet(tmp_path, instance):
    resources = make_resources(tmp_path, quiet_seconds=60)
    run = make_run(tmp_path / "runs", [row("t")], run_id="legacy", manifest={"schema_version": 1})
    old = time.time() - 120
    os.utime(run / "results.jsonl", (old, old))
    first = tick_run_folder_sensor(instance, resources)
    assert [r.partition_key for r in first.run_requests] == ["legacy"]
    (run / "results.rejudged.jsonl").write_text(json.dumps(row("t", status="failed")) + "\n")
    assert tick_run_folder_sensor(instance, resources, first.cursor).run_requests == []  # just written
    os.utime(run / "results.rejudged.jsonl", (old, old))
    again = tick_run_folder_sensor(instance, resources, first.cursor)
    assert [r.partition_key for r in again.run_requests] == ["legacy"]
    assert again.run_requests[0].tags["bench/trigger"] == "changed"
