"""Rate limiting (HTTP 429): per endpoint, a window in which no request goes out, so that the
workers wait for the server's window together instead of each using up its tries (the server
limits per resource)."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable

log = logging.getLogger("bench_pipeline.publication")


class RateLimits:
    """The closed windows per route (``route`` = "METHOD /path"), and how many 429 answers came.

    ``on_rate_limit(text)`` is told when a long wait starts (at most every 30 s)."""

    def __init__(self, backoff: float, max_retry_after: float):
        self.backoff = backoff
        self.max_retry_after = max_retry_after
        self._lock = threading.Lock()
        self._resume_at: dict[str, float] = {}  # no request to the route before this (monotonic) time
        self._told_at = -math.inf
        self.on_rate_limit: Callable[[str], None] | None = None
        self.count = 0  # 429 answers received

    def delay(self, retry_after: float | None, tries: int) -> float:
        """Seconds to close the window for: Retry-After (capped), else exponential backoff."""
        return min(retry_after if retry_after is not None else self.backoff * (2 ** min(tries, 8)),
                   self.max_retry_after)

    def hold(self, route: str) -> None:
        """Wait while the server's rate limit window for this endpoint is closed."""
        while True:
            with self._lock:
                delay = self._resume_at.get(route, 0.0) - time.monotonic()
            if delay <= 0:
                return
            time.sleep(delay)

    def limited(self, route: str, retry_after: float | None, tries: int) -> None:
        """A 429: close the window for every request to this endpoint for ``delay`` seconds."""
        delay = self.delay(retry_after, tries)
        now = time.monotonic()
        with self._lock:
            self.count += 1
            self._resume_at[route] = max(self._resume_at.get(route, 0.0), now + delay)
            tell = delay >= 5 and now - self._told_at >= 30
            if tell:
                self._told_at = now
        if tell:
            text = (f"langfuse: rate limited by the server ({route}: HTTP 429); waiting {delay:.0f} s "
                    f"({self.count} such answer(s) so far)")
            log.info("%s", text)
            if self.on_rate_limit is not None:
                self.on_rate_limit(text)
