"""The per-run partitions: one dynamic partition per run folder name."""

import dagster as dg

runs_partitions = dg.DynamicPartitionsDefinition(name="benchmark_runs")
