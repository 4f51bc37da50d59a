"""Where and how to publish: the Langfuse target (``LangfuseSettings``, from the environment,
never showing the secret) and the delivery tuning (``PublishOptions``)."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

log = logging.getLogger("bench_pipeline.publication")

DEFAULT_BASE_URL = "https://cloud.langfuse.com"  # the SDK's default when no URL is configured


@dataclass
class LangfuseSettings:
    """Where to publish. ``from_env`` reads LANGFUSE_BASE_URL (wins over LANGFUSE_HOST),
    LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY. The repr never shows the secret."""

    base_url: str | None
    public_key: str | None
    secret_key: str | None

    @classmethod
    def from_env(cls) -> LangfuseSettings:
        def env(name: str) -> str | None:
            value = os.environ.get(name)
            return value.strip() if value and value.strip() else None

        return cls(
            base_url=env("LANGFUSE_BASE_URL") or env("LANGFUSE_HOST"),
            public_key=env("LANGFUSE_PUBLIC_KEY"),
            secret_key=env("LANGFUSE_SECRET_KEY"),
        )

    @property
    def configured(self) -> bool:
        """Both keys are set (the URL defaults to Langfuse Cloud, like the SDK)."""
        return bool(self.public_key) and bool(self.secret_key)

    @property
    def url(self) -> str:
        return (self.base_url or DEFAULT_BASE_URL).rstrip("/")

    def __repr__(self) -> str:
        pk = self.public_key
        shown_pk = None if pk is None else (pk[:8] + "..." if len(pk) > 8 else "***")
        return (
            f"LangfuseSettings(base_url={'set' if self.base_url else None!r}, public_key={shown_pk!r}, "
            f"secret_key={'***' if self.secret_key else None!r})"
        )

    __str__ = __repr__


@dataclass
class PublishOptions:
    """Tuning of delivery (defaults suit a real server; tests shorten the waits)."""

    timeout: float = 30.0  # seconds per HTTP request (LANGFUSE_TIMEOUT overrides)
    retries: int = 3  # extra tries per request after a retryable failure
    backoff: float = 0.5  # first wait between tries, doubled each time
    max_retry_after: float = 120.0  # cap on a server's Retry-After (Langfuse Cloud's windows are 60 s)
    #: tries of one request answered 429 (rate limited) before it fails: a 429 says the server
    #: is up and busy, so it neither uses up ``retries`` nor counts towards ``give_up_after``
    rate_limited_tries: int = 30
    workers: int = 8  # concurrent per-item calls (dataset items, dataset run items)
    chunk_attempts: int = 250  # attempts per span+score round (progress granularity)
    max_score_bytes: int = 900_000  # SDK 5's /api/public/scores array: body limit 1 MiB
    max_ingestion_bytes: int = 3_400_000  # /api/public/ingestion: documented 3.5 MB per batch (openapi.yml)
    max_span_bytes: int = 2_000_000  # uncompressed OTLP/JSON per request
    max_spans_per_request: int = 1000
    max_scores_per_request: int = 10_000
    page_size: int = 100  # list pages (dataset items, experiment items, run items): the servers' maximum
    lookup_batch: int = 100  # execution trace ids per look-up request (filter ``traceId any of``)
    in_doubt_lookup_limit: int = 25  # up to this many in-doubt items: look up per trace, else page
    give_up_after: int = 20  # after this many requests in a row failed for good, stop trying
    #: seconds a v3 dataset run item sent without an answer is given to become readable before
    #: it is read back (the server queues it: 5 s, 15 s around midnight UTC, then batch writes);
    #: reading sooner could miss it and post it twice. LANGFUSE_READBACK_DELAY overrides.
    readback_delay: float = 60.0
    lock_timeout: float = 1800.0  # seconds to wait for another publication of the same suite (suite_lock.py)

    @classmethod
    def from_env(cls) -> PublishOptions:
        options = cls()
        for name, field in (("LANGFUSE_TIMEOUT", "timeout"), ("LANGFUSE_READBACK_DELAY", "readback_delay")):
            raw = os.environ.get(name)
            if raw:
                try:
                    value = float(raw)
                except ValueError:
                    value = -1.0
                if value >= 0:
                    setattr(options, field, value)
                else:
                    log.warning("%s is not a number of seconds; using %.0f s", name, getattr(options, field))
        return options
