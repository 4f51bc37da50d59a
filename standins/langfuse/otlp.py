"""Decode OTLP/HTTP trace exports (protobuf or JSON) into plain Python span dicts.

The Langfuse SDK 5 span exporter (``langfuse/_client/span_processor.py`` ->
``opentelemetry.exporter.otlp.proto.http.trace_exporter.OTLPSpanExporter``) posts
``ExportTraceServiceRequest`` protobuf, gzip-compressed by default.  The generated
REST client (``langfuse/api/opentelemetry/raw_client.py``, ``export_traces``) posts
the OTLP/JSON form with hex ids.  Both are decoded here to the same shape.
"""

from __future__ import annotations

import base64
import re
import binascii
import gzip
import zlib
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)


class OtlpDecodeError(ValueError):
    """The body is not a decodable OTLP trace export."""


def decompress(body: bytes, content_encoding: Optional[str]) -> bytes:
    enc = (content_encoding or "").strip().lower()
    if not enc or enc == "identity":
        return body
    try:
        if enc == "gzip":
            return gzip.decompress(body)
        if enc == "deflate":
            return zlib.decompress(body)
    except (OSError, zlib.error, EOFError) as exc:
        raise OtlpDecodeError(f"cannot decode {enc} body: {exc}") from exc
    raise OtlpDecodeError(f"unsupported Content-Encoding {content_encoding!r}")


def nanos_to_iso(nanos: Optional[int]) -> Optional[str]:
    if not nanos:
        return None
    dt = datetime.fromtimestamp(int(nanos) / 1e9, tz=timezone.utc)
    return dt.isoformat(timespec="microseconds").replace("+00:00", "Z")


# --------------------------------------------------------------------------- protobuf


def _pb_any_value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "int_value":
        return int(value.int_value)
    if kind == "double_value":
        return float(value.double_value)
    if kind == "bytes_value":
        return bytes(value.bytes_value)
    if kind == "array_value":
        return [_pb_any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _pb_any_value(kv.value) for kv in value.kvlist_value.values}
    return None  # pragma: no cover - future oneof members


def _pb_attributes(attrs: Any) -> Dict[str, Any]:
    return {kv.key: _pb_any_value(kv.value) for kv in attrs}


def _hex(raw: bytes) -> Optional[str]:
    return raw.hex() if raw else None


def decode_protobuf(body: bytes) -> List[Dict[str, Any]]:
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except Exception as exc:  # google.protobuf.message.DecodeError
        raise OtlpDecodeError(f"invalid ExportTraceServiceRequest protobuf: {exc}") from exc
    spans: List[Dict[str, Any]] = []
    for rs in request.resource_spans:
        resource_attributes = _pb_attributes(rs.resource.attributes)
        for ss in rs.scope_spans:
            scope = {
                "name": ss.scope.name,
                "version": ss.scope.version,
                "attributes": _pb_attributes(ss.scope.attributes),
            }
            for sp in ss.spans:
                spans.append(
                    _span_dict(
                        trace_id=_hex(sp.trace_id),
                        span_id=_hex(sp.span_id),
                        parent_span_id=_hex(sp.parent_span_id),
                        name=sp.name,
                        kind=int(sp.kind),
                        start=int(sp.start_time_unix_nano),
                        end=int(sp.end_time_unix_nano),
                        attributes=_pb_attributes(sp.attributes),
                        status={"code": int(sp.status.code), "message": sp.status.message},
                        events=[
                            {
                                "name": ev.name,
                                "time_unix_nano": int(ev.time_unix_nano),
                                "attributes": _pb_attributes(ev.attributes),
                            }
                            for ev in sp.events
                        ],
                        resource_attributes=resource_attributes,
                        scope=scope,
                    )
                )
    return spans


# --------------------------------------------------------------------------- OTLP/JSON

_HEX = re.compile(r"[0-9a-f]+")


