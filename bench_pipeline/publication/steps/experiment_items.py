"""The binding of every experiment item: items that already exist keep theirs (the record, or
read back from the server), otherwise the execution traces are looked up in batches and a
found root makes the item ``available`` under it, else it goes under its replay trace."""

from __future__ import annotations

import datetime as dt
import logging
import time

from ..bindings import binding_from_server, decide_binding
from ..plan import AttemptPlan
from ..record import CONFIRMED, IN_DOUBT, PLANNED, now_iso
from ..retry import DeliveryFailure
from ..state import Publication, announce_wait
from ..timestamps import normalize_timestamp, parse_timestamp
from . import readback

log = logging.getLogger("bench_pipeline.publication")


def bind(pub: Publication) -> None:
    """A binding for every attempt that can progress: kept from the record, read back from the
    server (no record, or v3 run items in doubt), or new (``lookup_roots``, ``decide_binding``)."""
    rec = pub.record
    bindings = rec["bindings"]
    candidates = [a for a in pub.plan.attempts if a.item_id not in pub.blocked]
    unknown = [a for a in candidates if a.item_id not in bindings]
    in_doubt = [a for a in candidates if bindings.get(a.item_id, {}).get("state") == IN_DOUBT]
    run_items_in_doubt = [a for a in candidates if pub.legacy
                          and bindings.get(a.item_id, {}).get("run_item") == IN_DOUBT]
    no_record = unknown and not any(b.get("state") == CONFIRMED for b in bindings.values())
    if no_record or run_items_in_doubt or (pub.legacy and not rec["experiment_id"]):
        # no record of this run (first call, or the record was lost), or dataset run items
        # that may exist: what does the server hold?
        if run_items_in_doubt:
            settle(pub, run_items_in_doubt)
        by_id = {a.item_id: a for a in candidates}
        found = readback.server_items(pub, candidates)
        if not rec["anchor"]:
            rec["anchor"] = anchor_from_server(pub, found)
        for item_id, row in found.items():
            a = by_id[item_id]
            b = bindings.get(a.item_id)
            if b is not None and b.get("state") == CONFIRMED and (not pub.legacy or b.get("run_item") == CONFIRMED):
                continue
            if b is not None and pub.legacy and (b["trace_id"], b["observation_id"]) == (row[0], row[1]):
                b["run_item"], b["run_item_id"] = CONFIRMED, row[2]
                if b.get("state") == IN_DOUBT:
                    b["state"], b["confirmed_at"], b["span_hash"] = CONFIRMED, now_iso(), pub.span_hash(a, b)
                continue
            server = binding_from_server(a, row[0], row[1])
            bindings[a.item_id] = {**server.to_json(), "task_id": a.task_id, "attempt": a.attempt,
                                   "state": CONFIRMED, "span_hash": None, "source": "server",
                                   "confirmed_at": now_iso()}
            if pub.legacy:
                bindings[a.item_id].update({"run_item": CONFIRMED, "run_item_id": row[2]})
        for a in run_items_in_doubt:
            bindings[a.item_id].pop("run_item_doubt_at", None)
            if bindings[a.item_id].get("run_item") == IN_DOUBT:
                bindings[a.item_id]["run_item"] = PLANNED  # not there: send it
        unknown = [a for a in candidates if a.item_id not in bindings]
        in_doubt = [a for a in in_doubt if bindings[a.item_id].get("state") == IN_DOUBT]
    if in_doubt:
        readback.resolve_in_doubt(pub, in_doubt)

    # new bindings: look the execution traces up
    roots = lookup_roots(pub, sorted({a.execution_trace_id for a in unknown if a.execution_trace_id}))
    now = now_iso()
    for a in unknown:
        if a.execution_trace_id is not None and a.execution_trace_id not in roots:
            pub.blocked.add(a.item_id)  # look-up failed: decide next time, never guess
            continue
        b = decide_binding(a, roots.get(a.execution_trace_id) if a.execution_trace_id else None)
        bindings[a.item_id] = {**b.to_json(), "task_id": a.task_id, "attempt": a.attempt, "state": PLANNED,
                               "span_hash": None, "source": "publisher", "planned_at": now, "end": None}
        if pub.legacy:
            bindings[a.item_id]["run_item"] = PLANNED


