"""Publication through the real SDK client over real HTTP against the Langfuse stand-in."""

from __future__ import annotations

import json
import logging
import math
import time
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from langfuse.api.client import LangfuseAPI

from bench_pipeline.publication import (
    LangfuseSettings,
    PublicationError,
    PublishOptions,
    publish_run,
)
from bench_pipeline.publication import mapping as m
from bench_pipeline.publication.cli import publish_processed
from bench_pipeline_tests.langfuse_standin import LangfuseStandIn

from .conftest import FAST, ROOT_SPAN, SECRET, settings_for

OUTCOME_CATEGORICAL = ("status", "failure_class", "first_failure_stage")
OUTCOME_BOOLEAN = ("success_raw", "success", "agent_eligible_raw", "agent_eligible",
                   "recovery_attempted", "recovery_succeeded")
NUMERIC = (
    "quality_score", "rubric_pass_count", "rubric_total", "task_wall_ms", "setup_ms", "screenshot_capture_ms",
    "time_to_first_token_ms", "llm_calls", "llm_time_ms", "vision_llm_calls", "vision_llm_time_ms",
    "device_actions", "device_execution_ms", "tool_calls", "screenshots_taken", "tool_errors", "replan_count",
    "retry_count", "input_tokens", "output_tokens", "total_tokens", "cached_input_tokens", "reasoning_tokens",
    "cost_usd",
)


# ------------------------------------------------------------------------------------ helpers


def publish(run, out_dir, settings, options, **kw):
    return publish_run(**run, out_dir=out_dir, settings=settings, options=options, **kw)


def expected_attempt_scores(rec: dict) -> dict[str, tuple]:
    """benchmark.* scores of an attempt record, written out from outputs.md (independent of mapping)."""
    out: dict[str, tuple] = {}
    for f in OUTCOME_CATEGORICAL:
        if rec[f] is not None:
            out[f"benchmark.{f}"] = (rec[f], "CATEGORICAL")
    for f in OUTCOME_BOOLEAN:
        if rec[f] is not None:
            out[f"benchmark.{f}"] = (1.0 if rec[f] else 0.0, "BOOLEAN")
    for f in ("expected_answer_match", "expected_recalled_memory_match"):
        if rec["evidence"][f] is not None:
            out[f"benchmark.{f}"] = (1.0 if rec["evidence"][f] else 0.0, "BOOLEAN")
    for f in NUMERIC:
        if rec[f] is not None:
            out[f"benchmark.{f}"] = (float(rec[f]), "NUMERIC")
    if rec["rubric_total"] and rec["rubric_pass_count"] is not None:
        out["benchmark.rubric_pass_rate"] = (rec["rubric_pass_count"] / rec["rubric_total"], "NUMERIC")
    return out


def expected_run_scores(metrics: dict) -> dict[str, float]:
    out: dict[str, float] = {}

    def walk(v, name):
        if isinstance(v, dict):
            for k, c in v.items():
                walk(c, f"{name}.{k}")
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            name = name.replace(".ci95.lower", ".ci95_lower").replace(".ci95.upper", ".ci95_upper")
            out[name.removesuffix(".value")] = float(v)

    for section in ("capability", "coverage", "failures", "diagnostics", "category", "observations",
                    "efficiency", "reliability", "cost_to_first_success", "uncertainty", "estimators"):
        walk(metrics.get(section, {}), section)
    return out


def item_spans(standin: LangfuseStandIn) -> dict[str, dict]:
    spans = standin.experiment_item_spans()
    by_item = {s["attributes"]["langfuse.experiment.item.id"]: s for s in spans}
    assert len(by_item) == len(spans), "an item has more than one experiment item span"
    return by_item


def output_of(span: dict) -> dict:
    return json.loads(span["attributes"]["langfuse.observation.output"])


