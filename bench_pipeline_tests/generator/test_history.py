"""Tests of history.json building (bench_pipeline/generator/history.py) and of the metrics the
reference derives from a history alone (3.3-3.5), on values in memory."""

from __future__ import annotations

import random

import pytest

from bench_pipeline.attempt_metrics import derive_history, is_device_action
from bench_pipeline.generator.history import (
    OK_CONTENT,
    SCREENSHOT_JSON,
    HistoryBuilder,
    build_history,
    history_measurements,
    sum_or_none,
    tool_result,
)
from bench_pipeline.generator.records import History, ModelCall, Task, ToolStep
from bench_pipeline.vocabulary import TOKEN_FIELDS

TASK = Task(id="t1", category="settings", prompt="Turn Bluetooth on.", rubric_spec=[], expected_answer=None,
            expected_memory_ids=[], env_checks=[], skill=None, timeout_s=180, pass_probability=0.8)


def test_sum_or_none_needs_every_value() -> None:
    assert sum_or_none([1, 2, 3]) == 6
    assert sum_or_none([]) == 0
    assert sum_or_none([1, None]) is None


def test_measurements_of_a_history() -> None:
    calls = [ModelCall(100, 10, 110, 0, None, 300), ModelCall(200, 20, 230, 1024, None, 500, visual=True)]
    steps = [ToolStep("screenshot", {}, False, 10.0, result_index=2, screenshot=True),
             ToolStep("tap", {"x": 1, "y": 2}, True, 20.0, result_index=4, error=True),
             ToolStep("search", {"query": "q"}, False, 5.0, result_index=6, error=True)]
    history = History(messages=[], model_calls=calls, steps=steps, timeline=[*calls, *steps], final_response=None)
    assert history_measurements(history) == {
        "tool_calls": 3, "device_actions": 1, "screenshots_taken": 1, "tool_errors": 2,
        "failure_event_ref": "history:4", "evidence_stage": "device_execution",
        "llm_calls": 2, "llm_time_ms": 800, "vision_llm_calls": 1, "vision_llm_time_ms": 500,
        "input_tokens": 300, "output_tokens": 30, "total_tokens": 340, "cached_input_tokens": 1024,
        "reasoning_tokens": None,
    }


def test_a_history_without_model_calls_has_no_model_metrics() -> None:
    measured = history_measurements(History([], [], [], [], None))
    assert measured["tool_calls"] == 0 and measured["failure_event_ref"] is None
    for key in ("llm_calls", "llm_time_ms", "vision_llm_calls", "vision_llm_time_ms", *TOKEN_FIELDS):
        assert measured[key] is None


def test_a_visual_call_without_duration_has_no_vision_time() -> None:
    calls = [ModelCall(1, 1, 2, None, None, None, visual=True), ModelCall(1, 1, 2, None, None, 40)]
    measured = history_measurements(History([], calls, [], calls, None))
    assert (measured["llm_time_ms"], measured["vision_llm_calls"], measured["vision_llm_time_ms"]) == (None, 1, None)


def test_a_given_tool_result_is_used_as_is() -> None:
    assert tool_result(random.Random(1), "recall_memory", 1.0, '{"ids": ["m1"]}') == (
        False, '{"ids": ["m1"]}', False, False, False)


def test_a_tool_error_counts_and_a_failed_screenshot_still_looks_like_one() -> None:
    is_error, text, error, screenshot, visual = tool_result(random.Random(1), "screenshot", 1.0, None)
    assert error is True and screenshot is False and visual is True
    assert text.startswith(("{", "Error"))


def test_tool_results_without_errors() -> None:
    assert tool_result(random.Random(1), "search", 0.0, None)[1].startswith('{"results": ')
    assert tool_result(random.Random(1), "recall_memory", 0.0, None)[1] == '{"ids": [], "memories": []}'
    device = {tool_result(random.Random(seed), "bridge_media", 0.0, None)[1] for seed in range(60)}
    assert OK_CONTENT in device
    assert {text for text in device if text != OK_CONTENT} and all(
        text.startswith("Done. screenshot observation: ") for text in device if text != OK_CONTENT)
    shots = {tool_result(random.Random(seed), "screenshot", 0.0, None)[1] for seed in range(20)}
    assert SCREENSHOT_JSON in shots and any(s.startswith("screenshot observation: ") for s in shots)


