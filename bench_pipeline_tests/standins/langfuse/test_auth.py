"""Authentication: the key pair's Basic header, and the "datasets" rate limit; over HTTP a
wrong key pair is a 401 and stores nothing."""

from __future__ import annotations

import base64
import uuid

import httpx
import pytest
from langfuse.api.commons.errors.unauthorized_error import UnauthorizedError

from bench_pipeline_tests.support.langfuse_clients import close_client, make_client
from standins.langfuse.auth import DatasetRateLimit, basic_auth, check_auth
from standins.langfuse.messages import ApiError


def test_bad_auth_gets_401(standin):
    bad = make_client(standin, public_key=f"pk-lf-{uuid.uuid4().hex[:12]}", secret_key="wrong")
    try:
        with pytest.raises(UnauthorizedError):
            bad.api.projects.get()
        with pytest.raises(UnauthorizedError):
            bad.create_dataset(name="nope")
    finally:
        close_client(bad)
    assert httpx.get(f"{standin.base_url}/api/public/projects").status_code == 401
    assert httpx.get(f"{standin.base_url}/api/public/projects", auth=(standin.public_key, "x")).status_code == 401
    assert standin.datasets == {}
    assert {r.status for r in standin.requests} == {401}


def test_the_key_pairs_basic_header_passes_and_anything_else_is_a_401():
    expected = basic_auth("pk", "sk")
    assert expected == "Basic " + base64.b64encode(b"pk:sk").decode()
    check_auth({"authorization": expected}, "pk", "sk", expected)
    check_auth({"authorization": "basic " + base64.b64encode(b"pk:sk").decode()}, "pk", "sk", expected)
    for headers, message in (({}, "No authorization header"),
                             ({"authorization": "Basic !!!"}, "Invalid authorization header"),
                             ({"authorization": basic_auth("pk", "other")},
                              "Invalid credentials. Confirm that you've configured the correct host.")):
        with pytest.raises(ApiError) as err:
            check_auth(headers, "pk", "sk", expected)
        assert (err.value.status, err.value.message) == (401, message)


def test_the_datasets_rate_limit_is_a_fixed_window_on_the_datasets_routes():
    limit = DatasetRateLimit(2, 60.0)
    assert limit.check("/api/public/scores", now=0.0) is None  # not the datasets resource
    assert limit.check("/api/public/dataset-items", now=0.0) is None
    assert limit.check("/api/public/v2/datasets/x", now=1.0) is None
    refused = limit.check("/api/public/dataset-run-items", now=30.5)
    assert refused.status == 429 and refused.headers == {"Retry-After": "30"} and b"Rate limit exceeded" in refused.body
    assert limit.check("/api/public/datasets", now=59.9).headers == {"Retry-After": "1"}
    assert limit.check("/api/public/datasets", now=60.0) is None  # a new window
