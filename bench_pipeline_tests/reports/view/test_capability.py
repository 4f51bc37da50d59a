"""The headline section (bench_pipeline/reports/view/capability.py)."""

from collections import Counter

from bench_pipeline.reports.view.capability import (
    capability_view,
    cautions,
    coverage_rows,
    estimator_rows,
    headline_rows,
    status_items,
    uncertainty_view,
)

METRICS = {
    "capability": {
        "pass_at_1": {"value": 0.5, "successes": 2, "eligible_tasks": 4, "total_tasks": 5,
                      "ci95": {"lower": 0.15, "upper": 0.85}},
        "attempt_success_rate": {"value": 0.6, "successes": 6, "eligible_attempts": 10, "total_attempts": 12,
                                 "coverage": 10 / 12, "ci95": {"lower": 0.3, "upper": 0.8}},
        "pass_at_k": {"value": 0.75, "successes": 3, "eligible_tasks": 4, "total_tasks": 5, "ci95": {}},
        "oracle_best_score_at_k": {"value": 0.875, "count": 4, "eligible_tasks": 4},
        "first_success_attempt": {"mean": 1.5, "p50": 1, "count": 4},
    },
    "coverage": {"pass_at_1": 0.8, "pass_at_k": 0.8, "unique_tasks": 5, "attempts": 12, "missing_attempts": 3},
    "uncertainty": {"attempt_success_rate": {"value": 0.6, "ci95": {"lower": 0.25, "upper": 0.95},
                                             "se_simple": 0.155, "se_clustered": 0.2, "design_effect": 1.665,
                                             "tasks": 5, "attempts": 10}},
    "estimators": {"pass_at_k_unbiased": {"value": 0.7, "tasks": 4, "k": 2}},
    "aggregate": {"tasks": 12},
}


def test_headline_rows():
    rows = {r["key"]: r for r in headline_rows(METRICS, 2)}
    p1 = rows["pass_at_1"]
    assert (p1["label"], p1["value_text"], p1["ci_text"], p1["successes"], p1["eligible"], p1["total"],
            p1["coverage_text"], p1["grouped_ci_text"]) == ("pass@1", "50.0%", "[15.0%, 85.0%]", "2", "4", "5",
                                                            "80.0%", None)
    assert rows["pass_at_k"]["label"] == "pass@k (k=2)" and rows["pass_at_k"]["ci_text"] == "n/a"
    asr = rows["attempt_success_rate"]
    assert (asr["unit"], asr["coverage_text"], asr["grouped_ci_text"]) == ("attempts", "83.3%", "[25.0%, 95.0%]")
    assert rows["pass_pow_k"]["value_text"] == "n/a"  # absent from metrics.json


def test_uncertainty_and_estimators():
    u = uncertainty_view(METRICS)
    assert (u["ci_text"], u["wilson_ci_text"], u["se_simple"], u["se_clustered"], u["design_effect"]) == (
        "[25.0%, 95.0%]", "[30.0%, 80.0%]", "15.50 pp", "20.00 pp", "1.67")
    at_k, pow_k = estimator_rows(METRICS)
    assert (at_k["label"], at_k["value_text"], at_k["tasks"], at_k["observed_text"]) == (
        "pass@k estimate (k=2)", "70.0%", "4", "75.0%")
    assert (pow_k["label"], pow_k["value_text"]) == ("pass^k estimate (k=n/a)", "n/a")


def test_cautions_depend_on_k_and_the_judge():
    assert cautions(1, False, 0)[0].startswith("k = 1: pass@1, pass@k and pass^k coincide")
    assert cautions(3, False, 0)[0].startswith("A higher pass@k")
    # the fixed-k caution reads the headline, and points to the estimates as something else
    assert ("The headline's pass@k and pass^k are observed fixed-k outcomes (attempts 1..k exactly), not estimates "
            "from arbitrary combinations of attempts: those are the estimates further down.") in cautions(3, False, 0)[0]
    assert cautions(None, False, 0)[0].startswith("k is unknown (the manifest gives no metrics_k and no plan")
    assert "(missing planned attempts: 7)." in cautions(3, False, 7)[3]
    assert cautions(3, True, 0)[-1].startswith("The judge was disabled")
    assert len(cautions(3, False, 0)) == 5


def test_coverage_and_status_items():
    rows = dict(coverage_rows(METRICS, 2))
    assert (rows["Observed unique tasks"], rows["Planned attempts"], rows["k (metrics_k)"]) == ("5", "n/a", "2")
    items = status_items(Counter({"failed": 2, "passed": 3, "weird": 1}))
    assert items[:2] == [("passed", 3), ("failed", 2)] and items[-1] == ("weird", 1)
    assert all(count == 0 for _, count in items[2:-1])


def test_capability_view_assembles_the_section():
    view = capability_view(METRICS, {"judge": {"enabled": False}}, 2, Counter({"passed": 1}))
    assert view.oracle == {"value": "0.88", "count": "4", "eligible_tasks": "4"}
    assert view.first_success == {"mean": "1.5", "p50": "1", "count": "4"}
    assert view.cautions[-1].startswith("The judge was disabled")
    assert len(view.headline) == 4 and view.status_items[0] == ("passed", 1)
