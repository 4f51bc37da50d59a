"""Publication through the real SDK client over real HTTP against the Langfuse stand-in, in
each server generation's mode (``mode``: v4 events mode, v3 legacy mode)."""

from __future__ import annotations

import json
import logging
import math
import threading
import time
import uuid

import httpx
import pytest

from bench_pipeline.publication.publisher import publish_run
from bench_pipeline.publication.result import PublicationError
from bench_pipeline.publication.settings import LangfuseSettings, PublishOptions
from bench_pipeline.publication.ids import dataset_item_id

from .builders import Progress
from .server_state import (
    assert_no_duplicates,
    experiment_id_of,
    experiment_items_per_run,
    item_spans,
    legacy,
    output_of,
    read_back,
    snapshot,
)
from bench_pipeline_tests.support.publication_standin import FAST, ROOT_SPAN, SECRET, make_standin, settings_for

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
#: spares the probe's empty requests (an empty batch / OTLP export) when a fault targets a bulk write
PAST_PROBE = {"min_bytes": 100}


# ------------------------------------------------------------------------------------ helpers


def publish(run, out_dir, settings, options, **kw):
    return publish_run(**run, out_dir=out_dir, settings=settings, options=options, **kw)


def lookup_path(standin) -> str:
    """Where execution traces are looked up: v4 /api/public/v2/observations, v3 the v1 list."""
    return "/api/public/observations" if legacy(standin) else "/api/public/v2/observations"


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


def assert_read_apis_return_everything(standin, run) -> None:
    """Each experiment item and each of its scores through the generation's own reads
    (with their score time windows), and the run scores."""
    suite = run["metrics"]["suite"]
    dataset_id = standin.datasets[suite]["id"]
    got = read_back(standin, dataset_id, run["run_id"])
    assert set(got["items"]) == {dataset_item_id(suite, r["task_id"], r["attempt"]) for r in run["attempts"]}
    for rec in run["attempts"]:
        _, _, names = got["items"][dataset_item_id(suite, rec["task_id"], rec["attempt"])]
        assert names == set(expected_attempt_scores(rec))
    expected = set(expected_run_scores(run["metrics"]))
    if legacy(standin):
        assert got["run_scores"] == expected
    else:  # the experiments read returns up to 50 (scoreLimit), all of them in the window
        assert got["run_scores"] <= expected and len(got["run_scores"]) == min(50, len(expected))
        assert got["item_count"] == len(run["attempts"])


@pytest.fixture(scope="module")
def clean_state(processed_run, tmp_path_factory, mode):
    """What a clean publication of the shared run leaves in a stand-in of this mode."""
    from bench_pipeline.metrics_files import attempt_record

    raw = processed_run.raw
    run = {"run_id": raw.run_id, "metrics": processed_run.metrics,
           "attempts": [attempt_record(a) for a in processed_run.attempts],
           "manifest": raw.manifest, "suite_def": raw.suite_def}
    with make_standin(mode) as server:
        publish(run, tmp_path_factory.mktemp("clean"), settings_for(server), PublishOptions(**FAST))
        return snapshot(server)


# ------------------------------------------------------------------------------------ full publication


