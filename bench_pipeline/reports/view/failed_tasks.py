"""The report's "Failed tasks and their evidence": every task with an attempt that did not
pass, each attempt with its evidence folder and the most telling evidence line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ...task_groups import is_eligible
from ...vocabulary import FAILURE_ERROR_FIELDS
from ..format import NA, _as_list, _compact_json, attempt_no, dig, fmt_bool, fmt_quality, fmt_text, one_line
from .evidence import evidence_dir, evidence_href
from .failures import shown_stage
from .limits import LIST_CAP


def attempt_note(rec: Mapping[str, Any]) -> str:
    """The most telling evidence line for an attempt that did not pass.

    Order: execution/evaluation errors (the judge's among them), hard-assertion failures,
    failed environment-state checks, answer/memory mismatches, rubric "no" verdicts,
    artifact-acquisition errors (which may not fail a task), then the failure event reference.
    """
    ev = rec.get("evidence") if isinstance(rec.get("evidence"), dict) else {}
    errors = ev.get("errors") if isinstance(ev.get("errors"), dict) else {}
    for key in FAILURE_ERROR_FIELDS:
        if errors.get(key):
            return one_line(f"{key}: {errors[key]}")
    for item in _as_list(ev.get("hard_assertion_failures")):
        if isinstance(item, dict):
            return one_line(f"hard assertion {item.get('id')}: {item.get('requirement')} "
                            f"(actual: {_compact_json(item.get('actual'))})")
    for item in _as_list(ev.get("environment_state_assertions")):
        if isinstance(item, dict) and item.get("passed") is False:
            return one_line(f"state check {item.get('id')} failed (expected {_compact_json(item.get('expected'))}, "
                            f"actual {_compact_json(item.get('actual'))})")
    if ev.get("expected_answer_match") is False:
        return "expected answer did not match"
    if ev.get("expected_recalled_memory_match") is False:
        return one_line(f"expected memory not recalled (source: {fmt_text(ev.get('memory_recall_evidence_source'))})")
    for item in _as_list(ev.get("rubric")):
        if isinstance(item, dict) and item.get("verdict") == "no":
            return one_line(f"rubric {item.get('id')}: no ({item.get('reason')})")
    for key, text in errors.items():
        if text:
            return one_line(f"{key}: {text}")
    if rec.get("failure_event_ref"):
        return f"failure event at {rec['failure_event_ref']}"
    return ""


@dataclass
class FailedTask:
    """A task with an attempt that did not pass, as both reports list it.

    ``attempts`` (one row per attempt, plus placeholders for missing ones) is built when a
    report first reads it: summary.md lists every failed task, report.html the first
    HTML_FAILED_TASKS_CAP, so a large run's page does not wait for rows it never shows.
    """

    task_id: str
    category: Any
    passed: int  # attempts with status passed
    n: int  # attempts observed
    eligible_failed: int
    records: list[Mapping[str, Any]]
    k: Any
    unsafe_lines: set[int]
    evidence_base: str | None

    @cached_property
    def attempts(self) -> list[dict[str, Any]]:
        rows = []
        present = {attempt_no(rec) for rec in self.records}
        expected = max(present | {self.k if isinstance(self.k, int) else 0})
        for n in range(1, min(expected, LIST_CAP + len(present)) + 1):  # placeholders: at most LIST_CAP
            if n not in present:
                rows.append({"attempt": n, "status": None, "cls": None, "eligible": NA, "stage": None,
                             "quality": NA, "folder": None, "folder_text": "n/a (no result row)", "href": None,
                             "trace": NA, "note": "planned or expected attempt missing from the results",
                             "missing": True})
        for rec in self.records:
            folder, folder_text = evidence_dir(rec, self.unsafe_lines)
            href = evidence_href(self.evidence_base, folder)
            rows.append({
                "attempt": attempt_no(rec), "status": rec.get("status"), "cls": rec.get("failure_class"),
                "eligible": fmt_bool(rec.get("agent_eligible")), "stage": shown_stage(rec),
                "quality": fmt_quality(rec.get("quality_score")), "folder": folder, "folder_text": folder_text,
                "href": href or None,
                "trace": fmt_text(dig(rec, "evidence", "trace_artifact", "status")),
                "note": attempt_note(rec) if rec.get("status") != "passed" else "",
                "missing": False,
            })
        rows.sort(key=lambda r: r["attempt"])
        return rows


def failed_tasks(task_rows: Sequence[Mapping[str, Any]], k: Any, unsafe_lines: set[int],
                 evidence_base: str | None) -> list[FailedTask]:
    """The tasks with an attempt that did not pass, lowest share of passed attempts first,
    then most eligible failures, then task id (each task's attempt rows built when listed)."""
    found = [
        FailedTask(t["task_id"], t["category"], t["n_passed_status"], len(t["records"]),
                   sum(1 for rec in t["records"] if is_eligible(rec) and rec.get("success") is not True),
                   t["records"], k, unsafe_lines, evidence_base)
        for t in task_rows if t["has_nonpass"]
    ]
    found.sort(key=lambda f: (f.passed / max(f.n, 1), -f.eligible_failed, f.task_id))
    return found
