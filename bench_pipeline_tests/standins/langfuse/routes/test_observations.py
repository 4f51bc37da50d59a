"""Legacy trace and observation reads (v3): the trace's scores from an hour before it, filters."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from bench_pipeline_tests.support.langfuse_clients import SEED_ROOT, SEED_TRACE, raw, score_event, v3


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