def test_full_publication(standin, settings, options, run, out_dir, caplog, mode):
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.INFO, logger="httpx")  # the langfuse package turns it down to WARNING
    progress = Progress()
    result = publish(run, out_dir, settings, options, progress=progress)
    publication_log = caplog.text
    attempts = run["attempts"]
    n = len(attempts)
    suite = run["metrics"]["suite"]

    assert result.status == "published" and result.dataset == suite
    assert (result.server, result.server_version) == (mode, standin.server_version)
    assert (result.items, result.skipped_existing) == (n, 0)
    assert result.run_items == (n if mode == "v3" else 0)
    assert result.record_path == out_dir / "publication.json" and result.outbox_path is None
    assert result.http_requests == len(standin.requests)
    assert any(f"Langfuse {standin.server_version}" in note and (
        "v3 legacy mode" if mode == "v3" else "v4 events mode") in note for note in progress.notes)

    # one dataset, one item per attempt with the task's prompt
    assert list(standin.datasets) == [suite]
    dataset_id = standin.datasets[suite]["id"]
    assert len(standin.dataset_items) == n
    prompts = {t["id"]: t["prompt"] for t in run["suite_def"]["tasks"]}
    for rec in attempts:
        item = standin.dataset_items[dataset_item_id(suite, rec["task_id"], rec["attempt"])]
        assert item["input"]["prompt"] == prompts[rec["task_id"]] and item["datasetName"] == suite
        assert item["status"] == "ACTIVE"

    # one experiment item per attempt, in the experiment the server names
    exp_id = experiment_id_of(standin, dataset_id, run["run_id"])
    assert result.experiment_id == exp_id
    spans = item_spans(standin)
    assert len(spans) == n
    for rec in attempts:
        span = spans[dataset_item_id(suite, rec["task_id"], rec["attempt"])]
        a = span["attributes"]
        assert span["name"] == f"benchmark/{rec['task_id']}#attempt-{rec['attempt']}"
        if mode == "v4":
            assert a["langfuse.experiment.id"] == exp_id and a["langfuse.experiment.name"] == run["run_id"]
            assert a["langfuse.experiment.dataset.id"] == dataset_id
        else:  # legacy: the dataset run item is the link; no experiment attributes
            assert not any(k.startswith("langfuse.experiment") for k in a)
        out = output_of(span)
        assert out["final_response"] == rec["evidence"]["final_response"]
        assert out["tool_calls"] == rec["evidence"]["tool_calls"]
        assert out["trace_artifact"] == rec["evidence"]["trace_artifact"]
        assert out["aiden_episode_id"] == rec["evidence"]["episode_id"]
        # nothing was seeded: no execution trace is available
        assert out["execution_trace_status"] == ("no_episode" if rec["evidence"]["episode_id"] is None
                                                 else "pending_or_missing")
    if mode == "v3":
        (run_row,) = standin.dataset_runs.values()
        assert run_row["name"] == run["run_id"] and run_row["metadata"]["run_id"] == run["run_id"]

    # scores: every available attempt field, nothing for a null, values as in the records
    for rec in attempts:
        span = spans[dataset_item_id(suite, rec["task_id"], rec["attempt"])]
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

    # one anchor time: every span starts there, every score carries it
    record = json.loads(result.record_path.read_text())
    anchor = record["anchor"]
    assert {s["timestamp"] for s in standin.scores.values()} == {anchor}
    assert {s["start_time"][:23] for s in standin.spans.values()} == {anchor[:23]}

    # every read API of the generation returns each score with its observation
    assert_read_apis_return_everything(standin, run)

    # delivery was confirmed within the request budget, progress reached the end
    absent = {"GET /api/public/v2/datasets/" + suite}  # the dataset did not exist yet
    if mode == "v3":
        absent |= {"GET /api/public/experiment-items", "GET /api/public/dataset-run-items"}  # probe; no run yet
    else:
        absent |= {"GET /api/public/scores"}  # the probe: legacy reads are absent in events_only mode
    assert {f"{r.method} {r.path}" for r in standin.requests if r.status == 404} <= absent
    assert all(r.status in (200, 202, 207) for r in standin.requests if r.status != 404)
    assert len(standin.requests_to("/api/public/otel")) == 2  # probe + one batch
    assert len(standin.requests_to("/api/public/ingestion")) <= 3  # probe + attempt scores + run scores
    assert progress.seen[0] == (0, n) and progress.seen[-1] == (n, n)
    assert all(h.get("x-langfuse-ingestion-version") == "4" for h in
               (r.headers for r in standin.requests_to("/api/public/otel")))
    assert not standin.requests_to("/api/public/scores", "POST")  # scores go through the ingestion endpoint

    # the record says what was sent and which server it was; no key appears in it or in the logs
    assert record["status"] == "complete" and record["experiment_id"] == exp_id
    assert record["server"]["generation"] == mode and record["server"]["version"] == standin.server_version
    assert len(record["bindings"]) == n and all(b["state"] == "confirmed" for b in record["bindings"].values())
    assert record["sessions"][-1]["sent"] == {"items": n, "spans": result.spans, "scores": result.scores,
                                              "run_items": result.run_items, "scores_deleted": 0}
    assert record["sessions"][-1]["items"] == {"created": n}
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
    assert second.server == first.server
    assert len(standin.requests) == requests_before
    assert snapshot(standin) == before
    assert standin.duplicate_span_receipts() == {} and max(standin.score_receipts.values()) == 1

    # the record lost (another output folder): what exists in Langfuse is found and kept
    third = publish(run, out_dir.parent / "elsewhere", settings, options)
    assert third.spans == 0 and third.items == 0 and third.skipped_existing == len(run["attempts"])
    assert third.run_items == 0 and third.experiment_id == first.experiment_id
    assert snapshot(standin) == before  # scores re-sent with the same id and timestamp replace
    assert standin.duplicate_span_receipts() == {}
    assert_no_duplicates(standin, len(run["attempts"]))
    anchors = {json.loads(p.read_text())["anchor"] for p in (out_dir / "publication.json",
                                                             out_dir.parent / "elsewhere" / "publication.json")}
    assert len(anchors) == 1  # the anchor time was read back from the server


def test_changed_results_are_resent_in_place(standin, settings, options, run, out_dir):
    publish(run, out_dir, settings, options)
    rec = run["attempts"][0]
    rec["evidence"]["final_response"] = "a corrected final answer"
    rec["quality_score"] = 0.5
    result = publish(run, out_dir, settings, options)
    assert (result.spans >= 1, result.items, result.skipped_existing) == (True, 0, len(run["attempts"]))
    assert result.run_items == 0  # the link of an item is kept; only its span and scores change
    span = item_spans(standin)[dataset_item_id(run["metrics"]["suite"], rec["task_id"], rec["attempt"])]
    assert output_of(span)["final_response"] == "a corrected final answer"
    assert_no_duplicates(standin, len(run["attempts"]), receipts=False)
    assert_read_apis_return_everything(standin, run)


def _rejudged(rec: dict) -> None:
    """An attempt whose judge failed on a second judging: its judged values become unknown."""
    rec.update(status="judge_error", success=None, success_raw=None, quality_score=None, rubric_pass_count=None,
               rubric_total=None)


def test_scores_that_became_unknown_are_deleted_not_left_beside_the_new_ones(standin, settings, options, run,
                                                                             out_dir):
    """A re-judge turned a success into a judge_error, and a run metric became null: the new
    publication leaves those values out (unknown, never 0) and deletes the scores the first one
    sent, so that Langfuse does not show success 1 beside status judge_error."""
    publish(run, out_dir, settings, options)
    rec = next(r for r in run["attempts"] if r["success"] is True and r["quality_score"] is not None)
    span_id = item_spans(standin)[dataset_item_id(run["metrics"]["suite"], rec["task_id"], rec["attempt"])]["span_id"]
    before = {s["name"] for s in standin.scores.values() if s["observationId"] == span_id}
    _rejudged(rec)
    run["metrics"]["capability"]["pass_at_1"]["value"] = None
    result = publish(run, out_dir, settings, options)

    got = {s["name"]: (s["value"], s["dataType"]) for s in standin.scores.values() if s["observationId"] == span_id}
    assert got == expected_attempt_scores(rec)
    assert got["benchmark.status"] == ("judge_error", "CATEGORICAL") and "benchmark.success" not in got
    dropped = before - set(got)
    assert {"benchmark.success", "benchmark.quality_score"} <= dropped
    exp_id = experiment_id_of(standin, standin.datasets[run["metrics"]["suite"]]["id"], run["run_id"])
    run_scores = {s["name"] for s in standin.scores.values() if s["datasetRunId"] == exp_id}
    assert "capability.pass_at_1" not in run_scores and run_scores == set(expected_run_scores(run["metrics"]))
    deletes = standin.requests_to("/api/public/scores/", "DELETE")
    assert len(deletes) == len(dropped) + 1 and {r.status for r in deletes} == {202}
    record = json.loads(result.record_path.read_text())
    assert record["stale_scores"] == {} and record["status"] == "complete"
    assert record["sessions"][-1]["sent"]["scores_deleted"] == len(dropped) + 1
    key = record["attempt_scores"][dataset_item_id(run["metrics"]["suite"], rec["task_id"], rec["attempt"])]["names"]
    assert sorted(record["score_names"][key]) == sorted(got)
    # each distinct set of names kept once, whatever number of attempts have it
    assert len({tuple(names) for names in record["score_names"].values()}) == len(record["score_names"])
    assert len({e["names"] for e in record["attempt_scores"].values()}) == len(
        {tuple(record["score_names"][e["names"]]) for e in record["attempt_scores"].values()})
    assert set(record["score_names"]) >= {e["names"] for e in record["attempt_scores"].values()}
    assert_read_apis_return_everything(standin, run)

    # nothing left to do: a third publication sends and deletes nothing
    requests = len(standin.requests)
    assert publish(run, out_dir, settings, options).http_requests == 0 and len(standin.requests) == requests


