"""The catalog sensor on a persistent test instance: after a Dagster run over several
partitions (as a backfill makes them), one refresh request; the refresh materializes the
catalog, the systems' repeats and the suite pages once each; then nothing more to do."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from bench_pipeline.assets import cross_run_assets, per_run_assets
from bench_pipeline.definitions import refresh_catalog_job
from bench_pipeline.generator import generate_runs
from bench_pipeline.partitions import range_tags, runs_partitions
from bench_pipeline.sensors import catalog_sensor

from ..dagster_helpers import make_resources

REFRESHED = ("run_catalog", "suite_trends", "system_repeats", "suite_pages")


@pytest.fixture(autouse=True)
def _no_langfuse(monkeypatch):
    for var in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)


def tick(instance):
    with dg.build_sensor_context(instance=instance) as ctx:
        return catalog_sensor(ctx)


def materializations(instance, asset: str) -> int:
    return len(instance.fetch_materializations(dg.AssetKey(asset), limit=100).records)


def test_a_backfill_run_then_one_refresh_makes_the_systems_and_pages_once(tmp_path, monkeypatch):
    pages = []

    def record(out_dir, suite, runs, systems, systems_total=None, runs_total=None):
        pages.append((suite, [(r["run_id"], r["baseline"], r["gate"]) for r in runs], [s.slug for s in systems]))
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / "index.html").write_text("page")
        return Path(out_dir) / "index.html"

    monkeypatch.setattr("bench_pipeline.assets.suite_pages.write_suite_page", record)
    resources = make_resources(tmp_path)
    keys = sorted(p.name for p in generate_runs(tmp_path / "runs", runs=4, seed=3, tasks=5, repeats=2,
                                                history_messages=8, edge_cases=False, systems=2))
    refresh = dg.Definitions(assets=[*per_run_assets, *cross_run_assets], jobs=[refresh_catalog_job],
                             resources=resources).resolve_job_def("refresh_catalog")
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(runs_partitions.name, keys)
        skipped = tick(instance)
        assert isinstance(skipped, dg.SkipReason)  # nothing materialized yet
        assert dg.materialize(per_run_assets, instance=instance, resources=resources, tags=range_tags(keys)).success

        request = tick(instance)
        assert isinstance(request, dg.RunRequest) and request.run_key.startswith("refresh-after-")
        assert tick(instance).run_key == request.run_key  # the same key until the refresh ran
        result = refresh.execute_in_process(instance=instance, tags={"dagster/run_key": request.run_key})
        assert result.success
        assert {a: materializations(instance, a) for a in REFRESHED} == {a: 1 for a in REFRESHED}

        again = tick(instance)
        assert isinstance(again, dg.SkipReason) and "up to date" in again.skip_message

    systems = sorted((tmp_path / "reports" / "_systems").glob("*/repeats.json"))
    assert len(systems) == 2  # two systems, two runs each
    assert sorted(len(json.loads(p.read_text())["runs"]) for p in systems) == [2, 2]
    (page,) = pages  # one suite: one page, with both systems
    assert sorted(r[0] for r in page[1]) == keys and sorted(page[2]) == sorted(p.parent.name for p in systems)
    # each run's gate against its baseline (the run before it in the suite), read from its comparison.json
    first, *later = page[1]
    assert first[1:] == (None, None)
    assert [r[1] for r in later] == [r[0] for r in page[1][:-1]] and {r[2] for r in later} <= {"pass", "fail", "inconclusive"}


def test_a_run_a_killed_process_left_under_way_is_named_while_it_runs_and_then_ended(tmp_path):
    """The catalog sensor waits while a run is under way, naming it; a run whose process was
    killed, which would be waited for for ever on the local instance, it marks failed
    (orphaned_runs.py) and requests the refresh."""
    from ..support.sleeping_run import killed, local_home, start_sleeping_run, wait_until_started

    resources = make_resources(tmp_path)
    keys = sorted(p.name for p in generate_runs(tmp_path / "runs", runs=2, seed=4, tasks=3, repeats=1,
                                                history_messages=4, edge_cases=False))
    home = local_home(tmp_path / "home")
    proc = start_sleeping_run(home)
    try:
        with dg.DagsterInstance.from_config(str(home)) as instance:
            instance.add_dynamic_partitions(runs_partitions.name, keys)
            assert dg.materialize(per_run_assets, instance=instance, resources=resources, tags=range_tags(keys)).success
            (left,) = wait_until_started(instance, 1)
            waiting = tick(instance)
            assert waiting.skip_message == ("new runs materialized; waiting for 1 queued or running run(s) to finish: "
                                            f"{left.run_id} (STARTED)")
            assert instance.get_run_by_id(left.run_id).status == dg.DagsterRunStatus.STARTED  # its process runs
            killed(proc)

            request = tick(instance)
            assert isinstance(request, dg.RunRequest) and request.run_key.startswith("refresh-after-")
            assert instance.get_run_by_id(left.run_id).status == dg.DagsterRunStatus.FAILURE
            (failure,) = instance.get_records_for_run(left.run_id, of_type=dg.DagsterEventType.RUN_FAILURE).records
            assert f"its process (pid {proc.pid}) is no longer running" in failure.event_log_entry.message
    finally:
        if proc.poll() is None:
            killed(proc)
