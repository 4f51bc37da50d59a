"""The Dagster code location: assets, checks, jobs, the sensor and the schedule.

Load it with `dg dev` (pyproject.toml's ``[tool.dg]``, what scripts/ui.sh runs) or from
workspace.yaml; every resource has a default under ./.bench_data (see resources/settings.py),
so no configuration is needed.
"""

from __future__ import annotations

import os

import dagster as dg

from .assets import cross_run_assets, per_run_assets
from .partitions import runs_partitions
from .resources import JsonIOManagerFactory, LangfuseResource, ParquetIOManagerFactory, default_settings
from .sensors import catalog_sensor, comparison_sensor, run_folder_sensor

process_run_job = dg.define_asset_job(
    "process_run",
    selection=dg.AssetSelection.assets(*per_run_assets),
    partitions_def=runs_partitions,
    description="Every per-run stage for one run partition. Backfill it over all partitions after a formula change.",
    tags={"bench/kind": "per_run"},
)

refresh_catalog_job = dg.define_asset_job(
    "refresh_catalog",
    selection=dg.AssetSelection.assets(*cross_run_assets),
    description="Rebuild the run catalog, per-suite trends, every system's repeats and the suite pages from "
                "every processed run.",
    tags={"bench/kind": "cross_run"},
)

daily_catalog_schedule = dg.ScheduleDefinition(
    name="daily_catalog_refresh",
    job=refresh_catalog_job,
    cron_schedule="0 6 * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Refreshes the cross-run catalog, trends, systems' repeats and suite pages every day at 06:00.",
)


def select_executor() -> dg.ExecutorDefinition:
    """The executor of every job, from BENCH_EXECUTOR (deploy/README.md).

    ``in_process`` (default): the per-run stages are one step, which runs its partitions in
    worker processes of its own (assets/partition_pool.py). ``multiprocess``: the step in a process
    of its own.
    ``k8s``: the step in a pod of its own (dagster-k8s, needs the K8sRunLauncher of the Helm chart).
    """
    choice = os.environ.get("BENCH_EXECUTOR", "in_process")
    if choice == "in_process":
        return dg.in_process_executor
    if choice == "multiprocess":
        return dg.multiprocess_executor
    if choice == "k8s":
        from dagster_k8s import k8s_job_executor  # installed by the `k8s` extra

        return k8s_job_executor
    raise ValueError(f"BENCH_EXECUTOR={choice!r}: expected in_process, multiprocess or k8s")


def build_resources(storage_base: str | None = None) -> dict:
    """Resources from the environment (or an explicit storage base for tests)."""
    settings = default_settings(storage_base)
    return {
        "settings": settings,
        "langfuse": LangfuseResource(),
        "parquet_io_manager": ParquetIOManagerFactory(settings=settings),
        "json_io_manager": JsonIOManagerFactory(settings=settings),
    }


defs = dg.Definitions(
    assets=[*per_run_assets, *cross_run_assets],
    jobs=[process_run_job, refresh_catalog_job],
    sensors=[run_folder_sensor, comparison_sensor, catalog_sensor],
    schedules=[daily_catalog_schedule],
    resources=build_resources(),
    executor=select_executor(),
)
