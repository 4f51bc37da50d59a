"""Experiment and experiment-item reads, with the scores of their window."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from langfuse.api.core.api_error import ApiError as LangfuseApiError

from bench_pipeline_tests.support.langfuse_clients import FIXED_TS, SEED_ROOT, SEED_TRACE, raw, score_event, sdk5
from standins.langfuse.messages import ApiError
from standins.langfuse.routes.experiments import item_in_window, latest_by_id, score_limit, score_window


@sdk5
def test_experiment_items_and_run_scores_are_readable(standin, lf):
    standin.add_trace(SEED_TRACE, SEED_ROOT)
    dataset = lf.create_dataset(name="suite")
    lf.create_dataset_item(dataset_name="suite", id="suite:t1:1", input={"t": 1}, expected_output={"a": 1})
    exp_id = standin.experiment_id(dataset.id, "run-42")
    with lf.start_as_current_observation(
        trace_context={"trace_id": SEED_TRACE, "parent_span_id": SEED_ROOT},
        name="benchmark/t1#attempt-1", input={"t": 1}, output={"final_response": "ok"},
    ) as span:
        for key, value in {
            "langfuse.experiment.id": exp_id, "langfuse.experiment.name": "run-42",
            "langfuse.experiment.dataset.id": dataset.id, "langfuse.experiment.item.id": "suite:t1:1",
            "langfuse.experiment.item.root_observation_id": span.id,
            "langfuse.experiment.item.expected_output": json.dumps({"a": 1}),
            "langfuse.experiment.metadata": json.dumps({"manifest": "m"}),
        }.items():
            span._otel_span.set_attribute(key, value)
    now = datetime.now(timezone.utc) - timedelta(seconds=1)
    lf.create_score(name="capability.pass_rate", value=0.5, dataset_run_id=exp_id, score_id="run-42:cap",
                    timestamp=now)
    lf.create_score(name="benchmark.passed", value=1, data_type="BOOLEAN", trace_id=SEED_TRACE,
                    observation_id=span.id, score_id="suite:t1:1:passed", timestamp=now)
    # outside the reads' score window (repository.ts: within a day of the items' start times)
    lf.create_score(name="capability.old", value=0.1, dataset_run_id=exp_id, score_id="run-42:old",
                    timestamp=FIXED_TS)
    lf.create_score(name="benchmark.old", value=0, data_type="BOOLEAN", trace_id=SEED_TRACE,
                    observation_id=span.id, score_id="suite:t1:1:old", timestamp=FIXED_TS)
    lf.flush()

    since = datetime.now(timezone.utc) - timedelta(hours=1)
    exps = lf.api.experiments.list(from_start_time=since, fields="core,metadata,scores")
    assert [(e.id, e.name, e.dataset_id, e.item_count) for e in exps.data] == [(exp_id, "run-42", dataset.id, 1)]
    assert exps.data[0].metadata == {"manifest": "m"} and [s.id for s in exps.data[0].scores] == ["run-42:cap"]
    items = lf.api.experiments.list_items(from_start_time=since, experiment_id=exp_id, fields="core,dataset,io,scores")
    assert len(items.data) == 1
    item = items.data[0]
    assert (item.id, item.trace_id, item.experiment_item_id) == (span.id, SEED_TRACE, "suite:t1:1")
    assert item.expected_output == {"a": 1} and item.output == {"final_response": "ok"}
    assert [s.value for s in item.scores] == [True]
    assert lf.api.experiments.list_items(from_start_time=since + timedelta(hours=2)).data == []
    run_scores = lf.api.scores.get_many(experiment_id=exp_id, fields="subject")  # v3 scores: no window
    assert sorted((s.name, s.subject.kind) for s in run_scores.data) == [
        ("capability.old", "experiment"), ("capability.pass_rate", "experiment")]
    with pytest.raises(LangfuseApiError):  # experimentScoreLimitZod: 1..50
        lf.api.experiments.list(from_start_time=since, fields="core,scores", score_limit=51)
    with raw(standin) as c:  # like the real server, a lower time bound is required
        assert c.get("/api/public/experiment-items").status_code == 400
        assert c.get("/api/public/experiments").status_code == 400
        assert c.get("/api/public/v3/scores", params={"observationId": span.id}).status_code == 400


def test_v4_experiment_item_scores_are_read_within_a_day_of_the_item(standin):
    standin.add_trace(SEED_TRACE, SEED_ROOT)
    start = datetime.now(timezone.utc) - timedelta(hours=30)
    span_id = "1111111111111111"
    body = {"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": SEED_TRACE, "spanId": span_id, "parentSpanId": SEED_ROOT, "name": "item",
        "startTimeUnixNano": str(int(start.timestamp() * 1e9)), "endTimeUnixNano": str(int(start.timestamp() * 1e9)),
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in {
            "langfuse.experiment.id": "exp-1", "langfuse.experiment.name": "run-1",
            "langfuse.experiment.item.id": "i-1", "langfuse.experiment.item.root_observation_id": span_id}.items()]}]}]}]}
    iso = lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    with raw(standin) as c:
        c.post("/api/public/otel/v1/traces", json=body).raise_for_status()
        c.post("/api/public/ingestion", json={"batch": [
            score_event("near", iso(start + timedelta(hours=20)), name="a", value=1.0, traceId=SEED_TRACE,
                        observationId=span_id),
            score_event("far", iso(start + timedelta(hours=25)), name="b", value=1.0, traceId=SEED_TRACE,
                        observationId=span_id),
            score_event("before", iso(start - timedelta(hours=25)), name="c", value=1.0, traceId=SEED_TRACE,
                        observationId=span_id),
        ]}).raise_for_status()
        items = c.get("/api/public/experiment-items", params={
            "fromStartTime": iso(start - timedelta(days=2)), "fields": "core,scores"}).json()["data"]
    assert [s["id"] for s in items[0]["scores"]] == ["near"]  # repository.ts: [start - 1 day, start + 1 day)


def test_the_score_limit_is_1_to_50_with_50_by_default():
    assert score_limit({}) == 50 and score_limit({"scoreLimit": ""}) == 50 and score_limit({"scoreLimit": "7"}) == 7
    for bad in ("0", "51", "x"):
        with pytest.raises(ApiError):
            score_limit({"scoreLimit": bad})


def test_the_score_window_is_a_day_around_the_pages_rows_and_never_after_now():
    newest = datetime(2020, 1, 10, tzinfo=timezone.utc)
    oldest = datetime(2020, 1, 5, tzinfo=timezone.utc)
    assert score_window(newest, oldest) == (datetime(2020, 1, 4, tzinfo=timezone.utc),
                                            datetime(2020, 1, 11, tzinfo=timezone.utc))
    future = datetime.now(timezone.utc) + timedelta(days=5)
    assert score_window(future, oldest)[1] <= datetime.now(timezone.utc)


def test_items_in_window_and_one_row_per_score_id():
    span = {"start_time_unix_nano": int(datetime(2020, 1, 5, tzinfo=timezone.utc).timestamp() * 1e9)}
    day = datetime(2020, 1, 5, tzinfo=timezone.utc)
    assert item_in_window(span, day, None) and item_in_window(span, day, day + timedelta(seconds=1))
    assert not item_in_window(span, day, day) and not item_in_window(span, day + timedelta(seconds=1), None)
    rows = [{"id": "a", "updatedAt": "1"}, {"id": "a", "updatedAt": "3"}, {"id": "b", "updatedAt": "2"}]
    assert latest_by_id(rows) == [{"id": "a", "updatedAt": "3"}, {"id": "b", "updatedAt": "2"}]