def snapshot(standin: LangfuseStandIn) -> dict:
    """Server state with server-assigned values (dataset/experiment id, URL) normalised."""
    ds_ids = {d["id"]: "DS" for d in standin.datasets.values()}
    exp_ids = {s["attributes"]["langfuse.experiment.id"]: "EXP" for s in standin.experiment_item_spans()}

    def norm(v):
        if isinstance(v, str):
            v = v.replace(standin.base_url, "BASE")
            for old, new in {**ds_ids, **exp_ids}.items():
                v = v.replace(old, new)
        return v

    return {
        "datasets": sorted(standin.datasets),
        "items": {k: (v["datasetName"], v["input"], v["expectedOutput"], v["metadata"], v["status"])
                  for k, v in standin.dataset_items.items()},
        "spans": {k: (s["name"], s["parent_span_id"],
                      {a: norm(x) for a, x in s["attributes"].items()}) for k, s in standin.spans.items()},
        "scores": {k: (s["name"], s["value"], s["dataType"], s["traceId"], s["observationId"],
                       norm(s["datasetRunId"])) for k, s in standin.score_rows.items()},
    }


def assert_no_duplicates(standin: LangfuseStandIn, n_attempts: int, *, receipts: bool = True):
    assert len(item_spans(standin)) == n_attempts
    assert len({k[0] for k in standin.score_rows}) == len(standin.score_rows)  # one row per score id
    if receipts:
        assert standin.duplicate_span_receipts() == {}


@pytest.fixture(scope="module")
def clean_state(processed_run, tmp_path_factory):
    """What a clean publication of the shared run leaves in a stand-in."""
    from bench_pipeline.process import attempt_record

    raw = processed_run.raw
    run = {"run_id": raw.run_id, "metrics": processed_run.metrics,
           "attempts": [attempt_record(a) for a in processed_run.attempts],
           "manifest": raw.manifest, "suite_def": raw.suite_def}
    with LangfuseStandIn(public_key=f"pk-lf-{uuid.uuid4().hex[:12]}", secret_key=SECRET, mode="sdk5") as server:
        publish(run, tmp_path_factory.mktemp("clean"), settings_for(server), PublishOptions(**FAST))
        return snapshot(server)


# ------------------------------------------------------------------------------------ full publication


