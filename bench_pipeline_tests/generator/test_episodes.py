"""Tests of episode.json building (bench_pipeline/generator/episodes.py) and of the values the
episode supplies over the history (reference 3.1 step 3, 3.4, 3.5; R3, R16), in memory."""

from __future__ import annotations

import random

from bench_pipeline.generator.episodes import (
    TOKEN_OVERRIDES,
    apply_episode,
    build_episode,
    clear_episode_fields,
    episode_extra,
    observe_result,
)
from bench_pipeline.generator.history import build_history, history_measurements
from bench_pipeline.generator.records import EpisodeFacts, Evaluation, Task, ToolStep

TASK = Task(id="t1", category="memory", prompt="Where did I park?", rubric_spec=[], expected_answer=None,
            expected_memory_ids=["m1"], env_checks=[], skill=None, timeout_s=180, pass_probability=0.8)
TAP = ToolStep("tap", {"x": 1, "y": 1}, True, 10.0, result_index=3)
SEARCH = ToolStep("search", {"query": "q"}, False, 10.0, result_index=5)


def test_token_overrides_map_the_runtime_keys_to_the_metrics() -> None:
    assert TOKEN_OVERRIDES == {
        "prompt_tokens": "input_tokens", "completion_tokens": "output_tokens", "total_tokens": "total_tokens",
        "cached_prompt_tokens": "cached_input_tokens", "reasoning_tokens": "reasoning_tokens",
    }


def test_device_time_sums_device_results_and_negative_durations_count_zero() -> None:
    facts = EpisodeFacts()
    observe_result(facts, {"is_error": False, "duration_ms": 12.5}, TAP, 1)
    observe_result(facts, {"is_error": False, "duration_ms": -2.25}, TAP, 3)
    observe_result(facts, {"is_error": False, "duration_ms": 99.0}, SEARCH, 5)
    assert (facts.device_ms, facts.device_complete) == (12.5, True)


def test_a_device_result_without_duration_makes_the_time_incomplete() -> None:
    facts = EpisodeFacts()
    observe_result(facts, {"is_error": False}, TAP, 1)
    observe_result(facts, {"is_error": False}, SEARCH, 3)
    assert facts.device_complete is False


def test_the_first_error_and_the_replans_are_counted() -> None:
    facts = EpisodeFacts()
    observe_result(facts, {"is_error": True, "needs_replan": False}, SEARCH, 2)
    observe_result(facts, {"is_error": True, "needs_replan": True}, TAP, 4)
    assert facts.error_count == 2
    assert facts.first_error == (2, "unknown")
    assert (facts.replan_seen, facts.replan_count) == (True, 1)


def test_episode_values_replace_the_history_ones() -> None:
    measured = {"input_tokens": 10, "output_tokens": 5, "tool_errors": 0, "failure_event_ref": None,
                "evidence_stage": None}
    facts = EpisodeFacts(has_events=True, device_ms=30.5, error_count=1, first_error=(7, "device_execution"),
                         replan_count=0, replan_seen=True,
                         extra={"first_token_time_ms": 0, "prompt_tokens": 12, "cached_prompt_tokens": 0})
    apply_episode(measured, facts)
    assert measured == {
        "input_tokens": 12, "output_tokens": 5, "tool_errors": 1, "failure_event_ref": "episode:7",
        "evidence_stage": "device_execution", "device_execution_ms": 30.5, "replan_count": 0,
        "time_to_first_token_ms": None, "cached_input_tokens": 0,
    }


def test_an_episode_without_events_or_replan_keys_supplies_nothing() -> None:
    measured = {"tool_errors": 3}
    apply_episode(measured, EpisodeFacts())
    assert measured == {"tool_errors": 3, "device_execution_ms": None, "replan_count": None,
                        "time_to_first_token_ms": None}


def test_without_an_episode_its_fields_are_unavailable() -> None:
    measured = {"device_execution_ms": 5.0, "replan_count": 1, "time_to_first_token_ms": 300, "llm_calls": 2}
    clear_episode_fields(measured)
    assert measured == {"device_execution_ms": None, "replan_count": None, "time_to_first_token_ms": None,
                        "llm_calls": 2}


def test_extra_token_totals_agree_with_the_history() -> None:
    measured = {"input_tokens": 100, "output_tokens": 20, "cached_input_tokens": 64, "reasoning_tokens": 7}
    for seed in range(50):
        extra = episode_extra(random.Random(seed), measured)
        assert set(extra) <= {"first_token_time_ms", "prompt_tokens", "completion_tokens", "total_tokens",
                              "cached_prompt_tokens", "reasoning_tokens"}
        if "prompt_tokens" in extra:
            assert (extra["prompt_tokens"], extra["completion_tokens"], extra["total_tokens"]) == (100, 20, 120)
        assert extra.get("cached_prompt_tokens") in (None, 0, 64)
        assert extra.get("reasoning_tokens") in (None, 0, 7)


def test_an_episode_mirrors_the_history_tool_calls() -> None:
    rng = random.Random(8)
    history = build_history(rng, TASK, "passed", 24, "Level 3, spot 42.", True)
    measured = history_measurements(history)
    doc, facts = build_episode(rng, history, measured, "ep-1", TASK, Evaluation(1.0, 0, 0), "passed")
    calls = [e for e in doc["events"] if e["type"] == "tool_call"]
    assert [(e["tool_name"], e["tool_input"]) for e in calls] == [(s.name, s.tool_input) for s in history.steps]
    results = [e for e in doc["events"] if e["type"] == "tool_result"]
    assert len(results) == sum(1 for s in history.steps if s.result_index is not None)
    assert facts.error_count == sum(1 for e in results if e["is_error"])
    assert doc["episode_id"] == "ep-1" and len(doc["trace_id"]) == 32
    assert doc["retrieved_memory_refs"] == [{"tool": "recall_memory", "ids": ["m1"]}]
    assert doc["error"] is None and facts.has_events


def test_a_chat_error_ends_the_episode_with_an_error_event() -> None:
    rng = random.Random(8)
    history = build_history(rng, TASK, "chat_error_evidence", 24, None, True)
    ev = Evaluation(0.0, 0, 0, errors={"agent_error": "chat request failed: upstream returned 502"})
    doc, _ = build_episode(rng, history, history_measurements(history), "ep-2", TASK, ev, "chat_error_evidence")
    assert doc["events"][-1] == {"type": "error", "message": "chat request failed: upstream returned 502"}
    assert doc["error"] == "chat request failed: upstream returned 502"
