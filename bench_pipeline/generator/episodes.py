"""episode.json of one attempt: events mirroring the history's tool calls, the runtime's token
totals in ``extra``, and the values the reference takes from the episode over the history
(3.1 step 3, 3.4, 3.5; readings R3, R16)."""

from __future__ import annotations

import random
from typing import Any

from ..attempt_metrics import TOKEN_SOURCES
from ..vocabulary import EPISODE_FIELDS
from .records import EpisodeFacts, Evaluation, History, ModelCall, Task, ToolStep

# Episode extra key -> attempt metric it overrides (reference 3.5).
TOKEN_OVERRIDES = {extra_key: metric for metric, (_, extra_key) in TOKEN_SOURCES.items()}


def build_episode(rng: random.Random, history: History, measured: dict, episode_id: str, task: Task,
                  ev: Evaluation, kind: str) -> tuple[dict, EpisodeFacts]:
    """episode.json mirroring the history's tool calls, plus what the reference derives from it."""
    facts = EpisodeFacts()
    events: list[dict] = []
    replan_keys = rng.random() < 0.85
    steps = len(history.steps)
    no_duration_step = rng.randrange(steps) if steps and rng.random() < 0.03 else None
    step_number = -1
    for item in history.timeline:
        if isinstance(item, ModelCall):
            events.append({"type": "model_response", "output_tokens": item.output_tokens})
            continue
        step_number += 1
        events.append({"type": "tool_call", "tool_name": item.name, "tool_input": item.tool_input})
        if item.result_index is None:
            continue
        event: dict[str, Any] = {"type": "tool_result", "tool_name": item.name}
        if rng.random() < 0.9:
            event["tool_input"] = item.tool_input  # else the preceding tool_call's input applies
        event["is_error"] = item.error
        duration: float | None = item.duration_ms
        if rng.random() < 0.02:
            duration = -(1 + rng.randrange(40)) / 4  # clock skew on a fast call
        if step_number == no_duration_step:
            duration = None
        if duration is not None:
            event["duration_ms"] = duration
        if replan_keys:
            event["needs_replan"] = item.error and rng.random() < 0.6
        observe_result(facts, event, item, len(events))
        events.append(event)
    error = None
    if kind == "chat_error_evidence":
        error = ev.errors.get("agent_error")
        events.append({"type": "error", "message": error})
    facts.has_events = bool(events)
    facts.extra = episode_extra(rng, measured)
    doc = {
        "episode_id": episode_id,
        "trace_id": f"{rng.getrandbits(128):032x}",
        "events": events,
        "extra": facts.extra,
        "retrieved_memory_refs": [{"tool": "recall_memory", "ids": task.expected_memory_ids}]
        if task.expected_memory_ids else [],
        "error": error,
    }
    return doc, facts


def observe_result(facts: EpisodeFacts, event: dict, step: ToolStep, index: int) -> None:
    """Update episode facts with one tool_result event (reference 3.4-3.5)."""
    if step.device:
        duration = event.get("duration_ms")
        if duration is None:
            facts.device_complete = False
        else:
            facts.device_ms += max(0.0, duration)
    if event["is_error"]:
        facts.error_count += 1
        if facts.first_error is None:
            facts.first_error = (index, "device_execution" if step.device else "unknown")
    if "needs_replan" in event:
        facts.replan_seen = True
        facts.replan_count += 1 if event["needs_replan"] else 0


def episode_extra(rng: random.Random, measured: dict) -> dict:
    """episode.extra: first-token time and runtime token totals, sometimes 0 or absent."""
    extra: dict[str, int] = {}
    roll = rng.random()
    if roll < 0.85:
        extra["first_token_time_ms"] = 250 + rng.randrange(1500)
    elif roll < 0.9:
        extra["first_token_time_ms"] = 0
    if measured["input_tokens"] is not None and rng.random() < 0.7:
        extra["prompt_tokens"] = measured["input_tokens"]
        extra["completion_tokens"] = measured["output_tokens"]
        extra["total_tokens"] = measured["input_tokens"] + measured["output_tokens"]
    cached = measured["cached_input_tokens"]
    if cached is not None and rng.random() < 0.6:
        extra["cached_prompt_tokens"] = cached
    elif rng.random() < 0.2:
        extra["cached_prompt_tokens"] = 0
    reasoning = measured["reasoning_tokens"]
    if reasoning is not None and rng.random() < 0.5:
        extra["reasoning_tokens"] = reasoning
    elif rng.random() < 0.15:
        extra["reasoning_tokens"] = 0
    return extra


def apply_episode(measured: dict, facts: EpisodeFacts) -> None:
    """Episode values replace history-derived ones (reference 3.1 step 3, 3.5; R3, R16)."""
    if not facts.has_events:
        measured["device_execution_ms"] = None
    elif facts.device_complete:
        measured["device_execution_ms"] = facts.device_ms
    else:
        measured["device_execution_ms"] = None
    measured["replan_count"] = facts.replan_count if facts.replan_seen else None
    ttft = facts.extra.get("first_token_time_ms")
    measured["time_to_first_token_ms"] = ttft if ttft else None
    for extra_key, metric in TOKEN_OVERRIDES.items():
        if extra_key in facts.extra:
            measured[metric] = facts.extra[extra_key]
    if facts.has_events:
        measured["tool_errors"] = facts.error_count
    if facts.first_error is not None:
        measured["failure_event_ref"] = f"episode:{facts.first_error[0]}"
        measured["evidence_stage"] = facts.first_error[1]


def clear_episode_fields(measured: dict) -> None:
    """Episode-only fields are unavailable without an episode."""
    measured.update(dict.fromkeys(EPISODE_FIELDS))
