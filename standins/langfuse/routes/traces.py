"""``POST /api/public/otel/v1/traces`` (otel/v1/traces/index.ts): OTLP protobuf or JSON; spans
are stored by (trace_id, span_id) and every receipt is counted."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict

import orjson
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ..messages import ApiError, Response, json_response
from ..otlp import OtlpDecodeError, decode_json, decode_protobuf, decompress
from ..routing import route
from ..timestamps import iso, utcnow

if TYPE_CHECKING:
    from ..server import LangfuseStandIn


def export_traces(server: "LangfuseStandIn", body: bytes, headers: Dict[str, str], **_: Any) -> Response:
    ctype = (headers.get("content-type") or "").split(";")[0].strip().lower()
    try:
        raw = decompress(body, headers.get("content-encoding"))
        if ctype in ("application/x-protobuf", "application/protobuf"):
            spans = decode_protobuf(raw)
            resp = Response(200, ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf")
        elif ctype == "application/json":
            try:
                payload = orjson.loads(raw)
            except ValueError as exc:
                raise OtlpDecodeError(f"body is not JSON: {exc}") from exc
            spans = decode_json(payload)
            resp = json_response(200, {})
        else:
            raise ApiError(415, f"Unsupported Content-Type {ctype!r}; use application/x-protobuf or application/json")
    except OtlpDecodeError as exc:
        raise ApiError(400, str(exc)) from exc
    received = iso(utcnow())
    for span in spans:
        span["ingestion_version"] = headers.get("x-langfuse-ingestion-version")
        span["received_at"] = received
        server.receive_span(span)
    return resp


ROUTES = [
    route("POST", r"^/api/public/otel/v1/traces$", "otel.traces", export_traces),
]
