"""history.json of one attempt (reference 3.3-3.5): model calls with their usage, tool calls
and their results, and the metrics the reference derives from the history alone."""

from __future__ import annotations

import random
from typing import Any

import orjson

from ..attempt_metrics import DEVICE_ACTION_TOOLS, is_device_action
from ..vocabulary import TOKEN_FIELDS
from .outcomes import EXECUTION
from .records import History, ModelCall, Task, ToolStep
from .world import PNG_B64, TOOL_CUM_WEIGHTS, TOOL_NAMES, TOOLS, screen_point

THOUGHTS = [
    "I need to look at the current screen first.",
    "The target control should be near the top of the page.",
    "That did not work; I will try another way.",
    "The app is open. Next I will find the right menu.",
    "Scrolling to find the setting.",
]
SCREENS = ["Settings", "Home", "Messages", "Contacts", "Calendar", "Browser", "Music"]
OK_CONTENT = '{"ok": true}'
SCREENSHOT_JSON = orjson.dumps({"data": PNG_B64, "width": 1080, "height": 2400}).decode()
# (message is_error flag, content): every variant counts as a history tool error.
ERROR_RESULTS = [
    (True, '{"ok": false, "error": "element not found"}'),
    (True, '{"ok": false, "error": "element not found"}'),
    (False, '{"ok": false, "error": "timeout waiting for device"}'),
    (True, "Error: device disconnected"),
    (False, '{"is_error": true, "message": "input rejected"}'),
]
# Share of model messages carrying an image themselves (R10: such a message is a visual call).
MODEL_IMAGE_RATE = 0.06


class HistoryBuilder:
    """Appends history messages while recording model calls and tool steps (reference 3.3-3.5)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.messages: list[dict] = []
        self.model_calls: list[ModelCall] = []
        self.steps: list[ToolStep] = []
        self.timeline: list[ModelCall | ToolStep] = []
        self.pending_image = False
        self.call_ids = rng.random() < 0.9
        self.cached = rng.random() < 0.6
        self.reasoning = rng.random() < 0.3
        self.error_rate = 0.08 if rng.random() < 0.3 else 0.02
        self.no_duration_at = rng.randrange(40) if rng.random() < 0.03 else None
        self.no_cached_at = rng.randrange(40) if rng.random() < 0.03 else None

    def add_plain(self, message: dict, image: bool = False) -> None:
        """A message that is not a model call; an image attachment flags the next model call."""
        if image:
            message["attachments"] = [{"type": "image", "path": "pre.png"}]
            self.pending_image = True
        self.messages.append(message)

    def add_model_message(self, message: dict) -> None:
        """A usage-bearing assistant/tool_call message; now and then it carries an image of
        its own, which makes it a visual call itself (R10), as a pending image does."""
        rng = self.rng
        n = len(self.model_calls)
        inp = 2400 + 380 * n + rng.randrange(300)
        out = 20 + rng.randrange(380)
        if rng.random() < 0.3:
            usage: dict[str, int] = {"prompt_tokens": inp, "completion_tokens": out}
        else:
            usage = {"input_tokens": inp, "output_tokens": out}
        cached = None
        if self.cached and n != self.no_cached_at:
            cached = (inp // 1024) * 1024
            usage["cached_tokens" if rng.random() < 0.5 else "cached_input_tokens"] = cached
        reasoning = None
        if self.reasoning:
            reasoning = rng.randrange(200)
            usage["reasoning_tokens"] = reasoning
        total = inp + out
        if rng.random() < 0.25:
            total += reasoning or 0
            usage["total_tokens"] = total
        message["usage"] = usage
        duration = None if n == self.no_duration_at else 300 + rng.randrange(2200)
        if duration is not None:
            message["duration_ms"] = duration
        image = rng.random() < MODEL_IMAGE_RATE
        if image:
            message["attachments"] = [{"type": "image", "path": f"step-{n + 1}.png"}]
        call = ModelCall(inp, out, total, cached, reasoning, duration, visual=self.pending_image or image)
        self.pending_image = False
        self.messages.append(message)
        self.model_calls.append(call)
        self.timeline.append(call)

    def add_tool_step(self, name: str, tool_input: dict, with_result: bool = True,
                      content: str | None = None) -> None:
        """A tool call (with its own usage, or after a usage-bearing thought) and its result."""
        rng = self.rng
        call_id = f"c{len(self.steps) + 1}"
        thought = rng.random() < 0.4
        if thought:
            note = {"type": "assistant", "content": rng.choice(THOUGHTS)}
            if rng.random() < 0.03:
                self.add_plain(note)  # no usage: not a model call
            else:
                self.add_model_message(note)
        encoded: dict | str = orjson.dumps(tool_input).decode() if rng.random() < 0.05 else tool_input
        call = {"type": "tool_call", "tool_name": name, "tool_input": encoded}
        if self.call_ids:
            call["tool_call_id"] = call_id
        if thought:
            self.add_plain(call)
        else:
            self.add_model_message(call)
        step = ToolStep(name, tool_input, is_device_action(name, tool_input),
                        duration_ms=(40 + rng.randrange(6000)) / 4)
        self.steps.append(step)
        self.timeline.append(step)
        if not with_result:
            return
        is_error, text, error, screenshot, visual = tool_result(rng, name, self.error_rate, content)
        result = {"type": "tool_result", "tool_name": name, "content": text, "is_error": is_error}
        if self.call_ids:
            result["tool_call_id"] = call_id
        step.result_index = len(self.messages)
        step.error = error
        step.screenshot = screenshot
        self.pending_image = self.pending_image or visual
        self.messages.append(result)

    def finish(self, final: str | None) -> History:
        """The history, closed by the final answer's model call when the Agent gave one."""
        if final is not None:
            self.add_model_message({"type": "assistant", "content": final})
        return History(self.messages, self.model_calls, self.steps, self.timeline, final)