def _json_id(value: Any, nbytes: int) -> Optional[str]:
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise OtlpDecodeError(f"span/trace id must be a string, got {type(value).__name__}")
    text = value.strip().lower()
    if len(text) == nbytes * 2 and _HEX.fullmatch(text):
        return text
    try:  # proto3 JSON mapping uses base64 for bytes
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise OtlpDecodeError(f"invalid id {value!r}") from exc
    if len(raw) != nbytes:
        raise OtlpDecodeError(f"invalid id length for {value!r}")
    return raw.hex()


def _json_any_value(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "bytesValue" in value:
        return base64.b64decode(value["bytesValue"])
    if "arrayValue" in value:
        return [_json_any_value(v) for v in (value["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in value:
        return {
            kv["key"]: _json_any_value(kv.get("value"))
            for kv in (value["kvlistValue"] or {}).get("values", [])
        }
    return None


def _json_attributes(attrs: Any) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for kv in attrs or []:
        if not isinstance(kv, dict) or "key" not in kv:
            raise OtlpDecodeError(f"invalid attribute {kv!r}")
        out[kv["key"]] = _json_any_value(kv.get("value"))
    return out


def decode_json(payload: Any) -> List[Dict[str, Any]]:
    if not isinstance(payload, dict) or not isinstance(payload.get("resourceSpans"), list):
        raise OtlpDecodeError("OTLP/JSON body needs a resourceSpans array")
    spans: List[Dict[str, Any]] = []
    for rs in payload["resourceSpans"]:
        resource_attributes = _json_attributes(((rs or {}).get("resource") or {}).get("attributes"))
        for ss in (rs or {}).get("scopeSpans") or []:
            sc = (ss or {}).get("scope") or {}
            scope = {
                "name": sc.get("name", ""),
                "version": sc.get("version", ""),
                "attributes": _json_attributes(sc.get("attributes")),
            }
            for sp in (ss or {}).get("spans") or []:
                status = sp.get("status") or {}
                spans.append(
                    _span_dict(
                        trace_id=_json_id(sp.get("traceId"), 16),
                        span_id=_json_id(sp.get("spanId"), 8),
                        parent_span_id=_json_id(sp.get("parentSpanId"), 8),
                        name=sp.get("name", ""),
                        kind=int(sp.get("kind") or 0),
                        start=int(sp.get("startTimeUnixNano") or 0),
                        end=int(sp.get("endTimeUnixNano") or 0),
                        attributes=_json_attributes(sp.get("attributes")),
                        status={
                            "code": int(status.get("code") or 0)
                            if not isinstance(status.get("code"), str)
                            else status.get("code"),
                            "message": status.get("message", ""),
                        },
                        events=[
                            {
                                "name": ev.get("name", ""),
                                "time_unix_nano": int(ev.get("timeUnixNano") or 0),
                                "attributes": _json_attributes(ev.get("attributes")),
                            }
                            for ev in sp.get("events") or []
                        ],
                        resource_attributes=resource_attributes,
                        scope=scope,
                    )
                )
    return spans


def _span_dict(
    *,
    trace_id: Optional[str],
    span_id: Optional[str],
    parent_span_id: Optional[str],
    name: str,
    kind: int,
    start: int,
    end: int,
    attributes: Dict[str, Any],
    status: Dict[str, Any],
    events: List[Dict[str, Any]],
    resource_attributes: Dict[str, Any],
    scope: Dict[str, Any],
) -> Dict[str, Any]:
    if not trace_id or len(trace_id) != 32:
        raise OtlpDecodeError(f"span {name!r} has an invalid trace id {trace_id!r}")
    if not span_id or len(span_id) != 16:
        raise OtlpDecodeError(f"span {name!r} has an invalid span id {span_id!r}")
    return {
        "trace_id": trace_id,
        "span_id": span_id,
        "parent_span_id": parent_span_id,
        "name": name,
        "kind": kind,
        "start_time_unix_nano": start,
        "end_time_unix_nano": end,
        "start_time": nanos_to_iso(start),
        "end_time": nanos_to_iso(end),
        "attributes": attributes,
        "status": status,
        "events": events,
        "resource_attributes": resource_attributes,
        "scope": scope,
    }
