"""The Langfuse stand-in speaks the wire API of the installed langfuse 5 SDK, and in each mode
the rules of one server generation as read in the server's source (``langfuse_standin/rules.py``).

Every test drives the REAL SDK (or a raw HTTP client) over REAL HTTP against
``bench_pipeline_tests.langfuse_standin.LangfuseStandIn``. Tests of the SDK's own score queue
use the ``sdk5`` mode (the server SDK 5.0.4 targets, which takes score arrays).
"""

from __future__ import annotations

import gzip
import json
import urllib.error
import urllib.request
import uuid
from datetime import datetime, timedelta, timezone

import httpx
import pytest
from langfuse import Langfuse
from langfuse.api.commons.errors.not_found_error import NotFoundError
from langfuse.api.commons.errors.unauthorized_error import UnauthorizedError
from langfuse.api.core.api_error import ApiError as LangfuseApiError
from langfuse.api.scores.types.create_score_batch_results import CreateScoreBatchResults
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider

from bench_pipeline_tests.langfuse_standin import LangfuseStandIn

FIXED_TS = datetime(2025, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
SEED_TRACE = "0123456789abcdef0123456789abcdef"
SEED_ROOT = "00000000000000aa"


@pytest.fixture
def standin(request):
    # The SDK keeps one resource manager per public key (resource_manager.py), so a unique
    # key per test keeps clients of earlier tests from talking to this server.
    mode = getattr(request, "param", "v4")  # ``@in_mode("v3")``: indirect parametrization
    with LangfuseStandIn(public_key=f"pk-lf-{uuid.uuid4().hex[:12]}", mode=mode) as server:
        yield server
        assert server.internal_errors == []


def in_mode(mode: str):
    return pytest.mark.parametrize("standin", [mode], indirect=True)


sdk5 = in_mode("sdk5")
v3 = in_mode("v3")


def make_client(standin: LangfuseStandIn, **overrides) -> Langfuse:
    kwargs = dict(
        public_key=standin.public_key,
        secret_key=standin.secret_key,
        base_url=standin.base_url,
        flush_at=10,
        flush_interval=0.1,
        timeout=2,
        tracer_provider=TracerProvider(),  # do not touch the global OTEL provider
    )
    kwargs.update(overrides)
    return Langfuse(**kwargs)


@pytest.fixture
def lf(standin):
    client = make_client(standin)
    yield client
    client.shutdown()


def raw(standin: LangfuseStandIn, **kw) -> httpx.Client:
    return httpx.Client(base_url=standin.base_url, auth=(standin.public_key, standin.secret_key), timeout=2, **kw)


# --------------------------------------------------------------------------- basics


def test_health_projects_and_auth_check(standin, lf):
    assert lf.auth_check() is True
    projects = lf.api.projects.get()
    assert [p.id for p in projects.data] == ["proj-test"]
    assert lf.api.health.health().status == "OK"
    assert lf.get_trace_url(trace_id=SEED_TRACE) == f"{standin.base_url}/project/proj-test/traces/{SEED_TRACE}"
    assert [r.route for r in standin.requests] == ["projects.get", "projects.get", "health", "projects.get"]


def test_bad_auth_gets_401(standin):
    bad = make_client(standin, public_key=f"pk-lf-{uuid.uuid4().hex[:12]}", secret_key="wrong")
    try:
        with pytest.raises(UnauthorizedError):
            bad.api.projects.get()
        with pytest.raises(UnauthorizedError):
            bad.create_dataset(name="nope")
    finally:
        bad.shutdown()
    assert httpx.get(f"{standin.base_url}/api/public/projects").status_code == 401
    assert httpx.get(f"{standin.base_url}/api/public/projects", auth=(standin.public_key, "x")).status_code == 401
    assert standin.datasets == {}
    assert {r.status for r in standin.requests} == {401}


def test_unknown_endpoints_are_404_and_recorded(standin):
    with raw(standin) as c:
        assert c.post("/api/public/no-such-endpoint", json={}).status_code == 404
        assert c.get("/api/public/datasets/x").status_code == 404  # the v1 dataset routes are not modelled
        assert c.put("/api/public/scores", json=[]).status_code == 405
    assert [(r.method, r.path) for r in standin.unknown_requests()] == [
        ("POST", "/api/public/no-such-endpoint"),
        ("GET", "/api/public/datasets/x"),
        ("PUT", "/api/public/scores"),
    ]


# --------------------------------------------------------------------------- datasets


def test_dataset_and_items_upsert_and_read_back(standin, lf):
    name = "bench/suite one"  # slash and space exercise the SDK's URL encoding
    first = lf.create_dataset(name=name, description="v1", metadata={"suite": "one"})
    again = lf.create_dataset(name=name, description="v2", metadata={"suite": "one"})
    assert first.id == again.id and again.description == "v2"
    assert list(standin.datasets) == [name]

    for _ in range(2):  # publishing twice must not duplicate
        for n in range(3):
            lf.create_dataset_item(
                dataset_name=name, id=f"suite-one:task-{n}:1",
                input={"task": n}, expected_output={"answer": n}, metadata={"attempt": 1},
            )
    assert sorted(standin.dataset_items) == [f"suite-one:task-{n}:1" for n in range(3)]
    assert all(i["datasetId"] == first.id for i in standin.dataset_items.values())

    ds = lf.get_dataset(name, fetch_items_page_size=2)  # forces pagination over 2 pages
    assert ds.id == first.id
    assert sorted(i.id for i in ds.items) == sorted(standin.dataset_items)
    item = next(i for i in ds.items if i.id == "suite-one:task-1:1")
    assert item.input == {"task": 1} and item.expected_output == {"answer": 1} and item.dataset_name == name
    list_calls = standin.requests_to("/api/public/dataset-items", "GET")
    assert [r.query["page"] for r in list_calls] == ["1", "2"] and list_calls[0].query["datasetName"] == name
    assert standin.requests_to("/api/public/v2/datasets/", "GET")[0].path == "/api/public/v2/datasets/bench%2Fsuite%20one"

    assert lf.api.dataset_items.get("suite-one:task-2:1").input == {"task": 2}
    with pytest.raises(NotFoundError):
        lf.get_dataset("missing")
    with pytest.raises(NotFoundError):  # the dataset must exist before its items
        lf.create_dataset_item(dataset_name="missing", id="x", input={})
    lf.create_dataset(name="other")
    with pytest.raises(LangfuseApiError) as err:  # ids are project-unique (dataset-items.ts: 409)
        lf.create_dataset_item(dataset_name="other", id="suite-one:task-0:1", input={})
    assert err.value.status_code == 409


def test_bodies_are_validated_as_the_server_does(standin):
    with raw(standin) as c:  # types/datasets.ts PostDatasetsV2Body, PostDatasetItemsV1Body
        r = c.post("/api/public/v2/datasets", json={"description": "no name"})
        assert r.status_code == 400 and "name" in r.json()["message"]
        c.post("/api/public/v2/datasets", json={"name": "ok"}).raise_for_status()
        r = c.post("/api/public/dataset-items", json={"datasetName": 5})
        assert r.status_code == 400 and "datasetName" in r.json()["message"]
        r = c.post("/api/public/dataset-items", json={"dataset_name": "ok"})  # python name, not wire name
        assert r.status_code == 400 and "datasetName" in r.json()["message"]
        r = c.post("/api/public/dataset-items", json={"datasetName": "ok", "status": "DELETED"})
        assert r.status_code == 400
        r = c.post("/api/public/dataset-items", json={"datasetName": "ok", "id": "x" * 256})
        assert r.status_code == 400
        r = c.post("/api/public/scores", content=b"not json", headers={"content-type": "application/json"})
        assert r.status_code == 400
    assert standin.dataset_items == {}


# --------------------------------------------------------------------------- spans


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


# --------------------------------------------------------------------------- scores


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


# --------------------------------------------------------------------------- faults


@sdk5
def test_score_upload_retries_500_and_429_and_arrives(standin, lf):
    standin.faults.fail("/api/public/scores", status=500)
    standin.faults.rate_limit("/api/public/scores", retry_after=0)
    lf.create_score(name="x", value=1.0, trace_id=SEED_TRACE, score_id="s-1", timestamp=FIXED_TS)
    lf.flush()
    assert [r.status for r in standin.requests_to("/api/public/scores")] == [500, 429, 202]
    assert standin.requests_to("/api/public/scores")[1].fault == "status"
    assert list(standin.scores) == ["s-1"] and standin.score_receipts["s-1"] == 1
    assert standin.faults.pending() == []


def test_span_export_retries_429_but_not_500(standin, lf):
    standin.faults.rate_limit("/api/public/otel", times=2, retry_after=0)
    with lf.start_as_current_observation(name="retried"):
        pass
    lf.flush()
    assert [r.status for r in standin.requests_to("/api/public/otel")] == [429, 429, 200]
    assert [s["name"] for s in standin.spans.values()] == ["retried"]

    # The OTLP exporter only retries 429/502/503/504: a 500 loses the batch silently.
    standin.faults.fail("/api/public/otel", status=500)
    with lf.start_as_current_observation(name="lost"):
        pass
    lf.flush()
    assert [r.status for r in standin.requests_to("/api/public/otel")][-1] == 500
    assert standin.find_spans(name="lost") == []


def test_dropped_connection_is_a_transport_error(standin, lf):
    standin.faults.drop("/api/public/v2/datasets")
    with raw(standin) as c:
        with pytest.raises(httpx.TransportError):
            c.post("/api/public/v2/datasets", json={"name": "dropped"})
    assert standin.datasets == {}
    standin.faults.drop("/api/public/projects")
    req = urllib.request.Request(f"{standin.base_url}/api/public/projects")
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        urllib.request.urlopen(req, timeout=2)

    # Committed but unacknowledged: the SDK call fails although the dataset was stored.
    standin.faults.drop("/api/public/v2/datasets", after_processing=True)
    with pytest.raises(httpx.TransportError):
        lf.create_dataset(name="stored-anyway")
    assert "stored-anyway" in standin.datasets
    assert [r.status for r in standin.requests_to("/api/public/v2/datasets")] == [None, None]


def test_dropped_span_batch_is_resent_and_duplicates_are_visible(standin, lf):
    standin.faults.drop("/api/public/otel", after_processing=True)
    with lf.start_as_current_observation(name="twice") as span:
        key = (span.trace_id, span.id)
    lf.flush()
    assert [r.status for r in standin.requests_to("/api/public/otel")] == [None, 200]
    assert list(standin.spans) == [key] and standin.span_receipts[key] == 2


def test_delay_fault_times_out_the_client_then_recovers(standin, lf):
    standin.faults.delay("/api/public/projects", seconds=1.0)
    with raw(standin) as c:
        with pytest.raises(httpx.ReadTimeout):
            c.get("/api/public/projects", timeout=0.2)
        assert c.get("/api/public/projects").status_code == 200
    delayed, fine = standin.requests_to("/api/public/projects")  # arrival order
    assert (delayed.fault, fine.fault, fine.status) == ("delay", None, 200)
    assert delayed.completed is False  # still sleeping server-side; the read still lands later
    standin.faults.delay("/api/public/v2/datasets", seconds=0.3)
    lf.create_dataset(name="slow")  # within the SDK timeout: just slower
    assert standin.requests_to("/api/public/v2/datasets")[0].duration >= 0.3


# --------------------------------------------------------------------------- server generations (rules.py)


def score_event(sid, ts, **body):
    return {"id": sid, "timestamp": ts, "type": "score-create", "body": {"id": sid, **body}}


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


def test_v4_dataset_run_items_store_nothing_and_legacy_reads_are_absent(standin, lf):
    dataset = lf.create_dataset(name="suite")
    lf.create_dataset_item(dataset_name="suite", id="suite:t1:1", input={"t": 1})
    with raw(standin) as c:
        r = c.post("/api/public/dataset-run-items", json={"runName": "run-1", "datasetItemId": "suite:t1:1",
                                                          "traceId": SEED_TRACE})
        assert r.status_code == 200 and r.json()["datasetRunId"] == standin.experiment_id(dataset.id, "run-1")
        assert standin.dataset_run_items == [] and standin.dataset_runs == {}
        for path in ("/api/public/dataset-run-items", "/api/public/scores", "/api/public/v2/scores",
                     "/api/public/observations"):  # rejectInEventsOnlyMode: 404, before authentication
            assert httpx.get(f"{standin.base_url}{path}").status_code == 404
    assert standin.unknown_requests() == []


@v3
def test_v3_has_no_v4_reads_and_serves_the_legacy_ones(standin):
    with raw(standin) as c:
        for path in ("/api/public/experiment-items", "/api/public/experiments", "/api/public/v2/observations"):
            assert httpx.get(f"{standin.base_url}{path}").status_code == 401  # authentication first ...
            r = c.get(path, params={"fromStartTime": "2026-11-01T00:00:00Z"})
            assert r.status_code == 404 and "v4 write mode" in r.json()["message"]  # ... then the opt-in check
        assert c.get("/api/public/scores", params={"limit": 1}).status_code == 200
        assert c.get("/api/public/health").json()["version"] == "3.172.0"
    assert standin.unknown_requests() == []


@v3
def test_v3_dataset_run_items_create_the_run_and_never_deduplicate(standin, lf):
    dataset = lf.create_dataset(name="suite")
    lf.create_dataset_item(dataset_name="suite", id="suite:t1:1", input={"t": 1})
    body = {"runName": "run-1", "runDescription": "d", "metadata": {"m": 1}, "datasetItemId": "suite:t1:1",
            "traceId": SEED_TRACE, "observationId": SEED_ROOT, "createdAt": "2026-11-30T10:00:00.000Z"}
    with raw(standin) as c:
        params = {"datasetId": dataset.id, "runName": "run-1"}
        assert c.get("/api/public/dataset-run-items", params=params).status_code == 404  # no run yet
        first = c.post("/api/public/dataset-run-items", json=body).json()
        second = c.post("/api/public/dataset-run-items", json=body).json()
        assert first["datasetRunId"] == second["datasetRunId"] and first["id"] != second["id"]
        listed = c.get("/api/public/dataset-run-items", params=params).json()
        assert [r["id"] for r in listed["data"]] == [first["id"], second["id"]]  # a duplicate, as on the server
        assert c.post("/api/public/dataset-run-items", json={**body, "extra": 1}).status_code == 400  # .strict()
        assert c.post("/api/public/dataset-run-items", json={**body, "datasetItemId": "nope"}).status_code == 404
        no_link = {k: v for k, v in body.items() if k not in ("traceId", "observationId")}
        assert c.post("/api/public/dataset-run-items", json=no_link).status_code == 400
    (run,) = standin.dataset_runs.values()
    assert (run["name"], run["createdAt"], run["metadata"]) == ("run-1", "2026-11-30T10:00:00.000Z", {"m": 1})
    assert len(standin.run_items_of("run-1")) == 2


def test_v3_before_3_160_refuses_created_at_on_run_items():
    with LangfuseStandIn(public_key=f"pk-lf-{uuid.uuid4().hex[:12]}", mode="v3", server_version="3.150.0") as server:
        with raw(server) as c:
            c.post("/api/public/v2/datasets", json={"name": "s"}).raise_for_status()
            c.post("/api/public/dataset-items", json={"datasetName": "s", "id": "i"}).raise_for_status()
            body = {"runName": "r", "datasetItemId": "i", "traceId": SEED_TRACE}
            assert c.post("/api/public/dataset-run-items", json={**body, "createdAt": "2026-11-30T10:00:00Z"}
                          ).status_code == 400
            assert c.post("/api/public/dataset-run-items", json=body).status_code == 200


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
