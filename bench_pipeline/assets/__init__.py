"""Dagster assets: per-run stages, their data-quality checks, and cross-run views."""

from .checks import run_checks
from .cross_run import run_catalog, suite_trends
from .run_stages import (
    attempt_metrics,
    capability_aggregates,
    langfuse_publication,
    raw_results,
    reports,
    task_groups,
)

per_run_assets = [raw_results, attempt_metrics, task_groups, capability_aggregates, reports, langfuse_publication]
cross_run_assets = [run_catalog, suite_trends]

__all__ = ["cross_run_assets", "per_run_assets", "run_checks"]