def test_an_attempt_that_left_the_run_loses_its_scores_and_gets_them_back_when_it_returns(
        standin, settings, options, run, out_dir):
    """A run processed again without one of its attempts (a re-judged file cut short): that
    attempt's scores are deleted, so that Langfuse does not show its old success beside the
    run as it is now; its experiment item stays (no public API deletes one). When the attempt
    is back, its scores are sent again."""
    publish(run, out_dir, settings, options)
    suite = run["metrics"]["suite"]
    gone = next(r for r in run["attempts"] if r["success"] is True)
    item = dataset_item_id(suite, gone["task_id"], gone["attempt"])
    span_id = item_spans(standin)[item]["span_id"]
    sent = {s["name"] for s in standin.scores.values() if s["observationId"] == span_id}
    assert "benchmark.success" in sent
    run["attempts"].remove(gone)
    result = publish(run, out_dir, settings, options)
    assert not [s for s in standin.scores.values() if s["observationId"] == span_id]
    assert item in item_spans(standin)  # the experiment item itself stays
    deletes = standin.requests_to("/api/public/scores/", "DELETE")
    assert len(deletes) == len(sent) and {r.status for r in deletes} == {202}
    record = json.loads(result.record_path.read_text())
    assert item not in record["attempt_scores"] and record["stale_scores"] == {} and record["status"] == "complete"
    assert record["sessions"][-1]["sent"]["scores_deleted"] == len(sent)
    requests = len(standin.requests)
    assert publish(run, out_dir, settings, options).http_requests == 0 and len(standin.requests) == requests

    run["attempts"].append(gone)
    publish(run, out_dir, settings, options)
    got = {s["name"]: (s["value"], s["dataType"]) for s in standin.scores.values() if s["observationId"] == span_id}
    assert got == expected_attempt_scores(gone)


def test_a_deletion_that_fails_is_kept_and_done_by_the_next_publication(standin, settings, options, run, out_dir):
    publish(run, out_dir, settings, options)
    rec = run["attempts"][0]
    _rejudged(rec)
    standin.faults.fail("/api/public/scores/", status=500, times=100, method="delete")
    with pytest.raises(PublicationError, match="deletion of scores left out"):
        publish(run, out_dir, settings, options)
    record = json.loads((out_dir / "publication.json").read_text())
    assert record["status"] == "incomplete"
    assert f"benchmark/{rec['task_id']}#attempt-{rec['attempt']} benchmark.success" in record["stale_scores"].values()
    standin.faults.clear()
    result = publish(run, out_dir, settings, options)
    record = json.loads(result.record_path.read_text())
    assert record["stale_scores"] == {} and record["status"] == "complete"
    span_id = item_spans(standin)[dataset_item_id(run["metrics"]["suite"], rec["task_id"], rec["attempt"])]["span_id"]
    got = {s["name"] for s in standin.scores.values() if s["observationId"] == span_id}
    assert got == set(expected_attempt_scores(rec))


def test_a_score_known_again_is_sent_not_deleted(standin, settings, options, run, out_dir):
    """Unknown, then known again before its deletion went through: the score is sent and its
    deletion dropped."""
    publish(run, out_dir, settings, options)
    rec = run["attempts"][0]
    kept = dict(rec)
    _rejudged(rec)
    standin.faults.fail("/api/public/scores/", status=500, times=100, method="delete")
    with pytest.raises(PublicationError):
        publish(run, out_dir, settings, options)
    standin.faults.clear()
    rec.update(kept)
    result = publish(run, out_dir, settings, options)
    record = json.loads(result.record_path.read_text())
    assert record["stale_scores"] == {} and record["status"] == "complete"
    assert not [r for r in standin.requests_to("/api/public/scores/", "DELETE") if r.status == 202]
    span_id = item_spans(standin)[dataset_item_id(run["metrics"]["suite"], rec["task_id"], rec["attempt"])]["span_id"]
    got = {s["name"]: (s["value"], s["dataType"]) for s in standin.scores.values() if s["observationId"] == span_id}
    assert got == expected_attempt_scores(rec)


# ------------------------------------------------------------------------------------ server generations


@pytest.mark.parametrize("version, created_at", [("3.172.0", True), ("3.120.0", False)])
def test_v3_run_items_carry_created_at_only_where_the_server_takes_it(run, tmp_path, version, created_at):
    with make_standin("v3", server_version=version) as server:
        result = publish(run, tmp_path / "out", settings_for(server), PublishOptions(**FAST))
        assert result.server == "v3" and result.run_items == len(run["attempts"])
        anchor = json.loads(result.record_path.read_text())["anchor"]
        (run_row,) = server.dataset_runs.values()
        if created_at:
            assert run_row["createdAt"] == anchor
        assert len(server.run_items_of(run["run_id"])) == len(run["attempts"])
        assert server.internal_errors == [] and server.unknown_requests() == []