def test_full_publication(standin, settings, options, run, out_dir, caplog):
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.INFO, logger="httpx")  # the langfuse package turns it down to WARNING
    seen = []
    result = publish(run, out_dir, settings, options, progress=lambda d, t: seen.append((d, t)))
    publication_log = caplog.text
    attempts = run["attempts"]
    n = len(attempts)
    suite = run["metrics"]["suite"]

    assert result.status == "published" and result.dataset == suite
    assert (result.items, result.skipped_existing) == (n, 0)
    assert result.record_path == out_dir / "publication.json" and result.outbox_path is None
    assert result.http_requests == len(standin.requests)

    # one dataset, one item per attempt with the task's prompt
    assert list(standin.datasets) == [suite]
    dataset_id = standin.datasets[suite]["id"]
    assert len(standin.dataset_items) == n
    prompts = {t["id"]: t["prompt"] for t in run["suite_def"]["tasks"]}
    for rec in attempts:
        item = standin.dataset_items[m.dataset_item_id(suite, rec["task_id"], rec["attempt"])]
        assert item["input"]["prompt"] == prompts[rec["task_id"]] and item["datasetName"] == suite

    # one experiment item span per attempt, in the experiment the SDK formula names
    exp_id = standin.experiment_id(dataset_id, run["run_id"])
    assert result.experiment_id == exp_id
    spans = item_spans(standin)
    assert len(spans) == n
    for rec in attempts:
        span = spans[m.dataset_item_id(suite, rec["task_id"], rec["attempt"])]
        a = span["attributes"]
        assert span["name"] == f"benchmark/{rec['task_id']}#attempt-{rec['attempt']}"
        assert a["langfuse.experiment.id"] == exp_id and a["langfuse.experiment.name"] == run["run_id"]
        assert a["langfuse.experiment.dataset.id"] == dataset_id
        out = output_of(span)
        assert out["final_response"] == rec["evidence"]["final_response"]
        assert out["tool_calls"] == rec["evidence"]["tool_calls"]
        assert out["trace_artifact"] == rec["evidence"]["trace_artifact"]
        assert out["aiden_episode_id"] == rec["evidence"]["episode_id"]
        # nothing was seeded: no execution trace is available
        assert out["execution_trace_status"] == ("no_episode" if rec["evidence"]["episode_id"] is None
                                                 else "pending_or_missing")

    # scores: every available attempt field, nothing for a null, values as in the records
    for rec in attempts:
        span = spans[m.dataset_item_id(suite, rec["task_id"], rec["attempt"])]
        got = {s["name"]: (s["value"], s["dataType"]) for s in standin.scores.values()
               if s["observationId"] == span["span_id"]}
        assert got == expected_attempt_scores(rec)
        assert all(s["traceId"] == span["trace_id"] for s in standin.scores.values()
                   if s["observationId"] == span["span_id"])
    run_scores = {s["name"]: s["value"] for s in standin.scores.values() if s["datasetRunId"] == exp_id}
    assert run_scores == pytest.approx(expected_run_scores(run["metrics"]))
    assert run_scores["capability.pass_at_1"] == run["metrics"]["capability"]["pass_at_1"]["value"]
    assert "efficiency.cost_usd.mean" not in run_scores  # null in metrics.json: omitted, not 0
    assert all(not math.isnan(v) for v in run_scores.values() if isinstance(v, float))

    # readable through the SDK like any experiment
    api = LangfuseAPI(base_url=standin.base_url, username=standin.public_key, password=SECRET)
    since = datetime.now(UTC) - timedelta(hours=1)
    exps = api.experiments.list(from_start_time=since, fields="core,metadata,scores", score_limit=50)
    assert [(e.id, e.name, e.item_count) for e in exps.data] == [(exp_id, run["run_id"], n)]
    assert exps.data[0].metadata["run_id"] == run["run_id"]
    # scoreLimit is at most 50; the run scores outside the reads' time window are not returned
    assert {s.name for s in exps.data[0].scores} <= set(run_scores)

    # delivery was confirmed within the request budget, progress reached the end
    assert all(r.status in (200, 202) for r in standin.requests)
    assert len(standin.requests_to("/api/public/otel")) == 1 and len(standin.requests_to("/api/public/scores")) <= 2
    assert seen[0] == (0, n) and seen[-1] == (n, n)
    assert all(h.get("x-langfuse-ingestion-version") == "4" for h in
               (r.headers for r in standin.requests_to("/api/public/otel")))

    # the record says what was sent; no key appears in it or in the logs
    record = json.loads(result.record_path.read_text())
    assert record["status"] == "complete" and record["experiment_id"] == exp_id
    assert len(record["bindings"]) == n and all(b["state"] == "confirmed" for b in record["bindings"].values())
    assert record["sessions"][-1]["sent"] == {"items": n, "spans": result.spans, "scores": result.scores}
    text = result.record_path.read_text()
    assert SECRET not in text and standin.public_key not in text and standin.base_url not in text
    assert "HTTP Request" in publication_log  # httpx logs requests, with the Langfuse URL redacted
    for private in (SECRET, standin.public_key, standin.base_url):
        assert private not in publication_log


def test_publish_twice_duplicates_nothing(standin, settings, options, run, out_dir):
    first = publish(run, out_dir, settings, options)
    before = snapshot(standin)
    requests_before = len(standin.requests)
    second = publish(run, out_dir, settings, options)
    assert (second.items, second.spans, second.scores) == (0, 0, 0)
    assert second.skipped_existing == len(run["attempts"]) and second.http_requests == 0
    assert len(standin.requests) == requests_before
    assert snapshot(standin) == before
    assert standin.duplicate_span_receipts() == {} and max(standin.score_receipts.values()) == 1

    # the record lost (another output folder): what exists in Langfuse is found and kept
    third = publish(run, out_dir.parent / "elsewhere", settings, options)
    assert third.spans == 0 and third.items == 0 and third.skipped_existing == len(run["attempts"])
    assert third.experiment_id == first.experiment_id
    assert snapshot(standin) == before  # scores re-sent with the same id and timestamp replace
    assert standin.duplicate_span_receipts() == {}
    assert_no_duplicates(standin, len(run["attempts"]))


