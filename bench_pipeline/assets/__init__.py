"""Dagster assets: the per-run stages with their data-quality checks, and cross-run views."""

from .cross_run import run_catalog, suite_trends
from .run_stages import per_run_stages

per_run_assets = [per_run_stages]
cross_run_assets = [run_catalog, suite_trends]

__all__ = ["cross_run_assets", "per_run_assets"]
