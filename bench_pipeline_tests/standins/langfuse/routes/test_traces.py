"""OTLP trace exports: spans decoded and stored, a resent span replaces itself, receipts count."""

from __future__ import annotations

import gzip
import json

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from bench_pipeline_tests.support.langfuse_clients import FIXED_TS, SEED_ROOT, SEED_TRACE, raw


def test_span_arrives_decoded_under_existing_trace(standin, lf):
    standin.add_trace(SEED_TRACE, SEED_ROOT, name="agent-run")
    with lf.start_as_current_observation(
        trace_context={"trace_id": SEED_TRACE, "parent_span_id": SEED_ROOT},
        name="benchmark/task-1#attempt-1", as_type="evaluator",
        input={"task": "task-1"}, output={"final_response": "done"}, metadata={"attempt": 1, "suite": "s"},
    ) as span:
        span_id = span.id
    lf.flush()

    assert list(standin.spans) == [(SEED_TRACE, span_id)]
    got = standin.spans[(SEED_TRACE, span_id)]
    assert got["name"] == "benchmark/task-1#attempt-1" and got["parent_span_id"] == SEED_ROOT
    attrs = got["attributes"]
    assert json.loads(attrs["langfuse.observation.output"]) == {"final_response": "done"}
    assert json.loads(attrs["langfuse.observation.input"]) == {"task": "task-1"}
    assert attrs["langfuse.observation.type"] == "evaluator"
    assert attrs["langfuse.observation.metadata.attempt"] == "1"  # values are JSON text
    assert got["ingestion_version"] == "4"
    export = standin.requests_to("/api/public/otel/v1/traces")[0]
    assert export.headers["content-encoding"] == "gzip"
    assert export.headers["content-type"] == "application/x-protobuf"
    assert standin.span_receipts[(SEED_TRACE, span_id)] == 1

    obs = lf.api.observations.get_many(trace_id=SEED_TRACE, fields="core,basic,io,metadata")
    by_id = {o.id: o for o in obs.data}
    assert set(by_id) == {SEED_ROOT, span_id}
    assert by_id[span_id].parent_observation_id == SEED_ROOT and by_id[span_id].type == "EVALUATOR"
    assert by_id[span_id].metadata == {"attempt": 1, "suite": "s"}
    assert lf.api.observations.get_many(trace_id="f" * 32).data == []
    with raw(standin) as c:  # the legacy v1 reads are not served in events_only mode (even without auth)
        assert httpx.get(f"{standin.base_url}/api/public/traces/{SEED_TRACE}").status_code == 404
        assert c.get(f"/api/public/observations/{span_id}").status_code == 404


def test_resent_span_replaces_but_receipts_count(standin):
    req = ExportTraceServiceRequest()
    span = req.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id = bytes.fromhex(SEED_TRACE)
    span.span_id = bytes.fromhex("1111111111111111")
    span.name = "first"
    span.start_time_unix_nano = span.end_time_unix_nano = int(FIXED_TS.timestamp() * 1e9)
    kv = span.attributes.add()
    kv.key, kv.value.int_value = "n", 1
    headers = {"content-type": "application/x-protobuf", "content-encoding": "gzip"}
    with raw(standin) as c:
        c.post("/api/public/otel/v1/traces", content=gzip.compress(req.SerializeToString()), headers=headers).raise_for_status()
        span.name = "second"
        c.post("/api/public/otel/v1/traces", content=req.SerializeToString(),
               headers={"content-type": "application/x-protobuf"}).raise_for_status()
        # OTLP/JSON (the REST client's export_traces form)
        body = {"resourceSpans": [{"scopeSpans": [{"spans": [{
            "traceId": SEED_TRACE, "spanId": "2222222222222222", "name": "json",
            "startTimeUnixNano": "1", "endTimeUnixNano": "2",
            "attributes": [{"key": "k", "value": {"stringValue": "v"}}]}]}]}]}
        c.post("/api/public/otel/v1/traces", json=body).raise_for_status()
        assert c.post("/api/public/otel/v1/traces", content=b"\x01garbage",
                      headers={"content-type": "application/x-protobuf"}).status_code == 400
    key = (SEED_TRACE, "1111111111111111")
    assert standin.spans[key]["name"] == "second" and standin.spans[key]["attributes"] == {"n": 1}
    assert standin.span_receipts[key] == 2 and standin.duplicate_span_receipts() == {key: 2}
    assert standin.spans[(SEED_TRACE, "2222222222222222")]["attributes"] == {"k": "v"}
