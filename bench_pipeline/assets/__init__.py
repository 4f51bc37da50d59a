"""Dagster assets: the per-run stages with their data-quality checks, and cross-run views
(the catalog and trends, the systems' repeats, the suite pages)."""

from .cross_run import run_catalog, suite_trends
from .run_stages import per_run_stages
from .systems_and_pages import systems_and_suite_pages

per_run_assets = [per_run_stages]
cross_run_assets = [run_catalog, suite_trends, systems_and_suite_pages]

__all__ = ["cross_run_assets", "per_run_assets"]
