"""What the catalog refresh keeps between refreshes (assets/refresh_state.py): each run's
latest data version followed through the event log after a cursor gives what one query over
every partition gives, and reads only what came after the cursor."""

from __future__ import annotations

import random

import dagster as dg

from bench_pipeline.assets import refresh_state
from bench_pipeline.assets.refresh_state import load_state, run_versions
from bench_pipeline.dagster_internals import DATA_VERSION_TAG, latest_tags_by_partition, provenance_tags

ASSET = "capability_aggregates"
KEY = dg.AssetKey(ASSET)


def _materialize(instance: dg.DagsterInstance, partition: str, version: str | None) -> None:
    tags = provenance_tags("7", version, None) if version is not None else {}
    instance.report_runless_asset_event(dg.AssetMaterialization(KEY, partition=partition, tags=tags))


def _from_one_query(instance: dg.DagsterInstance, keys: list[str]) -> dict[str, str | None]:
    latest = latest_tags_by_partition(instance, KEY, [DATA_VERSION_TAG], keys)
    return {run: (latest.get(run) or {}).get(DATA_VERSION_TAG) for run in keys}


def test_versions_after_the_cursor_are_the_latest_of_each_run(tmp_path):
    base = str(tmp_path)
    with dg.instance_for_test() as instance:
        _materialize(instance, "run-1", "a")
        _materialize(instance, "run-2", "b")
        assert run_versions(instance, ASSET, ["run-1", "run-2", "run-3"], base) == {
            "run-1": "a", "run-2": "b", "run-3": None}
        first = load_state(base, f"versions_{ASSET}")
        _materialize(instance, "run-1", "c")  # re-processed
        _materialize(instance, "run-3", "d")  # new
        _materialize(instance, "run-2", None)  # its latest without a data version: unknown again
        assert run_versions(instance, ASSET, ["run-1", "run-2", "run-3"], base) == {
            "run-1": "c", "run-2": None, "run-3": "d"}
        kept = load_state(base, f"versions_{ASSET}")
    assert kept["cursor"] > first["cursor"]
    assert kept["versions"] == {"run-1": "c", "run-2": None, "run-3": "d"}


def test_a_deleted_run_keeps_its_version_for_when_its_key_comes_back(tmp_path):
    """One query over the asset reads a re-added partition's old materializations too: so does
    the cursor, which keeps every partition ever materialized and answers for the asked ones."""
    base = str(tmp_path)
    with dg.instance_for_test() as instance:
        _materialize(instance, "gone", "x")
        assert run_versions(instance, ASSET, ["run-1"], base) == {"run-1": None}
        assert run_versions(instance, ASSET, ["gone", "run-1"], base) == _from_one_query(instance, ["gone", "run-1"])
        assert run_versions(instance, ASSET, ["gone"], base) == {"gone": "x"}


def test_many_materializations_since_the_cursor_are_read_page_by_page(tmp_path, monkeypatch):
    base = str(tmp_path)
    monkeypatch.setattr(refresh_state, "RECORDS_PER_REQUEST", 3)
    with dg.instance_for_test() as instance:
        _materialize(instance, "run-0", "v0")
        run_versions(instance, ASSET, ["run-0"], base)
        for i in range(10):
            _materialize(instance, f"run-{i % 4}", f"w{i}")
        keys = [f"run-{i}" for i in range(5)]
        assert run_versions(instance, ASSET, keys, base) == _from_one_query(instance, keys) == {
            "run-0": "w8", "run-1": "w9", "run-2": "w6", "run-3": "w7", "run-4": None}


def test_random_histories_give_what_one_query_gives(tmp_path):
    """After every step of random sequences of materializations (new runs, re-processed ones,
    latest ones without a version), the kept versions equal one query's; kept state from
    another refresh version is not used."""
    rng = random.Random(32)
    for trial in range(5):
        base = str(tmp_path / f"trial-{trial}")
        with dg.instance_for_test() as instance:
            for _ in range(12):
                for _ in range(rng.randint(0, 4)):
                    _materialize(instance, f"run-{rng.randint(0, 6)}", rng.choice(["a", "b", "c", None]))
                keys = [f"run-{i}" for i in rng.sample(range(8), rng.randint(1, 8))]
                assert run_versions(instance, ASSET, keys, base) == _from_one_query(instance, keys)


def test_state_of_another_refresh_version_is_read_again_from_the_event_log(tmp_path, monkeypatch):
    base = str(tmp_path)
    with dg.instance_for_test() as instance:
        _materialize(instance, "run-1", "a")
        run_versions(instance, ASSET, ["run-1"], base)
        _materialize(instance, "run-1", "b")
        monkeypatch.setattr(refresh_state, "REFRESH_VERSION", "another")
        assert load_state(base, f"versions_{ASSET}") == {}
        assert run_versions(instance, ASSET, ["run-1"], base) == {"run-1": "b"}
        assert load_state(base, f"versions_{ASSET}")["versions"] == {"run-1": "b"}


def test_a_wiped_asset_is_read_again_from_the_event_log(tmp_path):
    """``dagster asset wipe`` makes Dagster ignore the asset's earlier materializations: the
    kept versions are dropped with them, as one query gives."""
    base = str(tmp_path)
    with dg.instance_for_test() as instance:
        _materialize(instance, "run-1", "a")
        _materialize(instance, "run-2", "b")
        assert run_versions(instance, ASSET, ["run-1", "run-2"], base) == {"run-1": "a", "run-2": "b"}
        instance.wipe_assets([KEY])
        _materialize(instance, "run-2", "c")
        assert run_versions(instance, ASSET, ["run-1", "run-2"], base) == _from_one_query(
            instance, ["run-1", "run-2"]) == {"run-1": None, "run-2": "c"}
        assert load_state(base, f"versions_{ASSET}")["wiped"] is not None


def test_kept_columns_come_back_as_saved_and_anything_else_is_a_refresh_from_scratch(tmp_path):
    """save_columns / load_columns: the columns as kept; None (the refresh starts from scratch)
    for other columns, a column that is not a list, or columns of different lengths."""
    base = str(tmp_path)
    names = ("run_id", "system", "has_frame")
    kept = {"run_id": ["a", "b"], "system": ['["s","m"]', None], "has_frame": [True, False]}
    refresh_state.save_columns(base, "probe", kept)
    assert refresh_state.load_columns(base, "probe", names) == kept
    assert refresh_state.load_columns(base, "probe", ("run_id", "system")) is None
    assert refresh_state.load_columns(base, "missing", names) is None
    refresh_state.save_columns(base, "probe", {**kept, "system": ['["s","m"]']})
    assert refresh_state.load_columns(base, "probe", names) is None
    refresh_state.save_columns(base, "probe", {**kept, "has_frame": "yes"})
    assert refresh_state.load_columns(base, "probe", names) is None
