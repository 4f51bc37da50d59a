"""Langfuse publication of a processed benchmark run (docs/langfuse.md).

``publish_run`` maps a run to one Dataset per suite, one Dataset Item per task attempt, one
Experiment (dataset run) per benchmark run with one experiment item per attempt, and
``benchmark.*`` / run-level scores; delivery is confirmed and idempotent, and a record of
what was confirmed (``publication.json``) lets a retry send only what is missing. Without
Langfuse keys the exact payloads go to ``langfuse_outbox.jsonl`` instead.
"""

from .publisher import publish_run
from .result import PublicationError, PublicationResult
from .settings import LangfuseSettings, PublishOptions

__all__ = [
    "LangfuseSettings",
    "PublicationError",
    "PublicationResult",
    "PublishOptions",
    "publish_run",
]
