"""Observation and trace reads: the views of a span (v2 field groups, v1), and the legacy
trace read (v3): the trace's scores from an hour before it, filters."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from bench_pipeline_tests.support.langfuse_clients import SEED_ROOT, SEED_TRACE, raw, score_event, v3
from standins.langfuse.routes.observations import observation_v1, observation_v2


@v3
def test_v3_trace_read_returns_scores_from_an_hour_before_the_trace(standin):
    start = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
    standin.add_trace(SEED_TRACE, SEED_ROOT, start_time=start)
    with raw(standin) as c:
        c.post("/api/public/ingestion", json={"batch": [
            score_event("early", "2026-11-30T10:30:00.000Z", name="a", value=1.0, traceId=SEED_TRACE),
            score_event("in", "2026-11-30T11:30:00.000Z", name="b", value=1.0, traceId=SEED_TRACE),
            score_event("late", "2026-12-05T11:30:00.000Z", name="c", value=1.0, traceId=SEED_TRACE),
        ]}).raise_for_status()
        trace = c.get(f"/api/public/traces/{SEED_TRACE}").json()
        # constants.ts SCORE_TO_TRACE_OBSERVATIONS_INTERVAL: timestamp >= trace.timestamp - 1 hour
        assert sorted(s["id"] for s in trace["scores"]) == ["in", "late"]
        filt = json.dumps([{"type": "stringOptions", "column": "traceId", "operator": "any of", "value": [SEED_TRACE]},
                           {"type": "null", "column": "parentObservationId", "operator": "is null", "value": ""}])
        roots = c.get("/api/public/observations", params={"filter": filt}).json()
        assert [o["id"] for o in roots["data"]] == [SEED_ROOT]


SPAN = {"trace_id": SEED_TRACE, "span_id": "1" * 16, "parent_span_id": SEED_ROOT, "name": "eval",
        "start_time_unix_nano": 1_764_496_800_000_000_000, "end_time_unix_nano": 1_764_496_802_000_000_000,
        "received_at": "r", "attributes": {"langfuse.observation.type": "evaluator",
                                           "langfuse.observation.input": '{"task": 1}',
                                           "langfuse.observation.metadata.attempt": "2"}}


def test_a_v2_observation_has_the_field_groups_asked_for_with_raw_io():
    core = observation_v2(SPAN, {"core"}, "proj")
    assert core == {"id": "1" * 16, "traceId": SEED_TRACE, "startTime": "2025-11-30T10:00:00.000Z",
                    "endTime": "2025-11-30T10:00:02.000Z", "projectId": "proj", "parentObservationId": SEED_ROOT,
                    "type": "EVALUATOR"}
    more = observation_v2(SPAN, {"basic", "io", "metadata", "metrics"}, "proj")
    assert (more["name"], more["level"], more["environment"], more["isRootObservation"]) == (
        "eval", "DEFAULT", "default", False)
    assert (more["input"], more["output"], more["metadata"], more["latency"]) == ('{"task": 1}', None, {"attempt": 2}, 2.0)


def test_a_v1_observation_decodes_its_json_attributes():
    v1 = observation_v1(SPAN, "proj")
    assert (v1["input"], v1["metadata"], v1["type"], v1["usageDetails"]) == ({"task": 1}, {"attempt": 2}, "EVALUATOR", {})
