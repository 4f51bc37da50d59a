"""Ranges of run partitions: what one Dagster run of a backfill, the main command or the sensor covers."""

from __future__ import annotations

import pytest

from bench_pipeline.partitions import (
    PARTITION_TAG,
    RANGE_END,
    RANGE_START,
    partition_batches,
    range_tags,
    run_partition_keys,
)


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


ORDER = ["r1", "r2", "r3", "r4"]


@pytest.mark.parametrize(("tags", "expected"), [
    ({PARTITION_TAG: "r9"}, ["r9"]),  # one partition: the order is not asked
    ({RANGE_START: "r2", RANGE_END: "r4"}, ["r2", "r3", "r4"]),
    ({RANGE_START: "r3", RANGE_END: "r3"}, ["r3"]),
    ({RANGE_START: "r4", RANGE_END: "r2"}, None),  # backwards
    ({RANGE_START: "r2", RANGE_END: "r0"}, None),  # an end no longer a partition
    ({RANGE_START: "r2"}, None),
    ({}, None),
])
def test_run_partition_keys_from_a_runs_tags(tags, expected):
    asked = []

    def ordered():
        asked.append(True)
        return ORDER

    assert run_partition_keys(tags, ordered) == expected
    assert asked == ([True] if RANGE_START in tags and RANGE_END in tags else [])
