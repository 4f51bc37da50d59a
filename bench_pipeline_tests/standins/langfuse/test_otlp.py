"""OTLP trace exports decoded on values in memory: protobuf and JSON to the same span dict."""

from __future__ import annotations

import gzip

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from standins.langfuse.otlp import OtlpDecodeError, decode_json, decode_protobuf, decompress, nanos_to_iso

TRACE, SPAN = "0123456789abcdef0123456789abcdef", "1111111111111111"


def test_protobuf_and_json_decode_to_the_same_span():
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    attr = rs.resource.attributes.add()
    attr.key, attr.value.string_value = "service.name", "bench"
    sp = rs.scope_spans.add().spans.add()
    sp.trace_id, sp.span_id, sp.name = bytes.fromhex(TRACE), bytes.fromhex(SPAN), "s"
    sp.start_time_unix_nano, sp.end_time_unix_nano = 1_000, 2_000
    kv = sp.attributes.add()
    kv.key, kv.value.int_value = "n", 1
    (from_pb,) = decode_protobuf(req.SerializeToString())
    (from_json,) = decode_json({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "bench"}}]},
        "scopeSpans": [{"spans": [{"traceId": TRACE, "spanId": SPAN, "name": "s", "startTimeUnixNano": "1000",
                                   "endTimeUnixNano": "2000", "attributes": [{"key": "n", "value": {"intValue": "1"}}]}]}]}]})
    for got in (from_pb, from_json):
        assert (got["trace_id"], got["span_id"], got["parent_span_id"], got["name"]) == (TRACE, SPAN, None, "s")
        assert got["attributes"] == {"n": 1} and got["resource_attributes"] == {"service.name": "bench"}
        assert (got["start_time"], got["end_time"]) == ("1970-01-01T00:00:00.000001Z", "1970-01-01T00:00:00.000002Z")


def test_bad_exports_are_refused():
    with pytest.raises(OtlpDecodeError, match="resourceSpans"):
        decode_json({"spans": []})
    with pytest.raises(OtlpDecodeError, match="invalid id 'ab'"):
        decode_json({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "ab", "spanId": SPAN}]}]}]})
    with pytest.raises(OtlpDecodeError, match="invalid id length for 'abababababababab'"):
        decode_json({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "ab" * 8, "spanId": SPAN}]}]}]})
    with pytest.raises(OtlpDecodeError, match="span 'x' has an invalid trace id None"):
        decode_json({"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x", "spanId": SPAN}]}]}]})


def test_bodies_are_decompressed_by_their_encoding():
    assert decompress(gzip.compress(b"x"), "gzip") == b"x" and decompress(b"x", None) == b"x"
    assert decompress(b"x", " Identity ") == b"x"
    with pytest.raises(OtlpDecodeError, match="cannot decode gzip"):
        decompress(b"not gzip", "gzip")
    with pytest.raises(OtlpDecodeError, match="unsupported"):
        decompress(b"x", "br")
    assert nanos_to_iso(0) is None and nanos_to_iso(1_500_000_000_000_000_000) == "2017-07-14T02:40:00.000000Z"
