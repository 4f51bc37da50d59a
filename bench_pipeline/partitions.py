"""The per-run partitions: one dynamic partition per run folder name, and ranges of them."""

from collections.abc import Callable, Mapping

import dagster as dg

runs_partitions = dg.DynamicPartitionsDefinition(name="benchmark_runs")

#: The run tags of a Dagster run over a range of partitions (as a backfill's runs carry them).
RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"
#: The run tag of a Dagster run of one partition (as the run folder sensor requests them).
PARTITION_TAG = "dagster/partition"
#: The job tag that tells the per-run job's runs (value ``per_run``) from the catalog
#: refresh's (``cross_run``; deploy/dagster.local.yaml's run queue limits those to one at a time).
KIND_TAG = "bench/kind"


def range_tags(batch: list[str]) -> dict[str, str]:
    """The tags of one Dagster run over the consecutive partitions ``batch``."""
    return {RANGE_START: batch[0], RANGE_END: batch[-1]}


def run_partition_keys(tags: Mapping[str, str], ordered: Callable[[], list[str]]) -> list[str] | None:
    """The partitions a Dagster run covers, from its tags: its one partition, or its range in
    the instance's partition order (``ordered()``, asked only for a range); None when its tags
    name none, or its range is not (or no longer) in that order."""
    if tags.get(PARTITION_TAG):
        return [tags[PARTITION_TAG]]
    start, end = tags.get(RANGE_START), tags.get(RANGE_END)
    if not start or not end:
        return None
    keys = ordered()
    if start not in keys or end not in keys or keys.index(start) > keys.index(end):
        return None
    return keys[keys.index(start):keys.index(end) + 1]


def partition_batches(ordered: list[str], wanted: set[str], size: int) -> list[list[str]]:
    """The ``wanted`` partition keys as consecutive stretches of ``ordered`` (the instance's
    partition order), at most ``size`` keys each: each is one partition range, processed in
    one Dagster run (a backfill splits its partitions the same way)."""
    batches: list[list[str]] = []
    current: list[str] = []
    for key in ordered:
        if key in wanted and len(current) < size:
            current.append(key)
            continue
        if current:
            batches.append(current)
        current = [key] if key in wanted else []
    if current:
        batches.append(current)
    return batches

