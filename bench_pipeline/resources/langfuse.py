"""Langfuse connection settings as a Dagster resource.

The keys are never part of Dagster config (the UI shows config): the resource names the
environment variables that hold them and reads them when a publication runs.
"""

from __future__ import annotations

import os

import dagster as dg

from ..publication.settings import LangfuseSettings


class LangfuseResource(dg.ConfigurableResource):
    """Where and as whom to publish; unset keys mean "not configured" (outbox only)."""

    base_url_env: str = "LANGFUSE_BASE_URL"
    public_key_env: str = "LANGFUSE_PUBLIC_KEY"
    secret_key_env: str = "LANGFUSE_SECRET_KEY"

    def settings(self) -> LangfuseSettings:
        if self.base_url_env == "LANGFUSE_BASE_URL" and self.public_key_env == "LANGFUSE_PUBLIC_KEY" and self.secret_key_env == "LANGFUSE_SECRET_KEY":
            return LangfuseSettings.from_env()  # also honours the older LANGFUSE_HOST
        return LangfuseSettings(
            base_url=os.environ.get(self.base_url_env),
            public_key=os.environ.get(self.public_key_env),
            secret_key=os.environ.get(self.secret_key_env),
        )