def test_changed_results_are_resent_in_place(standin, settings, options, run, out_dir):
    publish(run, out_dir, settings, options)
    rec = run["attempts"][0]
    rec["evidence"]["final_response"] = "a corrected final answer"
    rec["quality_score"] = 0.5
    result = publish(run, out_dir, settings, options)
    assert (result.spans >= 1, result.items, result.skipped_existing) == (True, 0, len(run["attempts"]))
    span = item_spans(standin)[m.dataset_item_id(run["metrics"]["suite"], rec["task_id"], rec["attempt"])]
    assert output_of(span)["final_response"] == "a corrected final answer"
    assert_no_duplicates(standin, len(run["attempts"]), receipts=False)


# ------------------------------------------------------------------------------------ execution traces


def test_execution_trace_linking(standin, settings, options, run, out_dir):
    attempts = run["attempts"][:3]
    seeded, pending, anonymous = attempts
    for rec, episode, trace in ((seeded, "ep-seeded", "a1" * 16), (pending, "ep-pending", "b2" * 16),
                                (anonymous, None, "c3" * 16)):
        rec["evidence"].update(episode_id=episode, trace_id=trace)
    standin.add_trace("a1" * 16, ROOT_SPAN, name="agent-run")
    standin.add_trace("c3" * 16, ROOT_SPAN)  # exists, but the episode is ambiguous: never linked
    run["attempts"] = attempts
    publish(run, out_dir, settings, options)

    suite = run["metrics"]["suite"]
    spans = item_spans(standin)
    s_avail, s_pend, s_none = (spans[m.dataset_item_id(suite, r["task_id"], r["attempt"])] for r in attempts)

    assert (s_avail["trace_id"], s_avail["parent_span_id"]) == ("a1" * 16, ROOT_SPAN)
    out = output_of(s_avail)
    assert out["execution_trace_status"] == "available" and out["aiden_trace_id"] == "a1" * 16
    assert out["aiden_trace_url"] == f"{standin.base_url}/project/proj-test/traces/{'a1' * 16}"
    assert [s["name"] for s in standin.find_spans(trace_id="a1" * 16)] == [s_avail["name"]]  # no replay root

    out = output_of(s_pend)
    assert out["execution_trace_status"] == "pending_or_missing" and out["aiden_trace_id"] == "b2" * 16
    assert s_pend["trace_id"] != "b2" * 16 and s_pend["parent_span_id"] is not None
    replay_root = standin.spans[(s_pend["trace_id"], s_pend["parent_span_id"])]
    assert replay_root["name"] == "benchmark-replay" and replay_root["parent_span_id"] is None

    out = output_of(s_none)
    assert out["execution_trace_status"] == "no_episode"
    assert (out["aiden_episode_id"], out["aiden_trace_id"], out["aiden_trace_url"]) == (None, None, None)
    assert s_none["trace_id"] != "c3" * 16

    # item scores sit on the experiment item wherever it lives
    scored = {(s["traceId"], s["observationId"]) for s in standin.scores.values() if s["observationId"]}
    assert scored == {(s["trace_id"], s["span_id"]) for s in (s_avail, s_pend, s_none)}


