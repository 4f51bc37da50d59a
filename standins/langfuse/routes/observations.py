"""Observation and trace reads: ``GET /api/public/v2/observations`` (v2/observations/index.ts,
v4 opt-in) and the legacy v1 reads ``/api/public/observations[/{id}]`` and
``/api/public/traces/{id}`` (observations/**, traces/[traceId].ts; rejectInEventsOnlyMode)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Set

from .. import rules
from ..messages import ApiError, Response, json_response
from ..parsing import cursor_page, field_groups, page_and_limit, paginate, query_datetime
from ..routing import route
from ..spans import (
    A_COMPLETION_START,
    A_COST,
    A_INPUT,
    A_LEVEL,
    A_MODEL,
    A_MODEL_PARAMETERS,
    A_OUTPUT,
    A_PROMPT_NAME,
    A_PROMPT_VERSION,
    A_RELEASE,
    A_SESSION_ID,
    A_STATUS_MESSAGE,
    A_TRACE_METADATA,
    A_TRACE_NAME,
    A_TRACE_PUBLIC,
    A_TRACE_TAGS,
    A_USAGE,
    A_USER_ID,
    A_VERSION,
    environment,
    is_root,
    maybe_json,
    observation_metadata,
    observation_type,
    span_end,
    span_start,
)
from ..timestamps import iso, parse_iso
from .scores import score_view

if TYPE_CHECKING:
    from ..server import LangfuseStandIn

V2_FIELDS = {"core", "basic", "time", "io", "metadata", "model", "usage", "prompt", "metrics", "trace_context"}


def observation_v2(span: Dict[str, Any], fields: Set[str], project_id: str) -> Dict[str, Any]:
    """A span as v2 observation reads return it, with the ``fields`` groups asked for."""
    a = span["attributes"]
    end = span_end(span)
    out: Dict[str, Any] = {
        "id": span["span_id"], "traceId": span["trace_id"], "startTime": iso(span_start(span)),
        "endTime": iso(end) if end else None, "projectId": project_id,
        "parentObservationId": span["parent_span_id"],
        "type": observation_type(span),
    }
    if "basic" in fields:
        out.update({
            "name": span["name"], "level": a.get(A_LEVEL) or "DEFAULT",
            "statusMessage": a.get(A_STATUS_MESSAGE), "version": a.get(A_VERSION),
            "environment": environment(span), "bookmarked": False, "public": bool(a.get(A_TRACE_PUBLIC)),
            "userId": a.get(A_USER_ID), "sessionId": a.get(A_SESSION_ID), "isRootObservation": is_root(span),
        })
    if "time" in fields:
        out.update({"completionStartTime": maybe_json(a.get(A_COMPLETION_START)),
                    "createdAt": span.get("received_at"), "updatedAt": span.get("received_at")})
    if "io" in fields:  # raw strings, like the real v2 API
        out.update({"input": a.get(A_INPUT), "output": a.get(A_OUTPUT)})
    if "metadata" in fields:
        out["metadata"] = observation_metadata(a)
    if "model" in fields:
        out.update({"model": a.get(A_MODEL), "internalModelId": None,
                    "modelParameters": maybe_json(a.get(A_MODEL_PARAMETERS))})
    if "usage" in fields:
        out.update({"usageDetails": maybe_json(a.get(A_USAGE)) or {},
                    "costDetails": maybe_json(a.get(A_COST)) or {}, "totalCost": None})
    if "prompt" in fields:
        out.update({"promptId": None, "promptName": a.get(A_PROMPT_NAME),
                    "promptVersion": a.get(A_PROMPT_VERSION)})
    if "metrics" in fields:
        out.update({"latency": (end - span_start(span)).total_seconds() if end else None,
                    "timeToFirstToken": None})
    if "trace_context" in fields:
        out.update({"tags": list(a.get(A_TRACE_TAGS) or []), "release": a.get(A_RELEASE),
                    "traceName": a.get(A_TRACE_NAME)})
    return out


def observation_v1(span: Dict[str, Any], project_id: str) -> Dict[str, Any]:
    """A span as legacy v1 observation reads return it (JSON attributes decoded)."""
    a = span["attributes"]
    end = span_end(span)
    return {
        "id": span["span_id"], "traceId": span["trace_id"], "type": observation_type(span),
        "name": span["name"], "startTime": iso(span_start(span)), "endTime": iso(end) if end else None,
        "completionStartTime": maybe_json(a.get(A_COMPLETION_START)), "model": a.get(A_MODEL),
        "modelParameters": maybe_json(a.get(A_MODEL_PARAMETERS)), "input": maybe_json(a.get(A_INPUT)),
        "output": maybe_json(a.get(A_OUTPUT)), "version": a.get(A_VERSION),
        "metadata": observation_metadata(a), "level": a.get(A_LEVEL) or "DEFAULT",
        "statusMessage": a.get(A_STATUS_MESSAGE), "parentObservationId": span["parent_span_id"],
        "environment": environment(span), "usageDetails": maybe_json(a.get(A_USAGE)) or {},
        "costDetails": maybe_json(a.get(A_COST)) or {}, "promptId": None,
        "projectId": project_id,
    }


def filtered_spans(server: "LangfuseStandIn", raw: Optional[str], *, v2: bool) -> List[Dict[str, Any]]:
    """All spans, narrowed by a structured ``filter`` (JSON list). The stand-in models the
    filters the publisher sends: ``stringOptions`` on ``traceId`` (``any of``), and in v1
    ``null`` on ``parentObservationId`` (``is null``); column names from
    packages/shared/src/server/tableMappings/mapEventsTable.ts (v2) and
    mapObservationsTable.ts (v1), filter shapes from packages/shared/src/interfaces/filters.ts."""
    if not raw:
        return list(server.all_spans().values())
    try:
        filters = json.loads(raw)
    except ValueError:
        raise ApiError(400, "Invalid JSON in filter parameter") from None
    if not isinstance(filters, list):
        raise ApiError(400, "Invalid request data: filter must be an array")
    first = filters[0] if filters else None
    if isinstance(first, dict) and first.get("type") == "stringOptions" and first.get("column") == "traceId" \
            and first.get("operator") == "any of" and isinstance(first.get("value"), list):
        rows = [s for t in set(first["value"]) if isinstance(t, str) for s in server.trace_spans(t).values()]
    else:
        rows = list(server.all_spans().values())
    for f in filters:
        if not isinstance(f, dict):
            raise ApiError(400, "Invalid request data: filter entries must be objects")
        kind, column, op = f.get("type"), f.get("column"), f.get("operator")
        if kind == "stringOptions" and column == "traceId" and op in ("any of", "none of"):
            values = f.get("value")
            if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
                raise ApiError(400, "Invalid request data: stringOptions value must be a non-empty string list")
            wanted = set(values)
            rows = [r for r in rows if (r["trace_id"] in wanted) == (op == "any of")]
        elif not v2 and kind == "null" and column == "parentObservationId" and op in ("is null", "is not null"):
            if f.get("value") != "":
                raise ApiError(400, "Invalid request data: null filter value must be ''")
            rows = [r for r in rows if (r["parent_span_id"] is None) == (op == "is null")]
        else:
            raise ApiError(400, f"stand-in: filter {f!r} is not modelled")
    return rows


def observations_v2(server: "LangfuseStandIn", query: Dict[str, str], **_: Any) -> Response:
    fields = field_groups(query, V2_FIELDS, {"core", "basic"})
    if (query.get("parseIoAsJson") or "").lower() == "true":
        raise ApiError(400, "parseIoAsJson=true is no longer supported")
    frm, to = query_datetime(query, "fromStartTime"), query_datetime(query, "toStartTime")
    rows = filtered_spans(server, query.get("filter"), v2=True)
    if query.get("traceId"):
        rows = [s for s in rows if s["trace_id"] == query["traceId"]]
    if query.get("name"):
        rows = [s for s in rows if s["name"] == query["name"]]
    if query.get("type"):
        rows = [s for s in rows if observation_type(s) == query["type"].upper()]
    if "parentObservationId" in query:
        want = query["parentObservationId"] or None
        rows = [s for s in rows if s["parent_span_id"] == want]
    if query.get("isRootObservation"):
        want_root = query["isRootObservation"].lower() == "true"
        rows = [s for s in rows if is_root(s) == want_root]
    if query.get("level"):
        rows = [s for s in rows if (s["attributes"].get(A_LEVEL) or "DEFAULT") == query["level"]]
    if query.get("environment"):
        envs = set(query["environment"].split(","))
        rows = [s for s in rows if environment(s) in envs]
    for param, attr in (("userId", A_USER_ID), ("sessionId", A_SESSION_ID), ("version", A_VERSION)):
        if query.get(param):
            rows = [s for s in rows if s["attributes"].get(attr) == query[param]]
    if frm is not None:
        rows = [s for s in rows if span_start(s) >= frm]
    if to is not None:
        rows = [s for s in rows if span_start(s) < to]
    rows.sort(key=lambda s: (s["start_time_unix_nano"], s["span_id"]), reverse=True)
    chunk, meta = cursor_page(rows, query, 50, 1000)
    return json_response(200, {"data": [observation_v2(s, fields, server.project_id) for s in chunk], "meta": meta})


def observations_v1_list(server: "LangfuseStandIn", query: Dict[str, str], **_: Any) -> Response:
    """observations/index.ts GET (legacy reads): page/limit (<= 100), traceId, name, type,
    parentObservationId, fromStartTime, toStartTime, filter."""
    page, limit = page_and_limit(query, 50, 100)
    rows = filtered_spans(server, query.get("filter"), v2=False)
    if query.get("traceId"):
        rows = [s for s in rows if s["trace_id"] == query["traceId"]]
    if query.get("name"):
        rows = [s for s in rows if s["name"] == query["name"]]
    if query.get("parentObservationId"):
        rows = [s for s in rows if s["parent_span_id"] == query["parentObservationId"]]
    if query.get("type"):
        rows = [s for s in rows if observation_type(s) == query["type"].upper()]
    frm, to = query_datetime(query, "fromStartTime"), query_datetime(query, "toStartTime")
    if frm is not None:
        rows = [s for s in rows if span_start(s) >= frm]
    if to is not None:
        rows = [s for s in rows if span_start(s) < to]
    rows.sort(key=lambda s: (s["start_time_unix_nano"], s["span_id"]), reverse=True)
    chunk, meta = paginate(rows, page, limit)
    return json_response(200, {"data": [observation_v1(s, server.project_id) for s in chunk], "meta": meta})


def observation_v1_get(server: "LangfuseStandIn", id: str, **_: Any) -> Response:  # noqa: A002
    span = server.span_by_id(id)
    if span is None:
        raise ApiError(404, f"Observation not found: {id!r}")
    return json_response(200, observation_v1(span, server.project_id))


def trace_v1(server: "LangfuseStandIn", id: str, **_: Any) -> Response:  # noqa: A002
    spans = list(server.trace_spans(id).values())
    if not spans:
        raise ApiError(404, f"Trace not found: {id!r}")
    spans.sort(key=lambda s: s["start_time_unix_nano"])
    roots = [s for s in spans if s["parent_span_id"] is None] or spans
    root = roots[0]
    ra = root["attributes"]
    name = next((s["attributes"][A_TRACE_NAME] for s in spans if s["attributes"].get(A_TRACE_NAME)), root["name"])
    ends = [e for e in (span_end(s) for s in spans) if e]
    start = span_start(spans[0])
    low = span_start(root) - rules.TRACE_SCORE_INTERVAL  # rules.TRACE_SCORE_INTERVAL (scores.ts)
    scores = [score_view(s, {"details"}) for s in server.score_rows.values()
              if s["traceId"] == id and s["dataType"] in rules.LISTABLE_SCORE_TYPES
              and parse_iso(s["timestamp"]) >= low]
    project_id = server.project_id
    return json_response(200, {
        "id": id, "projectId": project_id, "name": name, "timestamp": iso(span_start(root)),
        "environment": environment(root), "input": maybe_json(ra.get(A_INPUT)),
        "output": maybe_json(ra.get(A_OUTPUT)), "sessionId": ra.get(A_SESSION_ID), "userId": ra.get(A_USER_ID),
        "release": ra.get(A_RELEASE), "version": ra.get(A_VERSION), "metadata": maybe_json(ra.get(A_TRACE_METADATA)),
        "tags": list(ra.get(A_TRACE_TAGS) or []), "public": bool(ra.get(A_TRACE_PUBLIC)), "bookmarked": False,
        "htmlPath": f"/project/{project_id}/traces/{id}",
        "latency": (max(ends) - start).total_seconds() if ends else 0.0, "totalCost": 0.0,
        "createdAt": root.get("received_at"), "updatedAt": root.get("received_at"),
        "observations": [observation_v1(s, project_id) for s in spans], "scores": scores,
    })


ROUTES = [
    route("GET", r"^/api/public/v2/observations$", "observations.get_many", observations_v2, gate="v4:observations v2"),
    route("GET", r"^/api/public/observations$", "observations.list_v1", observations_v1_list, gate="legacy"),
    route("GET", r"^/api/public/traces/(?P<id>[^/]+)$", "traces.get_v1", trace_v1, gate="legacy"),
    route("GET", r"^/api/public/observations/(?P<id>[^/]+)$", "observations.get_v1", observation_v1_get,
          gate="legacy"),
]
