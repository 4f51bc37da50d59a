"""Shared setup for tests that run the Dagster definitions on a temporary instance."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from bench_pipeline.resources import JsonIOManagerFactory, LangfuseResource, ParquetIOManagerFactory, PipelineSettings
from bench_pipeline.sensors import run_folder_sensor


def make_resources(root: Path, quiet_seconds: int = 300, storage_base: str | None = None) -> dict:
    """Resources rooted in a temporary folder: runs/, reports/, storage/ (or ``storage_base``)."""
    (root / "runs").mkdir(parents=True, exist_ok=True)
    settings = PipelineSettings(
        runs_root=str(root / "runs"), output_root=str(root / "reports"),
        storage_base=storage_base or str(root / "storage"), quiet_seconds=quiet_seconds,
    )
    return {
        "settings": settings,
        "langfuse": LangfuseResource(),
        "parquet_io_manager": ParquetIOManagerFactory(settings=settings),
        "json_io_manager": JsonIOManagerFactory(settings=settings),
    }


def tick_run_folder_sensor(instance: dg.DagsterInstance, resources: dict, cursor: str | None = None):
    """Evaluate one tick of the run-folder sensor and apply its partition requests, as the daemon does."""
    with dg.build_sensor_context(instance=instance, cursor=cursor, resources={"settings": resources["settings"]}) as ctx:
        result = run_folder_sensor(ctx)
    for req in result.dynamic_partitions_requests or []:
        if isinstance(req, dg.AddDynamicPartitionsRequest):
            instance.add_dynamic_partitions(req.partitions_def_name, list(req.partition_keys))
        else:
            for key in req.partition_keys:
                instance.delete_dynamic_partition(req.partitions_def_name, key)
    return result
