"""The report's task table: one row per observed task (its attempts after de-duplication,
R29) joined with metrics.json's aggregate.per_task, with the strip of its attempts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...stats import finite_mean
from ...task_groups import ByAttempt, is_eligible
from ..format import num, status_kind
from .limits import STRIP_CAP


def task_rows(tasks: Mapping[str, ByAttempt], per_task: Mapping[str, Any],
              k: Any) -> list[dict[str, Any]]:
    """One row per observed task (deduplicated attempts) joined with aggregate.per_task."""
    rows = []
    for task_id in sorted(tasks):
        by_attempt = tasks[task_id]
        recs = [by_attempt[n] for n in sorted(by_attempt)]
        agg = per_task.get(task_id) if isinstance(per_task, dict) else None
        agg = agg if isinstance(agg, dict) else {}
        walls, tokens, costs = [], [], []
        category, n_passed = None, 0
        for r in recs:  # one pass over the task's attempts
            # The max beside per_task.avg_wall_ms is over the same eligible attempts (R30).
            if is_eligible(r) and (v := num(r.get("task_wall_ms"))) is not None:
                walls.append(v)
            if (v := num(r.get("total_tokens"))) is not None:
                tokens.append(v)
            if (v := num(r.get("cost_usd"))) is not None:
                costs.append(v)
            if category is None:
                category = r.get("category")
            if r.get("status") == "passed":
                n_passed += 1
        max_attempt = max(by_attempt) if by_attempt else 0
        span = max(max_attempt, k if isinstance(k, int) else 0)
        strip = []
        for n in range(1, min(span, STRIP_CAP) + 1):
            r = by_attempt.get(n)
            if r is None:
                strip.append(("missing", f"#{n} missing"))
            else:
                status = str(r.get("status"))
                elig = "" if is_eligible(r) else ", ineligible"
                strip.append((status_kind(status), f"#{n} {status}{elig}"))
        if span > STRIP_CAP:
            strip.append(("other", f"#{STRIP_CAP + 1}-#{span}: see the attempt table"))
        rows.append({
            "task_id": task_id,
            "category": category,
            "records": recs,
            "strip": strip,
            "attempts": agg.get("attempts", len(recs)),
            "eligible": agg.get("eligible_attempts"),
            "passed": agg.get("passed"),
            "failed": agg.get("failed"),
            "pass_rate": agg.get("pass_rate"),
            "best_quality": agg.get("best_quality"),
            "avg_quality": agg.get("avg_quality"),
            "avg_wall_ms": agg.get("avg_wall_ms"),
            "max_wall_ms": max(walls) if walls else None,
            "mean_tokens": finite_mean(tokens),
            "sum_tokens": sum(tokens) if tokens else None,
            "n_tokens": len(tokens),
            "sum_cost": sum(costs) if costs else None,
            "has_nonpass": n_passed < len(recs),
            "n_passed_status": n_passed,
        })
    return rows


@dataclass(frozen=True)
class TasksView:
    """The task table's rows (``rows``), the task groups they were made from (``by_id``:
    {task_id: {attempt: record}}) and the lines whose artifact_dir was refused."""

    rows: list[dict[str, Any]]
    by_id: Mapping[str, ByAttempt]
    unsafe_lines: set[int]
