"""Timestamps as the Langfuse API writes and reads them (ISO 8601, UTC, milliseconds, ``Z``)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Dict


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


_ISO_CACHE: Dict[datetime, str] = {}


def iso(dt: datetime) -> str:
    """``2025-03-01T12:00:00.000Z``: the form the API's JSON answers carry."""
    text = _ISO_CACHE.get(dt)
    if text is None:
        utc = dt.astimezone(timezone.utc)
        text = utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
        if len(_ISO_CACHE) < 100_000:
            _ISO_CACHE[dt] = text
    return text


def parse_iso(value: str) -> datetime:
    return datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