def test_sdk5_server_without_ingestion_gets_the_score_array(run, tmp_path):
    """A server with the v4 reads and no /api/public/ingestion (what SDK 5.0.4 targets)."""
    with make_standin("sdk5") as server:
        progress = Progress()
        result = publish(run, tmp_path / "out", settings_for(server), PublishOptions(**FAST), progress=progress)
        assert result.server == "v4" and "/api/public/scores array" in progress.notes[0]
        assert [r.status for r in server.requests_to("/api/public/ingestion")] == [404]  # the probe
        assert {r.status for r in server.requests_to("/api/public/scores", "POST")} == {202}
        n = len(run["attempts"])
        assert_no_duplicates(server, n)
        assert_read_apis_return_everything(server, run)
        again = publish(run, tmp_path / "lost", settings_for(server), PublishOptions(**FAST))
        assert again.spans == 0 and len({k[0] for k in server.score_rows}) == len(server.score_rows)
        # a re-judged attempt published again: its scores that became unknown are deleted there too
        rec = next(r for r in run["attempts"] if r["success"] is True)
        _rejudged(rec)
        publish(run, tmp_path / "out", settings_for(server), PublishOptions(**FAST))
        span_id = item_spans(server)[dataset_item_id(run["metrics"]["suite"], rec["task_id"], rec["attempt"])]["span_id"]
        got = {s["name"]: (s["value"], s["dataType"]) for s in server.scores.values() if s["observationId"] == span_id}
        assert got == expected_attempt_scores(rec) and "benchmark.success" not in got
        assert {r.status for r in server.requests_to("/api/public/scores/", "DELETE")} == {202}


@pytest.mark.parametrize("absent", ["experiment-items", "otel"])
def test_a_server_without_either_path_fails_before_anything_is_written(run, tmp_path, absent):
    with make_standin("v4") as server:
        if absent == "experiment-items":  # an events_only server without the v4 opt-in
            server.faults.fail("/api/public/experiment-items", status=404, times=10)
        else:
            server.faults.fail("/api/public/otel", status=404, times=10)
        with pytest.raises(PublicationError) as err:
            publish(run, tmp_path / "out", settings_for(server), PublishOptions(**FAST))
        message = str(err.value)
        assert "neither publication path" in message and "Nothing was written" in message
        assert "Langfuse 4.16.0" in message and "3.21" in message and "Langfuse v4" in message
        if absent == "experiment-items":
            assert "GET /api/public/experiment-items" in message and "GET /api/public/scores" in message
        else:
            assert "POST /api/public/otel/v1/traces" in message
        assert (server.datasets, server.dataset_items, server.spans, server.score_rows) == ({}, {}, {}, {})
        assert not (tmp_path / "out" / "publication.json").exists()
        writes = [r for r in server.requests if r.method == "POST" and r.bytes > 30]
        assert writes == []  # only the probe's empty batch and export were posted


def test_a_404_from_the_lookup_endpoint_is_not_a_missing_trace(standin, settings, options, run, out_dir):
    rec = run["attempts"][0]
    rec["evidence"].update(episode_id="ep-x", trace_id="e5" * 16)
    run["attempts"] = [rec]
    standin.add_trace("e5" * 16, ROOT_SPAN)
    standin.faults.fail(lookup_path(standin), status=404, times=1)
    with pytest.raises(PublicationError, match="the look-up endpoint is absent"):
        publish(run, out_dir, settings, options)
    assert item_spans(standin) == {} and standin.spans == {}  # not published under a replay trace
    publish(run, out_dir, settings, options)
    (span,) = item_spans(standin).values()
    assert (span["trace_id"], output_of(span)["execution_trace_status"]) == ("e5" * 16, "available")


# ------------------------------------------------------------------------------------ never erase


def suite_runs(run, n=3):
    """n runs of one suite (the same tasks and attempts), started a day apart."""
    out = []
    for i in range(n):
        r = json.loads(json.dumps(run))
        r["run_id"] = f"{run['run_id']}-r{i + 1}"
        r["manifest"]["run_id"] = r["run_id"]
        r["manifest"]["started_at"] = f"2026-11-{10 + i:02d}T10:00:00Z"
        for a in r["attempts"]:
            a["run_id"] = r["run_id"]
        out.append(r)
    return out


def items_of(standin):
    return {k: (v["input"], v["expectedOutput"], v["metadata"]) for k, v in standin.dataset_items.items()}


def test_a_run_that_lacks_a_task_never_erases_its_prompt(standin, settings, options, run, tmp_path):
    first, second, third = suite_runs(run)
    missing = first["suite_def"]["tasks"][0]["id"]
    third["suite_def"]["tasks"] = [t for t in third["suite_def"]["tasks"] if t["id"] != missing]
    for r in (first, second):
        publish(r, tmp_path / r["run_id"], settings, options)
    before = items_of(standin)
    result = publish(third, tmp_path / third["run_id"], settings, options)
    assert result.items == 0 and items_of(standin) == before  # nothing rewritten with less
    suite = run["metrics"]["suite"]
    prompt = first["suite_def"]["tasks"][0]["prompt"]
    for rec in third["attempts"]:
        if rec["task_id"] == missing:
            item = standin.dataset_items[dataset_item_id(suite, missing, rec["attempt"])]
            assert item["input"]["prompt"] == prompt and item["metadata"]["in_suite_definition"] is True
            span = item_spans(standin, third["run_id"])[item["id"]]
            assert json.loads(span["attributes"]["langfuse.observation.input"])["prompt"] is None  # what run 3 knew
    assert_no_duplicates(standin, len(run["attempts"]), runs=3)


def test_a_task_first_seen_without_its_definition_is_filled_in_later(standin, settings, options, run, tmp_path):
    first, second = suite_runs(run, 2)
    missing = first["suite_def"]["tasks"][0]["id"]
    first["suite_def"]["tasks"] = first["suite_def"]["tasks"][1:]
    publish(first, tmp_path / "one", settings, options)
    suite = run["metrics"]["suite"]
    ids = [dataset_item_id(suite, r["task_id"], r["attempt"]) for r in first["attempts"] if r["task_id"] == missing]
    assert ids and all(standin.dataset_items[i]["input"]["prompt"] is None for i in ids)
    result = publish(second, tmp_path / "two", settings, options)
    assert result.items == len(ids)  # only the items that gained their definition
    for i in ids:
        item = standin.dataset_items[i]
        assert item["input"]["prompt"] == second["suite_def"]["tasks"][0]["prompt"]
        assert item["metadata"]["definition_source"]["run_id"] == second["run_id"]


