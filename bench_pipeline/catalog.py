"""Cross-run views: one catalog row per run and per-suite trends (pure functions)."""

from __future__ import annotations

import pandas as pd

from .attempt_metrics import COUNT_LIMIT
from .process import data_quality_findings

CATALOG_COLUMNS = [
    "run_id", "suite", "model", "started_at", "formula_version", "metrics_k",
    "pass_at_1", "pass_at_1_lower", "pass_at_1_upper",
    "pass_at_k", "pass_at_k_lower", "pass_at_k_upper",
    "pass_pow_k", "attempt_success_rate", "coverage_pass_at_1", "coverage_pass_at_k",
    "unique_tasks", "attempts", "eligible_attempts", "missing_attempts",
    "total_tokens_sum", "cost_usd_sum", "cost_usd_count", "data_quality_findings",
]
COUNT_COLUMNS = ["metrics_k", "unique_tasks", "attempts", "eligible_attempts", "missing_attempts",
                 "cost_usd_count", "data_quality_findings"]


def catalog_row(run_id: str, metrics: dict, manifest: dict) -> dict:
    """One run's catalog entry: identity, headline capability with intervals, coverage, cost.

    cost_usd_sum covers only attempts with a recorded cost (see cost_usd_count): it is not
    a complete bill (reference 2, "sum, mean").
    """
    cap, cov = metrics["capability"], metrics["coverage"]
    model = manifest.get("model")
    return {
        "run_id": run_id,
        "suite": metrics.get("suite"),
        "model": model.get("name") if isinstance(model, dict) else (model if isinstance(model, str) else None),
        "started_at": manifest.get("started_at") if isinstance(manifest.get("started_at"), str) else None,
        "formula_version": metrics.get("formula_version"),
        "metrics_k": cov["metrics_k"],
        "pass_at_1": cap["pass_at_1"]["value"],
        "pass_at_1_lower": cap["pass_at_1"]["ci95"]["lower"],
        "pass_at_1_upper": cap["pass_at_1"]["ci95"]["upper"],
        "pass_at_k": cap["pass_at_k"]["value"],
        "pass_at_k_lower": cap["pass_at_k"]["ci95"]["lower"],
        "pass_at_k_upper": cap["pass_at_k"]["ci95"]["upper"],
        "pass_pow_k": cap["pass_pow_k"]["value"],
        "attempt_success_rate": cap["attempt_success_rate"]["value"],
        "coverage_pass_at_1": cov["pass_at_1"],
        "coverage_pass_at_k": cov["pass_at_k"],
        "unique_tasks": cov["unique_tasks"],
        "attempts": cov["attempts"],
        "eligible_attempts": cov["agent_eligible_attempts"],
        "missing_attempts": cov["missing_attempts"],
        "total_tokens_sum": metrics["efficiency"]["total_tokens"]["sum"],
        "cost_usd_sum": metrics["efficiency"]["cost_usd"]["sum"],
        "cost_usd_count": metrics["efficiency"]["cost_usd"]["count"],
        "data_quality_findings": data_quality_findings(metrics),
    }


def catalog_frame(rows: list[dict]) -> pd.DataFrame:
    """The catalog, ordered by suite and start time."""
    frame = pd.DataFrame.from_records(rows, columns=CATALOG_COLUMNS)
    for column in COUNT_COLUMNS:  # nullable 64-bit counts; a larger one (a huge plan) is n/a here
        frame[column] = pd.array(
            [v if isinstance(v, int) and abs(v) <= COUNT_LIMIT else None for v in frame[column]], dtype="Int64")
    return frame.sort_values(["suite", "started_at", "run_id"], na_position="last").reset_index(drop=True)


def suite_trends(catalog: pd.DataFrame) -> pd.DataFrame:
    """Per suite, runs in start order with the change in pass_at_1 from the previous run.

    A change smaller than the intervals' width is not evidence of improvement (reference 2):
    ``intervals_overlap`` says whether the two runs' pass_at_1 intervals overlap.
    """
    columns = ["suite", "run_id", "started_at", "model", "formula_version", "pass_at_1",
               "pass_at_1_lower", "pass_at_1_upper", "pass_at_1_change", "intervals_overlap", "coverage_pass_at_1"]
    if catalog.empty:
        return pd.DataFrame(columns=columns)
    frames = []
    for _, group in catalog.groupby("suite", dropna=False, sort=True):
        g = group.sort_values(["started_at", "run_id"]).copy()
        previous = g[["pass_at_1", "pass_at_1_lower", "pass_at_1_upper"]].shift(1)
        g["pass_at_1_change"] = g["pass_at_1"] - previous["pass_at_1"]
        overlap = (g["pass_at_1_lower"] <= previous["pass_at_1_upper"]) & (previous["pass_at_1_lower"] <= g["pass_at_1_upper"])
        unknown = previous["pass_at_1"].isna() | g["pass_at_1"].isna()
        g["intervals_overlap"] = overlap.astype("boolean").mask(unknown)
        frames.append(g[columns])
    return pd.concat(frames, ignore_index=True)
