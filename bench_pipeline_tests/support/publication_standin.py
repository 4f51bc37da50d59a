"""A Langfuse stand-in per server generation for the publication tests, and the settings and
options that point the publisher at it."""

from __future__ import annotations

import uuid

from bench_pipeline.publication.settings import LangfuseSettings
from standins.langfuse import LangfuseStandIn

SECRET = "sk-lf-very-secret-value-0123456789"
ROOT_SPAN = "00000000000000aa"
MODES = ("v4", "v3")

# readback_delay 0: the stand-in stores run items at once unless made to lag (run_item_lag)
FAST = {"timeout": 2.0, "retries": 2, "backoff": 0.01, "max_retry_after": 0.05, "workers": 4, "readback_delay": 0.0}


def make_standin(mode: str, **kw) -> LangfuseStandIn:
    # The SDK keeps clients per public key: a unique key per stand-in keeps them apart.
    return LangfuseStandIn(public_key=f"pk-lf-{uuid.uuid4().hex[:12]}", secret_key=SECRET, mode=mode, **kw)


def settings_for(server: LangfuseStandIn) -> LangfuseSettings:
    return LangfuseSettings(base_url=server.base_url, public_key=server.public_key, secret_key=server.secret_key)