def test_a_tool_step_classifies_its_call_with_the_metric_rule() -> None:
    builder = HistoryBuilder(random.Random(5))
    builder.add_tool_step("quick_action", {"list": True})
    builder.add_tool_step("bridge_contacts", {"action": "add", "name": "Bruno"})
    builder.add_tool_step("screenshot", {})
    assert [step.device for step in builder.steps] == [False, True, False]
    assert all(step.device == is_device_action(step.name, step.tool_input) for step in builder.steps)


def test_a_step_without_result_has_no_result_index() -> None:
    builder = HistoryBuilder(random.Random(5))
    builder.add_tool_step("tap", {"x": 1, "y": 1}, with_result=False)
    assert builder.steps[0].result_index is None
    assert builder.messages[-1]["type"] == "tool_call"


def test_every_model_message_carries_usage() -> None:
    builder = HistoryBuilder(random.Random(2))
    for _ in range(20):
        builder.add_tool_step("tap", {"x": 1, "y": 1})
    history = builder.finish("Done.")
    with_usage = [m for m in history.messages if "usage" in m]
    assert len(with_usage) == len(history.model_calls)
    assert all(m["type"] in ("assistant", "tool_call") for m in with_usage)
    assert history.messages[-1] == {**history.messages[-1], "type": "assistant", "content": "Done."}
    assert history.final_response == "Done."


@pytest.mark.parametrize(("kind", "messages"), [("skipped", 0), ("timeout_no_evidence", 2)])
def test_an_agent_that_never_ran_writes_little_history(kind: str, messages: int) -> None:
    history = build_history(random.Random(1), TASK, kind, 30, None, True)
    assert len(history.messages) == messages
    assert history.model_calls == [] and history.steps == []


def test_a_full_history_is_about_the_target_length_and_deterministic() -> None:
    one = build_history(random.Random(4), TASK, "passed", 30, "Done.", True)
    two = build_history(random.Random(4), TASK, "passed", 30, "Done.", True)
    assert one == two
    assert 20 <= len(one.messages) <= 42
    assert one.messages[0]["type"] == "system" and one.messages[1] == {
        **one.messages[1], "type": "user", "content": "Turn Bluetooth on."}


def test_recall_comes_first_and_an_incomplete_recall_misses_the_last_id() -> None:
    recall = Task(**{**TASK.__dict__, "expected_memory_ids": ["m1", "m4"]})
    complete = build_history(random.Random(4), recall, "passed", 12, "ok", True)
    partial = build_history(random.Random(4), recall, "agent_failure", 12, "no", False)
    assert complete.steps[0].name == "recall_memory"
    results = [m for m in complete.messages if m["type"] == "tool_result"]
    assert results[0]["content"] == '{"ids":["m1","m4"],"memories":[{"id":"m1"},{"id":"m4"}]}'
    partial_results = [m for m in partial.messages if m["type"] == "tool_result"]
    assert partial_results[0]["content"] == '{"ids":["m1"],"memories":[{"id":"m1"}]}'


def test_a_model_message_with_its_own_image_is_a_visual_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """R10 (re-pinned): an image on a model message makes that message itself a visual call."""
    monkeypatch.setattr("bench_pipeline.generator.history.MODEL_IMAGE_RATE", 1.0)
    builder = HistoryBuilder(random.Random(3))
    builder.add_model_message({"type": "assistant", "content": "Looking."})
    builder.add_tool_step("tap", {"x": 1, "y": 1})
    history = builder.finish("Done.")
    assert all(m["attachments"][0]["type"] == "image" for m in history.messages if "usage" in m)
    assert all(call.visual for call in history.model_calls)
    derived = derive_history(history.messages)
    measured = history_measurements(history)
    assert derived.vision_llm_calls == measured["vision_llm_calls"] == len(history.model_calls)


@pytest.mark.parametrize("seed", range(12))
def test_recorded_vision_follows_the_pipelines_derivation(seed: int) -> None:
    history = build_history(random.Random(seed), TASK, "passed", 60, "Done.", True)
    derived = derive_history(history.messages)
    measured = history_measurements(history)
    assert (derived.vision_llm_calls, derived.vision_llm_time_ms) == (
        measured["vision_llm_calls"], measured["vision_llm_time_ms"])


def test_some_model_messages_carry_an_image() -> None:
    messages = [m for seed in range(10) for m in build_history(random.Random(seed), TASK, "passed", 60, "ok", True).messages]
    assert any("usage" in m and "attachments" in m for m in messages)
    assert any("usage" not in m and "attachments" in m for m in messages)
