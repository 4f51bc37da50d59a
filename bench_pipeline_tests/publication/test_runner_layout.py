"""A run in the runner's layout (run-directory.md "The runner's layout"), built by hand
(``runner_runs``), through ``pipeline.run_stages(..., keep_evidence=True)`` and
``pipeline.publish`` into the Langfuse stand-in of each server generation (``mode``): the
exact Dataset Items, experiment items (episode links, trace.json's calls and final
response), scores and experiment metadata, and the same items and scores as the same run
written in the flat layout."""

from __future__ import annotations

import json

import pytest

from bench_pipeline import pipeline
from bench_pipeline.metrics_files import attempt_record
from bench_pipeline.publication.ids import dataset_item_id, replay_root_span_id, replay_trace_id

from . import runner_runs as rr
from .server_state import item_spans, legacy, output_of, snapshot
from .test_publisher import assert_read_apis_return_everything, expected_attempt_scores
from bench_pipeline_tests.support.publication_standin import ROOT_SPAN, make_standin, settings_for

ITEMS = {key: dataset_item_id(rr.SUITE, *key) for key in rr.PLANNED}


@pytest.fixture(scope="module")
def processed(tmp_path_factory) -> dict[str, pipeline.ProcessedRun]:
    """The runner's and the flat folder of the one run, each processed once (output files
    written, evidence kept for the publication)."""
    root = tmp_path_factory.mktemp("layouts")
    out = {}
    for layout, write in (("runner", rr.write_runner_run), ("flat", rr.write_flat_run)):
        run_dir = write(root / layout)
        out[layout] = pipeline.run_stages(run_dir, root / f"out-{layout}", keep_evidence=True).processed
    return out


def publish(processed_run, out_dir, server):
    server.add_trace(rr.SEEDED_TRACE, ROOT_SPAN, name="agent-run")  # the Agent's own trace of one attempt
    return pipeline.publish(processed_run, out_dir, settings_for(server))


def experiment_facts(server, spans: dict) -> dict:
    """The experiment's metadata: v3 the dataset run's, v4 the experiment items' attribute."""
    if legacy(server):
        (run_row,) = server.dataset_runs.values()
        return run_row["metadata"]
    (facts,) = {s["attributes"]["langfuse.experiment.metadata"] for s in spans.values()}
    return json.loads(facts)


def item_of(key) -> dict:
    """The Dataset Item the suite's task defines, written out from runner_runs.TASKS."""
    task, n = key
    _, category, prompt, rubric, answer, memory, _ = next(t for t in rr.TASKS if t[0] == task)
    spec = [{"id": rid, "requirement": text} for rid, text in rubric]
    source = {"run_id": rr.RUN_ID, "run_started_at": "2026-09-21T06:35:28.000Z", "suite_version": rr.SUITE_SHA256}
    return {
        "datasetName": rr.SUITE,
        "input": {"prompt": prompt, "task_id": task, "attempt": n},
        "expectedOutput": {"expected_answer": answer, "rubric_spec": spec},
        "metadata": {"suite": rr.SUITE, "suite_version": rr.SUITE_SHA256, "task_id": task, "attempt": n,
                     "category": category, "rubric_spec": spec, "expected_memory_ids": memory,
                     "in_suite_definition": True, "definition_source": {**source, "in_suite_definition": True},
                     "source": "bench_pipeline"},
        "status": "ACTIVE",
    }


