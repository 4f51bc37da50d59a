"""Stage 3, task groups: one row per observed task (reference 3.7, aggregate.per_task).

Rows are grouped by task id and actual attempt number; a duplicated task/attempt keeps the
later line (3.7, R29). Each task row carries what the fixed-k metrics, first-success
metrics and ``aggregate.per_task`` need, so the run aggregates are simple sums over tasks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from .stats import finite_mean, finite_sum, is_number
from .vocabulary import COST_FIELDS  # resources summed up to the first success

#: A task's attempts by actual attempt number, after de-duplication (3.7, R29).
ByAttempt = Mapping[int, Mapping[str, Any]]


def is_eligible(row: Mapping[str, Any]) -> bool:
    """The attempt counts in capability denominators: its agent_eligible, after the legacy
    derivation and inference (reference 2 "legacy compatibility", R28), is true. After that
    derivation the value is always a Boolean; anything else (a hand-edited attempts.jsonl)
    is not eligible."""
    return row.get("agent_eligible") is True


def in_e1(by_attempt: ByAttempt) -> bool:
    """The task is in E1: its attempt 1 is present and eligible (3.7)."""
    first = by_attempt.get(1)
    return first is not None and is_eligible(first)


def ek_window(by_attempt: ByAttempt, k: int | None) -> list[Mapping[str, Any]] | None:
    """Attempts 1..k when the task is in Ek (every one of them present and eligible, 3.7),
    else None (also when k is unknown). The window is walked only when the task has at
    least k attempts: k may be any size (R26)."""
    if not k or len(by_attempt) < k:
        return None
    window = [by_attempt.get(a) for a in range(1, k + 1)]
    return window if all(r is not None and is_eligible(r) for r in window) else None


def eligible_attempts(by_attempt: ByAttempt) -> list[Mapping[str, Any]]:
    """The task's eligible attempts, in attempt order, every attempt number (beyond k too)."""
    return [by_attempt[a] for a in sorted(by_attempt) if is_eligible(by_attempt[a])]


def success_fraction(eligible: Sequence[Mapping[str, Any]]) -> Fraction | None:
    """A task's pass_rate (reference 2 "aggregate.per_task", R31), comparison.md's
    task_success value: successful / all of its eligible attempts, as an exact fraction;
    None without one."""
    if not eligible:
        return None
    return Fraction(sum(1 for r in eligible if r["success"] is True), len(eligible))


def success_rate(eligible: Sequence[Mapping[str, Any]]) -> float | None:
    """``success_fraction`` as a float (correctly rounded)."""
    fraction = success_fraction(eligible)
    return None if fraction is None else float(fraction)


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
    while n in by_attempt and is_eligible(by_attempt[n]):
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
    first_in_e1 = in_e1(by_attempt)
    window = ek_window(by_attempt, k)
    window_rows = window if window is not None else []
    successes_k = [r["success"] is True for r in window_rows]
    qualities_k = [r["quality_score"] for r in window_rows if is_number(r["quality_score"])]
    fs_attempt, fs_costs = first_success(by_attempt)

    ordered = [by_attempt[a] for a in sorted(by_attempt)]
    eligible = [r for r in ordered if is_eligible(r)]
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
        "pass_rate": success_rate(eligible),  # R31
        "best_quality": max(qualities) if qualities else None,  # R30
        "avg_quality": finite_mean(qualities),
        "avg_wall_ms": finite_mean(walls),
        # Reference 2: the first *eligible* attempt after sorting, unlike pass_at_1 (R31).
        "first_attempt_passed": eligible[0]["success"] if eligible else None,
        "in_e1": first_in_e1,
        "attempt1_success": first_in_e1 and by_attempt[1]["success"] is True,
        "in_ek": window is not None,
        "any_success_k": window is not None and any(successes_k),
        "all_success_k": window is not None and all(successes_k),
        "best_quality_k": max(qualities_k) if qualities_k else None,
        "first_success_attempt": fs_attempt,
        **{f"cost_to_first_success_{f}": fs_costs[f] for f in COST_FIELDS},
    }


def group_tasks(attempts: Iterable[dict], k: int | None) -> list[dict]:
    """One task row per observed unique task, in order of first appearance (3.7)."""
    return [task_group(task_id, by_attempt, k) for task_id, by_attempt in deduplicate(attempts).items()]
