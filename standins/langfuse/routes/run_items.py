"""Dataset run items (dataset-run-items.ts). v3 dataset run items are never de-duplicated (each
POST adds one) and, with ``run_item_lag``, are readable only that many seconds after they were
accepted, as on the real server (the one write there that is not idempotent)."""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any, Dict

from .. import rules
from ..messages import ApiError, Response, json_response
from ..parsing import body_json, page_and_limit, paginate
from ..routing import route
from ..timestamps import iso, parse_iso, utcnow

if TYPE_CHECKING:
    from ..server import LangfuseStandIn


def run_items_create(server: "LangfuseStandIn", body: bytes, headers: Dict[str, str], **_: Any) -> Response:
    """dataset-run-items.ts POST. v3 (legacy): publicDatasetService.ts createDatasetRunItemForApi -
    the item must exist and be ACTIVE; the run is created on first use (dataset-runs.ts
    createOrFetchDatasetRun: a uuid, description/metadata/createdAt of that first call);
    every call adds a run item with a new id (no de-duplication). events_only (v4):
    buildStableDatasetRunItemResponseEventsOnly - nothing is stored, the run id is the
    SDK's experiment id formula."""
    payload = body_json(body, headers)
    try:
        req = rules.validate_run_item(payload, server.server_version)
    except rules.RuleError as exc:
        raise ApiError(exc.status, exc.message) from None
    item = server.dataset_items.get(req["datasetItemId"])
    if item is None or item["status"] != "ACTIVE":
        raise ApiError(404, "Dataset item not found")
    created = iso(parse_iso(req["createdAt"])) if req.get("createdAt") else iso(utcnow())
    if server.mode.events_only:
        return json_response(200, {
            "id": str(uuid.uuid4()), "datasetRunId": server.experiment_id(item["datasetId"], req["runName"]),
            "datasetRunName": req["runName"], "datasetItemId": item["id"], "traceId": req.get("traceId") or "",
            "observationId": req.get("observationId"), "createdAt": created, "updatedAt": created})
    trace_id = req.get("traceId")
    if not trace_id:
        span = server.span_by_id(req["observationId"])
        if span is None:
            raise ApiError(404, "Observation not found")
        trace_id = span["trace_id"]
    key = (item["datasetId"], req["runName"])
    run = server.dataset_runs.get(key)
    if run is None:
        run = {"id": str(uuid.uuid4()), "name": req["runName"], "description": req.get("runDescription"),
               "metadata": req.get("metadata") or {}, "datasetId": item["datasetId"],
               "datasetName": item["datasetName"], "createdAt": created, "updatedAt": created}
        server.dataset_runs[key] = run
    run_item = {"id": str(uuid.uuid4()), "datasetRunId": run["id"], "datasetRunName": run["name"],
                "datasetItemId": item["id"], "traceId": trace_id, "observationId": req.get("observationId"),
                "createdAt": created, "updatedAt": created}
    server.add_run_item(run_item, time.monotonic() + server.run_item_lag)
    return json_response(200, run_item)


def run_items_list(server: "LangfuseStandIn", query: Dict[str, str], **_: Any) -> Response:
    """dataset-run-items.ts GET (legacy reads): ``datasetId`` and ``runName`` required; 404
    when the run does not exist (publicDatasetService.ts listDatasetRunItemsForApi)."""
    for key in ("datasetId", "runName"):
        if not query.get(key):
            raise ApiError(400, f"Invalid request data: {key} is required")
    page, limit = page_and_limit(query, 50, 100)
    run = server.dataset_runs.get((query["datasetId"], query["runName"]))
    if run is None:
        raise ApiError(404, "Dataset run not found for the given project and dataset id")
    rows = server.visible_run_items(run["id"], time.monotonic())  # written after the queue's delay
    chunk, meta = paginate(rows, page, limit)
    return json_response(200, {"data": chunk, "meta": meta})


ROUTES = [
    route("POST", r"^/api/public/dataset-run-items$", "dataset_run_items.create", run_items_create, gate="run_items"),
    route("GET", r"^/api/public/dataset-run-items$", "dataset_run_items.list", run_items_list, gate="legacy"),
]
