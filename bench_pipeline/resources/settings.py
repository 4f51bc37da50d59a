"""Where runs are read from and outputs written to, configured from the environment.

Every setting has a default under one local folder (``BENCH_HOME``, default
``./.bench_data``), so `dg dev` and the main command work with no configuration.

| variable | default | meaning |
| --- | --- | --- |
| BENCH_HOME | ./.bench_data | parent of the three folders below |
| BENCH_RUNS_ROOT | $BENCH_HOME/runs | folder holding one sub-folder per benchmark run |
| BENCH_OUTPUT_ROOT | $BENCH_HOME/reports | metrics.json, attempts.jsonl, summary.md, report.html per run |
| BENCH_STORAGE_BASE | $BENCH_HOME/storage | intermediate Parquet/JSON (a local path, s3://... or gs://...) |
| BENCH_QUIET_SECONDS | 300 | a legacy run (no manifest status) is ready after this quiet time |

Each of the three roots may be a local folder or a bucket URL (``s3://bucket/prefix``,
``gs://...``), alone or together; credentials and the endpoint come from the SDK's own
variables (object_store/). A run in a bucket is read through its local copy, outputs for
a bucket are written to a local staging folder and uploaded (``$BENCH_CACHE``, default
``$BENCH_HOME/cache``).
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from .. import object_store
from ..system_folders import RESERVED_NAMES


def bench_home() -> Path:
    return Path(os.environ.get("BENCH_HOME") or ".bench_data").absolute()


# A variable set to "" counts as unset (as in many shells' and service managers' configs): an
# empty path would be the current folder.
def default_runs_root() -> str:
    return os.environ.get("BENCH_RUNS_ROOT") or str(bench_home() / "runs")


def default_output_root() -> str:
    return os.environ.get("BENCH_OUTPUT_ROOT") or str(bench_home() / "reports")


def default_storage_base() -> str:
    return os.environ.get("BENCH_STORAGE_BASE") or str(bench_home() / "storage")


def default_quiet_seconds() -> int:
    return int(os.environ.get("BENCH_QUIET_SECONDS", "300"))


class PipelineSettings(dg.ConfigurableResource):
    """Folders the per-run assets read from and write to."""

    runs_root: str
    output_root: str
    storage_base: str
    quiet_seconds: int = 300

    def run_location(self, run_id: str) -> str:
        """The run folder of a partition key (a plain folder name, never a path): a local
        path or the run's URL in a bucket."""
        return object_store.join(self.runs_root, safe_partition_key(run_id))

    def output_location(self, run_id: str) -> str:
        """The run's output folder: a local path or its URL in a bucket."""
        return object_store.join(self.output_root, safe_partition_key(run_id))

    def run_dir(self, run_id: str) -> Path:
        """The local folder of a run: the run folder itself, or the local copy of a run in a
        bucket (object_store.mirror_path; it holds what was fetched, run_folders.fetch_run)."""
        location = self.run_location(run_id)
        return object_store.mirror_path(location) if object_store.is_remote(location) else Path(location)

    def output_dir(self, run_id: str) -> Path:
        """The local folder of a run's outputs: the output folder itself, or the local copy
        of one in a bucket (read-only: outputs for a bucket are staged and uploaded)."""
        location = self.output_location(run_id)
        return object_store.mirror_path(location) if object_store.is_remote(location) else Path(location)


#: The longest run id (folder name), in UTF-8 bytes, whose stored values fit a file system's
#: 255-byte file names: ``<run id>.parquet`` under the storage base.
RUN_ID_MAX_BYTES = 255 - len(".parquet")


def safe_partition_key(key: str) -> str:
    """A partition key usable as one path segment, else ValueError (run ids are folder names)."""
    if not key or key in (".", "..") or "/" in key or "\\" in key or "\x00" in key:
        raise ValueError(f"partition key {key!r} is not a plain run-folder name")
    if key in RESERVED_NAMES:
        raise ValueError(f"its name is the output root's folder of the cross-run outputs ({', '.join(RESERVED_NAMES)}: "
                         "suite pages, systems); rename the folder")
    if len(key.encode("utf-8", "surrogateescape")) > RUN_ID_MAX_BYTES:
        raise ValueError(f"its name is {len(key.encode('utf-8', 'surrogateescape'))} bytes long: the stored values of "
                         f"a run are files named <run id>.parquet, so a run id fits in at most {RUN_ID_MAX_BYTES} "
                         "bytes; rename the folder")
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
