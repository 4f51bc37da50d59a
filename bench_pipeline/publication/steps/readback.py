"""Reading back what the server holds: observations of traces, the experiment items of this
run, and which spans sent without an answer exist (before anything is re-sent)."""

from __future__ import annotations

import datetime as dt
import logging

import orjson

from ..plan import AttemptPlan
from ..record import CONFIRMED, PLANNED, now_iso
from ..retry import DeliveryFailure
from ..state import Publication
from ..timestamps import iso_ms, normalize_timestamp, parse_timestamp

log = logging.getLogger("bench_pipeline.publication")


def observations(pub: Publication, trace_ids: list[str], *, roots_only: bool) -> list[dict]:
    """Observations of these traces (roots only, or all): v4 ``GET /api/public/v2/observations``
    (cursor pages of up to 1000), v3 ``GET /api/public/observations`` (pages of 100), both
    with the structured filter ``traceId any of [...]``."""
    http = pub.http
    assert http is not None
    filters: list[dict] = [{"type": "stringOptions", "column": "traceId", "operator": "any of",
                            "value": list(trace_ids)}]
    rows: list[dict] = []
    what = f"observations of {len(trace_ids)} trace(s)"
    if not pub.legacy:
        params = {"fields": "core,basic", "limit": "1000", "filter": orjson.dumps(filters).decode()}
        if roots_only:
            params["isRootObservation"] = "true"
        cursor = None
        while True:
            query = {**params, **({"cursor": cursor} if cursor else {})}
            _, body = http.get_json(f"{what} (GET /api/public/v2/observations)", "/api/public/v2/observations", query)
            rows += (body or {}).get("data") or []
            cursor = ((body or {}).get("meta") or {}).get("cursor")
            if not cursor or not (body or {}).get("data"):
                return rows
    if roots_only:
        filters.append({"type": "null", "column": "parentObservationId", "operator": "is null", "value": ""})
    page = 1
    while True:
        _, body = http.get_json(f"{what} (GET /api/public/observations)", "/api/public/observations", {
            "filter": orjson.dumps(filters).decode(), "page": str(page), "limit": "100"})
        data = (body or {}).get("data") or []
        rows += data
        if page >= int(((body or {}).get("meta") or {}).get("totalPages") or 0) or not data:
            return rows
        page += 1


def server_items(pub: Publication, candidates: list[AttemptPlan]) -> dict[str, tuple]:
    """Experiment items of this run that already exist in Langfuse (paged read-back):
    item id -> (trace id, observation id, run item id | None, start or creation time).
    v4: ``GET /api/public/experiment-items``; v3: ``GET /api/public/dataset-run-items``
    (a 404 there: the dataset run does not exist yet), which also gives the run's id."""
    http = pub.http
    assert http is not None
    by_id = {a.item_id: a for a in candidates}
    out: dict[str, tuple] = {}

    def add(item_id: str, row: tuple) -> None:
        if item_id not in by_id:
            return
        if item_id in out and out[item_id][:2] != row[:2]:
            log.warning("experiment item %s exists more than once in Langfuse; keeping one", item_id)
            return
        out.setdefault(item_id, row)

    if pub.legacy:
        page = 1
        while True:
            try:
                _, body = http.get_json(f"dataset run items read-back (page {page})", "/api/public/dataset-run-items", {
                    "datasetId": pub.record["dataset_id"], "runName": pub.plan.run_id, "page": str(page),
                    "limit": str(pub.options.page_size)})
            except DeliveryFailure as exc:
                if exc.status == 404 and page == 1:
                    return out  # "Dataset run not found": nothing published yet
                raise
            data = (body or {}).get("data") or []
            for row in data:
                run_id = row.get("datasetRunId")
                if run_id and not pub.record["experiment_id"]:
                    pub.record["experiment_id"] = run_id
                add(row.get("datasetItemId"), (row.get("traceId"), row.get("observationId"), row.get("id"),
                                               normalize_timestamp(row.get("createdAt"))))
            if page >= int(((body or {}).get("meta") or {}).get("totalPages") or 0) or not data:
                return out
            page += 1
    start = since(pub)
    cursor = None
    page = 0
    while True:
        page += 1
        result = http.call(f"experiment items read-back (page {page})", lambda ro, cursor=cursor: http.api.experiments.list_items(
            from_start_time=start, experiment_id=pub.record["experiment_id"], fields="core",
            limit=pub.options.page_size, cursor=cursor, request_options=ro))
        for row in result.data:
            add(row.experiment_item_id, (row.trace_id, row.id, None, iso_ms(row.start_time)))
        cursor = getattr(result.meta, "cursor", None)
        if not cursor or not result.data:
            return out


def since(pub: Publication) -> dt.datetime:
    """Lower time bound for experiment-item reads: before the run (and any publication) began."""
    stamps = [parse_timestamp(pub.record.get("first_published_at")),
              parse_timestamp(pub.record.get("anchor")),
              parse_timestamp(pub.plan.experiment_metadata.get("started_at")),
              parse_timestamp(pub.plan.provenance.get("run_started_at"))]
    known = [s for s in stamps if s is not None]
    base = min(known) if known else dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
    return base - dt.timedelta(days=1)


def resolve_in_doubt(pub: Publication, attempts: list[AttemptPlan]) -> None:
    """Spans sent without an answer: find out which exist before anything is re-sent
    (the observations of their traces, ``lookup_batch`` traces per request); the ones
    not found go back to ``planned`` and are sent again with the same ids and times."""
    bindings = pub.record["bindings"]
    found: set[tuple[str, str]] = set()
    unreadable: list[AttemptPlan] = []
    detail = ""
    traces = sorted({bindings[a.item_id]["trace_id"] for a in attempts})
    size = max(1, pub.options.lookup_batch)
    for start in range(0, len(traces), size):
        batch = traces[start:start + size]
        try:
            rows = observations(pub, batch, roots_only=False)
        except DeliveryFailure as exc:
            detail = detail or exc.detail
            unreadable += [a for a in attempts if bindings[a.item_id]["trace_id"] in batch]
            continue
        found.update((r.get("traceId"), r.get("id")) for r in rows)
    if unreadable:
        pub.errors.append(("span read-back", len(unreadable), detail))
        pub.blocked.update(a.item_id for a in unreadable)
    now = now_iso()
    for a in attempts:
        if a.item_id in pub.blocked:
            continue
        b = bindings[a.item_id]
        if (b["trace_id"], b["observation_id"]) in found:
            b["state"], b["confirmed_at"], b["span_hash"] = CONFIRMED, now, pub.span_hash(a, b)
        else:
            b["state"] = PLANNED
    log.info("in-doubt spans: %d checked, %d found stored", len(attempts),
             sum(1 for a in attempts if bindings[a.item_id]["state"] == CONFIRMED))
