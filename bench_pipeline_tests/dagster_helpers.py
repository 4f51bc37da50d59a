"""Shared setup for tests that run the Dagster definitions on a temporary instance."""

from __future__ import annotations

from pathlib import Path

from bench_pipeline.resources import JsonIOManagerFactory, LangfuseResource, ParquetIOManagerFactory, PipelineSettings


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
