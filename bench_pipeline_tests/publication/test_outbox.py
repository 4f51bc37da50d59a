"""Without Langfuse keys: the outbox holds the exact requests a first publication would send,
never a key, and no HTTP request is made."""

from __future__ import annotations

import json

import httpx
import pytest

from bench_pipeline.publication.publisher import publish_run
from bench_pipeline.publication.result import PublicationError
from bench_pipeline.publication.settings import LangfuseSettings

from bench_pipeline_tests.support.publication_standin import SECRET


def test_not_configured_writes_the_outbox_without_http(run, out_dir, monkeypatch):
    def no_http(*a, **k):
        raise AssertionError("no HTTP when Langfuse is not configured")

    monkeypatch.setattr(httpx.Client, "send", no_http)
    partial = LangfuseSettings(base_url="https://lf.example", public_key=None, secret_key=SECRET)
    assert not partial.configured
    seen = []
    result = publish_run(**run, out_dir=out_dir, settings=partial, progress=lambda d, t: seen.append((d, t)))
    n = len(run["attempts"])
    assert (result.status, result.experiment_id, result.http_requests, result.record_path) == (
        "not_configured", None, None, None)
    assert result.outbox_path == out_dir / "langfuse_outbox.jsonl" and result.items == n
    assert seen[-1] == (n, n)
    text = result.outbox_path.read_text()
    assert SECRET not in text
    lines = [json.loads(x) for x in text.splitlines()]
    kinds = [x["kind"] for x in lines]
    assert kinds[0] == "dataset" and kinds.count("dataset_item") == n
    assert [x["seq"] for x in lines] == list(range(1, len(lines) + 1))
    assert lines[0]["body"]["name"] == run["metrics"]["suite"]
    spans = [s for x in lines if x["kind"] == "spans" for s in x["body"]["resourceSpans"][0]["scopeSpans"][0]["spans"]]
    assert sum(1 for s in spans if s["name"].startswith("benchmark/")) == n and len(spans) == result.spans
    events = [e for x in lines if x["kind"] == "scores" for e in x["body"]["batch"]]
    assert {x["path"] for x in lines if x["kind"] == "scores"} == {"/api/public/ingestion"}
    assert len(events) == result.scores and {e["type"] for e in events} == {"score-create"}
    assert {e["body"]["datasetRunId"] for e in events if "datasetRunId" in e["body"]} == {"{{experiment_id}}"}
    assert len({e["timestamp"] for e in events}) == 1  # one anchor time
    assert "available" not in {json.loads(next(a["value"]["stringValue"] for a in s["attributes"]
                                               if a["key"] == "langfuse.observation.output"))["execution_trace_status"]
                                for s in spans if s["name"].startswith("benchmark/")}
    # the same run gives the same requests (apart from the anchor time)
    again = publish_run(**run, out_dir=out_dir, settings=partial)
    strip = lambda t: [x for x in t.splitlines() if '"kind":"spans"' not in x and '"kind":"scores"' not in x]
    assert strip(again.outbox_path.read_text()) == strip(text)


def test_the_outbox_is_never_written_with_a_key_in_it(run, out_dir):
    """A partial configuration whose key appears in a payload (here: the suite name) refuses
    to write the outbox, and leaves no partial file behind."""
    key = "sk-lf-in-the-payload"
    run = {**run, "metrics": {**run["metrics"], "suite": key}}
    partial = LangfuseSettings(base_url=None, public_key=None, secret_key=key)
    with pytest.raises(PublicationError, match="contains a Langfuse key"):
        publish_run(**run, out_dir=out_dir, settings=partial)
    assert not (out_dir / "langfuse_outbox.jsonl").exists()
    assert not [p for p in out_dir.iterdir() if "outbox" in p.name]
