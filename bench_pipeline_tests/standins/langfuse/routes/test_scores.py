"""Scores: the SDK 5 arrays (sdk5), one object per POST (v4, v3), score-create events, and
the row a resent score replaces."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from langfuse.api.scores.types.create_score_batch_results import CreateScoreBatchResults

from bench_pipeline_tests.support.langfuse_clients import FIXED_TS, SEED_ROOT, SEED_TRACE, raw, score_event, sdk5
from standins.langfuse.routes.scores import score_row, score_view


@sdk5
def test_score_with_fixed_id_and_timestamp_is_replaced(standin, lf):
    standin.add_trace(SEED_TRACE, SEED_ROOT)
    for value in (0.25, 0.75):
        lf.create_score(name="benchmark.rubric_pass_rate", value=value, trace_id=SEED_TRACE,
                        score_id="attempt-1:rubric", timestamp=FIXED_TS, metadata={"v": value})
        lf.flush()
    lf.create_score(name="benchmark.status", value="passed", trace_id=SEED_TRACE, score_id="attempt-1:status",
                    timestamp=FIXED_TS)
    lf.flush()

    assert standin.scores["attempt-1:rubric"]["value"] == 0.75
    assert standin.scores["attempt-1:rubric"]["timestamp"] == "2025-03-01T12:00:00.000Z"
    assert standin.score_receipts["attempt-1:rubric"] == 2
    assert standin.scores["attempt-1:status"]["dataType"] == "CATEGORICAL"
    assert len(standin.score_rows) == 2
    assert all(r.status == 202 for r in standin.requests_to("/api/public/scores"))
    read = lf.api.scores.get_many(trace_id=SEED_TRACE, name="benchmark.rubric_pass_rate", fields="details")
    assert [(s.id, s.value, s.metadata) for s in read.data] == [("attempt-1:rubric", 0.75, {"v": 0.75})]

    # Same id, "now" timestamp (what the SDK stamps by default): a second row, i.e. a duplicate.
    lf.create_score(name="benchmark.rubric_pass_rate", value=0.75, trace_id=SEED_TRACE, score_id="attempt-1:rubric")
    lf.flush()
    assert len(lf.api.scores.get_many(id="attempt-1:rubric").data) == 2


@sdk5
def test_invalid_scores_get_207_partial_results(standin, lf):
    result = lf.api.scores.create(request=[
        {"name": "ok", "value": 1.0, "traceId": SEED_TRACE},
        {"name": "bad-bool", "value": 5, "dataType": "BOOLEAN", "traceId": SEED_TRACE},
        {"name": "no-subject", "value": 1.0},
        {"name": "naive-ts", "value": 1.0, "traceId": SEED_TRACE, "timestamp": "2025-01-01T00:00:00"},
    ])
    assert isinstance(result, CreateScoreBatchResults)
    assert (result.accepted, result.rejected) == (1, 3)
    assert [s["name"] for s in standin.scores.values()] == ["ok"]
    assert standin.requests_to("/api/public/scores")[0].status == 207


def test_v4_scores_endpoint_takes_one_object_and_stamps_the_arrival(standin):
    with raw(standin) as c:
        r = c.post("/api/public/scores", json=[{"name": "x", "value": 1.0, "traceId": SEED_TRACE}])
        assert r.status_code == 400  # PostScoresBodyV1 is one object; SDK 5's array is refused
        r = c.post("/api/public/scores", json={"id": "s-1", "name": "x", "value": 1.0, "traceId": SEED_TRACE,
                                               "timestamp": "2025-03-01T12:00:00Z"})
        assert r.status_code == 200 and r.json() == {"id": "s-1"}
        assert c.post("/api/public/scores", json={"name": "x", "value": 1.0}).status_code == 400  # no subject
        assert c.post("/api/public/scores", json={"name": "x", "value": 1.0, "traceId": SEED_TRACE,
                                                  "datasetRunId": "r"}).status_code == 400  # two subjects
    assert standin.scores["s-1"]["timestamp"][:10] == datetime.now(timezone.utc).strftime("%Y-%m-%d")


@pytest.mark.parametrize("standin", ["v4", "v3"], indirect=True)
def test_ingestion_takes_score_events_with_their_own_timestamp(standin):
    with raw(standin) as c:
        assert c.post("/api/public/ingestion", json={"batch": []}).json() == {"successes": [], "errors": []}
        batch = [
            score_event("s-ok", "2026-11-30T10:00:00.000Z", name="benchmark.x", value=1, dataType="BOOLEAN",
                        traceId=SEED_TRACE, observationId=SEED_ROOT),
            score_event("s-bad", "2026-11-30T10:00:00.000Z", name="b", value=5, dataType="BOOLEAN",
                        traceId=SEED_TRACE),
            score_event("s-naive", "2026-11-30T10:00:00", name="n", value=1.0, traceId=SEED_TRACE),
            {"id": "t-1", "timestamp": "2026-11-30T10:00:00.000Z", "type": "trace-create", "body": {"id": "t"}},
        ]
        r = c.post("/api/public/ingestion", json={"batch": batch})
        assert r.status_code == 207
        body = r.json()
        assert body["successes"] == [{"id": "s-ok", "status": 201}]
        errors = {e["id"]: e for e in body["errors"]}
        assert set(errors) == {"s-bad", "s-naive", "t-1"} and {e["status"] for e in errors.values()} == {400}
        if standin.mode.events_only:  # ingestion.ts: only score-create and sdk-log in events_only mode
            assert errors["t-1"]["message"] == "Event type not accepted"
        assert c.post("/api/public/ingestion", json=[]).status_code == 400  # {"batch": [...]} or nothing
        big = {"batch": [], "metadata": "x" * (5 * 1024 * 1024)}
        assert c.post("/api/public/ingestion", json=big).status_code == 413  # bodyParser sizeLimit 4.5mb
    assert standin.scores["s-ok"]["timestamp"] == "2026-11-30T10:00:00.000Z"  # the event's timestamp
    assert list(standin.scores) == ["s-ok"]


@pytest.mark.parametrize("standin", ["v4", "v3"], indirect=True)
def test_a_resent_score_replaces_itself_only_on_the_same_day(standin):
    with raw(standin) as c:
        for ts, value in (("2026-11-30T10:00:00.000Z", 0.25), ("2026-11-30T18:00:00.000Z", 0.5),
                          ("2026-12-01T10:00:00.000Z", 0.75)):
            c.post("/api/public/ingestion", json={"batch": [
                score_event("s-1", ts, name="n", value=value, traceId=SEED_TRACE)]}).raise_for_status()
    # 0003_scores.up.sql: ORDER BY (project_id, toDate(timestamp), name, id)
    assert sorted((k[1], v["value"]) for k, v in standin.score_rows.items()) == [
        ("2026-11-30", 0.5), ("2026-12-01", 0.75)]


STORED = {"id": "s", "projectId": "p", "name": "n", "dataType": "BOOLEAN", "source": "API",
          "timestamp": "2026-11-30T10:00:00.000Z", "environment": "default", "createdAt": "c", "updatedAt": "u",
          "value": 1.0, "comment": "why", "configId": None, "metadata": [1], "authorUserId": None, "queueId": "q",
          "traceId": "t", "observationId": None, "sessionId": None, "datasetRunId": None}


def test_score_view_returns_the_field_groups_asked_for():
    core = score_view(STORED, set())
    assert core == {"id": "s", "projectId": "p", "name": "n", "dataType": "BOOLEAN", "source": "API",
                    "timestamp": "2026-11-30T10:00:00.000Z", "environment": "default", "createdAt": "c",
                    "updatedAt": "u", "value": True}
    full = score_view(STORED, {"details", "annotation", "subject"})
    assert (full["comment"], full["metadata"], full["queueId"]) == ("why", None, "q")  # metadata: objects only
    assert full["subject"] == {"kind": "trace", "id": "t"}
    on_run = score_view({**STORED, "traceId": None, "datasetRunId": "r", "dataType": "NUMERIC"}, {"subject"})
    assert on_run["subject"] == {"kind": "experiment", "id": "r"} and on_run["value"] == 1.0


def test_a_validated_score_becomes_a_row_stamped_with_the_given_time():
    row = score_row({"id": None, "name": "n", "value": 0.5}, "proj", FIXED_TS, now="2026-01-01T00:00:00.000Z")
    assert row["id"] and row["projectId"] == "proj" and row["timestamp"] == "2025-03-01T12:00:00.000Z"
    assert (row["createdAt"], row["updatedAt"], row["authorUserId"]) == ("2026-01-01T00:00:00.000Z",) * 2 + (None,)
