"""Shared setup for tests that run the Dagster definitions on a temporary instance."""

from __future__ import annotations

from pathlib import Path

from bench_pipeline.resources import JsonIOManagerFactory, LangfuseResource, ParquetIOManagerFactory, PipelineSettings


def make_resources(root: Path, quiet_seconds: int = 300) -> dict:
    """Resources rooted in a temporary folder: runs/, reports/, storage/."""
    (root / "runs").mkdir(parents=True, exist_ok=True)
    return {
        "settings": PipelineSettings(
            runs_root=str(root / "runs"), output_root=str(root / "reports"), quiet_seconds=quiet_seconds
        ),
        "langfuse": LangfuseResource(),
        "parquet_io_manager": ParquetIOManagerFactory(base_path=str(root / "storage")),
        "json_io_manager": JsonIOManagerFactory(base_path=str(root / "storage")),
    }
