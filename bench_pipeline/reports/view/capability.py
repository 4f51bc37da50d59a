"""The report's "Headline capability": the four pass metrics with their intervals, the
interval grouped by task, the estimators, oracle and first success, the reading cautions,
coverage and the status mix. Every number is metrics.json's, formatted."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...stats import is_number
from ...vocabulary import STATUSES
from ..charts import svg_interval_bar
from ..format import NA, dig, fmt_ci, fmt_int, fmt_mean, fmt_pct, fmt_quality, fmt_text

HEADLINE: tuple[tuple[str, str, str], ...] = (
    ("pass_at_1", "pass@1", "tasks"),
    ("pass_at_k", "pass@k", "tasks"),
    ("pass_pow_k", "pass^k", "tasks"),
    ("attempt_success_rate", "Attempt success", "attempts"),
)

HEADLINE_HELP = {
    "pass_at_1": "Tasks whose actual attempt 1 succeeded, among tasks with an eligible attempt 1.",
    "pass_at_k": "Tasks with at least one success in attempts 1..k, among tasks whose attempts 1..k all exist and are eligible.",
    "pass_pow_k": "Tasks whose attempts 1..k all succeeded (consistency), on the same complete-task denominator.",
    "attempt_success_rate": "Successful eligible attempts / eligible attempts, including attempts beyond k.",
}


def headline_rows(metrics: Mapping[str, Any], k: Any) -> list[dict[str, Any]]:
    """The four headline capability metrics, formatted."""
    rows = []
    for key, label, unit in HEADLINE:
        m = dig(metrics, "capability", key) or {}
        lower, upper = dig(m, "ci95", "lower"), dig(m, "ci95", "upper")
        if unit == "tasks":
            eligible, total = m.get("eligible_tasks"), m.get("total_tasks")
            coverage = dig(metrics, "coverage", key)
        else:
            eligible, total = m.get("eligible_attempts"), m.get("total_attempts")
            coverage = m.get("coverage")
        shown = label if key in ("pass_at_1", "attempt_success_rate") else f"{label} (k={fmt_text(k)})"
        grouped = None
        if key == "attempt_success_rate":  # comparison.md: beside the reference's Wilson interval
            u = dig(metrics, "uncertainty", "attempt_success_rate") or {}
            grouped = fmt_ci(dig(u, "ci95", "lower"), dig(u, "ci95", "upper"))
        rows.append({
            "key": key,
            "label": shown,
            "help": HEADLINE_HELP[key],
            "value": m.get("value"),
            "value_text": fmt_pct(m.get("value")),
            "ci_text": fmt_ci(lower, upper),
            "successes": fmt_int(m.get("successes")),
            "eligible": fmt_int(eligible),
            "total": fmt_int(total),
            "unit": unit,
            "coverage_text": fmt_pct(coverage),
            "svg": svg_interval_bar(m.get("value"), lower, upper, label=shown),
            "grouped_ci_text": grouped,
        })
    return rows


def uncertainty_view(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """uncertainty.attempt_success_rate, formatted: the interval with repeats of a task
    grouped (comparison.md), shown beside the reference's Wilson interval."""
    u = dig(metrics, "uncertainty", "attempt_success_rate")
    u = u if isinstance(u, dict) else {}
    wilson = dig(metrics, "capability", "attempt_success_rate", "ci95") or {}

    def se(value: Any) -> str:
        return f"{value * 100:.2f} pp" if is_number(value) else NA

    effect = u.get("design_effect")
    return {
        "value_text": fmt_pct(u.get("value")),
        "ci_text": fmt_ci(dig(u, "ci95", "lower"), dig(u, "ci95", "upper")),
        "wilson_ci_text": fmt_ci(dig(wilson, "lower"), dig(wilson, "upper")),
        "se_simple": se(u.get("se_simple")),
        "se_clustered": se(u.get("se_clustered")),
        "design_effect": f"{effect:.2f}" if is_number(effect) else NA,
        "tasks": fmt_int(u.get("tasks")),
        "attempts": fmt_int(u.get("attempts")),
    }


def estimator_rows(metrics: Mapping[str, Any]) -> list[dict[str, Any]]:
    """metrics.json's estimators, formatted, each beside the observed fixed-k value it is not."""
    rows = []
    for key, label, observed in (("pass_at_k_unbiased", "pass@k", "pass_at_k"),
                                 ("pass_pow_k_unbiased", "pass^k", "pass_pow_k")):
        e = dig(metrics, "estimators", key)
        e = e if isinstance(e, dict) else {}
        rows.append({
            "key": key,
            "label": f"{label} estimate (k={fmt_text(e.get('k'))})",
            "value_text": fmt_pct(e.get("value")),
            "tasks": fmt_int(e.get("tasks")),
            "observed_label": label,
            "observed_text": fmt_pct(dig(metrics, "capability", observed, "value")),
        })
    return rows


