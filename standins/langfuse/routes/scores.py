"""Scores: ``POST /api/public/scores`` (scores/index.ts), score-create events at
``POST /api/public/ingestion`` (ingestion.ts), ``DELETE /api/public/scores/{id}``, and the reads
(legacy ``GET /api/public/scores`` and ``/v2/scores``, ``GET /api/public/v3/scores``).

A score is a row keyed by (id, UTC day of its timestamp, name) (``rules.score_day_key``):
re-sending it replaces it, another day makes a second row (a duplicate in reads).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Set

from .. import rules
from ..messages import ApiError, Response, json_response
from ..parsing import body_json, csv_values, cursor_page, field_groups, page_and_limit, paginate, query_datetime
from ..routing import route
from ..sdk_types import sdk5_score_row
from ..timestamps import iso, parse_iso, utcnow

if TYPE_CHECKING:
    from ..server import LangfuseStandIn

SCORES_BODY_LIMIT_BYTES = 1_048_576  # Next.js default "1mb" body limit on /api/public/scores


def score_row(score: Dict[str, Any], project_id: str, timestamp: datetime, now: Optional[str] = None
              ) -> Dict[str, Any]:
    """A stored score row from a validated body (``rules.validate_score``)."""
    now = now or iso(utcnow())
    return {**score, "id": score["id"] or str(uuid.uuid4()), "projectId": project_id,
            "timestamp": iso(timestamp), "authorUserId": None, "createdAt": now, "updatedAt": now}


def score_view(s: Dict[str, Any], fields: Set[str]) -> Dict[str, Any]:
    """A stored row as v3 score reads return it, with the ``fields`` groups asked for."""
    value: Any = s["value"]
    if s["dataType"] == "BOOLEAN":
        value = bool(value)
    out = {k: s[k] for k in ("id", "projectId", "name", "dataType", "source", "timestamp",
                             "environment", "createdAt", "updatedAt")}
    out["value"] = value
    if "details" in fields:
        out["comment"] = s["comment"]
        out["configId"] = s["configId"]
        out["metadata"] = s["metadata"] if isinstance(s["metadata"], dict) else None
    if "annotation" in fields:
        out["authorUserId"] = s["authorUserId"]
        out["queueId"] = s["queueId"]
    if "subject" in fields:
        if s["observationId"]:
            out["subject"] = {"kind": "observation", "id": s["observationId"], "traceId": s["traceId"]}
        elif s["traceId"]:
            out["subject"] = {"kind": "trace", "id": s["traceId"]}
        elif s["sessionId"]:
            out["subject"] = {"kind": "session", "id": s["sessionId"]}
        elif s["datasetRunId"]:
            out["subject"] = {"kind": "experiment", "id": s["datasetRunId"]}
    return out


def scores_create(server: "LangfuseStandIn", body: bytes, headers: Dict[str, str], **_: Any) -> Response:
    if len(body) > SCORES_BODY_LIMIT_BYTES:
        raise ApiError(413, f"Body exceeded {SCORES_BODY_LIMIT_BYTES} bytes limit")
    payload = body_json(body, headers)
    if not server.mode.score_arrays:
        # scores/index.ts: bodySchema PostScoresBodyV1 (one object; an array fails the schema);
        # scores-api-service.ts createScore: the event timestamp is ``new Date()`` (arrival),
        # a ``timestamp`` in the body is not part of the schema and is dropped.
        if not isinstance(payload, dict):
            raise ApiError(400, "Invalid request data: expected a score object (PostScoresBodyV1)")
        try:
            score = rules.validate_score(payload, api="scores")
        except rules.RuleError as exc:
            raise ApiError(exc.status, exc.message) from None
        row = score_row(score, server.project_id, utcnow())
        server.store_score(row)
        return json_response(200, {"id": row["id"]})
    if isinstance(payload, dict):  # single score: 200 {id} or 400
        score = sdk5_score_row(payload, server.project_id)
        server.store_score(score)
        return json_response(200, {"id": score["id"]})
    if not isinstance(payload, list) or not payload:
        raise ApiError(400, "Invalid request data: expected a non-empty JSON array of scores")
    accepted, errors = 0, []
    for i, item in enumerate(payload):
        try:
            score = sdk5_score_row(item, server.project_id)
        except ApiError as exc:
            sid = item.get("id") if isinstance(item, dict) else None
            errors.append({"message": f"score[{i}] id={sid!r}: {exc.message}"})
            continue
        server.store_score(score)
        accepted += 1
    if errors:
        return json_response(207, {"accepted": accepted, "rejected": len(errors), "errors": errors})
    return json_response(202, {"message": "Accepted"})


def ingestion(server: "LangfuseStandIn", body: bytes, headers: Dict[str, str], **_: Any) -> Response:
    """ingestion.ts: ``{"batch": [...], "metadata"?}`` (4.5 MB), 207 with ``successes`` /
    ``errors`` per event (processEventBatch.ts ``aggregateBatchResult``: 201 / 400). events_only:
    score-create and sdk-log only; v3: the stand-in models score-create only."""
    if len(body) > rules.INGESTION_BODY_LIMIT:
        raise ApiError(413, "Body exceeded 4.5mb limit")
    payload = body_json(body, headers)
    if not isinstance(payload, dict) or not isinstance(payload.get("batch"), list):
        return json_response(400, {"message": "Invalid request data", "errors": ["batch: expected an array"]})
    successes, errors = [], []
    now = iso(utcnow())
    for event in payload["batch"]:
        eid = event.get("id") if isinstance(event, dict) and isinstance(event.get("id"), str) else "unknown"
        try:
            eid, etype, ts = rules.validate_event_envelope(event)
            if server.mode.events_only and etype not in rules.EVENTS_ONLY_ALLOWED_TYPES:
                errors.append({"id": eid, "status": 400, "message": "Event type not accepted",
                               "error": f'Event type "{etype}" is not accepted by /api/public/ingestion when '
                                        f"LANGFUSE_MIGRATION_V4_WRITE_MODE is events_only."})
                continue
            if etype == "sdk-log":
                successes.append({"id": eid, "status": 201})
                continue
            if etype != "score-create":
                raise rules.RuleError(400, f"stand-in: event type {etype!r} is not modelled")
            score = rules.validate_score(event.get("body"), api="ingestion")
        except rules.RuleError as exc:
            errors.append({"id": eid, "status": exc.status, "message": "Invalid request data",
                           "error": exc.message})
            continue
        successes.append({"id": eid, "status": 201})
        server.ingestion_events[etype] += 1
        if not score["id"]:  # processEventBatch.ts: an event without body.id is never queued
            continue
        # worker IngestionService.processScoreEventList: the score's timestamp is the event's
        server.store_score(score_row(score, server.project_id, ts, now))
    return json_response(207, {"successes": successes, "errors": errors})


def _legacy_list_rows(server: "LangfuseStandIn", query: Dict[str, str]) -> List[Dict[str, Any]]:
    rows = list(server.score_rows.values())
    for param, key in (("name", "name"), ("traceId", "traceId"), ("observationId", "observationId"),
                       ("datasetRunId", "datasetRunId"), ("sessionId", "sessionId")):
        if query.get(param):
            rows = [r for r in rows if r[key] == query[param]]
    frm, to = query_datetime(query, "fromTimestamp"), query_datetime(query, "toTimestamp")
    if frm is not None:
        rows = [r for r in rows if parse_iso(r["timestamp"]) >= frm]
    if to is not None:
        rows = [r for r in rows if parse_iso(r["timestamp"]) < to]
    rows.sort(key=lambda r: (r["timestamp"], r["id"]), reverse=True)
    return rows


def scores_v1(server: "LangfuseStandIn", query: Dict[str, str], **_: Any) -> Response:
    """scores/index.ts GET (legacy reads): trace scores only (filterAndValidateLegacyV1GetScoreList)."""
    page, limit = page_and_limit(query, 50, 100)
    rows = [r for r in _legacy_list_rows(server, query) if r["traceId"]]
    chunk, meta = paginate(rows, page, limit)
    return json_response(200, {"data": [{**score_view(r, {"details"}), "traceId": r["traceId"],
                                         "observationId": r["observationId"], "trace": {}} for r in chunk],
                               "meta": meta})


def scores_v2(server: "LangfuseStandIn", query: Dict[str, str], **_: Any) -> Response:
    """v2/scores/index.ts GET (legacy reads): trace, session and dataset run scores."""
    page, limit = page_and_limit(query, 50, 100)
    chunk, meta = paginate(_legacy_list_rows(server, query), page, limit)
    data = [{**score_view(r, {"details"}), "traceId": r["traceId"], "observationId": r["observationId"],
             "sessionId": r["sessionId"], "datasetRunId": r["datasetRunId"]} for r in chunk]
    return json_response(200, {"data": data, "meta": meta})


#: What DELETE /api/public/scores/{id} answers: scores/[scoreId].ts (``successStatusCode: 202``)
#: returns ``ScoresApiService.deleteScore`` (web/src/features/public-api/server/
#: scores-api-service.ts), which queues the deletion (ScoreDeleteQueue) without looking the
#: score up: the same answer whether the score exists or not, never a 404.
SCORE_DELETE_ANSWER = {"message": "Score deletion queued successfully"}


def scores_delete(server: "LangfuseStandIn", id: str, **_: Any) -> Response:  # noqa: A002
    """Every row of the score is removed at once (the real server's worker does it later)."""
    server.delete_score(id)
    return json_response(202, SCORE_DELETE_ANSWER)


def scores_v3(server: "LangfuseStandIn", query: Dict[str, str], **_: Any) -> Response:
    """v3/scores/index.ts GET: comma-separated filters, value filters by data type, cursor pages."""
    fields = field_groups(query, {"details", "subject", "annotation"}, set())
    if query.get("observationId") and not query.get("traceId"):
        raise ApiError(400, "observationId requires traceId")
    if query.get("sessionId") and (query.get("traceId") or query.get("observationId") or query.get("experimentId")):
        raise ApiError(400, "sessionId is mutually exclusive with traceId, observationId, experimentId")
    if query.get("experimentId") and (query.get("traceId") or query.get("observationId")):
        raise ApiError(400, "experimentId is mutually exclusive with traceId, observationId")
    data_types = csv_values(query, "dataType", upper=True)
    if query.get("value") is not None and (not data_types or len(data_types) != 1
                                           or next(iter(data_types)) not in ("NUMERIC", "BOOLEAN", "CATEGORICAL")):
        raise ApiError(400, "value filter requires a single dataType of NUMERIC, BOOLEAN or CATEGORICAL")
    if (query.get("valueMin") or query.get("valueMax")) and data_types != {"NUMERIC"}:
        raise ApiError(400, "valueMin/valueMax require dataType=NUMERIC")
    frm, to = query_datetime(query, "fromTimestamp"), query_datetime(query, "toTimestamp")
    rows = list(server.score_rows.values())
    simple = {"id": "id", "name": "name", "environment": "environment", "configId": "configId",
              "queueId": "queueId", "authorUserId": "authorUserId", "traceId": "traceId",
              "sessionId": "sessionId", "observationId": "observationId", "experimentId": "datasetRunId"}
    for param, key in simple.items():
        wanted = csv_values(query, param)
        if wanted is not None:
            rows = [r for r in rows if r[key] in wanted]
    sources = csv_values(query, "source", upper=True)
    if sources is not None:
        rows = [r for r in rows if r["source"].upper() in sources]
    if data_types is not None:
        rows = [r for r in rows if r["dataType"] in data_types]
    if query.get("value") is not None:
        dt = next(iter(data_types or {"NUMERIC"}))
        wanted_vals = [v.strip() for v in query["value"].split(",")]
        if dt == "BOOLEAN":
            allowed = {1.0 if v.lower() == "true" else 0.0 for v in wanted_vals}
            rows = [r for r in rows if r["value"] in allowed]
        elif dt == "NUMERIC":
            rows = [r for r in rows if r["value"] in {float(v) for v in wanted_vals}]
        else:
            rows = [r for r in rows if r["value"] in set(wanted_vals)]
    if query.get("valueMin"):
        rows = [r for r in rows if r["value"] >= float(query["valueMin"])]
    if query.get("valueMax"):
        rows = [r for r in rows if r["value"] <= float(query["valueMax"])]
    if frm is not None:
        rows = [r for r in rows if parse_iso(r["timestamp"]) >= frm]
    if to is not None:
        rows = [r for r in rows if parse_iso(r["timestamp"]) < to]
    rows.sort(key=lambda r: (r["timestamp"], r["id"]), reverse=True)
    chunk, meta = cursor_page(rows, query, 50, 100)
    return json_response(200, {"data": [score_view(r, fields) for r in chunk], "meta": meta})


ROUTES = [
    route("POST", r"^/api/public/ingestion$", "ingestion.batch", ingestion, gate="ingestion"),
    route("POST", r"^/api/public/scores$", "scores.create", scores_create),
    route("GET", r"^/api/public/scores$", "scores.list_v1", scores_v1, gate="legacy"),
    route("DELETE", r"^/api/public/scores/(?P<id>[^/]+)$", "scores.delete", scores_delete),
    route("GET", r"^/api/public/v2/scores$", "scores.list_v2", scores_v2, gate="legacy"),
    route("GET", r"^/api/public/v3/scores$", "scores.get_many", scores_v3),
]
