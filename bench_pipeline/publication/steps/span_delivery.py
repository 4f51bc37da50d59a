"""The spans of the experiment items, per chunk of attempts, each chunk's scores handed to
``score_delivery`` as its spans are in place. A batch without an answer is resolved by reading
back (``readback``) before anything is re-sent."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from .. import endpoints, payloads
from ..bindings import Binding
from ..plan import AttemptPlan
from ..record import CONFIRMED, IN_DOUBT, PLANNED, now_iso
from ..retry import DeliveryFailure
from ..state import Publication
from . import readback, score_delivery


def spans_and_scores(pub: Publication) -> None:
    """Spans, then scores, chunk by chunk of ``chunk_attempts`` attempts that can progress."""
    bindings = pub.record["bindings"]
    todo = [a for a in pub.plan.attempts if a.item_id not in pub.blocked and a.item_id in bindings]
    pub.skipped_existing = sum(1 for a in todo if bindings[a.item_id].get("state") == CONFIRMED)
    size = max(1, pub.options.chunk_attempts)
    # Score batches go out from a sender thread while the next chunk is made and its spans
    # are sent: the server works on the one while this process works on the other.
    pub.score_failures = [0, ""]
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="langfuse-scores") as sender:
        pub.sender = sender
        try:
            for start in range(0, len(todo), size):
                chunk = todo[start:start + size]
                ok = send_spans(pub, chunk)
                score_delivery.send_attempt_scores(pub, [a for a in chunk if a.item_id in ok])
                pub.report()
        finally:
            score_delivery.collect_scores(pub, 0)
            pub.sender = None
    if pub.score_failures[0]:
        pub.errors.append(("attempt scores", pub.score_failures[0], pub.score_failures[1]))


def span_work(pub: Publication, a: AttemptPlan, now: str) -> list[dict] | None:
    """Spans to (re)send for an attempt, or None when its experiment item is in place
    (``now``: their end time when not planned before)."""
    b = pub.record["bindings"][a.item_id]
    binding = Binding.from_json(b)
    # In place: found in Langfuse without a record (content unknown) or sent with the same
    # content: keep it. Changed content is re-sent under the same ids and times (replaces).
    if b["state"] == CONFIRMED and (
        b.get("source") == "server" or b.get("span_hash") in (None, pub.span_hash(a, b))
    ):
        return None
    end = b.get("end") or now
    b["end"] = end
    return payloads.attempt_spans(a, binding, pub.plan, pub.context(), pub.anchor, max(end, pub.anchor))


def send_spans(pub: Publication, chunk: list[AttemptPlan]) -> set[str]:
    """Send the chunk's spans; return the item ids whose experiment item is in place.

    A batch without an answer is never repeated blindly: its items are read back and
    only the missing ones are sent again (up to ``retries`` rounds).
    """
    http = pub.http
    assert http is not None
    bindings = pub.record["bindings"]
    ok: set[str] = set()
    failed: list[tuple[AttemptPlan, DeliveryFailure]] = []
    work: list[tuple[AttemptPlan, list[dict]]] = []
    now = now_iso()
    for a in chunk:
        spans = span_work(pub, a, now)
        if spans is None:
            ok.add(a.item_id)
        else:
            work.append((a, spans))
    doubtful = send_span_groups(pub, work, ok, failed)
    rounds = 0
    while doubtful and rounds < pub.options.retries:
        http.wait(rounds, None)
        rounds += 1
        readback.resolve_in_doubt(pub, doubtful)
        ok.update(a.item_id for a in doubtful if bindings[a.item_id]["state"] == CONFIRMED)
        again = []
        for a in doubtful:
            if bindings[a.item_id]["state"] == PLANNED and a.item_id not in pub.blocked:
                spans = span_work(pub, a, now_iso())
                if spans is None:
                    ok.add(a.item_id)
                else:
                    again.append((a, spans))
        doubtful = send_span_groups(pub, again, ok, failed)
    if doubtful:
        pub.errors.append(("experiment item spans (sent, no answer)", len(doubtful),
                            "Langfuse did not answer; they may or may not be stored"))
    if failed:
        pub.errors.append(("experiment item spans", len(failed), failed[0][1].detail))
    return ok


def send_span_groups(pub: Publication, work: list[tuple[AttemptPlan, list[dict]]], ok: set[str],
                      failed: list[tuple[AttemptPlan, DeliveryFailure]]) -> list[AttemptPlan]:
    """Send spans in size-bounded requests; confirm answered ones, return the unanswered."""
    http = pub.http
    assert http is not None
    bindings = pub.record["bindings"]
    if not work:
        return []
    encoded = [payloads.encode_spans(spans) for _, spans in work]  # once: for the sizes, the body and the hash
    sizes = [sum(len(e) + 1 for e in es) for es in encoded]
    groups = payloads.chunk_by_size(work, sizes, pub.options.max_span_bytes,  # an attempt has at most 2 spans
                             max(1, pub.options.max_spans_per_request // 2))
    doubtful: list[AttemptPlan] = []
    for group in groups:
        batch = [(work[i][0], encoded[i]) for i in group]
        pieces = [e for _, es in batch for e in es]
        try:
            endpoints.send_spans(http, f"span batch ({len(pieces)} spans)", payloads.otlp_bytes(pieces))
        except DeliveryFailure as exc:
            for a, _ in batch:
                if exc.in_doubt:
                    bindings[a.item_id]["state"] = IN_DOUBT
                    doubtful.append(a)
                else:
                    bindings[a.item_id]["state"] = PLANNED
                    failed.append((a, exc))
            continue
        now = now_iso()
        for a, es in batch:
            b = bindings[a.item_id]
            b["state"], b["confirmed_at"], b["span_hash"] = CONFIRMED, now, payloads.span_bytes_hash(es)
            pub.sent["spans"] += len(es)
            ok.add(a.item_id)
    return doubtful
