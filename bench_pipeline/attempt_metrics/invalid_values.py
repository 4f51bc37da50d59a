"""Recorded values of another type than run-directory.md gives them ("results.jsonl"): the
located findings of ``data_quality.invalid_values``.

Such a value is read as unavailable, as the reference prescribes (R3, R7, R36, R42: a string,
a Boolean, NaN or a number beyond the float range in a numeric field; a count that is not an
integer; a quality_score outside [0, 1]; a non-Boolean success, which is then derived from
status). This module does not change what is read: it says where a value was refused, with
the same accessors the attempt row reads it with (``recorded``, top-level keys), so that a
user can tell a field that was never recorded from one recorded wrongly.

A value that is a number of the right type is never a finding, whatever it means: a
non-positive duration (R40) is a reading of the reference, not a wrong type.
"""

from __future__ import annotations

import math

from ..measured_fields import MEASURED
from ..run_reader import RawRow
from ..vocabulary import ERROR_TEXT_FIELDS, OUTCOME_NUMBER_FIELDS
from .recorded import number_problem, recorded

#: Top-level keys whose value is true, false or null, and what a value of another type
#: becomes (run-directory.md legacy rules; the others are unavailable).
BOOLEAN_KEYS = {
    "success": "success derived from status",
    "agent_eligible": "eligibility inferred",
    "expected_answer_match": "unavailable",
    "expected_recalled_memory_match": "unavailable",
    "recovery_attempted": "unavailable",
    "recovery_succeeded": "unavailable",
}
#: Top-level keys whose value is a string or null (``artifact_dir`` is not among them: one that
#: is not a string is refused, and said so, in ``data_quality.unsafe_artifact_dirs``).
TEXT_KEYS = ("status", "failure_class", "first_failure_stage", "category", "episode_id",
             "memory_recall_evidence_source", "started_at", "finished_at")
#: Keys of ``metrics`` (or legacy top-level keys) whose value is a string or null.
RECORDED_TEXT_KEYS = ("failure_event_ref", *ERROR_TEXT_FIELDS)
#: Numeric keys read through ``recorded`` (``metrics`` first): every measured field's own key
#: and its legacy key (R7), in the attempt row's order.
RECORDED_NUMBER_KEYS = tuple(key for m in MEASURED for key in (m.name, m.legacy_key) if key is not None)

#: How many characters of a refused value a finding shows.
VALUE_CHARS = 60


def invalid_values(raw: RawRow) -> list[dict]:
    """The row's refused values, each ``{line, task_id, attempt, field, value, reason}``
    (``value``: a short text of what was recorded): ``metrics`` when it is not an object,
    then the Booleans, the texts, the outcome numbers, the recorded numbers and the recorded
    texts, each group in its tuple's order."""
    row = raw.data
    found: list[tuple[str, object, str]] = []
    metrics = row.get("metrics")
    if metrics is not None and not isinstance(metrics, dict):
        found.append(("metrics", metrics, "not an object: its keys are read at the top level of the row"))
    for key, becomes in BOOLEAN_KEYS.items():
        value = row.get(key)
        if value is not None and not isinstance(value, bool):
            found.append((key, value, f"not true, false or null: {becomes}"))
    for key in TEXT_KEYS:
        value = row.get(key)
        if value is not None and not isinstance(value, str):
            found.append((key, value, "not a string: unavailable"))
    for key in OUTCOME_NUMBER_FIELDS:
        reason = number_problem(row.get(key), key)
        if reason is not None:
            found.append((key, row.get(key), f"{reason}: unavailable"))
    for key in RECORDED_NUMBER_KEYS:
        reason = number_problem(recorded(row, key), key)
        if reason is not None:
            found.append((key, recorded(row, key), f"{reason}: unavailable"))
    for key in RECORDED_TEXT_KEYS:
        value = recorded(row, key)
        if value is not None and not isinstance(value, str):
            found.append((key, value, "not a string: unavailable"))
    return [{"line": raw.line, "task_id": raw.task_id, "attempt": raw.attempt, "field": key,
             "value": value_text(value), "reason": reason} for key, value, reason in found]


def value_text(value: object) -> str:
    """A refused value as a short text: a string quoted, NaN and infinities by name, a list or
    an object by its kind and size, anything longer than VALUE_CHARS cut with an ellipsis."""
    if isinstance(value, str):
        text = '"' + value + '"'
    elif isinstance(value, float) and not math.isfinite(value):
        text = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, list):
        text = f"a list of {len(value)}"
    elif isinstance(value, dict):
        text = f"an object of {len(value)} key{'' if len(value) == 1 else 's'}"
    else:
        text = str(value)
    return text if len(text) <= VALUE_CHARS else text[:VALUE_CHARS - 1] + "…"