def test_runner_layout_run_publishes_exact_objects(standin, processed, tmp_path, mode):
    run = processed["runner"]
    records = {(r["task_id"], r["attempt"]): r for r in map(attempt_record, run.attempts)}
    assert set(records) == set(rr.PLANNED)
    result = publish(run, tmp_path / "out", standin)
    assert result.status == "published" and result.dataset == rr.SUITE
    assert (result.items, result.skipped_existing) == (4, 0)

    # Dataset Items: the suite task's prompt, expected answer, rubric requirements (from
    # `check`) and expected memory ids (from expected_recalled_memory_ids); the suite version
    # is the manifest's suite_sha256
    assert list(standin.datasets) == [rr.SUITE]
    assert set(standin.dataset_items) == set(ITEMS.values())
    for key, item_id in ITEMS.items():
        got = standin.dataset_items[item_id]
        assert {k: got[k] for k in ("datasetName", "input", "expectedOutput", "metadata", "status")} == item_of(key)

    # experiment items: where each lives, the episode link, trace.json's calls and answer
    base = standin.base_url
    spans = item_spans(standin)
    assert set(spans) == set(ITEMS.values())
    expected_links = {
        # (span trace, parent, status, episode id, Agent trace id, trace URL)
        ("find_item_011", 1): ("replay", "pending_or_missing", "ep-find-1", rr.PENDING_TRACE),
        ("find_item_011", 2): ("execution", "available", "ep-find-2", rr.SEEDED_TRACE),
        ("open_settings", 1): ("replay", "no_episode", None, None),
        ("recall_note", 1): ("replay", "pending_or_missing", "ep-recall", None),
    }
    trace_paths = {("find_item_011", 1): "tasks/find_item_011/attempt_1/trace.json",
                   ("find_item_011", 2): "tasks/find_item_011/attempt_2/trace.json",
                   ("open_settings", 1): "tasks/open_settings/trace.json", ("recall_note", 1): None}
    for key, (where, status, episode, agent_trace) in expected_links.items():
        item_id = ITEMS[key]
        span = spans[item_id]
        assert span["name"] == f"benchmark/{key[0]}#attempt-{key[1]}"
        if where == "execution":
            assert (span["trace_id"], span["parent_span_id"]) == (rr.SEEDED_TRACE, ROOT_SPAN)
        else:
            assert span["trace_id"] == replay_trace_id(rr.SUITE, rr.RUN_ID, item_id)
            assert span["parent_span_id"] == replay_root_span_id(rr.SUITE, rr.RUN_ID, item_id)
            assert standin.spans[(span["trace_id"], span["parent_span_id"])]["name"] == "benchmark-replay"
        calls = rr.CALLS[key]
        assert output_of(span) == {
            "final_response": rr.FINAL[key],
            "tool_calls": None if calls is None else [{"name": tool, "arguments": args} for tool, args in calls],
            "trace_artifact": {"status": "missing" if calls is None else "available", "path": trace_paths[key]},
            "aiden_episode_id": episode,
            "aiden_trace_id": agent_trace,
            "aiden_trace_url": f"{base}/project/proj-test/traces/{agent_trace}" if agent_trace else None,
            "execution_trace_status": status,
        }
        assert json.loads(span["attributes"]["langfuse.observation.input"]) == item_of(key)["input"]
        if legacy(standin):  # the dataset run item is the link
            (row,) = [r for r in standin.dataset_run_items if r["datasetItemId"] == item_id]
            assert (row["traceId"], row["observationId"]) == (span["trace_id"], span["span_id"])
        else:
            a = span["attributes"]
            assert json.loads(a["langfuse.experiment.item.expected_output"]) == item_of(key)["expectedOutput"]
            assert json.loads(a["langfuse.experiment.item.metadata"]) == item_of(key)["metadata"]
            assert a["langfuse.experiment.item.id"] == item_id and a["langfuse.experiment.name"] == rr.RUN_ID

    # scores: the outcome fields the runner keeps inside `metrics`, on each experiment item
    def scores_of(key):
        span = spans[ITEMS[key]]
        return {s["name"]: (s["value"], s["dataType"]) for s in standin.scores.values()
                if s["observationId"] == span["span_id"] and s["traceId"] == span["trace_id"]}

    for key, rec in records.items():
        assert scores_of(key) == expected_attempt_scores(rec)
    failed = scores_of(("find_item_011", 1))
    assert {k: failed[k] for k in ("benchmark.status", "benchmark.success", "benchmark.agent_eligible",
                                   "benchmark.failure_class", "benchmark.first_failure_stage",
                                   "benchmark.quality_score", "benchmark.rubric_pass_rate",
                                   "benchmark.expected_answer_match", "benchmark.recovery_attempted",
                                   "benchmark.recovery_succeeded", "benchmark.task_wall_ms",
                                   "benchmark.cost_usd")} == {
        "benchmark.status": ("failed", "CATEGORICAL"), "benchmark.success": (0.0, "BOOLEAN"),
        "benchmark.agent_eligible": (1.0, "BOOLEAN"), "benchmark.failure_class": ("agent", "CATEGORICAL"),
        "benchmark.first_failure_stage": ("action_selection", "CATEGORICAL"),
        "benchmark.quality_score": (0.5, "NUMERIC"), "benchmark.rubric_pass_rate": (0.5, "NUMERIC"),
        "benchmark.expected_answer_match": (0.0, "BOOLEAN"), "benchmark.recovery_attempted": (1.0, "BOOLEAN"),
        "benchmark.recovery_succeeded": (0.0, "BOOLEAN"), "benchmark.task_wall_ms": (31013.0, "NUMERIC"),
        "benchmark.cost_usd": (0.0123, "NUMERIC"),
    }
    recall = scores_of(("recall_note", 1))
    assert recall["benchmark.expected_recalled_memory_match"] == (0.0, "BOOLEAN")
    assert recall["benchmark.first_failure_stage"] == ("final_response", "CATEGORICAL")
    assert scores_of(("open_settings", 1))["benchmark.success"] == (1.0, "BOOLEAN")
    assert_read_apis_return_everything(standin, {"run_id": rr.RUN_ID, "metrics": run.metrics,
                                                 "attempts": list(records.values())})

    # the experiment's metadata: the runner's manifest through its flat keys and its own
    # descriptive keys, never the judge's key
    assert experiment_facts(standin, spans) == {
        "run_id": rr.RUN_ID, "started_at": rr.STARTED_AT, "finished_at": rr.FINISHED_AT,
        "code": {"git_sha": "4f2c9e1", "dirty": True}, "suite": {"name": rr.SUITE, "version": rr.SUITE_SHA256},
        "model": {"name": "agent-model-large"}, "judge": {"enabled": True, "model": "judge-model"},
        "platform": {"device": None, "os": "android-15"}, "active_skills": ["catalogue", "memory"],
        "judge_config": {"provider": "example", "model": "judge-model", "base_url": "https://judge.example/v1"},
        "judge_prompt_version": "judge-v3", "mock_environment": False, "suite_path": "suites/android-core.json",
        "planned_tasks": 3, "planned_attempts": 4,
        "formula_version": run.metrics["formula_version"], "metrics_schema_version": run.metrics["schema_version"],
        "publisher": "bench_pipeline.publication",
    }
    stored = repr(snapshot(standin))
    for secret in (rr.JUDGE_KEY, "s3cret-pass", "tok-should-not-leak"):
        assert secret not in stored


