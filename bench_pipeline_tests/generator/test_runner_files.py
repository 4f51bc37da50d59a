"""Tests of an attempt folder's files in the runner's shapes
(bench_pipeline/generator/runner_files.py, and `files.attempt_files` with ``layout="runner"``),
in memory: each holds what the flat file holds, as the pipeline reads it."""

from __future__ import annotations

import orjson

from bench_pipeline.attempt_metrics import derive_history
from bench_pipeline.generator.files import attempt_files
from bench_pipeline.generator.records import Evaluation, History, ToolStep
from bench_pipeline.generator.runner_files import (
    JPEG_BYTES,
    runner_attachment,
    runner_environment_state,
    runner_judge,
    runner_messages,
    runner_trace,
)
from bench_pipeline.layouts import trace_call

MESSAGES = [
    {"type": "system", "content": "s"},
    {"type": "user", "content": "u", "attachments": [{"type": "image", "path": "pre.png"}]},
    {"type": "tool_call", "tool_name": "tap", "tool_input": {"x": 1, "y": 2},
     "usage": {"input_tokens": 5, "output_tokens": 1}, "duration_ms": 40},
    {"type": "tool_result", "tool_name": "tap", "content": '{"ok": true}', "is_error": False},
    {"type": "assistant", "content": "Done.", "usage": {"input_tokens": 9, "output_tokens": 2}, "duration_ms": 70,
     "attachments": [{"type": "image", "path": "step-2.png"}]},
]
STEPS = [ToolStep("screenshot", {}, False, 10.0, result_index=3, screenshot=True),
         ToolStep("tap", {"x": 1, "y": 2}, True, 10.0, result_index=None)]
HISTORY = History(MESSAGES, [], STEPS, [], "Done.")
JUDGED = Evaluation(1.0, 1, 1, judge_file={"model": "judge-model", "verdicts": [
    {"id": "r1", "verdict": "yes", "reason": "ok"}], "error": None},
    env_file={"checks": [{"id": "wifi_settings_open", "passed": True, "expected": True, "actual": True}]})
TIMING = {"pre_ok": True, "post_ok": True}


def test_an_image_attachment_is_written_with_kind_in_the_same_place_and_length() -> None:
    flat = {"type": "image", "path": "step-3.png"}
    runner = runner_attachment(flat)
    assert runner == {"kind": "image", "path": "step-3.jpg"}
    assert list(runner) == ["kind", "path"]
    assert len(orjson.dumps(runner)) == len(orjson.dumps(flat))


def test_runner_messages_change_only_attachments_and_give_the_same_derivation() -> None:
    runner = runner_messages(MESSAGES)
    assert MESSAGES[1]["attachments"] == [{"type": "image", "path": "pre.png"}]  # not changed in place
    assert runner[1]["attachments"] == [{"kind": "image", "path": "pre.jpg"}]
    assert [{k: v for k, v in m.items() if k != "attachments"} for m in runner] == [
        {k: v for k, v in m.items() if k != "attachments"} for m in MESSAGES]
    assert len(orjson.dumps(runner)) == len(orjson.dumps(MESSAGES))
    flat, ours = derive_history(MESSAGES), derive_history(runner)
    assert (ours.vision_llm_calls, ours.vision_llm_time_ms) == (flat.vision_llm_calls, flat.vision_llm_time_ms) == (2, 110)


def test_the_runner_trace_has_tool_input_and_the_call_count() -> None:
    trace = runner_trace(HISTORY)
    assert trace == {"tool_calls": [{"step": 1, "tool": "screenshot", "input": {}, "has_screenshot": True},
                                    {"step": 2, "tool": "tap", "input": {"x": 1, "y": 2}, "has_screenshot": False}],
                     "final_response": "Done.", "total_tool_calls": 2}
    assert [trace_call(c) for c in trace["tool_calls"]] == [{"name": "screenshot", "arguments": {}},
                                                          {"name": "tap", "arguments": {"x": 1, "y": 2}}]


def test_the_runner_judge_and_environment_state() -> None:
    judge = runner_judge(JUDGED.judge_file)
    assert set(judge) == {"verdicts", "overall_notes", "cache_key", "image_count", "image_labels"}
    assert judge["verdicts"] == JUDGED.judge_file["verdicts"] and judge["overall_notes"] == "All requirements met."
    failed = runner_judge({"model": "m", "verdicts": [], "error": "judge request timed out after 60 s"})
    assert failed["overall_notes"] == "judge request timed out after 60 s"
    assert runner_environment_state(JUDGED.env_file) == {"route": "settings/network/wifi",
                                                         "state": {"wifi_settings_open": True}}
    assert runner_environment_state({"checks": []}) == {"route": "home", "state": {}}


def test_a_runner_attempt_folder() -> None:
    files = attempt_files(HISTORY, {"episode_id": "e"}, JUDGED, TIMING, frozenset(), "runner")
    assert sorted(files) == ["environment_state.json", "episode.json", "history.json", "judge.json", "post.jpg",
                             "pre.jpg", "trace.json"]
    assert orjson.loads(files["history.json"]) == runner_messages(MESSAGES)
    assert orjson.loads(files["trace.json"]) == runner_trace(HISTORY)
    assert orjson.loads(files["episode.json"]) == {"episode_id": "e"}
    assert files["pre.jpg"] == files["post.jpg"] == JPEG_BYTES and JPEG_BYTES[:2] == b"\xff\xd8"


def test_edge_cases_do_the_same_in_the_runner_layout() -> None:
    for edges in ({"broken_history"}, {"history_object"}, {"invalid_trace"}, {"missing_trace"},
                  {"episode_not_object"}, {"missing_episode"}):
        flat = attempt_files(HISTORY, {"episode_id": "e"}, JUDGED, TIMING, frozenset(edges))
        runner = attempt_files(HISTORY, {"episode_id": "e"}, JUDGED, TIMING, frozenset(edges), "runner")
        assert set(runner) == {name.replace(".png", ".jpg") for name in flat}
        for name in ("history.json", "trace.json", "episode.json"):
            assert (name in flat) == (name in runner)
        if edges & {"broken_history"}:
            # cut at the same place: the same parse error, at the same position
            assert len(runner["history.json"]) == len(flat["history.json"])
        if "invalid_trace" in edges:
            assert runner["trace.json"] == flat["trace.json"]
        if "episode_not_object" in edges:
            assert runner["episode.json"] == flat["episode.json"]
