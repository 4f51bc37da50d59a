"""Datasets (v2/datasets/**: upsert by name) and dataset items (dataset-items/**: upsert by
id, keeping the fields a request omits; ids unique per project)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Dict

from .. import rules
from ..messages import ApiError, Response, json_response
from ..parsing import body_json, page_and_limit, paginate, query_datetime
from ..routing import route
from ..timestamps import iso, utcnow

if TYPE_CHECKING:
    from ..server import LangfuseStandIn

MAX_DATASET_ITEM_ID_LENGTH = 255


def datasets_list(server: "LangfuseStandIn", query: Dict[str, str], **_: Any) -> Response:
    page, limit = page_and_limit(query)
    rows, meta = paginate(list(server.datasets.values()), page, limit)
    return json_response(200, {"data": rows, "meta": meta})


def datasets_create(server: "LangfuseStandIn", body: bytes, headers: Dict[str, str], **_: Any) -> Response:
    payload = body_json(body, headers)
    try:
        rules.validate_dataset(payload)
    except rules.RuleError as exc:
        raise ApiError(exc.status, exc.message) from None
    name = payload["name"]
    now = iso(utcnow())
    ds = server.datasets.get(name)
    if ds is None:
        ds = {
            "id": "ds-" + uuid.uuid4().hex[:20], "name": name, "description": None,
            "metadata": None, "inputSchema": None, "expectedOutputSchema": None,
            "projectId": server.project_id, "createdAt": now, "updatedAt": now,
        }
        server.datasets[name] = ds
    for key in ("description", "metadata", "inputSchema", "expectedOutputSchema"):
        if payload.get(key) is not None:
            ds[key] = payload[key]
    ds["updatedAt"] = now
    return json_response(200, ds)


def datasets_get(server: "LangfuseStandIn", name: str, **_: Any) -> Response:
    ds = server.datasets.get(name)
    if ds is None:
        raise ApiError(404, f"Dataset not found: {name!r}")
    return json_response(200, ds)


def items_create(server: "LangfuseStandIn", body: bytes, headers: Dict[str, str], **_: Any) -> Response:
    payload = body_json(body, headers)
    try:
        req = rules.validate_dataset_item(payload)
    except rules.RuleError as exc:
        raise ApiError(exc.status, exc.message) from None
    ds = server.datasets.get(req["datasetName"])
    if ds is None:
        raise ApiError(404, f"Dataset not found: {req['datasetName']!r}")
    item_id = req["id"] or str(uuid.uuid4())
    if len(item_id) > MAX_DATASET_ITEM_ID_LENGTH:
        raise ApiError(400, f"Invalid request data: id is longer than {MAX_DATASET_ITEM_ID_LENGTH} chars")
    now = iso(utcnow())
    item = server.dataset_items.get(item_id)
    if item is not None and item["datasetId"] != ds["id"]:  # dataset-items.ts upsertDatasetItem: 409
        raise ApiError(409, f"Dataset item id {item_id!r} already exists in another dataset "
                            f"(id {item['datasetId']}) in this project")
    if item is None:
        item = {
            "id": item_id, "status": "ACTIVE", "input": None, "expectedOutput": None, "metadata": None,
            "sourceTraceId": None, "sourceObservationId": None, "datasetId": ds["id"],
            "datasetName": ds["name"], "createdAt": now, "updatedAt": now, "version": now,
            "mediaReferences": [],
        }
        server.dataset_items[item_id] = item
    for key in ("input", "expectedOutput", "metadata", "sourceTraceId", "sourceObservationId", "status"):
        if payload.get(key) is not None:
            item[key] = payload[key]
    item["updatedAt"] = now
    item["version"] = now
    return json_response(200, item)


def items_list(server: "LangfuseStandIn", query: Dict[str, str], **_: Any) -> Response:
    page, limit = page_and_limit(query, 50, 100)  # utils/zod.ts publicApiPaginationZod: limit <= 100
    query_datetime(query, "version")  # accepted (validated) but items are not versioned here
    rows = list(server.dataset_items.values())
    name = query.get("datasetName")
    if name is not None:
        if name not in server.datasets:
            raise ApiError(404, f"Dataset not found: {name!r}")
        rows = [r for r in rows if r["datasetName"] == name]
    for param, key in (("sourceTraceId", "sourceTraceId"), ("sourceObservationId", "sourceObservationId")):
        if query.get(param):
            rows = [r for r in rows if r[key] == query[param]]
    rows, meta = paginate(rows, page, limit)
    return json_response(200, {"data": rows, "meta": meta})


def items_get(server: "LangfuseStandIn", id: str, **_: Any) -> Response:  # noqa: A002
    item = server.dataset_items.get(id)
    if item is None:
        raise ApiError(404, f"Dataset item not found: {id!r}")
    return json_response(200, item)


def items_delete(server: "LangfuseStandIn", id: str, **_: Any) -> Response:  # noqa: A002
    if server.dataset_items.pop(id, None) is None:
        raise ApiError(404, f"Dataset item not found: {id!r}")
    return json_response(200, {"message": "Dataset item successfully deleted"})


ROUTES = [
    route("GET", r"^/api/public/v2/datasets$", "datasets.list", datasets_list),
    route("POST", r"^/api/public/v2/datasets$", "datasets.create", datasets_create),
    route("GET", r"^/api/public/v2/datasets/(?P<name>[^/]+)$", "datasets.get", datasets_get),
    route("GET", r"^/api/public/dataset-items$", "dataset_items.list", items_list),
    route("POST", r"^/api/public/dataset-items$", "dataset_items.create", items_create),
    route("GET", r"^/api/public/dataset-items/(?P<id>[^/]+)$", "dataset_items.get", items_get),
    route("DELETE", r"^/api/public/dataset-items/(?P<id>[^/]+)$", "dataset_items.delete", items_delete),
]