def test_existing_binding_is_kept_when_the_trace_arrives_later(standin, settings, options, run, out_dir):
    rec = run["attempts"][0]
    rec["evidence"].update(episode_id="ep-late", trace_id="d4" * 16)
    run["attempts"] = [rec]
    publish(run, out_dir, settings, options)
    (span,) = item_spans(standin).values()
    assert output_of(span)["execution_trace_status"] == "pending_or_missing"

    standin.add_trace("d4" * 16, ROOT_SPAN)  # the Agent's telemetry arrives afterwards
    for folder in (out_dir, out_dir.parent / "no-record"):
        result = publish(run, folder, settings, options)
        assert result.spans == 0
        (again,) = item_spans(standin).values()
        assert (again["trace_id"], again["span_id"]) == (span["trace_id"], span["span_id"])
        assert output_of(again)["execution_trace_status"] == "pending_or_missing"
    assert standin.find_spans(trace_id="d4" * 16) == []


# ------------------------------------------------------------------------------------ faults


def _finish_after_failure(standin, settings, options, run, out_dir, clean_state, *, receipts=True):
    result = publish(run, out_dir, settings, options)  # the retry
    assert result.status == "published"
    record = json.loads((out_dir / "publication.json").read_text())
    assert record["status"] == "complete"
    assert snapshot(standin) == clean_state
    assert_no_duplicates(standin, len(run["attempts"]), receipts=receipts)
    return result, record


@pytest.mark.parametrize("prefix", ["/api/public/scores", "/api/public/otel", "/api/public/dataset-items",
                                    "/api/public/v2/observations", "/api/public/v2/datasets"])
def test_persistent_500_fails_clearly_then_retry_completes(standin, settings, options, run, out_dir, clean_state,
                                                           prefix):
    standin.faults.fail(prefix, status=500, times=1000)  # the service stays broken for this call
    with pytest.raises(PublicationError) as err:
        publish(run, out_dir, settings, options)
    standin.faults.clear()  # ... and recovers
    message = str(err.value)
    assert "HTTP 500" in message and "resends only what is missing" in message
    assert f"of {len(run['attempts'])} attempt(s) not confirmed" in message
    assert SECRET not in message
    record = json.loads((out_dir / "publication.json").read_text())
    assert record["status"] == "incomplete" and record["sessions"][-1]["errors"]
    result, record = _finish_after_failure(standin, settings, options, run, out_dir, clean_state)
    assert [s["outcome"] for s in record["sessions"]] == ["incomplete", "complete"]
    if prefix == "/api/public/scores":  # only what was missing went out again
        assert result.spans == 0 and result.items == 0


def test_transient_500_and_429_are_retried_within_one_call(standin, settings, options, run, out_dir, clean_state):
    standin.faults.fail("/api/public/scores", status=500, times=1)
    standin.faults.rate_limit("/api/public/scores", times=1, retry_after=0)
    standin.faults.rate_limit("/api/public/otel", times=1, retry_after=1)
    standin.faults.fail("/api/public/dataset-items", status=503, times=2)
    standin.faults.fail("/api/public/projects", status=502, times=1)
    result = publish(run, out_dir, settings, options)
    assert result.status == "published"
    assert snapshot(standin) == clean_state
    assert_no_duplicates(standin, len(run["attempts"]))
    assert [r.status for r in standin.requests_to("/api/public/scores")][:3] == [500, 429, 202]


def test_dropped_span_batch_that_was_stored_is_not_resent(standin, settings, options, run, out_dir, clean_state):
    standin.faults.drop("/api/public/otel", after_processing=True)
    result = publish(run, out_dir, settings, options)  # read back, found, confirmed without a resend
    assert result.status == "published"
    assert len(standin.requests_to("/api/public/otel")) == 1
    assert snapshot(standin) == clean_state
    assert_no_duplicates(standin, len(run["attempts"]))


def test_dropped_span_batch_that_was_lost_is_resent(standin, settings, options, run, out_dir, clean_state):
    standin.faults.drop("/api/public/otel", times=options.retries)  # the last round gets through
    result = publish(run, out_dir, settings, options)
    assert result.status == "published"
    assert snapshot(standin) == clean_state
    assert_no_duplicates(standin, len(run["attempts"]))


