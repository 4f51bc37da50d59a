"""Without Langfuse keys: the exact requests a first publication would send, written to
``langfuse_outbox.jsonl`` (docs/langfuse.md, "Outbox")."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson

from ..jsonio import write_atomic
from . import payloads
from .bindings import decide_binding
from .items import dataset_body, item_request
from .plan import RunPlan
from .settings import LangfuseSettings, PublishOptions
from .record import now_iso
from .result import PublicationError, PublicationResult

log = logging.getLogger("bench_pipeline.publication")

OUTBOX_NAME = "langfuse_outbox.jsonl"
DATASET_ID_PLACEHOLDER = "{{dataset_id}}"
EXPERIMENT_ID_PLACEHOLDER = "{{experiment_id}}"
OTLP_HEADERS = {"content-type": "application/json", "x-langfuse-ingestion-version": "4"}


def write_outbox(plan: RunPlan, out_dir: Path, settings: LangfuseSettings, options: PublishOptions,
                  progress: Callable[[int, int], None] | None) -> PublicationResult:
    """The requests a first publication to a fresh v4 server would send, one JSON line each.

    Server-assigned values are placeholders (``{{dataset_id}}``, ``{{experiment_id}}``);
    execution traces cannot be looked up offline, so a known episode is ``pending_or_missing``.
    Item bodies are this run's (a configured publication merges them with what the items
    hold first); the anchor time is the time the outbox was written. Streamed: each request
    is made, encoded and written as it comes (nothing is held for the whole run but the plan).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    now = now_iso()
    ctx = payloads.ExperimentContext(DATASET_ID_PLACEHOLDER, EXPERIMENT_ID_PLACEHOLDER, None, None)
    counts = {"spans": 0, "scores": 0}
    secrets = [key.encode("utf-8") for key in (settings.secret_key, settings.public_key) if key]

    def requests() -> Iterator[tuple[str, str, bytes, dict | None, tuple]]:
        """(kind, path, encoded body, headers, placeholders) of each request, in order."""
        yield "dataset", "/api/public/v2/datasets", orjson.dumps(dataset_body(plan.suite)), None, ()
        for a in plan.attempts:
            yield "dataset_item", "/api/public/dataset-items", orjson.dumps(item_request(a.item, a.item)), None, ()
        spans = ((span, len(span) + 1) for a in plan.attempts
                 for span in payloads.encode_spans(payloads.attempt_spans(a, decide_binding(a, None), plan, ctx, now, now)))
        for group in payloads.greedy_groups(spans, options.max_span_bytes, options.max_spans_per_request):
            counts["spans"] += len(group)
            yield ("spans", "/api/public/otel/v1/traces", payloads.otlp_bytes(group), OTLP_HEADERS,
                   (DATASET_ID_PLACEHOLDER, EXPERIMENT_ID_PLACEHOLDER))
        events = ((e, len(e) + 1) for e in itertools.chain(
            (e for a in plan.attempts for e in payloads.attempt_score_events(a, decide_binding(a, None), plan, now)),
            map(payloads.score_event_bytes, payloads.run_score_payloads(plan, EXPERIMENT_ID_PLACEHOLDER, now))))
        for batch in payloads.greedy_groups(events, options.max_ingestion_bytes - 16, options.max_scores_per_request):
            counts["scores"] += len(batch)
            body = b'{"batch":[' + b",".join(batch) + b"]}"
            yield ("scores", "/api/public/ingestion", body, None,
                   (EXPERIMENT_ID_PLACEHOLDER,) if EXPERIMENT_ID_PLACEHOLDER.encode() in body else ())

    def encoded() -> Iterator[bytes]:
        for seq, (kind, path, body, headers, placeholders) in enumerate(requests(), start=1):
            head = {"seq": seq, "kind": kind, "method": "POST", "path": path}
            if headers:
                head["headers"] = headers
            data = orjson.dumps(head)[:-1] + b',"body":' + body
            if placeholders:
                data += b',"placeholders":' + orjson.dumps(list(placeholders))
            data += b"}\n"
            if any(secret in data for secret in secrets):  # partial configuration: never write a key
                raise PublicationError("refusing to write the outbox: a payload contains a Langfuse key")
            yield data

    path = out_dir / OUTBOX_NAME
    write_atomic(path, encoded())
    total = len(plan.attempts)
    if progress is not None:
        progress(total, total)
    log.info("Langfuse not configured: requests for %d attempt(s) written to the outbox", total)
    return PublicationResult(
        status="not_configured", dataset=plan.suite, experiment_id=None, items=len(plan.attempts),
        scores=counts["scores"], spans=counts["spans"], skipped_existing=0, record_path=None,
        outbox_path=path, http_requests=None,
    )
