"""Failures by class and stage (bench_pipeline/reports/view/failures.py)."""

from bench_pipeline.reports.view.failures import failures_view, ordered_keys, shown_stage


def test_ordered_keys_put_unlisted_keys_last():
    assert ordered_keys({"b": 1, "zz": 2, "aa": 3}, ("b", "c")) == ["b", "c", "aa", "zz"]


def test_shown_stage():
    assert shown_stage({"first_failure_stage": None, "agent_eligible": True, "success": False}) == "unknown"
    assert shown_stage({"first_failure_stage": "", "agent_eligible": False, "success": False}) == ""
    assert shown_stage({"first_failure_stage": "planning"}) == "planning"


def test_failures_view():
    metrics = {"failures": {"class": {"agent": 2, "odd": 1}, "stage": {"planning": 2}},
               "diagnostics": {"failure_stage_coverage": 0.5}}
    view = failures_view(metrics)
    assert view.class_items[0] == ("agent", 2) and view.class_items[-1] == ("odd", 1)
    assert (view.class_total, view.stage_total, view.stage_coverage) == (3, 2, "50.0%")
    assert view.class_counts_ok and view.stage_counts_ok
    empty = failures_view({})
    assert not empty.class_counts_ok and empty.class_total == 0 and empty.stage_coverage == "n/a"
