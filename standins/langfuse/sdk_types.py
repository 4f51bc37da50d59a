"""Bodies checked with the SDK's own generated request types (``langfuse/api/**/types``), for
the forms SDK 5 sends that the server snapshot of ``rules.py`` does not have (``sdk5`` mode)."""

from __future__ import annotations

import math
import typing
import uuid
from typing import Any, Dict

import pydantic
from langfuse.api.core.pydantic_utilities import parse_obj_as
from langfuse.api.core.serialization import FieldMetadata
from langfuse.api.scores.types.create_score_request import CreateScoreRequest

from . import rules
from .messages import ApiError
from .timestamps import iso, parse_iso, utcnow


def wire_aliases(model: type) -> Dict[str, str]:
    """python field name -> wire alias, read from the generated model's FieldMetadata."""
    out: Dict[str, str] = {}
    hints = typing.get_type_hints(model, include_extras=True)
    for name, hint in hints.items():
        for meta in getattr(hint, "__metadata__", ()):
            if isinstance(meta, FieldMetadata):
                out[name] = meta.alias
    return out


_ALIAS_CACHE: Dict[type, Dict[str, str]] = {}


def validate_with(model: type, body: Any, what: str) -> Any:
    """Validate a JSON body with an SDK-generated request type; raise ApiError(400)."""
    if not isinstance(body, dict):
        raise ApiError(400, f"Invalid request data: {what} must be a JSON object")
    aliases = _ALIAS_CACHE.setdefault(model, wire_aliases(model))
    wrong = [f"{py!r} (expected {alias!r})" for py, alias in aliases.items() if py in body and alias not in body]
    if wrong:
        raise ApiError(400, f"Invalid request data: unknown field(s) {', '.join(wrong)} in {what}")
    try:
        return parse_obj_as(model, body)
    except pydantic.ValidationError as exc:
        issues = [
            {"path": list(err.get("loc", ())), "message": err.get("msg"), "code": err.get("type")}
            for err in exc.errors()
        ]
        summary = "; ".join(f"{'.'.join(map(str, i['path']))}: {i['message']}" for i in issues)
        raise ApiError(400, f"Invalid request data for {what}: {summary}", issues) from exc


def sdk5_score_row(body: Any, project_id: str) -> Dict[str, Any]:
    """The stored row of one SDK 5 score (CreateScoreRequest + the server's extra rules); raise
    ApiError(400)."""
    if not isinstance(body, dict):
        raise ApiError(400, "score must be a JSON object")
    # The generated model types metadata as a dict, but the API accepts any JSON value
    # there (see score_consumer.py), so metadata is left out of the type check.
    probe = {k: v for k, v in body.items() if k != "metadata"}
    req = validate_with(CreateScoreRequest, probe, "CreateScoreRequest")
    if not req.name:
        raise ApiError(400, "name must not be empty")
    if not (req.trace_id or req.session_id or req.dataset_run_id):
        raise ApiError(400, "score needs one of traceId, sessionId or datasetRunId")
    if req.observation_id and not req.trace_id:
        raise ApiError(400, "observationId requires traceId")
    value = body.get("value")
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ApiError(400, "value must be a number or a string")
    data_type = body.get("dataType") or ("CATEGORICAL" if isinstance(value, str) else "NUMERIC")
    if data_type in ("NUMERIC", "BOOLEAN"):
        if isinstance(value, str) or not math.isfinite(value):
            raise ApiError(400, f"{data_type} score value must be a finite number")
        value = float(value)
        if data_type == "BOOLEAN" and value not in (0.0, 1.0):
            raise ApiError(400, "BOOLEAN score value must be 0 or 1")
    else:
        if not isinstance(value, str):
            raise ApiError(400, f"{data_type} score value must be a string")
        if data_type == "TEXT" and not 1 <= len(value) <= 500:
            raise ApiError(400, "TEXT score value must have 1 to 500 characters")
    ts_raw = body.get("timestamp")
    if ts_raw is None:
        ts = utcnow()
    else:
        try:
            ts = parse_iso(ts_raw)
        except (ValueError, AttributeError):
            raise ApiError(400, f"timestamp {ts_raw!r} is not an ISO 8601 datetime") from None
        if ts.tzinfo is None:
            raise ApiError(400, f"timestamp {ts_raw!r} has no UTC offset")
    env = body.get("environment")
    if env is not None and not rules.ENV_RE.match(env):
        raise ApiError(400, f"invalid environment {env!r}")
    now = iso(utcnow())
    return {
        "id": body.get("id") or str(uuid.uuid4()), "projectId": project_id, "name": req.name,
        "value": value, "dataType": data_type, "source": body.get("source") or "API",
        "timestamp": iso(ts), "environment": env or "default",
        "traceId": req.trace_id, "observationId": req.observation_id, "sessionId": req.session_id,
        "datasetRunId": req.dataset_run_id, "comment": req.comment, "metadata": body.get("metadata"),
        "configId": req.config_id, "queueId": req.queue_id, "authorUserId": None,
        "createdAt": now, "updatedAt": now,
    }
