"""Time, work and cost (bench_pipeline/reports/view/resources.py)."""

from bench_pipeline.reports.view.resources import (
    EFFICIENCY_ROWS,
    distribution_rows,
    most_expensive_tasks,
    resources_view,
    slowest_tasks,
)
from bench_pipeline.vocabulary import EFFICIENCY_FIELDS


def test_distribution_rows_format_by_field():
    block = {"task_wall_ms": {"count": 2, "mean": 1500, "p50": 1500, "p90": 1900, "p95": 1950, "sum": 3000},
             "llm_calls": {"count": 0}}
    wall, calls = distribution_rows(block, ("task_wall_ms", "llm_calls"), ("count", "mean", "sum"))
    assert (wall["label"], wall["count"], wall["mean"], wall["sum"]) == ("Task wall time", "2", "1.5 s", "3.0 s")
    assert (calls["count"], calls["mean"], calls["sum"]) == ("0", "n/a", "n/a")
    assert set(EFFICIENCY_ROWS) == set(EFFICIENCY_FIELDS)


def task(task_id, wall=None, cost=None, tokens=None):
    return {"task_id": task_id, "avg_wall_ms": wall, "sum_cost": cost, "mean_tokens": tokens}


def test_rankings():
    rows = [task("a", 10, tokens=5), task("b", 30, tokens=7), task("c", None, tokens=9), task("d", 30)]
    assert [t["task_id"] for t in slowest_tasks(rows)] == ["b", "d", "a"]
    by_tokens, by_cost = most_expensive_tasks(rows)
    assert ([t["task_id"] for t in by_tokens], by_cost) == (["c", "b", "a"], False)
    by_money, by_cost = most_expensive_tasks([*rows, task("e", cost=0.5), task("f", cost=1.0)])
    assert ([t["task_id"] for t in by_money], by_cost) == (["f", "e"], True)
    assert len(slowest_tasks([task(str(i), i) for i in range(20)])) == 10


def test_resources_view():
    view = resources_view({}, [task("a", 5)])
    assert len(view.efficiency) == len(EFFICIENCY_ROWS) and view.efficiency[0]["count"] == "n/a"
    assert [t["task_id"] for t in view.slowest] == ["a"] and view.expensive == [] and not view.expensive_by_cost
    assert [r["field"] for r in view.cost_first] == ["task_wall_ms", "total_tokens", "cost_usd"]
