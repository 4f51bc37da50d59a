"""Why a paired task is outside a section of a comparison (comparison.md's population column
read as reasons), for the reports; comparison.json has no such key. ``comparison``
re-exports ``left_out``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from .stats import is_number
from .task_groups import ByAttempt, is_eligible
from .vocabulary import COMPARISON_RESOURCE_FIELDS

if TYPE_CHECKING:
    from .comparison_sides import Side


def _why_first(by_attempt: ByAttempt, k: int | None = None) -> str | None:
    first = by_attempt.get(1)
    if first is None:
        return "attempt_1_missing"
    return None if is_eligible(first) else "attempt_1_ineligible"


def _why_window(by_attempt: ByAttempt, k: int | None) -> str | None:
    if not k:
        return "k_unknown"
    if len(by_attempt) < k or any(a not in by_attempt for a in range(1, k + 1)):
        return "attempts_missing_within_k"
    return None if all(is_eligible(by_attempt[a]) for a in range(1, k + 1)) else "ineligible_within_k"


def _why_no_eligible(by_attempt: ByAttempt, k: int | None = None) -> str | None:
    return None if any(is_eligible(r) for r in by_attempt.values()) else "no_eligible_attempt"


def _why_field(name: str) -> Callable[[ByAttempt, int | None], str | None]:
    def why(by_attempt: ByAttempt, k: int | None = None) -> str | None:
        eligible = [r for r in by_attempt.values() if is_eligible(r)]
        if not eligible:
            return "no_eligible_attempt"
        return None if any(is_number(r[name]) for r in eligible) else "no_value"
    return why


def _exclusion_rules() -> dict[str, Callable]:
    """Per section (resources as ``resources.<field>``), why a task's value is unknown in one
    run: the population column of comparison.md read as reasons."""
    return {"first_attempt": _why_first, "pass_at_k": _why_window, "pass_pow_k": _why_window,
            "task_success": _why_no_eligible, "quality": _why_field("quality_score"),
            **{f"resources.{f}": _why_field(f) for f in COMPARISON_RESOURCE_FIELDS}}


def left_out(baseline: Side, candidate: Side, paired: Iterable[str] | None = None,
             k: int | None = None) -> dict[str, list[tuple[str, str, int]]]:
    """Per section, the paired tasks outside its population and why: ``(reason, where,
    tasks)`` with ``where`` ``both`` (the same reason in both runs), ``baseline`` or
    ``candidate`` (a task outside in both runs for different reasons counts under the
    baseline's), most tasks first. Each left-out task is counted once, so the counts add up
    to the paired tasks minus the section's n."""
    if paired is None:
        paired = sorted(set(baseline.tasks) & set(candidate.tasks))
    out = {}
    for section, why in _exclusion_rules().items():
        counts: dict[tuple[str, str], int] = {}
        for task_id in paired:
            b, c = why(baseline.tasks[task_id], k), why(candidate.tasks[task_id], k)
            if b is None and c is None:
                continue
            key = (b, "both") if b == c else (b, "baseline") if b is not None else (c, "candidate")
            counts[key] = counts.get(key, 0) + 1
        out[section] = sorted(((r, w, n) for (r, w), n in counts.items()), key=lambda t: (-t[2], t[0], t[1]))
    return out
