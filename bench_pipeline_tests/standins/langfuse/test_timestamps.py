"""Timestamps as the API writes them (milliseconds, Z) and reads them."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from standins.langfuse.timestamps import iso, parse_iso, utcnow


def test_iso_writes_utc_milliseconds_with_z():
    assert iso(datetime(2025, 3, 1, 12, 0, 0, 123456, tzinfo=timezone.utc)) == "2025-03-01T12:00:00.123Z"
    assert iso(datetime(2025, 3, 1, 13, 0, tzinfo=timezone(timedelta(hours=1)))) == "2025-03-01T12:00:00.000Z"


def test_parse_iso_reads_z_and_offsets():
    assert parse_iso(" 2025-03-01T12:00:00Z ") == datetime(2025, 3, 1, 12, tzinfo=timezone.utc)
    assert parse_iso("2025-03-01T12:00:00z") == datetime(2025, 3, 1, 12, tzinfo=timezone.utc)
    assert parse_iso("2025-03-01T12:00:00").tzinfo is None
    assert parse_iso(iso(datetime(2025, 3, 1, 12, 0, 0, 5000, tzinfo=timezone.utc))).microsecond == 5000


def test_utcnow_is_aware():
    assert utcnow().tzinfo is timezone.utc
