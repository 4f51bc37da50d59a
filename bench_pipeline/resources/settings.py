"""Where runs are read from and outputs written to, configured from the environment.

Every setting has a default under one local folder (``BENCH_HOME``, default
``./.bench_data``), so `dagster dev` and the main command work with no configuration.

| variable | default | meaning |
| --- | --- | --- |
| BENCH_HOME | ./.bench_data | parent of the three folders below |
| BENCH_RUNS_ROOT | $BENCH_HOME/runs | folder holding one sub-folder per benchmark run |
| BENCH_OUTPUT_ROOT | $BENCH_HOME/reports | metrics.json, attempts.jsonl, summary.md, report.html per run |
| BENCH_STORAGE_BASE | $BENCH_HOME/storage | intermediate Parquet/JSON (a local path, s3://... or gs://...) |
| BENCH_QUIET_SECONDS | 300 | a legacy run (no manifest status) is ready after this quiet time |
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg


def bench_home() -> Path:
    return Path(os.environ.get("BENCH_HOME", ".bench_data")).absolute()


def default_runs_root() -> str:
    return os.environ.get("BENCH_RUNS_ROOT", str(bench_home() / "runs"))


def default_output_root() -> str:
    return os.environ.get("BENCH_OUTPUT_ROOT", str(bench_home() / "reports"))


def default_storage_base() -> str:
    return os.environ.get("BENCH_STORAGE_BASE", str(bench_home() / "storage"))


def default_quiet_seconds() -> int:
    return int(os.environ.get("BENCH_QUIET_SECONDS", "300"))


class PipelineSettings(dg.ConfigurableResource):
    """Folders the per-run assets read from and write to."""

    runs_root: str
    output_root: str
    storage_base: str
    quiet_seconds: int = 300

    def run_dir(self, run_id: str) -> Path:
        """The run folder of a partition key (a plain folder name, never a path)."""
        return Path(self.runs_root) / safe_partition_key(run_id)

    def output_dir(self, run_id: str) -> Path:
        return Path(self.output_root) / safe_partition_key(run_id)


def safe_partition_key(key: str) -> str:
    """A partition key usable as one path segment, else ValueError (run ids are folder names)."""
    if not key or key in (".", "..") or "/" in key or "\\" in key or "\x00" in key:
        raise ValueError(f"partition key {key!r} is not a plain run-folder name")
    return key


def default_settings(storage_base: str | None = None) -> PipelineSettings:
    """Settings read from the environment at definition load time (or an explicit storage
    base, the IO managers' too)."""
    return PipelineSettings(
        runs_root=default_runs_root(),
        output_root=default_output_root(),
        storage_base=storage_base or default_storage_base(),
        quiet_seconds=default_quiet_seconds(),
    )
