"""The comparison sensor on a test instance, as the daemon runs it: after a baseline is
processed again (re-judged), one request for its successor and an observation on
run_comparison saying it is behind and why; once processed, nothing behind, said once."""

from __future__ import annotations

import json

import dagster as dg
import pytest

from bench_pipeline.assets import per_run_assets
from bench_pipeline.generator import generate_runs
from bench_pipeline.partitions import range_tags, runs_partitions
from bench_pipeline.sensors import comparison_sensor

from ..dagster_helpers import make_resources


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    for var in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("BENCH_BASELINES", str(tmp_path / "baselines.json"))


def tick(instance, resources, cursor=None):
    with dg.build_sensor_context(instance=instance, cursor=cursor,
                                 resources={"settings": resources["settings"]}) as ctx:
        return comparison_sensor(ctx)


def test_a_rejudged_baseline_puts_exactly_its_successor_behind_until_it_is_processed(tmp_path):
    resources = make_resources(tmp_path)
    runs = generate_runs(tmp_path / "runs", runs=3, seed=5, tasks=4, repeats=2, history_messages=6,
                         edge_cases=False)
    keys = [p.name for p in runs]
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(runs_partitions.name, keys)
        assert dg.materialize(per_run_assets, instance=instance, resources=resources, tags=range_tags(keys)).success
        first = tick(instance, resources)
        assert first.run_requests == [] and first.cursor
        (event,) = first.asset_events  # the first tick says how many are behind: none
        assert event.metadata["comparisons_behind"].value == 0

        # the middle run is re-judged and processed again (the run folder sensor's work)
        results = runs[1] / "results.jsonl"
        rows = [json.loads(line) for line in results.read_text().splitlines()]
        for row in rows:
            row.update(status="failed", success=False, failure_class="agent")
        results.write_text("".join(json.dumps(r) + "\n" for r in rows))
        assert dg.materialize(per_run_assets, instance=instance, resources=resources, partition_key=keys[1]).success

        behind = tick(instance, resources, first.cursor)
        (request,) = behind.run_requests
        assert request.partition_key == keys[2] and request.tags["bench/trigger"] == "baseline_changed"
        assert request.run_key.startswith(f"compare:{keys[2]}<{keys[1]}@")
        (event,) = behind.asset_events
        assert event.metadata["comparisons_behind"].value == 1
        assert f"`{keys[2]}`: its baseline '{keys[1]}' was processed again since" in event.metadata["behind"].value
        again = tick(instance, resources, behind.cursor)  # the same state: the same request, no new observation
        assert [r.run_key for r in again.run_requests] == [request.run_key] and again.asset_events == []

        assert dg.materialize(per_run_assets, instance=instance, resources=resources, partition_key=keys[2]).success
        done = tick(instance, resources, behind.cursor)
        assert done.run_requests == []
        (event,) = done.asset_events
        assert event.metadata["comparisons_behind"].value == 0
        quiet = tick(instance, resources, done.cursor)
        assert quiet.run_requests == [] and quiet.asset_events == []


def test_a_state_that_comes_back_is_requested_again(tmp_path):
    """A pin added, removed and added again: the third state equals the first, yet its request
    has a run key of its own (Dagster launches a run key once), since it names the run's latest
    comparison too. A run still without a baseline, but for another reason, is requested as
    well: its reports say why it has none."""
    resources = make_resources(tmp_path)
    keys = [p.name for p in generate_runs(tmp_path / "runs", runs=3, seed=5, tasks=4, repeats=2, history_messages=6,
                                          edge_cases=False)]
    pins = tmp_path / "baselines.json"
    suite = json.loads((tmp_path / "runs" / keys[0] / "manifest.json").read_text())["suite"]["name"]

    def requested(instance) -> dict[str, str]:
        requests = tick(instance, resources).run_requests
        for request in requests:  # what the sensor's run does: the run compared again
            assert dg.materialize(per_run_assets, instance=instance, resources=resources,
                                  partition_key=request.partition_key).success
        assert tick(instance, resources).run_requests == []
        return {r.partition_key: r.run_key for r in requests}

    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(runs_partitions.name, keys)
        assert dg.materialize(per_run_assets, instance=instance, resources=resources, tags=range_tags(keys)).success
        pins.write_text(json.dumps({suite: keys[0]}))
        pinned = requested(instance)
        assert set(pinned) == {keys[0], keys[2]}  # keys[1] already has keys[0]
        assert pinned[keys[2]].startswith(f"compare:{keys[2]}<{keys[0]}@")
        assert pinned[keys[0]].startswith(f"compare:{keys[0]}<-@-#")
        pins.unlink()
        assert set(requested(instance)) == {keys[0], keys[2]}
        pins.write_text(json.dumps({suite: keys[0]}))
        again = requested(instance)
        assert set(again) == {keys[0], keys[2]}
        assert again[keys[2]].split("#")[0] == pinned[keys[2]].split("#")[0]  # the same state
        assert again[keys[2]] != pinned[keys[2]] and again[keys[0]] != pinned[keys[0]]  # requested anew


def test_a_comparison_recorded_during_a_tick_does_not_request_the_same_state_again(tmp_path, monkeypatch):
    """A run's comparison recorded while a tick is under way (the run of the tick before
    finishing): the tick requests nothing new. Its request, if any, has the key of the tick
    before, which Dagster does not launch twice; the run's latest comparison is read before
    the comparisons behind, so it never names the one recorded in between."""
    import importlib

    sensor_module = importlib.import_module("bench_pipeline.sensors.comparison_sensor")  # the module, not the sensor

    resources = make_resources(tmp_path)
    runs = generate_runs(tmp_path / "runs", runs=2, seed=5, tasks=4, repeats=2, history_messages=6, edge_cases=False)
    keys = [p.name for p in runs]
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(runs_partitions.name, keys)
        assert dg.materialize(per_run_assets, instance=instance, resources=resources, tags=range_tags(keys)).success
        results = runs[0] / "results.jsonl"  # the baseline re-judged and processed again
        results.write_text(results.read_text().replace('"passed"', '"failed"'))
        assert dg.materialize(per_run_assets, instance=instance, resources=resources, partition_key=keys[0]).success
        (first,) = tick(instance, resources).run_requests
        assert first.partition_key == keys[1]

        behind_now = sensor_module.behind_now

        def recorded_in_between(*args, **kwargs):
            found = behind_now(*args, **kwargs)  # read before the run of the first request records its comparison
            assert dg.materialize(per_run_assets, instance=instance, resources=resources, partition_key=keys[1]).success
            return found

        monkeypatch.setattr(sensor_module, "behind_now", recorded_in_between)
        during = tick(instance, resources).run_requests
        assert [r.run_key for r in during] == [first.run_key]  # not launched again: the same key
        monkeypatch.setattr(sensor_module, "behind_now", behind_now)
        assert tick(instance, resources).run_requests == []
