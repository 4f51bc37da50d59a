"""Clients of the Langfuse stand-in for its own tests: the real SDK client, a raw HTTP client,
the server generation a test runs against, and the values they share."""

from __future__ import annotations

from datetime import datetime, timezone

import httpx
import pytest
from langfuse import Langfuse
from opentelemetry.sdk.trace import TracerProvider

from standins.langfuse import LangfuseStandIn

FIXED_TS = datetime(2025, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
SEED_TRACE = "0123456789abcdef0123456789abcdef"
SEED_ROOT = "00000000000000aa"


def in_mode(mode: str):
    """Run the test against a stand-in in ``mode`` (indirect parametrization of ``standin``)."""
    return pytest.mark.parametrize("standin", [mode], indirect=True)


sdk5 = in_mode("sdk5")
v3 = in_mode("v3")


def make_client(standin: LangfuseStandIn, **overrides) -> Langfuse:
    kwargs = dict(
        public_key=standin.public_key,
        secret_key=standin.secret_key,
        base_url=standin.base_url,
        flush_at=10,
        flush_interval=0.1,
        timeout=2,
        tracer_provider=TracerProvider(),  # do not touch the global OTEL provider
    )
    kwargs.update(overrides)
    return Langfuse(**kwargs)


def close_client(client: Langfuse) -> None:
    """Shut the client down with every thread it started: the SDK's shutdown leaves the tracer
    provider's exporter and the prompt cache's refresh consumers running, and a test process
    with threads besides the main one cannot fork (``bulk.can_fork``), so later tests of the
    forked paths would run them in one process without saying so."""
    client.shutdown()
    resources = client._resources  # the SDK offers no public way to end these threads
    if resources is not None:
        if resources.tracer_provider is not None:
            resources.tracer_provider.shutdown()
        resources.prompt_cache._task_manager.shutdown()


def raw(standin: LangfuseStandIn, **kw) -> httpx.Client:
    return httpx.Client(base_url=standin.base_url, auth=(standin.public_key, standin.secret_key), timeout=2, **kw)


def score_event(sid, ts, **body):
    """A score-create event of the ingestion API, the score's id its own."""
    return {"id": sid, "timestamp": ts, "type": "score-create", "body": {"id": sid, **body}}