def cautions(k: Any, judge_disabled: bool, missing: Any) -> list[str]:
    """Interpretation cautions from the reference for the headline."""
    notes = []
    if k == 1:
        notes.append("k = 1: pass@1, pass@k and pass^k coincide on the same eligible task set; "
                     "a single attempt cannot demonstrate repeatability.")
    elif is_number(k):
        notes.append("A higher pass@k describes observed success with more opportunities, not better "
                     "first-attempt reliability; pass^k is the consistency measure. The headline's pass@k and "
                     "pass^k are observed fixed-k outcomes (attempts 1..k exactly), not estimates from "
                     "arbitrary combinations of attempts: those are the estimates further down.")
    else:
        notes.append("k is unknown (the manifest gives no metrics_k and no plan, and no attempt was observed), "
                     "so the fixed-k metrics cannot be interpreted.")
    notes.append("The Wilson interval of attempt success ignores within-task correlation: repeats of the "
                 "same task are correlated. The interval grouped by task (metrics.json uncertainty) accounts "
                 "for that; for release decisions, compare paired tasks against a baseline run.")
    notes.append("Do not infer significance from a small percentage change or from overlapping or "
                 "separate confidence intervals.")
    notes.append("Coverage = eligible / observed. Attempts entirely missing from the results escape these "
                 f"denominators (missing planned attempts: {fmt_int(missing)}).")
    notes.append("Unknown is not failure: attempts with an unknown outcome are excluded by eligibility, "
                 "never counted as 0.")
    if judge_disabled:
        notes.append("The judge was disabled: passing attempts get quality 1 without semantic rubric evaluation.")
    return notes


def coverage_rows(metrics: Mapping[str, Any], k: Any) -> list[tuple[str, str]]:
    """metrics.json's coverage, as (label, count) rows."""
    coverage = metrics.get("coverage") if isinstance(metrics.get("coverage"), dict) else {}
    return [
        ("Observed unique tasks", fmt_int(coverage.get("unique_tasks"))),
        ("Observed attempt rows", fmt_int(coverage.get("attempts"))),
        ("Agent-eligible attempts", fmt_int(coverage.get("agent_eligible_attempts"))),
        ("Invalid (ineligible) attempts", fmt_int(coverage.get("invalid_attempts"))),
        ("Planned attempts", fmt_int(coverage.get("planned_attempts"))),
        ("Missing planned attempts", fmt_int(coverage.get("missing_attempts"))),
        ("k (metrics_k)", fmt_int(k)),
        ("Attempt rows, as aggregate.tasks (the name kept for older readers of metrics.json)",
         fmt_int(dig(metrics, "aggregate", "tasks"))),
    ]


def status_items(status_counts: Mapping[str, int]) -> list[tuple[str, int]]:
    """(status, attempt rows) in the vocabulary's order, then unlisted statuses sorted."""
    return [(s, status_counts.get(s, 0)) for s in STATUSES] + [
        (s, c) for s, c in sorted(status_counts.items()) if s not in STATUSES]


@dataclass(frozen=True)
class CapabilityView:
    """The headline section, formatted."""

    headline: list[dict[str, Any]]
    uncertainty: dict[str, Any]
    estimators: list[dict[str, Any]]
    oracle: dict[str, str]
    first_success: dict[str, str]
    cautions: list[str]
    coverage: list[tuple[str, str]]
    status_items: list[tuple[str, int]]


def capability_view(metrics: Mapping[str, Any], manifest: Mapping[str, Any], k: Any,
                    status_counts: Counter) -> CapabilityView:
    """The headline section from metrics.json (and the attempt rows' status counts)."""
    cap = metrics.get("capability") if isinstance(metrics.get("capability"), dict) else {}
    oracle = cap.get("oracle_best_score_at_k") if isinstance(cap.get("oracle_best_score_at_k"), dict) else {}
    first = cap.get("first_success_attempt") if isinstance(cap.get("first_success_attempt"), dict) else {}
    coverage = metrics.get("coverage") if isinstance(metrics.get("coverage"), dict) else {}
    return CapabilityView(
        headline=headline_rows(metrics, k),
        uncertainty=uncertainty_view(metrics),
        estimators=estimator_rows(metrics),
        oracle={"value": fmt_quality(oracle.get("value")), "count": fmt_int(oracle.get("count")),
                "eligible_tasks": fmt_int(oracle.get("eligible_tasks"))},
        first_success={"mean": fmt_mean(first.get("mean")), "p50": fmt_mean(first.get("p50")),
                       "count": fmt_int(first.get("count"))},
        cautions=cautions(k, dig(manifest, "judge", "enabled") is False, coverage.get("missing_attempts")),
        coverage=coverage_rows(metrics, k),
        status_items=status_items(status_counts),
    )
