"""What was excluded and why (bench_pipeline/reports/view/exclusions.py)."""

from collections import Counter

from bench_pipeline.reports.view.exclusions import (
    class_sort_key,
    exclusion_reading,
    exclusion_rows,
    exclusions_view,
    status_sort_key,
    task_exclusions,
)


def test_exclusion_reading():
    assert exclusion_reading("passed", None, True) == "Counted; success."
    assert exclusion_reading("timeout", "agent", True) == "Counted as a failure: timeout with execution evidence."
    assert exclusion_reading("skipped", "skipped", False).startswith("Excluded: skipped")
    assert exclusion_reading("timeout", "unknown", False, derived_false=True).endswith(
        "; success derived false from status, raw unknown.")
    assert exclusion_reading("failed", None, None) == "Eligibility unknown."


def test_sort_keys_follow_the_vocabulary():
    assert status_sort_key("passed") < status_sort_key("failed") < status_sort_key("zzz")
    assert class_sort_key(None) < class_sort_key("agent") < class_sort_key("zzz")


def test_exclusion_rows_eligible_first_with_outcomes():
    groups = {("skipped", "skipped", False): Counter({"unknown": 2}),
              ("passed", None, True): Counter({"true": 3, "true_from_status": 1})}
    first, second = exclusion_rows(groups)
    assert (first["status"], first["count"], first["outcome"], first["counted"]) == (
        "passed", 4, "3 success, 1 success (from status; raw unknown)", "yes")
    assert (second["status"], second["eligible_text"], second["counted"]) == ("skipped", "no", "no")


def test_task_exclusions():
    tasks = {"A": {1: {"agent_eligible": True}, 2: {"agent_eligible": True}},
             "B": {2: {"agent_eligible": True}},
             "C": {1: {"agent_eligible": False, "status": "skipped", "failure_class": "skipped"},
                   2: {"agent_eligible": True}}}
    out = task_exclusions(tasks, 2)
    assert out["pass_at_1"] == [("B", "attempt 1 missing"), ("C", "attempt 1 ineligible (skipped/skipped)")]
    assert out["fixed_k"] == [("B", "attempt 1 missing"), ("C", "attempt 1 ineligible (skipped/skipped)")]
    many = task_exclusions({"A": {1: {"agent_eligible": True}}}, 30)
    assert many["fixed_k"][0][1].endswith("; 4 more attempts missing")  # 29 missing, 25 listed


def test_exclusions_view():
    facts = {"ineligible": 1, "n_attempts": 4, "eligible_unknown": 2, "exclusions": ["row"]}
    view = exclusions_view(facts, {"task_exclusions": {"pass_at_1": [], "fixed_k": []}})
    assert (view.ineligible, view.ineligible_pct, view.eligible_unknown, view.rows) == (1, "25.0%", 2, ["row"])
    assert exclusions_view({**facts, "n_attempts": 0}, {"task_exclusions": {}}).ineligible_pct == "n/a"
