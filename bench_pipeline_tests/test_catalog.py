"""Cross-run views: catalog rows and per-suite trends."""

from __future__ import annotations

import math

from bench_pipeline.catalog import catalog_frame, catalog_row, suite_trends
from bench_pipeline.process import process_run

from .run_builder import make_run, row


def _metrics(tmp_path, run_id, outcomes):
    rows = [row(f"t{i}", status=s, metrics={"total_tokens": 100, "cost_usd": 0.5}) for i, s in enumerate(outcomes)]
    run = make_run(tmp_path, rows, run_id=run_id, suite={"name": "suite-a", "tasks": []})
    return process_run(run).metrics


def test_catalog_and_trend(tmp_path):
    first = _metrics(tmp_path, "r1", ["passed", "failed", "failed", "failed"])
    second = _metrics(tmp_path, "r2", ["passed", "passed", "passed", "skipped"])
    rows = [
        catalog_row("r2", second, {"model": {"name": "m"}, "started_at": "2026-11-02T00:00:00Z"}),
        catalog_row("r1", first, {"model": {"name": "m"}, "started_at": "2026-11-01T00:00:00Z"}),
    ]
    catalog = catalog_frame(rows)
    assert list(catalog["run_id"]) == ["r1", "r2"]
    r1 = catalog.iloc[0]
    assert r1["suite"] == "suite-a" and r1["model"] == "m"
    assert r1["pass_at_1"] == 0.25 and r1["attempts"] == 4
    assert r1["cost_usd_sum"] == 2.0 and r1["cost_usd_count"] == 4  # cost of eligible attempts with a value
    r2 = catalog.iloc[1]
    assert r2["pass_at_1"] == 1.0 and r2["coverage_pass_at_1"] == 0.75

    trend = suite_trends(catalog)
    assert list(trend["run_id"]) == ["r1", "r2"]
    assert math.isnan(trend.iloc[0]["pass_at_1_change"])
    assert trend.iloc[1]["pass_at_1_change"] == 0.75
    assert trend["intervals_overlap"].isna().iloc[0]
    # [0.046, 0.70] and [0.44, 1.0] overlap: the rise is not, by itself, evidence of improvement.
    assert bool(trend.iloc[1]["intervals_overlap"]) is True


def test_empty_catalog_has_the_trend_columns():
    trend = suite_trends(catalog_frame([]))
    assert trend.empty and "pass_at_1_change" in trend.columns
