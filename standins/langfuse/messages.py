"""What the stand-in answers and what it records of each request."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

import orjson


class ApiError(Exception):
    """An error answer: ``status`` with ``{"message": message, "error": details}``."""

    def __init__(self, status: int, message: str, details: Any = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.details = details


@dataclass
class Response:
    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: Dict[str, str] = field(default_factory=dict)


def json_response(status: int, obj: Any, headers: Optional[Dict[str, str]] = None) -> Response:
    try:
        body = orjson.dumps(obj, default=str)
    except TypeError:  # e.g. integers beyond 64 bits
        body = json.dumps(obj, separators=(",", ":"), default=str).encode("utf-8")
    return Response(status, body, "application/json", dict(headers or {}))


@dataclass
class RequestLog:
    method: str
    path: str
    query: Dict[str, str]
    status: Optional[int]  # None when dropped without a response (or still in flight)
    bytes: int  # request body size on the wire (before gzip decoding)
    response_bytes: int = 0
    headers: Dict[str, str] = field(default_factory=dict)  # lower-cased names
    route: Optional[str] = None  # None: unknown endpoint / method (see unknown_requests())
    fault: Optional[str] = None  # "status" | "delay" | "drop" when a fault fired
    error: Optional[str] = None  # message of a 4xx/5xx answer
    duration: float = 0.0
    completed: bool = False  # False while the request is still being handled (e.g. delayed)
