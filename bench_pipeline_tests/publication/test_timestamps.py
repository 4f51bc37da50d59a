"""Pure timestamps: UTC with milliseconds, parsing (naive = UTC), OTLP nanoseconds."""

from __future__ import annotations

import datetime as dt

import pytest

from bench_pipeline.publication.timestamps import iso_ms, normalize_timestamp, parse_timestamp, to_nanos


def test_times_are_utc_with_milliseconds():
    when = dt.datetime(2026, 11, 28, 11, 0, 0, 123456, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert iso_ms(when) == "2026-11-28T10:00:00.123Z"


def test_parsing_takes_z_offsets_and_naive_times_as_utc():
    assert parse_timestamp("2026-11-28T10:00:00Z") == dt.datetime(2026, 11, 28, 10, tzinfo=dt.UTC)
    assert parse_timestamp("2026-11-28T09:05:00+01:00") == dt.datetime(2026, 11, 28, 8, 5, tzinfo=dt.UTC)
    assert parse_timestamp("2026-11-28T10:00:00") == dt.datetime(2026, 11, 28, 10, tzinfo=dt.UTC)
    for bad in (None, "", "  ", "yesterday", 1700000000):
        assert parse_timestamp(bad) is None
    assert normalize_timestamp("2026-11-28T10:01:00.123456Z") == "2026-11-28T10:01:00.123Z"
    assert normalize_timestamp("not a time") is None


def test_nanoseconds_keep_the_microseconds():
    assert to_nanos("1970-01-01T00:00:01.000002Z") == 1_000_002_000
    with pytest.raises(ValueError, match="not a timestamp"):
        to_nanos("never")
