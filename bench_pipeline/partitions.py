"""The per-run partitions: one dynamic partition per run folder name, and ranges of them."""

import dagster as dg

runs_partitions = dg.DynamicPartitionsDefinition(name="benchmark_runs")

#: The run tags of a Dagster run over a range of partitions (as a backfill's runs carry them).
RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"
#: The run tag of a Dagster run of one partition (as the run folder sensor requests them).
PARTITION_TAG = "dagster/partition"


def range_tags(batch: list[str]) -> dict[str, str]:
    """The tags of one Dagster run over the consecutive partitions ``batch``."""
    return {RANGE_START: batch[0], RANGE_END: batch[-1]}


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