@pytest.mark.parametrize("order", ["in order", "newer run first"])
def test_a_changed_task_keeps_every_definition(standin, settings, options, run, tmp_path, order):
    older, newer = suite_runs(run, 2)
    task = newer["suite_def"]["tasks"][0]
    old_prompt, task["prompt"] = task["prompt"], "A reworded prompt."
    newer["suite_def"]["version"] = "8"
    for r in ([older, newer] if order == "in order" else [newer, older]):
        publish(r, tmp_path / r["run_id"], settings, options)
    suite = run["metrics"]["suite"]
    for rec in run["attempts"]:
        if rec["task_id"] != task["id"]:
            continue
        item = standin.dataset_items[dataset_item_id(suite, task["id"], rec["attempt"])]
        assert item["input"]["prompt"] == "A reworded prompt."  # the run that started later wins
        assert item["metadata"]["definition_source"]["run_id"] == newer["run_id"]
        assert item["metadata"]["suite_version"] == "8"
        (old,) = item["metadata"]["definition_history"]
        assert (old["prompt"], old["run_id"]) == (old_prompt, older["run_id"])
        # each experiment item keeps the definition its run used
        for r, prompt in ((older, old_prompt), (newer, "A reworded prompt.")):
            span = item_spans(standin, r["run_id"])[item["id"]]
            assert json.loads(span["attributes"]["langfuse.observation.input"])["prompt"] == prompt
    again = publish(older, tmp_path / "older-again", settings, options)
    assert again.items == 0  # republishing the older run changes nothing
    assert_no_duplicates(standin, len(run["attempts"]), runs=2)


def test_two_publications_of_one_suite_at_once_end_as_if_one_after_the_other(mode, run, tmp_path, monkeypatch):
    """The second of two simultaneous publications of a suite waits for the first (suite_lock),
    so neither merges its items into a state the other is about to overwrite: the server ends
    as after publishing them in order (a changed task keeps both definitions)."""
    monkeypatch.setenv("BENCH_LOCK_DIR", str(tmp_path / "locks"))
    older, newer = suite_runs(run, 2)
    newer["suite_def"]["tasks"][0]["prompt"] = "A reworded prompt."
    with make_standin(mode) as server:
        settings = settings_for(server)
        publish(older, tmp_path / "seq-older", settings, PublishOptions(**FAST))
        publish(newer, tmp_path / "seq-newer", settings, PublishOptions(**FAST))
        in_order = snapshot(server)
    with make_standin(mode) as server:
        settings = settings_for(server)
        server.faults.delay("/api/public/dataset-items", 0.4, method="POST")  # the first holds the lock a while
        progress = Progress()
        errors: list[BaseException] = []

        def run_one(r, **kw):
            try:
                publish(r, tmp_path / f"par-{r['run_id']}", settings, PublishOptions(**FAST), **kw)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        first = threading.Thread(target=run_one, args=(older,))
        first.start()
        deadline = time.monotonic() + 10
        while not server.requests_to("/api/public/dataset-items", "POST") and time.monotonic() < deadline:
            time.sleep(0.01)
        second = threading.Thread(target=run_one, args=(newer,), kwargs={"progress": progress})
        second.start()
        first.join(30)
        second.join(30)
        assert errors == []
        assert any("waiting for another publication" in text for text in progress.notes)
        order = [(r.method, r.path) for r in server.requests]
        item_lists = [i for i, (meth, path) in enumerate(order) if meth == "GET" and path == "/api/public/dataset-items"]
        assert len(item_lists) == 2 and item_lists[1] > item_lists[0]
        first_run_posts = [i for i in range(item_lists[1]) if order[i] == ("POST", "/api/public/dataset-items")]
        assert len(first_run_posts) == len(run["attempts"])  # every write of the first before the second read
        assert snapshot(server) == in_order


def test_the_dataset_keeps_its_description_and_metadata(standin, settings, options, run, out_dir):
    suite = run["metrics"]["suite"]
    with httpx.Client(base_url=standin.base_url, auth=(standin.public_key, SECRET)) as c:
        c.post("/api/public/v2/datasets", json={"name": suite, "description": "curated by the QA team",
                                                "metadata": {"owner": "qa", "suite": suite}}).raise_for_status()
    publish(run, out_dir, settings, options)
    ds = standin.datasets[suite]
    assert ds["description"] == "curated by the QA team"
    assert ds["metadata"] == {"owner": "qa", "suite": suite, "source": "bench_pipeline"}
    updated = ds["updatedAt"]
    publish(run, out_dir.parent / "again", settings, options)
    assert standin.datasets[suite]["updatedAt"] == updated  # nothing lacks: not written again


def test_three_runs_republished_then_under_faults_and_retried(standin, settings, options, run, tmp_path, mode):
    """The issue's "done when": three runs of one suite (the third lacking a task) in order,
    republished without their records, then each again under injected faults and retried."""
    runs = suite_runs(run)
    missing = runs[0]["suite_def"]["tasks"][0]["id"]
    runs[2]["suite_def"]["tasks"] = runs[2]["suite_def"]["tasks"][1:]
    for r in runs:
        publish(r, tmp_path / r["run_id"], settings, options)
    state = snapshot(standin)
    for r in runs:  # records lost
        publish(r, tmp_path / f"{r['run_id']}-b", settings, options)
    assert snapshot(standin) == state
    for r in runs:  # faults on every write path, then a retry
        standin.faults.fail("/api/public/dataset-items", status=503, times=1, method="POST")
        standin.faults.drop("/api/public/otel", after_processing=True, **PAST_PROBE)
        standin.faults.drop("/api/public/ingestion", after_processing=True, **PAST_PROBE)
        standin.faults.fail(lookup_path(standin), status=500, times=1)
        if mode == "v3":
            standin.faults.drop("/api/public/dataset-run-items", method="POST", after_processing=True)
        changed = json.loads(json.dumps(r))
        changed["attempts"][0]["quality_score"] = 0.25  # something to send
        folder = tmp_path / f"{r['run_id']}-c"
        try:
            publish(changed, folder, settings, options)
        except PublicationError:
            pass
        standin.faults.clear()
        publish(changed, folder, settings, options)
    suite = run["metrics"]["suite"]
    prompts = {t["id"]: t["prompt"] for t in run["suite_def"]["tasks"]}
    for item in standin.dataset_items.values():
        assert item["input"]["prompt"] == prompts[item["input"]["task_id"]]  # every item has its prompt
    assert {k: items_of(standin)[k] for k in state["items"]} == {k: v[1:4] for k, v in state["items"].items()}
    assert_no_duplicates(standin, len(run["attempts"]), runs=3, receipts=False)
    for r in runs:
        final = json.loads(json.dumps(r))
        final["attempts"][0]["quality_score"] = 0.25
        assert_read_apis_return_everything(standin, final)
    assert missing in {i["input"]["task_id"] for i in standin.dataset_items.values()}
    assert len(standin.datasets) == 1 and len(standin.dataset_items) == len(run["attempts"])
    per_run = experiment_items_per_run(standin)
    assert sorted(per_run) == sorted(r["run_id"] for r in runs)
    assert suite == list(standin.datasets)[0]


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
    s_avail, s_pend, s_none = (spans[dataset_item_id(suite, r["task_id"], r["attempt"])] for r in attempts)

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

    # item scores sit on the experiment item wherever it lives, and are read with it
    scored = {(s["traceId"], s["observationId"]) for s in standin.scores.values() if s["observationId"]}
    assert scored == {(s["trace_id"], s["span_id"]) for s in (s_avail, s_pend, s_none)}
    assert_read_apis_return_everything(standin, run)


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
        assert result.spans == 0 and result.run_items == 0
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