def test_unanswered_spans_everywhere_fail_then_retry_resolves(standin, settings, options, run, out_dir, clean_state):
    # every span request is stored but never answered: nothing can be confirmed in this call
    standin.faults.drop("/api/public/otel", times=100, after_processing=True)
    standin.faults.fail("/api/public/v2/observations", status=500, times=100)
    with pytest.raises(PublicationError) as err:
        publish(run, out_dir, settings, options)
    assert "span" in str(err.value)
    standin.faults.clear()
    receipts = dict(standin.span_receipts)
    assert receipts and set(receipts.values()) == {1}  # an unanswered span batch is not blindly repeated
    _finish_after_failure(standin, settings, options, run, out_dir, clean_state)
    assert {k: standin.span_receipts[k] for k in receipts} == receipts  # found by reading back: not re-sent


def test_dropped_mid_batch_scores_and_items(standin, settings, options, run, out_dir, clean_state):
    small = PublishOptions(**{**FAST, "chunk_attempts": 3, "max_spans_per_request": 4})
    standin.faults.drop("/api/public/scores", after_processing=True)  # stored, answer lost: resent, replaces
    standin.faults.drop("/api/public/dataset-items", method="POST", times=2)
    result = publish(run, out_dir, settings, small)
    assert result.status == "published"
    assert len(standin.requests_to("/api/public/otel")) >= 2
    assert snapshot(standin) == clean_state
    assert_no_duplicates(standin, len(run["attempts"]))


def test_slow_server_within_and_beyond_the_timeout(standin, settings, run, out_dir, clean_state):
    quick = PublishOptions(**{**FAST, "timeout": 0.5})
    standin.faults.delay("/api/public/scores", seconds=0.2)  # slower, still answered
    standin.faults.delay("/api/public/otel", seconds=1.0)  # times out; lands later anyway
    result = publish(run, out_dir, settings, quick)
    assert result.status == "published"
    deadline = time.monotonic() + 3
    while not all(r.completed for r in standin.requests) and time.monotonic() < deadline:
        time.sleep(0.02)  # let the timed-out export finish landing
    # the timed-out export may land after the resend: same ids, so the same objects
    assert snapshot(standin) == clean_state
    assert_no_duplicates(standin, len(run["attempts"]), receipts=False)


def test_lookup_failure_waits_instead_of_guessing(standin, settings, options, run, out_dir):
    rec = run["attempts"][0]
    rec["evidence"].update(episode_id="ep-x", trace_id="e5" * 16)
    run["attempts"] = [rec]
    standin.add_trace("e5" * 16, ROOT_SPAN)
    standin.faults.fail("/api/public/v2/observations", status=500, times=options.retries + 1)
    with pytest.raises(PublicationError, match="execution trace look-ups"):
        publish(run, out_dir, settings, options)
    assert standin.experiment_item_spans() == []  # not published under a guessed replay trace
    publish(run, out_dir, settings, options)
    (span,) = item_spans(standin).values()
    assert (span["trace_id"], output_of(span)["execution_trace_status"]) == ("e5" * 16, "available")


def test_bad_credentials_fail_without_leaking(standin, run, out_dir, options):
    wrong = LangfuseSettings(standin.base_url, standin.public_key, "sk-lf-wrong-secret")
    with pytest.raises(PublicationError) as err:
        publish(run, out_dir, wrong, options)
    assert "401" in str(err.value) and "sk-lf-wrong-secret" not in str(err.value)
    assert len(standin.requests) == 1  # a 401 is not retried
    assert "sk-lf-wrong-secret" not in (out_dir / "publication.json").read_text()


