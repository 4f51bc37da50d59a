"""Pure: the ``benchmark.<field>`` scores of one attempt (outputs.md "Langfuse publication",
metrics-reference 2 and 3.6).

Attempt fields by score kind come from ``vocabulary`` (CATEGORICAL_FIELDS, BOOLEAN_FIELDS,
NUMERIC_FIELDS); ``benchmark.rubric_pass_rate`` is ``stats.rubric_pass_rate``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..stats import is_real_number, rubric_pass_rate
from ..vocabulary import BOOLEAN_FIELDS, CATEGORICAL_FIELDS, NUMERIC_FIELDS

#: Deterministic checks kept in the attempt record's ``evidence`` (reference: exported scores).
EVIDENCE_BOOLEAN_FIELDS = ("expected_answer_match", "expected_recalled_memory_match")


def is_bool(value: Any) -> bool:
    """A Boolean (numpy's ``bool_`` included)."""
    return isinstance(value, bool) or type(value).__name__ in ("bool_", "bool")  # numpy 1 and 2


def attempt_score_values(attempt: Mapping) -> list[tuple[str, Any, str]]:
    """(name, value, data type) of every available ``benchmark.<field>`` score of an attempt.

    Null, non-finite and wrongly-typed values are unavailable and omitted, never sent as 0.
    """
    out: list[tuple[str, Any, str]] = []
    for name in CATEGORICAL_FIELDS:
        value = attempt.get(name)
        if isinstance(value, str) and value:
            out.append((f"benchmark.{name}", value, "CATEGORICAL"))
    evidence = attempt.get("evidence") or {}
    for name in BOOLEAN_FIELDS + EVIDENCE_BOOLEAN_FIELDS:
        value = attempt.get(name) if name in BOOLEAN_FIELDS else evidence.get(name)
        if is_bool(value):
            out.append((f"benchmark.{name}", 1 if value else 0, "BOOLEAN"))
    for name in NUMERIC_FIELDS:
        value = attempt.get(name)
        if is_real_number(value):
            out.append((f"benchmark.{name}", value, "NUMERIC"))
    rate = rubric_pass_rate(attempt.get("rubric_pass_count"), attempt.get("rubric_total"))
    if rate is not None:
        out.append(("benchmark.rubric_pass_rate", rate, "NUMERIC"))
    return out
