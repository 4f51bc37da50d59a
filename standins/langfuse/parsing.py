"""Request bodies and query parameters: JSON bodies, page/limit and cursor pagination,
timestamps, ``fields`` groups and comma-separated filters. Errors are ``ApiError(400)``."""

from __future__ import annotations

import base64
import binascii
import json
import math
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, Set, Tuple

import orjson

from .messages import ApiError
from .otlp import OtlpDecodeError, decompress
from .timestamps import parse_iso


def body_json(body: bytes, headers: Dict[str, str]) -> Any:
    """The JSON value of a (possibly gzip- or deflate-encoded) body."""
    try:
        raw = decompress(body, headers.get("content-encoding"))
    except OtlpDecodeError as exc:
        raise ApiError(400, str(exc)) from exc
    if not raw:
        raise ApiError(400, "Invalid request data: empty body")
    try:
        return orjson.loads(raw)
    except ValueError as exc:
        raise ApiError(400, f"Invalid request data: body is not JSON ({exc})") from exc


def page_and_limit(query: Dict[str, str], default_limit: int = 50, max_limit: Optional[int] = None) -> Tuple[int, int]:
    try:
        page = int(query.get("page") or 1)
        limit = int(query.get("limit") or default_limit)
    except ValueError:
        raise ApiError(400, "page and limit must be integers") from None
    if page < 1 or limit < 1 or (max_limit is not None and limit > max_limit):
        raise ApiError(400, f"invalid page/limit ({page}/{limit})")
    return page, limit


def paginate(rows: List[Any], page: int, limit: int) -> Tuple[List[Any], Dict[str, int]]:
    """One page of ``rows`` and the ``meta`` of page-based reads."""
    total = len(rows)
    meta = {"page": page, "limit": limit, "totalItems": total, "totalPages": math.ceil(total / limit)}
    return rows[(page - 1) * limit: page * limit], meta


def cursor_page(rows: List[Any], query: Dict[str, str], default_limit: int, max_limit: int
                ) -> Tuple[List[Any], Dict[str, Any]]:
    """One page of ``rows`` for cursor-based reads (v2 observations, v3 scores, experiments):
    ``meta.cursor`` is there while more rows follow."""
    try:
        limit = int(query.get("limit") or default_limit)
    except ValueError:
        raise ApiError(400, "limit must be an integer") from None
    if limit < 1 or limit > max_limit:
        raise ApiError(400, f"limit must be between 1 and {max_limit}")
    offset = 0
    if query.get("cursor"):
        try:
            raw = query["cursor"]
            offset = int(json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))["offset"])
        except (ValueError, KeyError, TypeError, binascii.Error):
            raise ApiError(400, "invalid cursor") from None
    chunk = rows[offset: offset + limit]
    meta: Dict[str, Any] = {"limit": limit}
    if offset + limit < len(rows):
        meta["cursor"] = base64.urlsafe_b64encode(
            json.dumps({"v": 1, "offset": offset + limit}).encode()
        ).decode().rstrip("=")
    return chunk, meta


def query_datetime(query: Dict[str, str], key: str, required: bool = False) -> Optional[datetime]:
    """An ISO 8601 query parameter (UTC when it has no offset)."""
    raw = query.get(key)
    if not raw:
        if required:
            raise ApiError(400, f"Invalid request data: {key} is required")
        return None
    try:
        dt = parse_iso(raw)
    except ValueError:
        raise ApiError(400, f"Invalid request data: {key} is not an ISO 8601 datetime") from None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def field_groups(query: Dict[str, str], allowed: Set[str], default: Set[str]) -> Set[str]:
    """The ``fields`` parameter: which groups of a row a read returns."""
    raw = query.get("fields")
    if not raw:
        return set(default)
    groups = {g.strip() for g in raw.split(",") if g.strip()}
    unknown = groups - allowed
    if unknown:
        raise ApiError(400, f"Invalid fields: {sorted(unknown)}; allowed: {sorted(allowed)}")
    return groups


def csv_values(query: Dict[str, str], key: str, *, upper: bool = False) -> Optional[Set[str]]:
    """A comma-separated filter (``name=a,b``); None when absent or empty."""
    raw = query.get(key)
    if raw is None or raw == "":
        return None
    values = {v.strip() for v in raw.split(",") if v.strip()}
    return {v.upper() for v in values} if upper else values
