"""Experiment reads (v4 opt-in): ``GET /api/public/experiments`` (experiments/index.ts) and
``GET /api/public/experiment-items`` (experiment-items/index.ts), derived from the spans that
are experiment items (``Storage.experiment_item_spans``) and the scores in their window."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from .. import rules
from ..messages import ApiError, Response, json_response
from ..parsing import csv_values, cursor_page, field_groups, query_datetime
from ..routing import route
from ..spans import (
    A_EXP_DATASET_ID,
    A_EXP_DESCRIPTION,
    A_EXP_ID,
    A_EXP_ITEM_EXPECTED,
    A_EXP_ITEM_ID,
    A_EXP_ITEM_METADATA,
    A_EXP_ITEM_VERSION,
    A_EXP_METADATA,
    A_EXP_NAME,
    A_INPUT,
    A_LEVEL,
    A_OUTPUT,
    environment,
    maybe_json,
    observation_metadata,
    span_end,
    span_start,
)
from ..timestamps import iso, parse_iso, utcnow
from .scores import score_view

if TYPE_CHECKING:
    from ..server import LangfuseStandIn


def item_in_window(span: Dict[str, Any], frm: datetime, to: Optional[datetime]) -> bool:
    st = span_start(span)
    return st >= frm and (to is None or st < to)


def score_limit(query: Dict[str, str]) -> int:
    """types/experiments.ts ``experimentScoreLimitZod``: an integer 1..50, default 50."""
    raw = query.get("scoreLimit")
    try:
        limit = int(raw) if raw not in (None, "") else 50
    except ValueError:
        raise ApiError(400, "scoreLimit must be an integer") from None
    if not 1 <= limit <= rules.EXPERIMENT_SCORE_LIMIT_MAX:
        raise ApiError(400, f"scoreLimit must be between 1 and {rules.EXPERIMENT_SCORE_LIMIT_MAX}")
    return limit


def score_window(newest: datetime, oldest: datetime) -> Tuple[datetime, datetime]:
    """repository.ts ``scoreTimestampBoundsFromRows``: [oldest - 1 day, min(now, newest + 1 day))."""
    return oldest - rules.EXPERIMENT_SCORE_WINDOW, min(utcnow(), newest + rules.EXPERIMENT_SCORE_WINDOW)


def latest_by_id(rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """scores.ts: ``ORDER BY s.event_ts DESC LIMIT 1 BY s.id`` (one row per score id)."""
    out: Dict[str, Dict[str, Any]] = {}
    for r in sorted(rows, key=lambda r: r["updatedAt"]):
        out[r["id"]] = r
    return sorted(out.values(), key=lambda r: (r["updatedAt"], r["id"]), reverse=True)


def experiments(server: "LangfuseStandIn", query: Dict[str, str], **_: Any) -> Response:
    fields = field_groups(query, {"core", "metadata", "scores"}, {"core"})
    frm = query_datetime(query, "fromStartTime", required=True)
    to = query_datetime(query, "toStartTime")
    if query.get("filter"):
        raise ApiError(400, "the structured 'filter' parameter is not supported by the stand-in")
    limit = score_limit(query)
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for span in server.experiment_item_spans():
        if item_in_window(span, frm, to):  # type: ignore[arg-type]
            groups.setdefault(span["attributes"][A_EXP_ID], []).append(span)
    ids, names, datasets = csv_values(query, "id"), csv_values(query, "name"), csv_values(query, "datasetId")
    rows = []
    for exp_id, spans in groups.items():
        a = spans[0]["attributes"]
        if ids is not None and exp_id not in ids:
            continue
        if names is not None and a.get(A_EXP_NAME) not in names:
            continue
        if datasets is not None and a.get(A_EXP_DATASET_ID) not in datasets:
            continue
        starts = [span_start(s) for s in spans]
        ends = [span_end(s) or span_start(s) for s in spans]
        row: Dict[str, Any] = {
            "id": exp_id, "name": a.get(A_EXP_NAME) or exp_id, "description": a.get(A_EXP_DESCRIPTION),
            "startTime": iso(max(min(starts), frm)), "endTime": iso(max(ends)), "itemCount": len(spans),
            "datasetId": a.get(A_EXP_DATASET_ID),
        }
        if "metadata" in fields:
            md = maybe_json(a.get(A_EXP_METADATA))
            row["metadata"] = md if isinstance(md, dict) else None
        rows.append((max(starts), row))  # cursor_time: the latest item start
    rows.sort(key=lambda t: t[0], reverse=True)
    chunk, meta = cursor_page(rows, query, 50, 100)
    if "scores" in fields and chunk:
        low, high = score_window(chunk[0][0], chunk[-1][0])
        page_ids = {r["id"] for _, r in chunk}
        candidates = latest_by_id([
            s for s in server.score_rows.values()
            if s["datasetRunId"] in page_ids and not s["traceId"] and not s["observationId"]
            and not s["sessionId"] and s["dataType"] in rules.LISTABLE_SCORE_TYPES
            and rules.in_window(parse_iso(s["timestamp"]), low, high)])
        for _, row in chunk:
            mine = [s for s in candidates if s["datasetRunId"] == row["id"]][:limit]
            row["scores"] = [score_view(s, set()) for s in mine]
    return json_response(200, {"data": [r for _, r in chunk], "meta": meta})


ITEM_FIELDS = {"core", "dataset", "io", "metadata", "itemMetadata", "experimentMetadata", "scores"}


def experiment_items(server: "LangfuseStandIn", query: Dict[str, str], **_: Any) -> Response:
    fields = field_groups(query, ITEM_FIELDS, {"core", "dataset"})
    frm = query_datetime(query, "fromStartTime", required=True)
    to = query_datetime(query, "toStartTime")
    if query.get("filter"):
        raise ApiError(400, "the structured 'filter' parameter is not supported by the stand-in")
    limit = score_limit(query)
    exp_ids, exp_names = csv_values(query, "experimentId"), csv_values(query, "experimentName")
    item_ids, datasets = csv_values(query, "experimentItemId"), csv_values(query, "datasetId")
    spans = []
    for span in server.experiment_item_spans():
        a = span["attributes"]
        if not item_in_window(span, frm, to):  # type: ignore[arg-type]
            continue
        if exp_ids is not None and a[A_EXP_ID] not in exp_ids:
            continue
        if exp_names is not None and a.get(A_EXP_NAME) not in exp_names:
            continue
        if item_ids is not None and a[A_EXP_ITEM_ID] not in item_ids:
            continue
        if datasets is not None and a.get(A_EXP_DATASET_ID) not in datasets:
            continue
        spans.append(span)
    chunk, meta = cursor_page(spans, query, 50, 100)
    by_trace: Dict[str, List[Dict[str, Any]]] = {}
    if "scores" in fields and chunk:
        # repository.ts queryExperimentItemsForPublicApi + scores.ts
        # queryScoreRecordsForExperimentItems: scores on the page's observations, or trace-level
        # scores of its traces, in the window, one row per id, ``LIMIT scoreLimit BY trace_id``;
        # each item gets the scores of its trace.
        low, high = score_window(span_start(chunk[0]), span_start(chunk[-1]))
        obs_ids = {s["span_id"] for s in chunk}
        trace_ids = {s["trace_id"] for s in chunk}
        for sc in latest_by_id([
            s for s in server.score_rows.values()
            if s["dataType"] in rules.LISTABLE_SCORE_TYPES
            and rules.in_window(parse_iso(s["timestamp"]), low, high)
            and (s["observationId"] in obs_ids or (s["traceId"] in trace_ids and not s["observationId"]
                                                   and not s["sessionId"] and not s["datasetRunId"]))]):
            group = by_trace.setdefault(sc["traceId"] or "", [])
            if len(group) < limit:
                group.append(sc)
    rows = []
    for span in chunk:
        a = span["attributes"]
        end = span_end(span)
        row: Dict[str, Any] = {
            "id": span["span_id"], "traceId": span["trace_id"], "startTime": iso(span_start(span)),
            "endTime": iso(end) if end else None, "level": a.get(A_LEVEL) or "DEFAULT",
            "environment": environment(span), "experimentId": a[A_EXP_ID],
            "experimentName": a.get(A_EXP_NAME) or a[A_EXP_ID], "experimentItemId": a[A_EXP_ITEM_ID],
        }
        if "dataset" in fields:
            row["experimentDatasetId"] = a.get(A_EXP_DATASET_ID)
            row["experimentItemVersion"] = a.get(A_EXP_ITEM_VERSION)
        if "io" in fields:
            row["input"] = maybe_json(a.get(A_INPUT))
            row["output"] = maybe_json(a.get(A_OUTPUT))
            row["expectedOutput"] = maybe_json(a.get(A_EXP_ITEM_EXPECTED))
        if "metadata" in fields:
            row["metadata"] = observation_metadata(a)
        if "itemMetadata" in fields:
            md = maybe_json(a.get(A_EXP_ITEM_METADATA))
            row["experimentItemMetadata"] = md if isinstance(md, dict) else None
        if "experimentMetadata" in fields:
            md = maybe_json(a.get(A_EXP_METADATA))
            row["experimentMetadata"] = md if isinstance(md, dict) else None
            row["experimentDescription"] = a.get(A_EXP_DESCRIPTION)
        if "scores" in fields:
            row["scores"] = [score_view(s, set()) for s in by_trace.get(span["trace_id"], [])]
        rows.append(row)
    return json_response(200, {"data": rows, "meta": meta})


ROUTES = [
    route("GET", r"^/api/public/experiments$", "experiments.list", experiments, gate="v4:experiments"),
    route("GET", r"^/api/public/experiment-items$", "experiments.list_items", experiment_items,
          gate="v4:experiment items"),
]