PREFIXES = ["/api/public/ingestion", "/api/public/otel", "/api/public/dataset-items", "lookup",
            "/api/public/v2/datasets", "/api/public/dataset-run-items"]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_persistent_500_fails_clearly_then_retry_completes(standin, settings, options, run, out_dir, clean_state,
                                                           prefix, mode):
    if prefix == "/api/public/dataset-run-items" and mode != "v3":
        # v4 (events mode) makes experiments from span attributes: the endpoint is never
        # called, so a broken one cannot fail the publication.
        standin.faults.fail(prefix, status=500, times=1000)
        assert publish(run, out_dir, settings, options).status == "published"
        return
    prefix = lookup_path(standin) if prefix == "lookup" else prefix
    spare = PAST_PROBE if prefix in ("/api/public/ingestion", "/api/public/otel") else {}
    standin.faults.fail(prefix, status=500, times=1000, **spare)  # the service stays broken for this call
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
    if prefix == "/api/public/ingestion":  # only what was missing went out again
        assert result.spans == 0 and result.items == 0 and result.run_items == 0


def test_transient_500_and_429_are_retried_within_one_call(standin, settings, options, run, out_dir, clean_state):
    standin.faults.fail("/api/public/ingestion", status=500, times=1, **PAST_PROBE)
    standin.faults.rate_limit("/api/public/ingestion", times=1, retry_after=0, **PAST_PROBE)
    standin.faults.rate_limit("/api/public/otel", times=1, retry_after=1, **PAST_PROBE)
    standin.faults.fail("/api/public/dataset-items", status=503, times=2)
    standin.faults.fail("/api/public/projects", status=502, times=1)
    if legacy(standin):
        standin.faults.rate_limit("/api/public/dataset-run-items", times=2, retry_after=0, method="POST")
    result = publish(run, out_dir, settings, options)
    assert result.status == "published"
    assert snapshot(standin) == clean_state
    assert_no_duplicates(standin, len(run["attempts"]))
    assert [r.status for r in standin.requests_to("/api/public/ingestion")][:4] == [207, 500, 429, 207]


def test_dropped_span_batch_that_was_stored_is_not_resent(standin, settings, options, run, out_dir, clean_state):
    standin.faults.drop("/api/public/otel", after_processing=True, **PAST_PROBE)
    result = publish(run, out_dir, settings, options)  # read back, found, confirmed without a resend
    assert result.status == "published"
    assert len(standin.requests_to("/api/public/otel")) == 2  # probe + the dropped batch
    assert snapshot(standin) == clean_state
    assert_no_duplicates(standin, len(run["attempts"]))


def test_dropped_span_batch_that_was_lost_is_resent(standin, settings, options, run, out_dir, clean_state):
    standin.faults.drop("/api/public/otel", times=options.retries, **PAST_PROBE)  # the last round gets through
    result = publish(run, out_dir, settings, options)
    assert result.status == "published"
    assert snapshot(standin) == clean_state
    assert_no_duplicates(standin, len(run["attempts"]))


def test_unanswered_spans_everywhere_fail_then_retry_resolves(standin, settings, options, run, out_dir, clean_state):
    # every span request is stored but never answered: nothing can be confirmed in this call
    standin.faults.drop("/api/public/otel", times=100, after_processing=True, **PAST_PROBE)
    standin.faults.fail(lookup_path(standin), status=500, times=100)
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
    standin.faults.drop("/api/public/ingestion", after_processing=True, **PAST_PROBE)  # stored, answer lost: resent
    standin.faults.drop("/api/public/dataset-items", method="POST", times=2)
    result = publish(run, out_dir, settings, small)
    assert result.status == "published"
    assert len(standin.requests_to("/api/public/otel")) >= 3
    assert snapshot(standin) == clean_state
    assert_no_duplicates(standin, len(run["attempts"]))


@pytest.mark.parametrize("after_processing", [True, False], ids=["stored", "lost"])
def test_v3_unanswered_run_item_is_read_back_never_reposted_blindly(run, tmp_path, after_processing):
    with make_standin("v3") as server:
        settings = settings_for(server)
        options = PublishOptions(**FAST)
        server.faults.drop("/api/public/dataset-run-items", method="POST", times=2, after_processing=after_processing)
        server.faults.fail("/api/public/dataset-run-items", method="POST", status=500, times=1)
        with pytest.raises(PublicationError, match="dataset run items"):
            publish(run, tmp_path / "out", settings, options)
        posts = len(server.requests_to("/api/public/dataset-run-items", "POST"))
        assert posts == len(run["attempts"])  # nothing re-sent in the call that got no answer
        record = json.loads((tmp_path / "out" / "publication.json").read_text())
        assert sorted(b["run_item"] for b in record["bindings"].values()).count("in_doubt") == 3
        result = publish(run, tmp_path / "out", settings, options)  # reads the run back first
        assert result.status == "published"
        assert result.run_items == (1 if after_processing else 3)  # the 500 one was not stored; dropped ones were
        assert_no_duplicates(server, len(run["attempts"]))


