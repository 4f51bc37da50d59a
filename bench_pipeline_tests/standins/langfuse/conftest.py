"""Fixtures of the stand-in's tests: a stand-in per test and an SDK client of it.

Every test drives the REAL SDK (or a raw HTTP client) over REAL HTTP against
``standins.langfuse.LangfuseStandIn``. Tests of the SDK's own score queue use the ``sdk5``
mode (the server SDK 5.0.4 targets, which takes score arrays).
"""

from __future__ import annotations

import uuid

import pytest

from bench_pipeline_tests.support.langfuse_clients import close_client, make_client
from standins.langfuse import LangfuseStandIn


@pytest.fixture
def standin(request):
    # The SDK keeps one resource manager per public key (resource_manager.py), so a unique
    # key per test keeps clients of earlier tests from talking to this server.
    mode = getattr(request, "param", "v4")  # ``@in_mode("v3")``: indirect parametrization
    with LangfuseStandIn(public_key=f"pk-lf-{uuid.uuid4().hex[:12]}", mode=mode) as server:
        yield server
        assert server.internal_errors == []


@pytest.fixture
def lf(standin):
    client = make_client(standin)
    yield client
    close_client(client)
