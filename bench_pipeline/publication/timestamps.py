"""Pure: timestamps as the publication and the servers' score store keep them (UTC, milliseconds)."""

from __future__ import annotations

import datetime as dt
from typing import Any


def iso_ms(value: dt.datetime) -> str:
    """UTC ISO 8601 with millisecond precision (what the score store keeps)."""
    value = value.astimezone(dt.UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"

def parse_timestamp(value: Any) -> dt.datetime | None:
    """An ISO 8601 text as an aware UTC datetime (naive = UTC), else None."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.astimezone(dt.UTC)

def normalize_timestamp(value: Any) -> str | None:
    parsed = parse_timestamp(value)
    return iso_ms(parsed) if parsed is not None else None

def to_nanos(value: str) -> int:
    parsed = parse_timestamp(value)
    if parsed is None:
        raise ValueError(f"not a timestamp: {value!r}")
    return int(parsed.timestamp()) * 1_000_000_000 + parsed.microsecond * 1000
