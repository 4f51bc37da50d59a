"""The stand-in's serving: unknown endpoints, and injected faults (status, drop, delay) as
the SDK and raw clients meet them."""

from __future__ import annotations

import urllib.error
import urllib.request

import httpx
import pytest

from bench_pipeline_tests.support.langfuse_clients import FIXED_TS, SEED_TRACE, raw, sdk5


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


@sdk5
def test_a_score_deletion_is_queued_whether_or_not_the_score_exists(standin, lf):
    """scores/[scoreId].ts DELETE (successStatusCode 202) -> ScoresApiService.deleteScore, which
    queues the deletion without looking the score up: 202 for any id, never 404."""
    lf.create_score(name="x", value=1.0, trace_id=SEED_TRACE, score_id="s-1", timestamp=FIXED_TS)
    lf.flush()
    lf.api.scores.delete("s-1")
    lf.api.scores.delete("never-there")
    deletes = standin.requests_to("/api/public/scores/", "DELETE")
    assert [r.status for r in deletes] == [202, 202] and "s-1" not in standin.scores
    with raw(standin) as c:
        answer = c.delete("/api/public/scores/s-2")
    assert (answer.status_code, answer.json()) == (202, {"message": "Score deletion queued successfully"})
