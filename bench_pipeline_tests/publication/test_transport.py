"""LangfuseHttp without a server: the secret guard, request counting and the rate limit hooks."""

from __future__ import annotations

import httpx
import pytest

from bench_pipeline.publication.retry import DeliveryFailure
from bench_pipeline.publication.settings import LangfuseSettings, PublishOptions
from bench_pipeline.publication.transport import LangfuseHttp

SECRET = "sk-lf-very-secret-value-0123456789"


@pytest.fixture
def http():
    client = LangfuseHttp(LangfuseSettings("http://127.0.0.1:9", "pk-lf-1", SECRET), PublishOptions())
    yield client
    client.close()


def test_a_payload_with_the_secret_key_is_refused(http):
    with pytest.raises(DeliveryFailure, match="refused: the payload contains the Langfuse secret key") as failure:
        http.guard(f'{{"note":"{SECRET}"}}'.encode(), "dataset item x upsert")
    assert SECRET not in str(failure.value)
    http.guard(b'{"note":"pk-lf-1"}', "dataset item x upsert")  # the public key is no secret


def test_requests_are_counted_per_route(http):
    http._count(httpx.Request("GET", "http://127.0.0.1:9/api/public/health"))
    http._count(httpx.Request("GET", "http://127.0.0.1:9/api/public/health?x=1"))
    http._count_route("POST", "/api/public/dataset-items")
    assert http.requests == 3
    assert http.by_route == {"GET /api/public/health": 2, "POST /api/public/dataset-items": 1}


def test_the_rate_limit_hook_and_count_are_the_retry_policys(http):
    told: list[str] = []
    http.on_rate_limit = told.append
    assert http.retry.limits.on_rate_limit is http.on_rate_limit
    http.retry.limits.limited("POST /x", 60.0, 1)
    assert http.rate_limited == 1 and len(told) == 1
