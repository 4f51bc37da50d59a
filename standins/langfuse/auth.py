"""Authentication (HTTP Basic with the project's key pair) and the "datasets" rate limit."""

from __future__ import annotations

import base64
import binascii
import math
import threading
import time
from typing import Dict, Optional

from .messages import ApiError, Response, json_response


def basic_auth(public_key: str, secret_key: str) -> str:
    """The ``Authorization`` header value of a key pair."""
    return "Basic " + base64.b64encode(f"{public_key}:{secret_key}".encode()).decode()


def check_auth(headers: Dict[str, str], public_key: str, secret_key: str, expected: str) -> None:
    """Accept the key pair's Basic header (``expected``, compared first); raise ApiError(401)."""
    auth = headers.get("authorization") or ""
    if auth == expected:
        return
    if not auth.lower().startswith("basic "):
        raise ApiError(401, "No authorization header")
    try:
        decoded = base64.b64decode(auth[6:].strip(), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        raise ApiError(401, "Invalid authorization header") from None
    pk, _, sk = decoded.partition(":")
    if pk != public_key or sk != secret_key:
        raise ApiError(401, "Invalid credentials. Confirm that you've configured the correct host.")


#: routes whose handler declares ``rateLimitResource: "datasets"`` (web/src/pages/api/public/
#: dataset-items/*, dataset-run-items.ts, datasets/**, v2/datasets/**)
DATASETS_RESOURCE = ("/api/public/dataset-items", "/api/public/dataset-run-items", "/api/public/datasets",
                     "/api/public/v2/datasets")


class DatasetRateLimit:
    """Langfuse Cloud's limit on the "datasets" resource: ``points`` requests per ``seconds``
    (web/src/features/public-api/server/RateLimitService.ts: off without
    NEXT_PUBLIC_LANGFUSE_CLOUD_REGION, i.e. on self-hosted servers; cloud:hobby 100 per 60 s,
    core/pro/team/enterprise 1000 per 60 s; a fixed window per organisation, RateLimiterRedis,
    checked after authentication; a refused request answers 429 with
    ``Retry-After: ceil(msBeforeNext / 1000)``)."""

    def __init__(self, points: int, seconds: float):
        self.points, self.seconds = points, seconds
        self._window_ends, self._window_used = 0.0, 0
        self._lock = threading.Lock()

    def check(self, path: str, now: Optional[float] = None) -> Optional[Response]:
        """None when the request may pass, else the 429 answer."""
        if not path.startswith(DATASETS_RESOURCE):
            return None
        now = time.monotonic() if now is None else now
        with self._lock:
            if now >= self._window_ends:
                self._window_ends, self._window_used = now + self.seconds, 0
            self._window_used += 1
            if self._window_used <= self.points:
                return None
            wait = self._window_ends - now
        return json_response(429, {"message": "Rate limit exceeded"}, {"Retry-After": str(max(1, math.ceil(wait)))})
