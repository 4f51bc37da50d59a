"""The per-item writes on a worker pool: each changed Dataset Item's upsert and, on a v3
server, each attempt's dataset run item, while the calling thread sends spans and scores
(``span_delivery``); their outcomes go into the record once the workers are done."""

from __future__ import annotations

import threading

import orjson

from .. import payloads
from ..bindings import Binding
from ..items import ItemMerge, item_request
from ..plan import AttemptPlan
from ..record import CONFIRMED, IN_DOUBT, PLANNED, now_iso
from ..retry import DeliveryFailure
from ..state import Publication
from . import dataset, span_delivery

#: a 5xx answer to a dataset run item may come after it was stored (each call adds one)
RUN_ITEM_DOUBTFUL = frozenset({500, 502, 503, 504})


def summary(failures: list[DeliveryFailure]) -> str:
    """The first failure's detail, and how many were not tried because the endpoint kept failing."""
    skipped = [f for f in failures if f.detail.startswith("not attempted")]
    tried = [f for f in failures if not f.detail.startswith("not attempted")]
    parts = [tried[0].detail] if tried else []
    if skipped:
        parts.append(f"{len(skipped)} {skipped[0].detail}")
    return "; ".join(parts)


def write_all(pub: Publication, item_writes: list[tuple[AttemptPlan, ItemMerge]]) -> None:
    """Item upserts (and, v3, each attempt's dataset run item after its item) on the worker
    pool, while this thread sends the spans and scores; the results go into the record
    here, once the workers are done."""
    bindings = pub.record["bindings"]
    writes = {a.item_id: merge for a, merge in item_writes}
    work = []
    for a in pub.plan.attempts:
        b = bindings.get(a.item_id)
        run_item = pub.legacy and b is not None and b.get("run_item") not in (CONFIRMED, IN_DOUBT)
        if a.item_id in writes or run_item:
            work.append((a, writes.get(a.item_id), Binding.from_json(b) if run_item else None))
    pub.items_pending = {a.item_id for a, merge, _ in work if merge is not None}
    pub.run_items_pending = {a.item_id for a, _, binding in work if binding is not None}
    queue = iter(work)
    taking = threading.Lock()

    def writer() -> list[tuple]:
        """(worker thread) Writes attempts taken from ``work`` until none is left (a few
        long-lived loops, not a future per attempt: 10,000 futures cost the sending thread
        a tenth of its time)."""
        done = []
        while True:
            with taking:
                w = next(queue, None)
            if w is None:
                return done
            done.append(write_attempt(pub, *w))

    with pub.pool() as pool:
        writers = [pool.submit(writer) for _ in range(min(len(work), max(1, pub.options.workers)))]
        span_delivery.spans_and_scores(pub)
        results = [r for f in writers for r in f.result()]
    order = {a.item_id: i for i, (a, _, _) in enumerate(work)}
    results.sort(key=lambda r: order[r[0].item_id])
    item_failures, run_doubtful, run_failed = [], [], []
    for a, merge, item_failure, answer, run_failure in results:
        if merge is not None:
            if item_failure is None:
                dataset.item_done(pub, a, merge.outcome, now_iso())
                pub.sent["items"] += 1
            else:
                item_failures.append(item_failure)
                pub.blocked.add(a.item_id)
                pub.done.discard(a.item_id)
        b = bindings.get(a.item_id)
        if answer is not None:
            run_id = answer.get("datasetRunId")
            if run_id and not pub.record["experiment_id"]:
                pub.record["experiment_id"] = run_id
                if pub.ctx is not None:
                    pub.ctx.experiment_id = run_id
            b["run_item"], b["run_item_id"] = CONFIRMED, answer.get("id")
            pub.sent["run_items"] += 1
        elif run_failure is not None:
            b["run_item"] = IN_DOUBT if run_failure.in_doubt else PLANNED
            if run_failure.in_doubt:
                b["run_item_doubt_at"] = now_iso()  # read back no sooner than readback_delay after this
            (run_doubtful if run_failure.in_doubt else run_failed).append(run_failure)
            pub.done.discard(a.item_id)
        elif pub.legacy and b is not None and b.get("run_item") != CONFIRMED:
            pub.done.discard(a.item_id)  # its item could not be written: no run item yet
    pub.items_pending, pub.run_items_pending = set(), set()
    if item_failures:
        pub.errors.append(("dataset items", len(item_failures), summary(item_failures)))
    if run_doubtful:
        pub.errors.append(("dataset run items (sent, no answer)", len(run_doubtful),
                            f"{summary(run_doubtful)}; the next call reads the run back before sending again"))
    if run_failed:
        pub.errors.append(("dataset run items", len(run_failed), summary(run_failed)))
    pub.report()


def write_attempt(pub: Publication, a: AttemptPlan, merge: ItemMerge | None, binding: Binding | None):
    """(worker thread) The attempt's item upsert, then (v3) its dataset run item. Each call
    of ``POST /api/public/dataset-run-items`` adds a run item (the server does not
    de-duplicate), so one without an answer (or with a 5xx) is never re-sent in this call:
    the next call reads the run's items back first. Returns the outcomes; touches no state."""
    http = pub.http
    assert http is not None
    item_failure = run_failure = None
    answer = None
    if merge is not None:
        body = orjson.dumps(item_request(a.item, merge.body or {}), option=orjson.OPT_SERIALIZE_NUMPY)
        try:
            http.post_json(f"dataset item {a.item_id} upsert", "/api/public/dataset-items", body)
        except DeliveryFailure as exc:
            return a, merge, exc, None, None
        pub.items_pending.discard(a.item_id)  # for the progress count only
    if binding is not None:
        body = payloads.run_item_body(a, binding, pub.plan, pub.anchor)
        if pub.profile is None or not pub.profile.run_item_created_at:
            body.pop("createdAt")  # strict body before 3.160.0: the key would be refused
        try:
            got = http.post_json(f"dataset run item {a.item_id}", "/api/public/dataset-run-items",
                                 orjson.dumps(body), retry_unanswered=False, doubtful=RUN_ITEM_DOUBTFUL)
            answer = got if isinstance(got, dict) else {}
            pub.run_items_pending.discard(a.item_id)  # for the progress count only
        except DeliveryFailure as exc:
            run_failure = exc
    return a, merge, item_failure, answer, run_failure
