"""The report's "What was excluded and why": the exclusion table (status x failure class x
eligibility, with outcomes and what each combination means for the denominators) and the
tasks outside the pass@1 and fixed-k denominators."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...task_groups import ByAttempt, is_eligible
from ...vocabulary import FAILURE_CLASSES, STATUSES
from ..format import NA, fmt_bool, fmt_pct, fmt_text
from .limits import LIST_CAP


def exclusion_reading(status: Any, cls: Any, eligible: Any, derived_false: bool = False) -> str:
    """What a status x class x eligibility combination means for the denominators.

    ``derived_false``: the rows' success is false only because the legacy rule derived it
    from status (raw success unknown, reference 2), so the reading names it instead of
    contradicting the outcome beside it.
    """
    if eligible is True:
        if status == "passed":
            return "Counted; success."
        if cls == "agent":
            if status == "timeout":
                return "Counted as a failure: timeout with execution evidence."
            return "Counted as an Agent failure (audit the evaluator before blaming the model)."
        if cls == "unknown":
            return "Counted as a failure with insufficient classification evidence (e.g. a chat error after execution started)."
        return "Counted in capability denominators."
    if eligible is False:
        if cls == "environment":
            return "Excluded: setup assertion or initialization failure; not an Agent failure."
        if cls == "evaluation":
            return "Excluded: judge or required evidence unavailable; outcome unknown."
        if cls == "skipped":
            return ("Excluded: skipped or could not run normally (agent not ready, missing input screenshot, "
                    "setup error, outer exception); inspect the error.")
        if cls == "unknown" and status == "timeout":
            reading = "Excluded from every capability denominator: timeout without evidence that execution started"
            return reading + ("; success derived false from status, raw unknown." if derived_false else ".")
        if cls == "unknown":
            return "Excluded: insufficient classification evidence (e.g. chat error without execution evidence)."
        return "Excluded by the runner's explicit eligibility flag; inspect the error."
    return "Eligibility unknown."


def status_sort_key(status: Any) -> tuple[int, str]:
    return (STATUSES.index(status) if status in STATUSES else len(STATUSES), str(status))


def class_sort_key(cls: Any) -> tuple[int, str]:
    if cls is None:
        return (-1, "")
    return (FAILURE_CLASSES.index(cls) if cls in FAILURE_CLASSES else len(FAILURE_CLASSES), str(cls))


#: Outcome labels of the exclusion table; "from status" marks a success value the legacy
#: rule derived from status because the row recorded none (reference 2).
OUTCOME_WORDS = (
    ("true", "success"), ("true_from_status", "success (from status; raw unknown)"),
    ("false", "failure"), ("false_from_status", "failure (from status; raw unknown)"),
    ("unknown", "unknown"),
)


def exclusion_rows(groups: Mapping[tuple[Any, Any, Any], Counter]) -> list[dict[str, Any]]:
    """The exclusion table: {(status, failure class, eligibility): outcome label counts}
    as rows, eligible first."""
    rows = []
    for (status, cls, eligible), counts in groups.items():
        outcome = ", ".join(f"{counts[o]:,} {word}" for o, word in OUTCOME_WORDS if counts[o])
        rows.append({
            "status": status, "cls": cls, "eligible": eligible,
            "eligible_text": fmt_bool(eligible), "count": sum(counts.values()),
            "outcome": outcome,
            "counted": "yes" if eligible is True else "no" if eligible is False else NA,
            "reading": exclusion_reading(status, cls, eligible,
                                          derived_false=counts["false_from_status"] == sum(counts.values())),
        })
    rows.sort(key=lambda r: (0 if r["eligible"] is True else 1 if r["eligible"] is False else 2,
                             status_sort_key(r["status"]), class_sort_key(r["cls"])))
    return rows


def task_exclusions(tasks: Mapping[str, ByAttempt], k: Any) -> dict[str, list[tuple[str, str]]]:
    """Which tasks fall outside the pass@1 and fixed-k denominators, and why."""

    def why(rec: Mapping[str, Any] | None, n: int) -> str | None:
        if rec is None:
            return f"attempt {n} missing"
        if not is_eligible(rec):
            return (f"attempt {n} ineligible ({fmt_text(rec.get('status'))}"
                    f"/{fmt_text(rec.get('failure_class'))})")
        return None

    at1, atk = [], []
    for task_id in sorted(tasks):
        by_attempt = tasks[task_id]
        reason = why(by_attempt.get(1), 1)
        if reason:
            at1.append((task_id, reason))
        if isinstance(k, int) and k >= 1:
            # In attempt order; at most LIST_CAP missing attempts by number (k may be large).
            missing = [n for n in range(1, min(k, LIST_CAP + len(by_attempt)) + 1) if n not in by_attempt]
            numbered = sorted([a for a in by_attempt if isinstance(a, int) and a <= k] + missing[:LIST_CAP])
            reasons = [r for n in numbered if (r := why(by_attempt.get(n), n))]
            n_missing = k - sum(1 for a in by_attempt if isinstance(a, int) and a <= k)
            if n_missing > LIST_CAP:
                reasons.append(f"{n_missing - LIST_CAP:,} more attempts missing")
            if reasons:
                atk.append((task_id, "; ".join(reasons)))
    return {"pass_at_1": at1, "fixed_k": atk}


@dataclass(frozen=True)
class ExclusionsView:
    """The exclusions section: ineligible rows and eligible ones with an unknown outcome, the
    exclusion table (``rows``) and the tasks outside each task-level denominator (``tasks``:
    ``pass_at_1`` and ``fixed_k``, (task id, reason) pairs)."""

    n_attempts: int
    ineligible: int
    ineligible_pct: str
    eligible_unknown: int
    rows: list[dict[str, Any]]
    tasks: dict[str, list[tuple[str, str]]]


def exclusions_view(facts: Mapping[str, Any], per_task_facts: Mapping[str, Any]) -> ExclusionsView:
    """The section from attempt_facts and task_facts."""
    ineligible, n_attempts = facts["ineligible"], facts["n_attempts"]
    return ExclusionsView(
        n_attempts=n_attempts,
        ineligible=ineligible,
        ineligible_pct=fmt_pct(ineligible / n_attempts) if n_attempts else NA,
        eligible_unknown=facts["eligible_unknown"],
        rows=facts["exclusions"],
        tasks=per_task_facts["task_exclusions"],
    )