def settle(pub: Publication, attempts: list[AttemptPlan]) -> None:
    """Wait until dataset run items sent without an answer could be read back: the v3 server
    queues each one before storing it, so one read too soon is absent though it exists, and
    sending it again would add a second (the server does not de-duplicate run items). An
    item sent ``readback_delay`` seconds ago or more is read at once; one whose sending time
    is unknown (the earlier call ended without saving its outcome) counts from now."""
    delay = pub.options.readback_delay
    if delay <= 0:
        return
    bindings = pub.record["bindings"]
    started = parse_timestamp(pub.session["started_at"]) or dt.datetime.now(dt.UTC)
    latest = max(parse_timestamp(bindings[a.item_id].get("run_item_doubt_at")) or started for a in attempts)
    wait = (latest + dt.timedelta(seconds=delay) - dt.datetime.now(dt.UTC)).total_seconds()
    if wait <= 0:
        return
    announce_wait(pub.progress, f"langfuse: waiting {wait:.0f} s before reading back {len(attempts)} dataset run "
                             f"item(s) sent without an answer (the server stores them with a delay)")
    log.info("waiting %.1f s before reading back %d dataset run item(s) in doubt", wait, len(attempts))
    time.sleep(wait)


def anchor_from_server(pub: Publication, found: dict[str, tuple]) -> str | None:
    """The anchor time of an earlier publication whose record is lost: v4 - the start of its
    experiment items (every span starts at the anchor); v3 - the timestamp of a score on one
    of its items, else the dataset run items' creation time."""
    if not found:
        return None
    if not pub.legacy:
        starts = [row[3] for row in found.values() if row[3]]
        return min(starts) if starts else None
    http = pub.http
    assert http is not None
    trace_id, observation_id = next(iter(found.values()))[:2]
    try:
        _, body = http.get_json("score timestamp read-back (GET /api/public/v2/scores)", "/api/public/v2/scores",
                                {"traceId": trace_id, "observationId": observation_id, "limit": "1"})
        rows = (body or {}).get("data") or []
        if rows and rows[0].get("timestamp"):
            return normalize_timestamp(rows[0]["timestamp"])
    except DeliveryFailure as exc:
        log.warning("could not read an earlier score (%s); using the run items' creation time", exc.detail)
    created = [row[3] for row in found.values() if row[3]]
    return min(created) if created else None


def lookup_roots(pub: Publication, trace_ids: list[str]) -> dict[str, str | None]:
    """trace id -> root span id found in Langfuse, or None when the trace has no root there.
    Batches of ``lookup_batch`` ids per request (``traceId any of``). A trace whose look-up
    failed is absent from the result (its attempts wait); so is every trace when the
    look-up endpoint is absent (404): an absent endpoint is not an absent trace."""
    if not trace_ids:
        return {}
    size = max(1, pub.options.lookup_batch)
    batches = [trace_ids[i:i + size] for i in range(0, len(trace_ids), size)]

    def lookup(batch: list[str]) -> tuple[list[str], dict[str, str], DeliveryFailure | None]:
        try:
            rows = readback.observations(pub, batch, roots_only=True)
        except DeliveryFailure as exc:
            return batch, {}, exc
        by_trace: dict[str, list[dict]] = {}
        for row in rows:
            by_trace.setdefault(row.get("traceId"), []).append(row)
        roots: dict[str, str] = {}
        for trace_id, obs in by_trace.items():
            obs = [o for o in obs if not o.get("parentObservationId")] or obs
            obs.sort(key=lambda o: (o.get("name") != "agent-run", str(o.get("startTime") or "")))
            roots[trace_id] = obs[0]["id"]
        return batch, roots, None

    found: dict[str, str | None] = {}
    failures: dict[str, DeliveryFailure] = {}
    with pub.pool() as pool:
        for batch, roots, failure in pool.map(lookup, batches):
            for trace_id in batch:
                if failure is None:
                    found[trace_id] = roots.get(trace_id)
                else:
                    failures[trace_id] = failure
    if failures:
        affected = sum(1 for a in pub.plan.attempts if a.execution_trace_id in failures)
        first = next(iter(failures.values()))
        detail = first.detail if first.status != 404 else (
            f"{first.detail} (the look-up endpoint is absent on this server: the attempts wait, "
            f"they are not taken for attempts without an execution trace)")
        pub.errors.append(("execution trace look-ups", affected, detail))
    log.info("execution traces: %d looked up in %d request(s), %d found", len(trace_ids), len(batches),
             sum(1 for v in found.values() if v))
    return found
