"""Bodies and query parameters on values in memory."""

from __future__ import annotations

import gzip
from datetime import datetime, timezone

import pytest

from standins.langfuse.messages import ApiError
from standins.langfuse.parsing import (
    body_json,
    csv_values,
    cursor_page,
    field_groups,
    page_and_limit,
    paginate,
    query_datetime,
)


def error_of(fn, *args, **kw) -> str:
    with pytest.raises(ApiError) as err:
        fn(*args, **kw)
    assert err.value.status == 400
    return err.value.message


def test_body_json_decodes_gzip_and_refuses_empty_or_invalid_bodies():
    assert body_json(gzip.compress(b'{"a": [1]}'), {"content-encoding": "gzip"}) == {"a": [1]}
    assert body_json(b"[1]", {}) == [1]
    assert error_of(body_json, b"", {}) == "Invalid request data: empty body"
    assert "not JSON" in error_of(body_json, b"nope", {})
    assert "Content-Encoding" in error_of(body_json, b"x", {"content-encoding": "br"})


def test_page_based_reads():
    assert page_and_limit({}) == (1, 50)
    assert page_and_limit({"page": "2", "limit": "100"}, 50, 100) == (2, 100)
    assert error_of(page_and_limit, {"limit": "101"}, 50, 100) == "invalid page/limit (1/101)"
    assert error_of(page_and_limit, {"page": "x"}) == "page and limit must be integers"
    assert paginate(list(range(5)), 2, 2) == ([2, 3], {"page": 2, "limit": 2, "totalItems": 5, "totalPages": 3})
    assert paginate([], 1, 50) == ([], {"page": 1, "limit": 50, "totalItems": 0, "totalPages": 0})


def test_cursor_pages_follow_each_other_to_the_end():
    rows = list(range(5))
    first, meta = cursor_page(rows, {"limit": "2"}, 50, 100)
    assert first == [0, 1] and meta == {"limit": 2, "cursor": "eyJ2IjogMSwgIm9mZnNldCI6IDJ9"}
    second, meta = cursor_page(rows, {"limit": "2", "cursor": meta["cursor"]}, 50, 100)
    third, last = cursor_page(rows, {"limit": "2", "cursor": meta["cursor"]}, 50, 100)
    assert (second, third, last) == ([2, 3], [4], {"limit": 2})
    assert error_of(cursor_page, rows, {"cursor": "!!"}, 50, 100) == "invalid cursor"
    assert error_of(cursor_page, rows, {"limit": "0"}, 50, 100) == "limit must be between 1 and 100"


def test_timestamps_fields_and_comma_separated_filters():
    assert query_datetime({"t": "2026-11-30T10:00:00"}, "t") == datetime(2026, 11, 30, 10, tzinfo=timezone.utc)
    assert query_datetime({}, "t") is None
    assert error_of(query_datetime, {}, "t", required=True) == "Invalid request data: t is required"
    assert "ISO 8601" in error_of(query_datetime, {"t": "yesterday"}, "t")
    assert field_groups({}, {"core", "io"}, {"core"}) == {"core"}
    assert field_groups({"fields": "core, io,"}, {"core", "io"}, set()) == {"core", "io"}
    assert "Invalid fields: ['x']" in error_of(field_groups, {"fields": "x"}, {"core"}, set())
    assert csv_values({"n": "a, b,,a"}, "n") == {"a", "b"} and csv_values({"n": ""}, "n") is None
    assert csv_values({"t": "numeric"}, "t", upper=True) == {"NUMERIC"}
