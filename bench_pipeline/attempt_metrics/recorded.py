"""Values as results.jsonl records them (run-directory.md "metrics", readings R6, R7, R40, R42)."""

from __future__ import annotations

from ..measured_fields import COUNT, MeasuredField, field_names
from ..stats import INT64_MAX, is_number
from ..vocabulary import RUBRIC_COUNT_FIELDS

#: Integer-valued fields (a recorded non-integral value is unavailable): the measured counts
#: and the rubric counts.
COUNT_FIELDS = frozenset(field_names(kind=COUNT)) | frozenset(RUBRIC_COUNT_FIELDS)

#: Counts beyond a 64-bit integer are unavailable: no run gets there, and the typed frames
#: of the Dagster stages (nullable Int64) could not hold them (docs/metric-choices.md).
COUNT_LIMIT = INT64_MAX


def recorded(row: dict, key: str) -> object:
    """A recorded value: the ``metrics`` key when present (even null, R6), else top level."""
    metrics = row.get("metrics")
    if isinstance(metrics, dict) and key in metrics:
        return metrics[key]
    return row.get(key)


#: Fields whose value is a proportion: run-directory.md gives quality_score as "number in
#: [0, 1] or null", so a value outside [0, 1] (a score on another scale, such as 7.5 of 10)
#: is not one and is unavailable, as a value of another type is (docs/metric-choices.md).
PROPORTION_FIELDS = frozenset({"quality_score"})


def field_number(value: object, key: str) -> float | None:
    """A number (R42), None otherwise (``number_problem`` says why); for count fields an
    integer within COUNT_LIMIT, for PROPORTION_FIELDS a number in [0, 1]."""
    if value is None or number_problem(value, key) is not None:
        return None
    return int(value) if key in COUNT_FIELDS and isinstance(value, float) else value


def number_problem(value: object, key: str = "") -> str | None:
    """Why a recorded value of a numeric field is not a usable number (the one rule
    ``field_number`` reads it by, and data_quality.invalid_values reports), None when it is
    one or null. Without ``key``, only what makes any JSON value not a number (R42): the
    rule of the artifact files' numbers (``stats.is_number``)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "a Boolean, not a number"
    if not isinstance(value, (int, float)):
        return f"{_kind(value)}, not a number"
    if not is_number(value):
        return "beyond the float range" if isinstance(value, int) else "not a finite number"
    if key in PROPORTION_FIELDS and not 0 <= value <= 1:
        return "outside [0, 1]"
    if key in COUNT_FIELDS:
        if isinstance(value, float) and not value.is_integer():
            return "not an integer"
        if not -COUNT_LIMIT <= value <= COUNT_LIMIT:
            return "beyond the 64-bit integer range"
    return None


def refuse_number(refused: list, where: str, value: object, becomes: str) -> None:
    """Add (``where``, ``value``, ``"<why>: <becomes>"``) to ``refused`` when ``value`` is
    there but not a number (``number_problem`` without a key: the artifact files' rule); an
    absent value (None) or a number of any sign is not refused."""
    problem = number_problem(value)
    if problem is not None:
        refused.append((where, value, f"{problem}: {becomes}"))


def _kind(value: object) -> str:
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def recorded_number(row: dict, key: str) -> float | None:
    """A recorded number, None when unavailable; integral for count fields."""
    return field_number(recorded(row, key), key)


def recorded_measure(row: dict, measured: MeasuredField) -> float | None:
    """A measured field's recorded value: its number, else its legacy key's (R7); None
    when not positive for a positive-only field (R40)."""
    value = recorded_number(row, measured.name)
    if value is None and measured.legacy_key is not None:
        value = recorded_number(row, measured.legacy_key)
    if measured.positive_only and value is not None and not value > 0:
        return None
    return value


def bool_or_none(value: object) -> bool | None:
    return value if isinstance(value, bool) else None


def str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None