# ------------------------------------------------------------------------------------ configuration


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
    assert lines[0]["body"]["name"] == run["metrics"]["suite"]
    spans = [s for x in lines if x["kind"] == "spans" for s in x["body"]["resourceSpans"][0]["scopeSpans"][0]["spans"]]
    assert sum(1 for s in spans if s["name"].startswith("benchmark/")) == n and len(spans) == result.spans
    scores = [s for x in lines if x["kind"] == "scores" for s in x["body"]]
    assert len(scores) == result.scores
    assert {s["datasetRunId"] for s in scores if "datasetRunId" in s} == {"{{experiment_id}}"}
    assert "available" not in {json.loads(next(a["value"]["stringValue"] for a in s["attributes"]
                                               if a["key"] == "langfuse.observation.output"))["execution_trace_status"]
                                for s in spans if s["name"].startswith("benchmark/")}
    # the same run gives the same requests (apart from publication times)
    again = publish_run(**run, out_dir=out_dir, settings=partial)
    strip = lambda t: [x for x in t.splitlines() if '"kind":"spans"' not in x]
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


def test_settings_from_env_and_repr(monkeypatch):
    for name in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert not LangfuseSettings.from_env().configured
    monkeypatch.setenv("LANGFUSE_HOST", "https://host.example")
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", "pk-lf-123456789")
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET)
    s = LangfuseSettings.from_env()
    assert s.base_url == "https://host.example" and s.configured
    monkeypatch.setenv("LANGFUSE_BASE_URL", "https://base.example")
    s = LangfuseSettings.from_env()
    assert s.base_url == "https://base.example"
    assert SECRET not in repr(s) and SECRET not in str(s) and "pk-lf-123456789" not in repr(s)
    assert s.secret_key == SECRET


# ------------------------------------------------------------------------------------ CLI and scale


def test_cli_publish_processed(processed_run, standin, tmp_path, monkeypatch, capsys):
    for name in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert publish_processed(processed_run, tmp_path / "a") == 0
    assert "not configured" in capsys.readouterr().out
    assert (tmp_path / "a" / "langfuse_outbox.jsonl").exists()

    monkeypatch.setenv("LANGFUSE_BASE_URL", standin.base_url)
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", standin.public_key)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET)
    monkeypatch.setenv("LANGFUSE_TIMEOUT", "2")
    assert publish_processed(processed_run, tmp_path / "b") == 0
    captured = capsys.readouterr()
    assert "published run" in captured.out and SECRET not in captured.out + captured.err
    assert len(standin.experiment_item_spans()) == len(processed_run.attempts)

    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk-lf-wrong")
    assert publish_processed(processed_run, tmp_path / "c") == 1
    captured = capsys.readouterr()
    assert "error: Langfuse publication" in captured.err and "sk-lf-wrong" not in captured.err


def _many_attempts(run, n):
    """n attempt records cloned from the realistic ones, as n distinct task attempts."""
    base = run["attempts"]
    out = []
    for i in range(n):
        rec = json.loads(json.dumps(base[i % len(base)]))
        rec["task_id"] = f"task-{i // 4:04d}"
        rec["attempt"] = i % 4 + 1
        rec["line"] = i + 1
        out.append(rec)
    return out


@pytest.mark.slow
def test_request_budget_at_scale(standin, settings, run, out_dir):
    n = 1500
    run["attempts"] = _many_attempts(run, n)
    seeded = 0
    for rec in run["attempts"][::3]:
        if rec["evidence"]["episode_id"]:
            rec["evidence"]["trace_id"] = uuid.uuid4().hex
            standin.add_trace(rec["evidence"]["trace_id"], ROOT_SPAN)
            seeded += 1
    result = publish(run, out_dir, settings, PublishOptions(**{**FAST, "timeout": 10}))
    bulk = len(standin.requests_to("/api/public/otel")) + len(standin.requests_to("/api/public/scores"))
    assert bulk <= math.ceil(n / 50)
    assert len(standin.requests_to("/api/public/dataset-items", "POST")) == n
    assert len(item_spans(standin)) == n
    available = sum(1 for s in standin.experiment_item_spans() if output_of(s)["execution_trace_status"] == "available")
    assert available == seeded
    assert result.http_requests == len(standin.requests)