def build_history(rng: random.Random, task: Task, kind: str, target: int, final: str | None,
                  recall_complete: bool) -> History:
    """history.json messages for an attempt of about `target` messages (reference 3.3-3.5)."""
    builder = HistoryBuilder(rng)
    execution = EXECUTION[kind]
    if execution == "none":
        return builder.finish(None)
    builder.add_plain({"type": "system", "content": "You are a careful Android device agent. Use the tools."})
    builder.add_plain({"type": "user", "content": task.prompt}, image=rng.random() < 0.7)
    if execution == "prompt":
        return builder.finish(None)
    length = max(4, int(target * rng.uniform(0.75, 1.25)))
    if execution == "cut":
        length = max(4, int(length * rng.uniform(0.3, 0.9)))
    if task.expected_memory_ids:
        ids = task.expected_memory_ids if recall_complete else task.expected_memory_ids[:-1]
        builder.add_tool_step("recall_memory", {"query": task.prompt},
                              content=orjson.dumps({"ids": ids, "memories": [{"id": i} for i in ids]}).decode())
    while len(builder.messages) < length - 1:
        if rng.random() < 0.03:
            builder.add_plain({"type": "user", "content": "Here is the current screen."}, image=True)
            continue
        name = rng.choices(TOOL_NAMES, cum_weights=TOOL_CUM_WEIGHTS)[0]
        builder.add_tool_step(name, TOOLS[name][1](rng))
    if kind == "timeout_evidence" and rng.random() < 0.5:
        builder.add_tool_step("tap", screen_point(rng), with_result=False)  # the call the timeout interrupted
    return builder.finish(final)


def tool_result(rng: random.Random, name: str, error_rate: float,
                content: str | None) -> tuple[bool, str, bool, bool, bool]:
    """(is_error flag, content, counts as tool error, has_screenshot, screenshot-like)."""
    if content is None and rng.random() < error_rate:
        is_error, text = rng.choice(ERROR_RESULTS)
        return is_error, text, True, False, name == "screenshot"
    if content is not None:
        return False, content, False, False, False
    if name == "screenshot":
        if rng.random() < 0.6:
            return False, SCREENSHOT_JSON, False, True, True
        return False, f"screenshot observation: {rng.choice(SCREENS)} screen", False, True, True
    if name == "search":
        return False, '{"results": [{"title": "Farmacia Central", "url": "https://example.com/p"}]}', False, False, False
    if name == "recall_memory":
        return False, '{"ids": [], "memories": []}', False, False, False
    if name in DEVICE_ACTION_TOOLS and rng.random() < 0.1:
        text = f"Done. screenshot observation: {rng.choice(SCREENS)} screen is showing"
        return False, text, False, True, True
    return False, OK_CONTENT, False, False, False


def history_measurements(history: History) -> dict[str, Any]:
    """The metrics the reference derives from history alone (3.3-3.5)."""
    calls = history.model_calls
    steps = history.steps
    m: dict[str, Any] = {
        "tool_calls": len(steps),
        "device_actions": sum(1 for s in steps if s.device),
        "screenshots_taken": sum(1 for s in steps if s.screenshot),
        "tool_errors": sum(1 for s in steps if s.error),
        "failure_event_ref": None,
        "evidence_stage": None,
    }
    first_error = next((s for s in steps if s.error), None)
    if first_error is not None:
        m["failure_event_ref"] = f"history:{first_error.result_index}"
        m["evidence_stage"] = "device_execution" if first_error.device else "unknown"
    if not calls:
        m.update(dict.fromkeys(("llm_calls", "llm_time_ms", "vision_llm_calls", "vision_llm_time_ms",
                                *TOKEN_FIELDS)))
        return m
    visual = [c for c in calls if c.visual]
    m["llm_calls"] = len(calls)
    m["llm_time_ms"] = sum_or_none([c.duration_ms for c in calls])
    m["vision_llm_calls"] = len(visual)
    m["vision_llm_time_ms"] = sum_or_none([c.duration_ms for c in visual]) if visual else None
    m["input_tokens"] = sum(c.input_tokens for c in calls)
    m["output_tokens"] = sum(c.output_tokens for c in calls)
    m["total_tokens"] = sum(c.total_tokens for c in calls)
    m["cached_input_tokens"] = sum_or_none([c.cached_tokens for c in calls])
    m["reasoning_tokens"] = sum_or_none([c.reasoning_tokens for c in calls])
    return m


def sum_or_none(values: list[int | None]) -> int | None:
    """Sum, or None when any value is missing."""
    if any(v is None for v in values):
        return None
    return sum(values)  # type: ignore[arg-type]