def test_v3_run_item_in_doubt_is_read_back_only_once_the_server_could_have_stored_it(run, tmp_path):
    """The v3 server queues a dataset run item before storing it (the stand-in: ``run_item_lag``):
    a read-back right after an unanswered POST misses it. The next call waits until
    ``readback_delay`` has passed since the item was sent, so it finds the item and sends none
    again; read back at once (no delay), the same state adds a duplicate."""
    lag = 1.5  # long enough that the immediate read-back below is sure to come before it
    outcomes = {}
    for delay in (2.0, 0.0):
        with make_standin("v3", run_item_lag=lag) as server:
            settings = settings_for(server)
            options = PublishOptions(**{**FAST, "readback_delay": delay})
            server.faults.drop("/api/public/dataset-run-items", method="POST", times=1, after_processing=True)
            with pytest.raises(PublicationError, match="dataset run items"):
                publish(run, tmp_path / f"out-{delay}", settings, options)
            progress = Progress()
            started = time.monotonic()
            result = publish(run, tmp_path / f"out-{delay}", settings, options, progress=progress)
            outcomes[delay] = (time.monotonic() - started, result.run_items, len(server.run_items_of(run["run_id"])), progress.notes)
    waited, resent, stored, said = outcomes[2.0]
    assert resent == 0 and stored == len(run["attempts"])  # found, not posted twice
    assert waited >= 1.0 and any("waiting" in text and "1 dataset run item(s)" in text for text in said)
    _, resent, stored, said = outcomes[0.0]
    assert resent == 1 and stored == len(run["attempts"]) + 1  # too soon: missed, posted again
    assert not any("waiting" in text for text in said)


def test_slow_server_within_and_beyond_the_timeout(standin, settings, run, out_dir, clean_state):
    quick = PublishOptions(**{**FAST, "timeout": 0.5})
    standin.faults.delay("/api/public/ingestion", seconds=0.2, **PAST_PROBE)  # slower, still answered
    standin.faults.delay("/api/public/otel", seconds=1.0, **PAST_PROBE)  # times out; lands later anyway
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
    standin.faults.fail(lookup_path(standin), status=500, times=options.retries + 1)
    with pytest.raises(PublicationError, match="execution trace look-ups"):
        publish(run, out_dir, settings, options)
    assert item_spans(standin) == {}  # not published under a guessed replay trace
    publish(run, out_dir, settings, options)
    (span,) = item_spans(standin).values()
    assert (span["trace_id"], output_of(span)["execution_trace_status"]) == ("e5" * 16, "available")


def test_bad_credentials_fail_without_leaking(standin, run, out_dir, options):
    wrong = LangfuseSettings(standin.base_url, standin.public_key, "sk-lf-wrong-secret")
    with pytest.raises(PublicationError) as err:
        publish(run, out_dir, wrong, options)
    assert "401" in str(err.value) and "sk-lf-wrong-secret" not in str(err.value)
    assert len(standin.requests) == 1  # a 401 is not retried
    # one request failed, not one per attempt: the message says so
    assert "project lookup (GET /api/public/projects) failed (HTTP 401" in str(err.value)
    assert "and nothing after it was sent" in str(err.value) and " failed (HTTP 401" in str(err.value)
    assert f": {len(run['attempts'])} failed" not in str(err.value)
    assert "sk-lf-wrong-secret" not in (out_dir / "publication.json").read_text()


# ------------------------------------------------------------------------------------ configuration


# ------------------------------------------------------------------------------------ CLI and scale


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
    bulk = [r for r in standin.requests_to("/api/public/otel") + standin.requests_to("/api/public/ingestion")
            if r.bytes > 30]  # the probe's empty requests aside
    assert len(bulk) <= math.ceil(n / 50)
    assert len(standin.requests_to("/api/public/dataset-items", "POST")) == n
    assert len(standin.requests_to(lookup_path(standin))) <= math.ceil(n / 100) + 1  # batched look-ups
    if legacy(standin):
        assert len(standin.requests_to("/api/public/dataset-run-items", "POST")) == n
    assert len(item_spans(standin)) == n
    available = sum(1 for s in item_spans(standin).values() if output_of(s)["execution_trace_status"] == "available")
    assert available == seeded
    assert result.http_requests == len(standin.requests)


def test_second_run_of_the_same_suite_reuses_the_items(standin, settings, options, run, tmp_path):
    first = publish(run, tmp_path / "one", settings, options)
    items = {k: dict(v) for k, v in standin.dataset_items.items()}
    other = {**run, "run_id": run["run_id"] + "-rerun"}
    second = publish(other, tmp_path / "two", settings, options)
    assert second.items == 0 and standin.dataset_items == items  # unchanged items are not rewritten
    assert second.experiment_id != first.experiment_id and list(standin.datasets) == [run["metrics"]["suite"]]
    per_experiment = experiment_items_per_run(standin)
    assert set(per_experiment) == {run["run_id"], other["run_id"]}
    assert per_experiment[run["run_id"]] == per_experiment[other["run_id"]] == set(items)


def test_long_task_ids_get_hashed_item_ids(standin, settings, options, run, out_dir):
    for rec in run["attempts"]:
        rec["task_id"] = rec["task_id"] + ":" + "x" * 300
    publish(run, out_dir, settings, options)
    assert len(standin.dataset_items) == len(run["attempts"])
    assert all(len(i) <= 255 and i.startswith("bench-item-") for i in standin.dataset_items)
    assert len(item_spans(standin)) == len(run["attempts"])


