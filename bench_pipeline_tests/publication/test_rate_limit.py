"""Rate limit windows: how long a 429 closes an endpoint, and who is told."""

from __future__ import annotations

import time

from bench_pipeline.publication.rate_limit import RateLimits


def test_the_window_is_retry_after_capped_else_exponential_backoff():
    limits = RateLimits(backoff=0.5, max_retry_after=120.0)
    assert limits.delay(30.0, 1) == 30.0
    assert limits.delay(600.0, 1) == 120.0
    assert (limits.delay(None, 1), limits.delay(None, 3)) == (1.0, 4.0)
    assert limits.delay(None, 20) == 120.0  # 0.5 * 2 ** 8 = 128, capped


def test_a_short_window_is_waited_silently_and_a_long_one_is_told_once():
    told: list[str] = []
    limits = RateLimits(backoff=0.0, max_retry_after=0.02)
    limits.on_rate_limit = told.append
    limits.limited("POST /api/public/ingestion", 0.01, 1)
    started = time.monotonic()
    limits.hold("POST /api/public/ingestion")
    assert time.monotonic() - started < 1 and limits.count == 1 and told == []
    limits.hold("GET /other")  # another endpoint's window is open

    long = RateLimits(backoff=0.0, max_retry_after=120.0)
    long.on_rate_limit = told.append
    long.limited("POST /api/public/ingestion", 60.0, 1)
    long.limited("POST /api/public/ingestion", 60.0, 2)
    assert long.count == 2 and len(told) == 1
    assert told[0] == ("langfuse: rate limited by the server (POST /api/public/ingestion: HTTP 429); "
                       "waiting 60 s (1 such answer(s) so far)")
