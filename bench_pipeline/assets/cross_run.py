"""Cross-run assets: the run catalog and per-suite trends.

They depend on every run partition. Dagster computes no dependency-based staleness for an
asset with 100 or more upstream partitions, so they follow the runs by ``catalog_behind``:
the catalog sensor (and the main command) refresh them once new per-run materializations
exist and no per-run work is still under way, so a backfill of many runs ends in one
refresh, not one per partition. The daily schedule refreshes them as well.
"""


import json

import dagster as dg
import pandas as pd

from ..catalog import catalog_frame, catalog_row, suite_trends as build_trends
from ..resources import PipelineSettings
from .partition_work import STAGES

GROUP = "cross_run"


def _latest_storage_id(instance: dg.DagsterInstance, asset: str) -> int | None:
    records = instance.fetch_materializations(dg.AssetKey(asset), limit=1).records
    return records[0].storage_id if records else None


def catalog_behind(instance: dg.DagsterInstance) -> int | None:
    """The storage id of the newest per-run materialization when the catalog was made before
    it (or never), else None."""
    runs = _latest_storage_id(instance, STAGES[-1])  # the last stage: a run is done
    if runs is None:
        return None
    catalog = _latest_storage_id(instance, "run_catalog")
    return runs if catalog is None or catalog < runs else None


@dg.asset(
    group_name=GROUP,
    kinds={"python", "pandas"},
    io_manager_key="parquet_io_manager",
    ins={"capability_aggregates": dg.AssetIn(metadata={"allow_missing_partitions": True})},
)
def run_catalog(context: dg.AssetExecutionContext, settings: PipelineSettings, capability_aggregates: dict[str, dict]) -> pd.DataFrame:
    """One row per processed run: suite, model, formula version, headline capability with
    intervals, coverage and cost."""
    rows = []
    for run_id, metrics in sorted((capability_aggregates or {}).items()):
        try:
            manifest = json.loads((settings.run_dir(run_id) / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            manifest = {}
        rows.append(catalog_row(run_id, metrics, manifest if isinstance(manifest, dict) else {}))
    frame = catalog_frame(rows)
    context.add_output_metadata({
        "dagster/row_count": len(frame),
        "suites": frame["suite"].nunique(),
        "preview": dg.MetadataValue.md(frame[["run_id", "suite", "model", "pass_at_1", "pass_at_k", "attempts"]].head(20).to_markdown(index=False)),
    })
    return frame


@dg.asset(group_name=GROUP, kinds={"python", "pandas"}, io_manager_key="parquet_io_manager")
def suite_trends(context: dg.AssetExecutionContext, settings: PipelineSettings, run_catalog: pd.DataFrame) -> pd.DataFrame:
    """Per suite, runs in start order, each compared by task with the run before it
    (comparison.md): the verdict of every paired section and the release gate, read from
    the runs' output folders; the change in pass_at_1 beside them is a plain difference."""
    frame = build_trends(run_catalog, settings.output_root)
    shown = ["suite", "run_id", "compared_with", "paired_tasks", "first_attempt_verdict",
             "task_success_verdict", "gate", "pass_at_1", "pass_at_1_change"]
    context.add_output_metadata({
        "dagster/row_count": len(frame),
        "gate_failures": int((frame["gate"] == "fail").sum()) if len(frame) else 0,
        "preview": dg.MetadataValue.md(frame[shown].head(20).to_markdown(index=False)) if len(frame) else "no runs yet",
    })
    return frame