def test_second_run_of_the_same_suite_reuses_the_items(standin, settings, options, run, tmp_path):
    first = publish(run, tmp_path / "one", settings, options)
    items = {k: dict(v) for k, v in standin.dataset_items.items()}
    other = {**run, "run_id": run["run_id"] + "-rerun"}
    second = publish(other, tmp_path / "two", settings, options)
    assert second.items == 0 and standin.dataset_items == items  # unchanged items are not rewritten
    assert second.experiment_id != first.experiment_id and list(standin.datasets) == [run["metrics"]["suite"]]
    per_experiment = {}
    for span in standin.experiment_item_spans():
        per_experiment.setdefault(span["attributes"]["langfuse.experiment.id"], set()).add(
            span["attributes"]["langfuse.experiment.item.id"])
    assert set(per_experiment) == {first.experiment_id, second.experiment_id}
    assert per_experiment[first.experiment_id] == per_experiment[second.experiment_id] == set(items)


def test_long_task_ids_get_hashed_item_ids(standin, settings, options, run, out_dir):
    for rec in run["attempts"]:
        rec["task_id"] = rec["task_id"] + ":" + "x" * 300
    publish(run, out_dir, settings, options)
    assert len(standin.dataset_items) == len(run["attempts"])
    assert all(len(i) <= 255 and i.startswith("bench-item-") for i in standin.dataset_items)
    assert len(item_spans(standin)) == len(run["attempts"])


@pytest.mark.parametrize("lookup_limit", [25, 0], ids=["per-trace read-back", "experiment read-back"])
def test_killed_after_sending_spans_is_resolved_by_reading_back(standin, settings, run, out_dir, clean_state,
                                                                monkeypatch, lookup_limit):
    from bench_pipeline.publication import publisher

    options = PublishOptions(**{**FAST, "in_doubt_lookup_limit": lookup_limit})

    def killed(self, *args):
        raise KeyboardInterrupt

    monkeypatch.setattr(publisher._Publication, "_send_attempt_scores", killed)
    monkeypatch.setattr(publisher._Publication, "_finish_record", lambda self: None)  # no final save
    with pytest.raises(KeyboardInterrupt):
        publish(run, out_dir, settings, options)
    monkeypatch.undo()
    record = json.loads((out_dir / "publication.json").read_text())
    assert {b["state"] for b in record["bindings"].values()} == {"in_doubt"}  # saved before sending
    receipts = dict(standin.span_receipts)
    assert len(item_spans(standin)) == len(run["attempts"])

    result, _ = _finish_after_failure(standin, settings, options, run, out_dir, clean_state)
    assert result.spans == 0 and dict(standin.span_receipts) == receipts


def test_without_any_timestamp_scores_keep_their_first_timestamp(standin, settings, options, run, tmp_path):
    run["manifest"] = {k: v for k, v in run["manifest"].items() if k not in ("started_at", "finished_at")}
    for rec in run["attempts"]:
        rec["evidence"]["started_at"] = rec["evidence"]["finished_at"] = None
    publish(run, tmp_path / "one", settings, options)
    rows = set(standin.score_rows)
    assert len({day for _, day, _ in rows}) == 1  # the first publication's time, fixed
    publish(run, tmp_path / "two", settings, options)  # record lost: the timestamp is read back
    assert set(standin.score_rows) == rows
    assert_no_duplicates(standin, len(run["attempts"]))


def test_gives_up_quickly_when_langfuse_keeps_failing(standin, settings, run, out_dir, clean_state):
    options = PublishOptions(**{**FAST, "give_up_after": 2})
    standin.faults.fail("/api/public/dataset-items", status=503, times=1000, method="POST")
    with pytest.raises(PublicationError, match="not attempted"):
        publish(run, out_dir, settings, options)
    tries = len(standin.requests_to("/api/public/dataset-items", "POST"))
    assert tries < len(run["attempts"]) * (options.retries + 1)  # not every item waited out its retries
    standin.faults.clear()
    _finish_after_failure(standin, settings, options, run, out_dir, clean_state)
