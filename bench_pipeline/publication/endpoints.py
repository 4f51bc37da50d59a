"""The bulk write endpoints of a publication, each with what its answer means:

* scores: ``POST /api/public/ingestion`` with ``score-create`` events (207 with a status per
  event; both server generations), or, on a server without that endpoint, SDK 5's
  ``POST /api/public/scores`` with a JSON array (202 = all accepted, 207 = some rejected);
* spans: ``POST /api/public/otel/v1/traces`` with OTLP/JSON (gzip), header
  ``x-langfuse-ingestion-version: 4``; 2xx without ``partialSuccess.rejectedSpans`` = accepted.

(v3 dataset run items, one per attempt, are ``LangfuseHttp.post_json`` calls of ``steps.dataset``.)
"""

from __future__ import annotations

import gzip

from .redaction import short
from .retry import DeliveryFailure
from .transport import LangfuseHttp


def send_ingestion(http: LangfuseHttp, what: str, events: list[bytes]) -> None:
    """POST /api/public/ingestion ``{"batch": [...]}`` (events already encoded).

    The server answers 207 with ``successes`` and ``errors`` per event
    (``packages/shared/src/server/ingestion/processEventBatch.ts``); success only when
    every event is among the successes."""
    body = b'{"batch":[' + b",".join(events) + b"]}"
    response = http.post(what, "/api/public/ingestion", body, {"content-type": "application/json"})
    try:
        result = response.json()
    except ValueError:
        raise DeliveryFailure(what, f"HTTP {response.status_code}: the answer is not JSON",
                              status=response.status_code) from None
    errors = (result or {}).get("errors") or []
    successes = (result or {}).get("successes") or []
    if errors or len(successes) != len(events):
        raise DeliveryFailure(
            what, f"HTTP {response.status_code}: {len(errors)} of {len(events)} event(s) rejected: "
                  f"{short(errors)}", status=response.status_code)


def send_scores(http: LangfuseHttp, what: str, scores: list[bytes]) -> None:
    """SDK 5's POST /api/public/scores with a JSON array (scores already encoded); success
    only when every score was accepted (202; 207 = some rejected)."""
    body = b"[" + b",".join(scores) + b"]"
    response = http.post(what, "/api/public/scores", body, {"content-type": "application/json"})
    if response.status_code == 207:
        try:
            body = response.json()
        except ValueError:
            body = {}
        rejected = body.get("rejected")
        errors = body.get("errors") or []
        raise DeliveryFailure(
            what, f"HTTP 207: {rejected} of {len(scores)} score(s) rejected: {short(errors)}", status=207
        )


def send_spans(http: LangfuseHttp, what: str, raw: bytes) -> None:
    """POST /api/public/otel/v1/traces (OTLP/JSON bytes, sent gzipped); success only without
    rejected spans."""
    http.guard(raw, what)
    response = http.post(
        what,
        "/api/public/otel/v1/traces",
        gzip.compress(raw, compresslevel=1),
        {
            "content-type": "application/json",
            "content-encoding": "gzip",
            "x-langfuse-ingestion-version": "4",
        },
        retry_unanswered=False,  # spans are checked by reading back before a resend
    )
    try:
        body = response.json() if response.content else {}
    except ValueError:
        body = {}
    partial = (body or {}).get("partialSuccess") or (body or {}).get("partial_success") or {}
    rejected = partial.get("rejectedSpans") or partial.get("rejected_spans") or 0
    if int(rejected or 0) > 0:
        raise DeliveryFailure(what, f"{rejected} span(s) rejected: {short(partial.get('errorMessage'))}")
