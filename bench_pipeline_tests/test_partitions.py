"""Ranges of run partitions: what one Dagster run of a backfill, the main command or the sensor covers."""

from __future__ import annotations

import pytest

from bench_pipeline.partitions import RANGE_END, RANGE_START, partition_batches, range_tags


@pytest.mark.parametrize(("ordered", "wanted", "size", "expected"), [
    (["a", "b", "c", "d"], {"a", "b", "c", "d"}, 20, [["a", "b", "c", "d"]]),
    (["a", "b", "c", "d"], {"a", "b", "d"}, 20, [["a", "b"], ["d"]]),  # c is not wanted: two ranges
    (["a", "b", "c", "d", "e"], {"a", "b", "c", "d", "e"}, 2, [["a", "b"], ["c", "d"], ["e"]]),
    (["a", "b"], set(), 20, []),
    (["a", "b", "c"], {"c"}, 1, [["c"]]),
])
def test_partition_batches_are_consecutive_stretches(ordered, wanted, size, expected):
    assert partition_batches(ordered, wanted, size) == expected


def test_range_tags():
    assert range_tags(["a", "b", "c"]) == {RANGE_START: "a", RANGE_END: "c"}
    assert range_tags(["a"]) == {RANGE_START: "a", RANGE_END: "a"}
