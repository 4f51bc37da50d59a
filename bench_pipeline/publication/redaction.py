"""Keeping credentials and the server's address out of what is logged, raised or sent."""

from __future__ import annotations

import logging
from typing import Any


class RedactUrl(logging.Filter):
    """Replaces the Langfuse URL in httpx's request log lines ("HTTP Request: POST <url> ...")."""

    def __init__(self, url: str):
        super().__init__()
        self.url = url

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and any(self.url in str(a) for a in record.args):
            record.args = tuple(str(a).replace(self.url, "<langfuse>") if self.url in str(a) else a
                                for a in record.args)
        return True


def short(text: Any, limit: int = 300) -> str:
    """A server's answer cut to ``limit`` characters, for an error message."""
    s = text if isinstance(text, str) else repr(text)
    return s if len(s) <= limit else s[:limit] + "..."


def holds_secret(body: bytes, secrets: list[bytes]) -> bool:
    """Whether a payload contains one of the secrets (it never should: such a payload is refused)."""
    return any(secret and secret in body for secret in secrets)