def test_the_flat_layout_of_the_same_run_publishes_the_same_items_and_scores(processed, tmp_path, mode):
    runner, flat = processed["runner"], processed["flat"]
    assert runner.metrics["capability"] == flat.metrics["capability"]
    states, outputs, facts = {}, {}, {}
    for layout, run in (("runner", runner), ("flat", flat)):
        with make_standin(mode) as server:
            result = publish(run, tmp_path / layout, server)
            assert result.status == "published" and result.items == 4
            states[layout] = snapshot(server)
            spans = item_spans(server)
            outputs[layout] = {item: json.loads(json.dumps(output_of(span)).replace(server.base_url, "BASE"))
                               for item, span in spans.items()}
            facts[layout] = experiment_facts(server, spans)
            assert server.internal_errors == [] and server.unknown_requests() == []
    r, f = states["runner"], states["flat"]
    assert r["items"] == f["items"] and len(r["items"]) == 4
    assert r["scores"] == f["scores"] and len(r["scores"]) > 4 * 20
    assert r["run_items"] == f["run_items"]
    # the experiment outputs differ only in where each layout keeps trace.json
    for item in ITEMS.values():
        ro, fo = outputs["runner"][item], outputs["flat"][item]
        assert {k: v for k, v in ro.items() if k != "trace_artifact"} == {k: v for k, v in fo.items()
                                                                          if k != "trace_artifact"}
        assert ro["trace_artifact"]["status"] == fo["trace_artifact"]["status"]
    assert outputs["runner"][ITEMS[("find_item_011", 2)]]["trace_artifact"]["path"] == \
        "tasks/find_item_011/attempt_2/trace.json"
    assert outputs["flat"][ITEMS[("find_item_011", 2)]]["trace_artifact"]["path"] == \
        "tasks/find_item_011/attempt-2/trace.json"
    # the experiment metadata: the same facts, plus the runner's own keys, minus the flat
    # manifest's schema version and status (the runner's manifest has neither)
    runner_only = {"judge_config", "judge_prompt_version", "mock_environment", "suite_path"}
    assert {k: v for k, v in facts["runner"].items() if k not in runner_only} == \
        {k: v for k, v in facts["flat"].items() if k not in ("schema_version", "status")}
    assert runner_only <= set(facts["runner"]) and not runner_only & set(facts["flat"])
