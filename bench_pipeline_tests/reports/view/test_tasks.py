"""The task table (bench_pipeline/reports/view/tasks.py)."""

from bench_pipeline.reports.view.tasks import task_rows


def rec(attempt, status, eligible=True, wall=None, tokens=None, cost=None, category="c"):
    return {"attempt": attempt, "status": status, "agent_eligible": eligible, "task_wall_ms": wall,
            "total_tokens": tokens, "cost_usd": cost, "category": category}


def test_task_rows_join_per_task_and_count_the_attempts():
    tasks = {"B": {1: rec(1, "passed", wall=100, tokens=10, cost=0.5)},
             "A": {1: rec(1, "failed", wall=300, tokens=20), 3: rec(3, "skipped", eligible=False, wall=900, tokens=40)}}
    per_task = {"A": {"attempts": 2, "eligible_attempts": 1, "pass_rate": 0.0, "avg_wall_ms": 300}}
    a, b = task_rows(tasks, per_task, 3)
    assert (a["task_id"], a["attempts"], a["eligible"], a["avg_wall_ms"]) == ("A", 2, 1, 300)
    assert a["max_wall_ms"] == 300  # the ineligible attempt's 900 is left out, as in avg_wall_ms (R30)
    assert (a["mean_tokens"], a["sum_tokens"], a["n_tokens"], a["sum_cost"]) == (30, 60, 2, None)
    assert (a["has_nonpass"], a["n_passed_status"]) == (True, 0)
    assert a["strip"] == [("failed", "#1 failed"), ("missing", "#2 missing"), ("skipped", "#3 skipped, ineligible")]
    assert (b["attempts"], b["eligible"], b["sum_cost"], b["has_nonpass"]) == (1, None, 0.5, False)


def test_a_long_strip_is_cut():
    (row,) = task_rows({"A": {1: rec(1, "passed")}}, {}, 60)
    assert len(row["strip"]) == 51 and row["strip"][-1] == ("other", "#51-#60: see the attempt table")
