"""The IO managers: non-local storage by URL, and partition keys that cannot escape."""

from __future__ import annotations

import typing
from collections.abc import Mapping

import dagster as dg
import pandas as pd
import pytest
from upath import UPath

from bench_pipeline.assets import per_run_assets
from bench_pipeline.partitions import runs_partitions
from bench_pipeline.resources import safe_partition_key
from bench_pipeline.resources.io_managers import ParquetIOManager, is_mapping_type

from ..dagster_helpers import make_resources
from ..run_builder import make_run, row


@pytest.mark.parametrize("annotation", [dict, dict[str, pd.DataFrame], typing.Dict[str, int], typing.Dict,
                                        Mapping[str, dict], typing.Mapping[str, dict], typing.Mapping])
def test_mapping_annotations_ask_for_every_partition(annotation):
    assert is_mapping_type(annotation)


@pytest.mark.parametrize("annotation", [pd.DataFrame, list, list[dict], Mapping, typing.Any, None, str])
def test_other_annotations_ask_for_the_value(annotation):
    assert not is_mapping_type(annotation)


@pytest.mark.parametrize("key", ["..", "a/b", "../x", "", ".", "a\\b", "x\x00"])
def test_unsafe_partition_keys_are_refused(key):
    with pytest.raises(ValueError):
        safe_partition_key(key)
    with pytest.raises(ValueError):
        ParquetIOManager(UPath("/tmp/base")).make_safe_partition_path(UPath("/tmp/base"), key)


def test_storage_on_a_non_local_filesystem(tmp_path, monkeypatch):
    """An fsspec URL as storage base (memory:// stands in for s3:// or gs://)."""
    for var in ("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)
    resources = make_resources(tmp_path, storage_base="memory://bench/storage")
    make_run(tmp_path / "runs", [row("a"), row("b", status="failed")], run_id="mem-run")
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(runs_partitions.name, ["mem-run"])
    result = dg.materialize(per_run_assets, partition_key="mem-run", instance=instance, resources=resources)
    assert result.success
    stored = UPath("memory://bench/storage/attempt_metrics/mem-run.parquet")
    with stored.open("rb") as fh:
        frame = pd.read_parquet(fh)
    assert list(frame["task_id"]) == ["a", "b"]
    assert UPath("memory://bench/storage/capability_aggregates/mem-run.json").exists()


@pytest.mark.parametrize("value", [pd.DataFrame({"run_id": ["a", "b"], "pass_at_1": [0.5, 1.0]}), {"runs": ["a"]}])
def test_a_stored_value_is_replaced_whole_so_a_reader_never_sees_half_of_it(tmp_path, value):
    """A reader that opened the stored file before it is stored again (the next run's
    comparison, the catalog refresh, the UI) reads the whole old value, and the place then
    holds the whole new one: the file is replaced, never truncated and rewritten."""
    from bench_pipeline.resources.io_managers import load_partition, store_partition

    first = store_partition(str(tmp_path), "run_catalog", "r1", value)
    old_bytes = first.read_bytes()
    newer = (pd.concat([value, value], ignore_index=True) if isinstance(value, pd.DataFrame)
             else {"runs": ["a", "b", "c"]})
    with open(first, "rb") as reader:
        stored_again = store_partition(str(tmp_path), "run_catalog", "r1", newer)
        assert reader.read() == old_bytes
    assert stored_again == first
    loaded = load_partition(str(tmp_path), "run_catalog", "r1", first.suffix)
    if isinstance(value, pd.DataFrame):
        pd.testing.assert_frame_equal(loaded, newer)
    else:
        assert loaded == newer
    assert [p.name for p in first.parent.iterdir()] == [first.name]  # no temporary file left
