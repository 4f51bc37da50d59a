"""Stage 3, task groups: one row per observed task (reference 3.7, aggregate.per_task).

Rows are grouped by task id and actual attempt number; a duplicated task/attempt keeps the
later line (3.7, R29). Each task row carries what the fixed-k metrics, first-success
metrics and ``aggregate.per_task`` need, so the run aggregates are simple sums over tasks.
"""

from __future__ import annotations

from typing import Iterable

from .stats import finite_mean, finite_sum, is_number
from .vocabulary import COST_FIELDS  # resources summed up to the first success


def deduplicate(attempts: Iterable[dict]) -> dict[str, dict[int, dict]]:
    """{task_id: {attempt: row}}; a later line overwrites an earlier one (3.7, R29)."""
    tasks: dict[str, dict[int, dict]] = {}
    for row in sorted(attempts, key=lambda r: r["line"]):
        tasks.setdefault(row["task_id"], {})[row["attempt"]] = row
    return tasks


def first_success(by_attempt: dict[int, dict]) -> tuple[int | None, dict[str, float | None]]:
    """First success within the continuous eligible prefix from attempt 1 (3.7).

    Walks attempts 1, 2, ... and stops at the first missing or ineligible attempt; the
    search may go beyond k. Returns the attempt number (None when no success) and, for each
    cost field, the sum through that success, None unless every value through it is numeric.
    """
    n = 1
    while n in by_attempt and by_attempt[n]["agent_eligible"]:
        if by_attempt[n]["success"] is True:
            costs: dict[str, float | None] = {}
            for f in COST_FIELDS:
                values = [by_attempt[a][f] for a in range(1, n + 1)]
                costs[f] = finite_sum(values) if all(is_number(v) for v in values) else None
            return n, costs
        n += 1
    return None, {f: None for f in COST_FIELDS}


def task_group(task_id: str, by_attempt: dict[int, dict], k: int | None) -> dict:
    """The task's row: fixed-k membership and outcomes, first success, per-task aggregate.

    The aggregate.per_task part (reference 2 "aggregate.per_task", R30, R31): attempts counts
    every deduplicated attempt, ineligible included; passed, failed, pass_rate,
    first_attempt_passed, best_quality, avg_quality and avg_wall_ms use the eligible ones.
    A task without an eligible attempt keeps its row, with its counts and nulls.
    """
    first = by_attempt.get(1)
    in_e1 = first is not None and bool(first["agent_eligible"])
    window = range(1, k + 1) if k else range(0)
    # The window is walked only as far as the task has attempts: k may be any size (R26).
    in_ek = bool(k) and all(a in by_attempt and by_attempt[a]["agent_eligible"] for a in window)
    window_rows = [by_attempt[a] for a in window] if in_ek else []
    successes_k = [r["success"] is True for r in window_rows]
    qualities_k = [r["quality_score"] for r in window_rows if is_number(r["quality_score"])]
    fs_attempt, fs_costs = first_success(by_attempt)

    ordered = [by_attempt[a] for a in sorted(by_attempt)]
    eligible = [r for r in ordered if r["agent_eligible"]]
    passed = sum(1 for r in eligible if r["success"] is True)
    failed = sum(1 for r in eligible if r["success"] is False)
    # R30: best/avg quality and avg_wall_ms over the eligible attempts with a number (an
    # ineligible timeout or judge error keeps its wall time out); null when none has one.
    qualities = [r["quality_score"] for r in eligible if is_number(r["quality_score"])]
    walls = [r["task_wall_ms"] for r in eligible if is_number(r["task_wall_ms"])]
    categories = [r["category"] for r in ordered if r["category"] is not None]

    return {
        "task_id": task_id,
        "category": categories[-1] if categories else None,
        "attempts": len(ordered),
        "max_attempt": max(by_attempt),
        "eligible_attempts": len(eligible),
        "passed": passed,
        "failed": failed,
        "pass_rate": passed / len(eligible) if eligible else None,  # R31
        "best_quality": max(qualities) if qualities else None,  # R30
        "avg_quality": finite_mean(qualities),
        "avg_wall_ms": finite_mean(walls),
        # Reference 2: the first *eligible* attempt after sorting, unlike pass_at_1 (R31).
        "first_attempt_passed": eligible[0]["success"] if eligible else None,
        "in_e1": in_e1,
        "attempt1_success": in_e1 and first["success"] is True,
        "in_ek": in_ek,
        "any_success_k": in_ek and any(successes_k),
        "all_success_k": in_ek and all(successes_k),
        "best_quality_k": max(qualities_k) if qualities_k else None,
        "first_success_attempt": fs_attempt,
        **{f"cost_to_first_success_{f}": fs_costs[f] for f in COST_FIELDS},
    }


def group_tasks(attempts: Iterable[dict], k: int | None) -> list[dict]:
    """One task row per observed unique task, in order of first appearance (3.7)."""
    return [task_group(task_id, by_attempt, k) for task_id, by_attempt in deduplicate(attempts).items()]
