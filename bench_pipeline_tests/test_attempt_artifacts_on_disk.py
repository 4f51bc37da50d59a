"""Attempt artifacts read from a run folder on disk, through the whole pipeline (R3, R5):
the files of the conventional folder reach the attempt row, a history.json that is not
UTF-8 leaves the recorded values standing, and a formula that fails on a file marks that
file invalid without stopping the run. The formulas themselves are tested on values in
memory in attempt_metrics/."""

from __future__ import annotations

import sys

from bench_pipeline.attempt_metrics import derive_attempt
from bench_pipeline.pipeline import run_stages

from .run_builder import make_run, row
from .support.attempt_inputs import call, event, model, result


def test_artifacts_of_the_conventional_folder_reach_the_attempt_row(tmp_path):
    history = [model(100), call("tap", {"x": 1}), result("tap"), call("tap", {"x": 2}), result("tap")]
    episode = {"events": [event("tap", 5, {}), event("tap", 6, {})], "extra": {"prompt_tokens": 1}}
    rec = {"task_wall_ms": 2500, "setup_ms": 30, "llm_calls": 7, "device_execution_ms": 99, "input_tokens": 50}
    run = make_run(tmp_path, [row("t", status="failed", metrics=rec), row("u", status="failed", metrics=rec)],
                   artifacts={"tasks/t": {"history.json": history, "episode.json": episode}})
    processed = run_stages(run).processed
    assert processed.metrics["data_quality"]["bad_rows"] == []
    a, b = sorted(processed.attempts, key=lambda x: x["task_id"])
    assert (a["llm_calls"], a["llm_time_ms"], a["tool_calls"], a["device_actions"]) == (1, 100, 2, 2)
    assert (a["device_execution_ms"], a["input_tokens"], a["output_tokens"]) == (11, 1, 2)
    assert (a["task_wall_ms"], a["setup_ms"]) == (2500, 30)
    assert {a["provenance"][k] for k in ("llm_calls", "device_execution_ms", "input_tokens")} == {"derived"}
    assert (b["llm_calls"], b["device_execution_ms"], b["input_tokens"]) == (7, 99, 50)
    assert {b["provenance"][k] for k in ("llm_calls", "device_execution_ms", "input_tokens")} == {"recorded"}


def test_history_that_is_not_utf8_leaves_the_recorded_failure_evidence(tmp_path):
    """R17 per source, as in R3: an unreadable history.json and an episode without errors."""
    r = row("t", status="failed", first_failure_stage="planning", metrics={"failure_event_ref": "history:9"})
    run = make_run(tmp_path, [r], artifacts={"tasks/t": {"history.json": b"\xff not utf-8",
                                                         "episode.json": {"events": [event("tap", 3, {})]}}})
    processed = run_stages(run).processed
    assert processed.metrics["data_quality"]["bad_rows"] == []
    (a,) = processed.attempts
    assert (a["first_failure_stage"], a["failure_event_ref"]) == ("planning", "history:9")
    assert a["provenance"]["first_failure_stage"] == "recorded"
    assert a["provenance"]["failure_event_ref"] == "recorded"


def test_a_formula_failure_marks_the_file_invalid_and_keeps_the_run_going(tmp_path, monkeypatch):
    """The safety net: an unforeseen error in a formula is a located data-quality finding."""

    def broken(messages):
        raise KeyError("surprise")

    # derive_history as the module of derive_attempt sees it.
    monkeypatch.setattr(sys.modules[derive_attempt.__module__], "derive_history", broken)
    run = make_run(tmp_path, [row("t", status="failed", metrics={"llm_calls": 4}), row("u", status="passed")],
                   artifacts={"tasks/t": {"history.json": [model()]}})
    processed = run_stages(run).processed
    a = next(x for x in processed.attempts if x["task_id"] == "t")
    assert a["llm_calls"] == 4 and a["provenance"]["llm_calls"] == "recorded"
    (finding,) = processed.metrics["data_quality"]["invalid_artifacts"]
    assert finding["file"] == "tasks/t/history.json" and finding["line"] == 1 and finding["status"] == "invalid"
    assert finding["reason"].startswith("could not be evaluated (KeyError")
    assert len(processed.attempts) == 2
