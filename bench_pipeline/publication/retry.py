"""The retry policy of every request: which failures are retried, how long to wait, when an
endpoint is given up on for the rest of a call (a breaker) and how a 429 is waited out
(``rate_limit``)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from .rate_limit import RateLimits
from .settings import PublishOptions

log = logging.getLogger("bench_pipeline.publication")

RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
T = TypeVar("T")


class DeliveryFailure(Exception):
    """One request failed for good. ``in_doubt``: it may have been stored (no answer)."""

    def __init__(self, what: str, detail: str, *, in_doubt: bool = False, status: int | None = None):
        super().__init__(f"{what}: {detail}")
        self.what = what
        self.detail = detail
        self.in_doubt = in_doubt
        self.status = status


class Retryable(Exception):
    """A failed attempt the retry policy may repeat (no answer, or a retryable status)."""

    def __init__(self, failure: DeliveryFailure, retry_after: float | None = None):
        super().__init__(str(failure))
        self.failure, self.retry_after = failure, retry_after


def retry_after_seconds(headers: Any) -> float | None:
    """A Retry-After header in seconds (None when absent or not a number)."""
    if not headers:
        return None
    raw = None
    for key in ("retry-after", "Retry-After"):
        if key in headers:
            raw = headers[key]
            break
    try:
        return max(0.0, float(raw)) if raw is not None else None
    except (TypeError, ValueError):
        return None


class RetryPolicy:
    """Runs one request's tries (``run``), and keeps per endpoint how many requests in a row
    failed for good (after ``give_up_after`` of them the endpoint's other requests of this
    call are not tried) and its rate limit window."""

    def __init__(self, options: PublishOptions):
        self.options = options
        self._lock = threading.Lock()
        # per endpoint: requests in a row that failed for good with a transient error, the last detail
        self._failing: dict[str, int] = {}
        self._last_failure: dict[str, str] = {}
        self.limits = RateLimits(options.backoff, options.max_retry_after)

    def check_breaker(self, what: str, route: str) -> None:
        """Once an endpoint failed ``give_up_after`` requests in a row, its other requests of
        this call are not tried (the other endpoints go on)."""
        failing = self._failing.get(route, 0)
        if failing >= self.options.give_up_after:
            raise DeliveryFailure(
                what, f"not attempted: {failing} requests in a row failed (last: {self._last_failure.get(route)})")

    def outcome(self, route: str, failure: DeliveryFailure | None) -> None:
        with self._lock:
            if failure is None:
                self._failing[route] = 0
            else:
                self._failing[route] = self._failing.get(route, 0) + 1
                self._last_failure[route] = failure.detail

    def wait(self, attempt: int, retry_after: float | None) -> None:
        """Sleep before try ``attempt + 1``: Retry-After (capped) or exponential backoff."""
        delay = self.options.backoff * (2 ** attempt)
        if retry_after is not None:
            delay = min(retry_after, self.options.max_retry_after)
        if delay > 0:
            time.sleep(delay)

    def run(self, what: str, once: Callable[[], T], *, retry_unanswered: bool = True, route: str = "sdk",
            wait_when_limited: bool = True) -> T:
        """``once()`` under the retry policy; returns its result or raises DeliveryFailure.

        ``once`` raises Retryable for a request without an answer or with a retryable
        status (408/425/429/5xx), and DeliveryFailure for a definite refusal, which ends the
        attempts at once. With ``retry_unanswered=False`` a request without an answer is not
        repeated either (the caller reads back first: the failure is ``in_doubt``). With
        ``wait_when_limited=False`` a 429 ends the attempts at once (status 429): for what can
        wait for a later call rather than hold this one (a limit counted per day).
        """
        self.check_breaker(what, route)
        last: DeliveryFailure | None = None
        attempt = limited = 0
        while True:
            self.limits.hold(route)
            try:
                result = once()
            except Retryable as retryable:
                last = retryable.failure
                if last.status == 429 and not wait_when_limited:
                    self.outcome(route, None)  # up, and not to be asked again in this call
                    raise last from None
                if last.status == 429:  # up and busy: wait for the window with the other requests
                    limited += 1
                    if limited >= self.options.rate_limited_tries:
                        self.outcome(route, None)
                        raise DeliveryFailure(last.what, f"{last.detail} (rate limited {limited} times in a row)",
                                              status=429) from None
                    self.limits.limited(route, retryable.retry_after, limited)
                    continue
                if last.in_doubt and not retry_unanswered:
                    self.outcome(route, last)
                    raise last from None
                retry_after = retryable.retry_after
            except DeliveryFailure:
                self.outcome(route, None)  # the service answered: it is up
                raise
            else:
                self.outcome(route, None)
                return result
            if attempt >= self.options.retries:
                break
            log.info("%s failed (%s); retrying", what, last.detail)
            self.wait(attempt, retry_after)
            attempt += 1
        assert last is not None
        self.outcome(route, last)
        raise last
