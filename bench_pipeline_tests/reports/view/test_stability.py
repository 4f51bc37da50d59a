"""Within-run stability in the reports (bench_pipeline/reports/view/stability.py)."""

from bench_pipeline.reports.view.stability import WITHIN_RUN_NOTE, has_repeats, stability_view


def rec(task_id, attempt, success, eligible=True):
    return {"task_id": task_id, "attempt": attempt, "line": attempt, "success": success, "agent_eligible": eligible,
            "evidence": {"dir": f"tasks/{task_id}/{attempt}"}}


def test_has_repeats():
    assert has_repeats(2) and not has_repeats(1) and not has_repeats(True) and not has_repeats(None)


def test_stability_view_with_a_flaky_task():
    tasks = {"A": {1: rec("A", 1, True), 2: rec("A", 2, False), 3: rec("A", 3, None, eligible=False)},
             "B": {1: rec("B", 1, True), 2: rec("B", 2, True)},
             "C": {1: rec("C", 1, False)}}
    view = stability_view(2, tasks, set(), "../run")
    assert (view["observed"], view["classified"], view["unclassified"]) == ("3", "2", "1")
    assert (view["stable_pass"], view["stable_fail"], view["flaky"]) == ("1", "0", "1")
    # A: 2 eligible attempts, 1 success: flip = 2 * 1 * 1 / (2 * 1) = 1; B flips 0; mean 0.5
    assert view["flip_rate"] == "50.0%"
    (flaky,) = view["flaky_tasks"]
    assert (flaky["task_id"], flaky["flip_text"], flaky["links_more"]) == ("A", "100.0%", 0)
    assert [(a["attempt"], a["outcome"], a["href"]) for a in flaky["links"]] == [
        (1, "success", "../run/tasks/A/1/"), (2, "failure", "../run/tasks/A/2/")]
    assert view["note"] == WITHIN_RUN_NOTE


def test_no_stability_without_repeats():
    assert stability_view(1, {"A": {1: rec("A", 1, True)}}, set(), None) is None