@pytest.mark.parametrize("lookup_batch", [100, 1], ids=["one read-back request", "one per trace"])
def test_killed_after_sending_spans_is_resolved_by_reading_back(standin, settings, run, out_dir, clean_state,
                                                                monkeypatch, lookup_batch):
    from bench_pipeline.publication import publisher
    from bench_pipeline.publication.steps import score_delivery

    options = PublishOptions(**{**FAST, "lookup_batch": lookup_batch})

    def killed(pub, *args):
        raise KeyboardInterrupt

    monkeypatch.setattr(score_delivery, "send_attempt_scores", killed)
    monkeypatch.setattr(publisher, "finish_record", lambda pub: None)  # no final save
    with pytest.raises(KeyboardInterrupt):
        publish(run, out_dir, settings, options)
    monkeypatch.undo()
    record = json.loads((out_dir / "publication.json").read_text())
    assert {b["state"] for b in record["bindings"].values()} == {"in_doubt"}  # saved before sending
    if legacy(standin):
        assert {b["run_item"] for b in record["bindings"].values()} == {"in_doubt"}
    receipts = dict(standin.span_receipts)
    assert len(item_spans(standin)) == len(run["attempts"])

    result, _ = _finish_after_failure(standin, settings, options, run, out_dir, clean_state)
    assert result.spans == 0 and result.run_items == 0 and dict(standin.span_receipts) == receipts


def test_record_lost_keeps_the_anchor_time(standin, settings, options, run, tmp_path):
    run["manifest"] = {k: v for k, v in run["manifest"].items() if k not in ("started_at", "finished_at")}
    for rec in run["attempts"]:
        rec["evidence"]["started_at"] = rec["evidence"]["finished_at"] = None
    publish(run, tmp_path / "one", settings, options)
    rows = {k: v["timestamp"] for k, v in standin.score_rows.items()}
    assert len(set(rows.values())) == 1  # the first publication's time, fixed
    publish(run, tmp_path / "two", settings, options)  # record lost: the anchor is read back
    assert {k: v["timestamp"] for k, v in standin.score_rows.items()} == rows
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


def test_a_publication_lock_that_cannot_be_made_fails_before_anything_is_sent(run, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("BENCH_LOCK_DIR", str(blocker / "locks"))
    with make_standin("v4") as server:
        with pytest.raises(PublicationError, match="cannot make the publication lock .*BENCH_LOCK_DIR"):
            publish(run, tmp_path / "out", settings_for(server), PublishOptions(**FAST))
        assert server.dataset_items == {} and server.spans == {}
        assert not (tmp_path / "out" / "publication.json").exists()


def test_a_rate_limited_server_is_waited_out_not_given_up_on(mode, run, tmp_path):
    """Langfuse Cloud limits the dataset endpoints (hobby: 100 requests a minute, a fixed window
    per organisation, 429 with Retry-After): the item writes (and v3 run items) wait for the
    window together and all get through; a 429 neither uses up the retries nor trips the
    give-up-after breaker (here more 429s than give_up_after: a low threshold, so that this holds
    however fast the machine sends, which decides how many requests a window refuses)."""
    with make_standin(mode, dataset_rate_limit=(3, 1.0)) as server:
        options = PublishOptions(**{**FAST, "max_retry_after": 2.0, "give_up_after": 2})
        result = publish(run, tmp_path / "out", settings_for(server), options)
        assert result.status == "published" and result.items == len(run["attempts"])
        assert len(server.dataset_items) == len(run["attempts"])
        refused = [r for r in server.requests if r.status == 429]
        assert len(refused) > options.give_up_after
        assert all(r.path.startswith(("/api/public/dataset", "/api/public/v2/datasets")) for r in refused)
        session = json.loads((tmp_path / "out" / "publication.json").read_text())["sessions"][-1]
        assert session["rate_limited"] == len(refused) and session["outcome"] == "complete"
        if mode == "v3":
            assert len(server.run_items_of(run["run_id"])) == len(run["attempts"])
        assert_no_duplicates(server, len(run["attempts"]))


def test_a_run_item_in_doubt_since_an_unknown_time_waits_from_the_new_call(run, tmp_path):
    """A call killed after sending leaves run items ``in_doubt`` without the time they were
    sent (the record was saved before sending): the next call counts the read-back delay from
    its own start, then finds the item and sends it again not."""
    with make_standin("v3") as server:
        settings = settings_for(server)
        publish(run, tmp_path / "out", settings, PublishOptions(**FAST))
        path = tmp_path / "out" / "publication.json"
        record = json.loads(path.read_text())
        item_id, binding = next(iter(record["bindings"].items()))
        binding["run_item"] = "in_doubt"  # as a save before sending leaves it
        binding.pop("run_item_doubt_at", None)
        record["status"] = "incomplete"
        path.write_text(json.dumps(record))
        progress = Progress()
        started = time.monotonic()
        result = publish(run, tmp_path / "out", settings, PublishOptions(**{**FAST, "readback_delay": 0.6}),
                         progress=progress)
        assert time.monotonic() - started >= 0.55
        assert any("before reading back 1 dataset run item(s)" in text for text in progress.notes)
        assert result.run_items == 0 and len(server.run_items_of(run["run_id"])) == len(run["attempts"])
        after = json.loads(path.read_text())["bindings"][item_id]
        assert after["run_item"] == "confirmed" and "run_item_doubt_at" not in after


def test_a_rate_limited_deletion_is_left_for_later_without_waiting(mode, run, tmp_path):
    """Langfuse Cloud counts score deletions per day: a 429 there is not waited for (a day's
    window would hold the run), the deletions stay in the record and the next call does them."""
    with make_standin(mode) as standin:
        settings = settings_for(standin)
        options = PublishOptions(**FAST)
        publish(run, tmp_path, settings, options)
        _rejudged(run["attempts"][0])
        standin.faults.rate_limit("/api/public/scores/", retry_after=86400, times=100, method="delete")
        started = time.monotonic()
        with pytest.raises(PublicationError, match="HTTP 429"):
            publish(run, tmp_path, settings, options)
        assert time.monotonic() - started < 10
        assert len(standin.requests_to("/api/public/scores/", "DELETE")) == 1
        assert json.loads((tmp_path / "publication.json").read_text())["stale_scores"]
        standin.faults.clear()
        publish(run, tmp_path, settings, options)
        assert json.loads((tmp_path / "publication.json").read_text())["stale_scores"] == {}
