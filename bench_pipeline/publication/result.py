"""What a publication returns, or raises."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal


class PublicationError(Exception):
    """Delivery to Langfuse failed. The message says what failed and how many objects; the
    publication record keeps what was confirmed, so a retry resends only what is missing."""


@dataclass
class PublicationResult:
    status: Literal["published", "not_configured"]
    dataset: str
    experiment_id: str | None
    items: int  # dataset items created/updated by this call (outbox: items written)
    scores: int  # scores accepted by this call (outbox: scores written)
    spans: int  # spans accepted by this call (outbox: spans written)
    skipped_existing: int  # attempts whose experiment item already existed and was not re-sent
    record_path: Path | None
    outbox_path: Path | None
    http_requests: int | None  # None when nothing was configured (no HTTP at all)
    server: str | None = None  # "v4" | "v3": the generation the publication talked to (None: outbox)
    server_version: str | None = None  # as GET /api/public/health reported it
    run_items: int = 0  # v3 dataset run items accepted by this call
