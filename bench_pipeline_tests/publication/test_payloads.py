"""Pure wire payloads: experiment output, spans and their attributes, score payloads and
events, dataset run items, size-bounded batches."""

from __future__ import annotations

import json

from langfuse import LangfuseOtelSpanAttributes

from bench_pipeline.publication import payloads
from bench_pipeline.publication.attempt_scores import attempt_score_values
from bench_pipeline.publication.bindings import decide_binding
from bench_pipeline.publication.ids import run_score_id
from bench_pipeline.publication.plan import plan_run

from .builders import attempt, plan


def test_experiment_output_fields():
    p = plan([attempt(), attempt(n=2, evidence={"episode_id": None})])
    known, anon = p.attempts
    out = payloads.experiment_output(known, decide_binding(known, "00000000000000aa"), base_url="http://lf", project_id="p")
    assert list(out) == ["final_response", "tool_calls", "trace_artifact", "aiden_episode_id", "aiden_trace_id",
                         "aiden_trace_url", "execution_trace_status"]
    assert out["final_response"] == "done" and out["tool_calls"] == [{"name": "tap", "arguments": {"x": 1, "y": 2}}]
    assert out["trace_artifact"] == {"status": "available", "path": "tasks/open_settings/trace.json"}
    assert out["aiden_trace_url"] == "http://lf/project/p/traces/4bf92f3577b34da6a3ce929d0e0e4736"
    assert out["execution_trace_status"] == "available"
    pending = payloads.experiment_output(known, decide_binding(known, None), base_url="http://lf", project_id=None)
    assert pending["aiden_trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736" and pending["aiden_trace_url"] is None
    none = payloads.experiment_output(anon, decide_binding(anon, None), base_url="http://lf", project_id="p")
    assert (none["aiden_episode_id"], none["aiden_trace_id"], none["aiden_trace_url"]) == (None, None, None)
    assert none["execution_trace_status"] == "no_episode"


def test_spans_carry_the_sdk_experiment_attributes():
    p = plan()
    a = p.attempts[0]
    ctx = payloads.ExperimentContext("ds-1", "exp-1", "proj", "http://lf")
    (span,) = payloads.attempt_spans(a, decide_binding(a, "00000000000000aa"), p, ctx,
                              "2026-11-30T00:00:00Z", "2026-11-30T00:00:01Z")
    attrs = {kv["key"]: next(iter(kv["value"].values())) for kv in span["attributes"]}
    assert span["name"] == "benchmark/open_settings#attempt-1"
    assert span["traceId"] == "4bf92f3577b34da6a3ce929d0e0e4736" and span["parentSpanId"] == "00000000000000aa"
    assert span["spanId"] == a.evaluation_span_id
    assert int(span["endTimeUnixNano"]) - int(span["startTimeUnixNano"]) == 1_000_000_000
    assert attrs[LangfuseOtelSpanAttributes.EXPERIMENT_ID] == "exp-1" and attrs[LangfuseOtelSpanAttributes.EXPERIMENT_NAME] == "run-7"
    assert attrs[LangfuseOtelSpanAttributes.EXPERIMENT_DATASET_ID] == "ds-1" and attrs[LangfuseOtelSpanAttributes.EXPERIMENT_ITEM_ID] == a.item_id
    assert attrs[LangfuseOtelSpanAttributes.EXPERIMENT_ITEM_ROOT_OBSERVATION_ID] == span["spanId"]
    assert json.loads(attrs[LangfuseOtelSpanAttributes.EXPERIMENT_ITEM_EXPECTED_OUTPUT]) == a.item["expectedOutput"]
    assert json.loads(attrs[LangfuseOtelSpanAttributes.EXPERIMENT_METADATA])["model"]["name"] == "m"
    assert json.loads(attrs[LangfuseOtelSpanAttributes.OBSERVATION_OUTPUT])["execution_trace_status"] == "available"
    assert json.loads(attrs[LangfuseOtelSpanAttributes.OBSERVATION_INPUT]) == a.item["input"]
    assert attrs[f"{LangfuseOtelSpanAttributes.OBSERVATION_METADATA}.attempt"] == "1"

    root, child = payloads.attempt_spans(a, decide_binding(a, None), p, ctx, "2026-11-30T00:00:00Z", "2026-11-30T00:00:00Z")
    assert "parentSpanId" not in root and root["spanId"] == a.replay_root_span_id
    assert child["parentSpanId"] == root["spanId"] and child["traceId"] == root["traceId"] == a.replay_trace_id
    assert not any(kv["key"].startswith("langfuse.experiment") for kv in root["attributes"])
    # content hash ignores the publication times
    again = payloads.attempt_spans(a, decide_binding(a, None), p, ctx, "2026-12-01T00:00:00Z", "2026-12-01T00:00:05Z")
    assert payloads.span_content_hash([root, child]) == payloads.span_content_hash(again)


def test_score_payloads_have_fixed_ids_timestamps_and_subjects():
    p = plan()
    a = p.attempts[0]
    b = decide_binding(a, None)
    first = payloads.attempt_score_payloads(a, b, p, "2026-01-01T00:00:00.000Z")
    assert first == payloads.attempt_score_payloads(a, b, p, "2026-01-01T00:00:00.000Z")
    assert len({s["id"] for s in first}) == len(first)
    assert {s["timestamp"] for s in first} == {"2026-01-01T00:00:00.000Z"}  # the publication's anchor time
    assert all(s["traceId"] == b.trace_id and s["observationId"] == b.observation_id for s in first)
    by_name = {s["name"]: s for s in first}
    assert by_name["benchmark.success"]["value"] == 0.0 and by_name["benchmark.success"]["dataType"] == "BOOLEAN"
    assert by_name["benchmark.status"]["value"] == "failed"
    run = payloads.run_score_payloads(plan_run(run_id="run-7", metrics={"coverage": {"attempts": 3}}, attempts=[],
                                          manifest={}, suite_def={}), "exp-1", "2026-01-01T00:00:00.000Z")
    assert run == [{"id": run_score_id("unknown-suite", "run-7", "coverage.attempts"), "name": "coverage.attempts",
                    "value": 3.0, "dataType": "NUMERIC", "timestamp": "2026-01-01T00:00:00.000Z",
                    "datasetRunId": "exp-1"}]


def test_chunk_by_size_respects_both_limits():
    groups = payloads.chunk_by_size(list(range(7)), [4, 4, 4, 10, 1, 1, 1], max_bytes=8, max_count=2)
    assert groups == [[0, 1], [2], [3], [4, 5], [6]]
    assert payloads.chunk_by_size([], [], 10, 10) == []


def test_numpy_scalars_from_a_data_frame_are_understood():
    import numpy as np

    rec = attempt(success=np.bool_(True), llm_calls=np.int64(3), task_wall_ms=np.float64("nan"))
    scores = {n: (v, t) for n, v, t in attempt_score_values(rec)}
    assert scores["benchmark.success"] == (1, "BOOLEAN") and scores["benchmark.llm_calls"] == (3, "NUMERIC")
    assert "benchmark.task_wall_ms" not in scores
    p = plan([rec])
    scores = payloads.attempt_score_payloads(p.attempts[0], decide_binding(p.attempts[0], None), p,
                                             "2026-01-01T00:00:00.000Z")
    assert {type(s["value"]) for s in scores} <= {float, str}


# ------------------------------------------------------------------------------------ never erase


def test_score_events_carry_the_timestamp_in_the_envelope():
    p = plan()
    a = p.attempts[0]
    (score, *_) = payloads.attempt_score_payloads(a, decide_binding(a, None), p, "2026-12-01T10:00:00.000Z")
    event = payloads.score_event(score)
    assert event["type"] == "score-create" and event["id"] == score["id"]
    assert event["timestamp"] == "2026-12-01T10:00:00.000Z" and "timestamp" not in event["body"]
    assert json.loads(payloads.score_event_bytes(score)) == event


def test_legacy_spans_carry_no_experiment_attributes_and_run_items_link_them():
    p = plan()
    a = p.attempts[0]
    b = decide_binding(a, None)
    ctx = payloads.ExperimentContext("ds-1", None, "proj", "http://lf", span_experiment=False)
    spans = payloads.attempt_spans(a, b, p, ctx, "2026-11-30T00:00:00Z", "2026-11-30T00:00:00Z")
    assert not any(kv["key"].startswith("langfuse.experiment") for s in spans for kv in s["attributes"])
    body = payloads.run_item_body(a, b, p, "2026-11-30T00:00:00.000Z")
    assert body == {"runName": "run-7", "runDescription": p.experiment_description,
                    "metadata": p.experiment_metadata, "datasetItemId": a.item_id, "traceId": b.trace_id,
                    "observationId": b.observation_id, "createdAt": "2026-11-30T00:00:00.000Z"}


def test_fast_score_events_equal_the_payloads_encoded():
    import numpy as np

    p = plan([attempt(), attempt(n=2, evidence={"episode_id": None}, llm_calls=np.int64(3), status="x\"\n\u00e9")])
    for a in p.attempts:
        b = decide_binding(a, "00000000000000aa")
        slow = [payloads.score_event_bytes(s) for s in payloads.attempt_score_payloads(a, b, p, "2026-12-01T10:00:00.000Z")]
        assert payloads.attempt_score_events(a, b, p, "2026-12-01T10:00:00.000Z") == slow
