"""Cross-run views: catalog rows and per-suite trends."""

from __future__ import annotations

import math

from bench_pipeline.catalog import catalog_frame, catalog_row, suite_trends
from bench_pipeline.pipeline import process_run

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


def test_catalog_counts_are_nullable_64_bit_and_a_huge_plan_fits(tmp_path):
    """A run planned beyond 64 bits of attempts (R26 has no bound) keeps its exact count in
    metrics.json; the catalog, a Parquet table, shows that count as unavailable."""
    import io

    import pandas as pd

    huge = {"status": "aborted", "planned": [{"task_id": t, "attempts": 9 * 10 ** 18} for t in "abc"]}
    metrics = process_run(make_run(tmp_path, [row("a")], run_id="huge", manifest=huge)).metrics
    assert metrics["coverage"]["missing_attempts"] == 27 * 10 ** 18 - 1
    plain = _metrics(tmp_path, "plain", ["passed", "failed"])
    catalog = catalog_frame([catalog_row("huge", metrics, {}), catalog_row("plain", plain, {})])
    assert str(catalog["missing_attempts"].dtype) == "Int64"
    assert catalog.set_index("run_id")["missing_attempts"].isna().to_dict() == {"huge": True, "plain": True}
    assert catalog.set_index("run_id")["attempts"].to_dict() == {"huge": 1, "plain": 2}
    buffer = io.BytesIO()
    catalog.to_parquet(buffer)
    assert pd.read_parquet(io.BytesIO(buffer.getvalue()))["attempts"].tolist() == catalog["attempts"].tolist()
