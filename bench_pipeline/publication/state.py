"""The state of one publication of a run: its plan, settings, record (``publication.json``),
what was sent and what failed in this call; the step modules (``steps``) are functions over it.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from . import payloads
from .bindings import Binding
from .payloads import ExperimentContext
from .plan import AttemptPlan, RunPlan
from .record import RECORD_NAME, load_record, now_iso, save_record, target_fingerprint
from .server_generation import INGESTION, V3, ServerProfile
from .settings import LangfuseSettings, PublishOptions
from .transport import LangfuseHttp

log = logging.getLogger("bench_pipeline.publication")


def announce(progress: Any, text: str) -> None:
    """Tell the progress output which server the publication talks to (when it listens)."""
    log.info("%s", text)
    tell = getattr(progress, "announce", None)
    if callable(tell):
        tell(text)


def announce_wait(progress: Any, text: str) -> None:
    """Tell the progress output that the publication waits, and for what (another
    publication's lock, a rate limit, a read-back): a progress that shows only waits has a
    ``waiting(text)`` method (the Dagster step's log, where the server line would be noise
    on every run), else ``announce`` is told as for anything else."""
    log.info("%s", text)
    tell = getattr(progress, "waiting", None) or getattr(progress, "announce", None)
    if callable(tell):
        tell(text)


class Publication:
    """One publication's state (``publisher.publish_run`` makes it; the steps change it)."""

    def __init__(self, plan: RunPlan, settings: LangfuseSettings, options: PublishOptions, out_dir: Path,
                 progress: Callable[[int, int], None] | None):
        self.plan = plan
        self.settings = settings
        self.options = options
        self.progress = progress
        self.record_path = out_dir / RECORD_NAME
        self.record = load_record(self.record_path, plan, target_fingerprint(settings))
        self.errors: list[tuple[str, int, str]] = []  # (what, how many attempts/objects, detail)
        self.blocked: set[str] = set()  # item ids that cannot progress in this call
        self.sent = {"items": 0, "spans": 0, "scores": 0, "run_items": 0, "scores_deleted": 0}
        self.item_outcomes: dict[str, int] = {}
        self.skipped_existing = 0
        self.session: dict[str, Any] = {"started_at": now_iso()}
        self.http: LangfuseHttp | None = None
        self.profile: ServerProfile | None = None
        self.ctx: ExperimentContext | None = None
        self.total = len(plan.attempts)
        self.done: set[str] = set()  # item ids whose item, experiment item (+ run item) and scores are confirmed
        self.write_record = True
        self.name_keys: dict[tuple[str, ...], str] = {}  # score name sets -> their key in the record
        self.pending_scores: list = []  # score batches sent or to send: (future | None, what, encoded, batch)
        self.score_failures: list = [0, ""]
        self.sender: ThreadPoolExecutor | None = None
        self.items_pending: set[str] = set()  # item upserts on the worker pool, not answered yet
        self.run_items_pending: set[str] = set()  # v3 run items on the worker pool, not answered yet

    @property
    def legacy(self) -> bool:
        return (self.record.get("server") or {}).get("generation") == V3

    @property
    def anchor(self) -> str:
        return self.record["anchor"]

    def report(self) -> None:
        """Tell the progress output (and the log) how many attempts are published."""
        pending = self.items_pending.copy() | self.run_items_pending.copy()  # set copies are atomic
        done = len(self.done - pending) if pending else len(self.done)
        if self.progress is not None:
            self.progress(done, self.total)
        log.info("Langfuse publication of %s: %d/%d attempts published", self.plan.run_id, done, self.total)

    def context(self) -> ExperimentContext:
        """The experiment's server-assigned facts (as far as known) for span payloads."""
        if self.ctx is not None:
            return self.ctx
        rec = self.record
        return ExperimentContext(rec["dataset_id"], rec["experiment_id"], rec["project_id"], self.settings.url,
                                 span_experiment=not self.legacy)

    def span_hash(self, a: AttemptPlan, binding: dict) -> str:
        """Hash of the attempt's span content under this binding (times left out)."""
        b = Binding.from_json(binding)
        epoch = "1970-01-01T00:00:00Z"
        return payloads.span_content_hash(payloads.attempt_spans(a, b, self.plan, self.context(), epoch, epoch))

    def scores_hash(self, a: AttemptPlan, binding: dict) -> str:
        return self.score_units(a, binding)[1]

    def via_ingestion(self) -> bool:
        """Scores go as ``score-create`` events (else as SDK 5's array)."""
        return (self.record.get("server") or {}).get("scores_via", INGESTION) == INGESTION

    def score_units(self, a: AttemptPlan, binding: dict) -> tuple[list[bytes], str]:
        """The attempt's scores encoded for their endpoint, and a hash of them (the record's)."""
        b = Binding.from_json(binding)
        anchor = self.record["anchor"] or ""
        if self.via_ingestion():
            encoded = payloads.attempt_score_events(a, b, self.plan, anchor)
        else:
            encoded = [orjson.dumps(s) for s in payloads.attempt_score_payloads(a, b, self.plan, anchor)]
        return encoded, hashlib.sha256(b"\n".join(encoded)).hexdigest()[:24]

    def pool(self) -> ThreadPoolExecutor:
        """A pool of ``workers`` threads for the per-item calls and look-ups."""
        return ThreadPoolExecutor(max_workers=max(1, self.options.workers), thread_name_prefix="langfuse-publish")

    def save(self) -> None:
        """Save the record as it is now (``record.save_record``: unconfirmed spans as in doubt)."""
        save_record(self.record_path, self.record)
