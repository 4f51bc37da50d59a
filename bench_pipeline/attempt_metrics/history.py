"""What history.json supplies (reference 3.3-3.5): model calls and time, visual inference,
tokens, tool counters and the first tool error."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..stats import FLOAT_MAX_INT, number_or_none
from ..vocabulary import TOKEN_FIELDS
from .recorded import refuse_number
from .sums import running_add
from .tokens import token_sums
from .tools import is_device_call, is_error_result, is_screenshot_result, pair_tool_calls, result_object


@dataclass
class HistoryMetrics:
    """Everything history.json supplies for one attempt: the ``history`` fields of
    ``measured_fields.MEASURED``, its token sums and tool errors (which episode.json can
    replace), and the first error's reference and stage."""

    llm_calls: int | None = None
    llm_time_ms: float | None = None
    vision_llm_calls: int | None = None
    vision_llm_time_ms: float | None = None
    tool_calls: int = 0
    screenshots_taken: int = 0
    device_actions: int = 0
    tool_errors: int = 0
    tokens: dict[str, float | None] = field(default_factory=dict)
    first_error_ref: str | None = None
    first_error_stage: str | None = None
    #: The values read and refused as of the wrong type, each (where in history.json, value,
    #: what became of it): ``[<message index>].<key>`` (data_quality.invalid_artifact_values).
    refused: list[tuple[str, object, str]] = field(default_factory=list)


def _is_image(attachment: object) -> bool:
    """An image attachment (R10): its ``kind`` (the runner's key) or ``type`` is "image",
    in any letter case."""
    if type(attachment) is not dict:
        return False
    return any(isinstance(attachment.get(key), str) and attachment[key].lower() == "image"
               for key in ("kind", "type"))


def _has_image(attachments: object) -> bool:
    """A message's ``attachments`` hold an image (3.3, R10)."""
    return type(attachments) is list and any(_is_image(a) for a in attachments)


#: Kinds of the ordered events behind the pending-image flag (3.3).
_MODEL, _RESULT, _IMAGE = 0, 1, 2

#: What a model call's refused duration makes of the attempt's times (3.3), and of a visual call's.
_LLM_TIME_LOST = "the attempt's llm_time_ms is unavailable"
_VISION_TIME_LOST = "the attempt's llm_time_ms and vision_llm_time_ms are unavailable"


def _also_vision(refused: list, index: int) -> None:
    """Say of the visual call ``index``'s refused duration (if it was refused: an absent one
    is not) that vision_llm_time_ms is unavailable too (3.3)."""
    where = f"[{index}].duration_ms"
    for n, (at, value, reason) in enumerate(refused):
        if at == where:
            refused[n] = (at, value, reason.replace(_LLM_TIME_LOST, _VISION_TIME_LOST))


def derive_history(messages: list) -> HistoryMetrics:
    """Model calls, time, vision, tokens, tool counters and first error from history (3.3, 3.5).

    Non-object entries are skipped but keep their index (R22). One pass collects model
    calls, tool calls and results and the vision events; the tool counters, errors and the
    pending-image flag then visit only those.
    """
    out = HistoryMetrics()
    calls: list[int] = []
    results: list[int] = []
    # Ordered events for the pending-image flag: (index, kind, duration-or-None).
    vision_events: list[tuple[int, int, object]] = []
    n_model = 0
    time_sum: float = 0
    time_complete = True
    usages: list[dict] = []  # of the model calls, for the token sums (3.5)
    where: list[int] = []  # each usage's message index

    for i, msg in enumerate(messages):
        if type(msg) is not dict:
            continue
        # R10: a message's image raises the flag before its own model-call check, so a
        # model message carrying an image is itself a visual call.
        attachments = msg.get("attachments")
        if attachments is not None and _has_image(attachments):
            vision_events.append((i, _IMAGE, None))
        kind = msg.get("type")
        if kind == "tool_result":
            results.append(i)
            vision_events.append((i, _RESULT, None))
        elif kind == "assistant" or kind == "tool_call":
            usage = msg.get("usage")
            if type(usage) is dict:
                n_model += 1
                duration = msg.get("duration_ms")
                if type(duration) is not int:
                    duration = number_or_none(duration)
                if duration is not None and 0 <= duration <= FLOAT_MAX_INT:
                    time_sum = running_add(time_sum, duration)
                else:
                    refuse_number(out.refused, f"[{i}].duration_ms", msg.get("duration_ms"), _LLM_TIME_LOST)
                    duration = None
                    time_complete = False
                vision_events.append((i, _MODEL, duration))
                usages.append(usage)
                where.append(i)
            elif usage is not None:
                out.refused.append((f"[{i}].usage", usage, "not an object: not a model call (3.3)"))
            if kind == "tool_call":
                calls.append(i)

    pairs = pair_tool_calls(messages, calls, results)
    call_of = {r: c for c, r in pairs.items()}
    parsed = {r: result_object(messages[r].get("content")) for r in results}

    # Tool calls, device actions, screenshots (3.4, 3.5, R13).
    out.tool_calls = len(calls)
    for c in calls:
        msg = messages[c]
        if is_device_call(msg.get("tool_name"), msg.get("tool_input")):
            out.device_actions += 1
        r = pairs.get(c)
        if r is not None:
            content = messages[r].get("content")
            obj = parsed[r]
            if (obj is not None and obj.get("data")) or (
                isinstance(content, str) and "screenshot observation" in content
            ):
                out.screenshots_taken += 1

    # Tool errors and the first error's reference and stage (3.5, R16-R18).
    for r in results:
        if is_error_result(messages[r], parsed[r]):
            out.tool_errors += 1
            if out.first_error_ref is None:
                c = call_of.get(r)
                source = messages[c] if c is not None else messages[r]
                device = is_device_call(source.get("tool_name"), source.get("tool_input"))
                out.first_error_ref = f"history:{r}"
                out.first_error_stage = "device_execution" if device else "unknown"

    # Visual inference with the pending-image flag (3.3).
    pending = False
    vision_calls = 0
    vision_time: float = 0
    vision_complete = True
    for i, kind, duration in vision_events:
        if kind == _MODEL:
            if pending:
                vision_calls += 1
                if duration is None:
                    vision_complete = False
                    _also_vision(out.refused, i)
                else:
                    vision_time = running_add(vision_time, duration)
                pending = False
        elif kind == _IMAGE:
            pending = True
        elif not pending:  # a result can only raise the flag
            c = call_of.get(i)
            if is_screenshot_result(messages[i], parsed[i], messages[c] if c is not None else None):
                pending = True

    if n_model:  # R8: no qualifying model message -> all of these stay null
        out.llm_calls = n_model
        out.llm_time_ms = number_or_none(time_sum) if time_complete else None
        out.vision_llm_calls = vision_calls
        out.vision_llm_time_ms = number_or_none(vision_time) if vision_calls and vision_complete else None
        out.tokens = token_sums(usages, out.refused, where)
    else:
        out.tokens = {f: None for f in TOKEN_FIELDS}
    return out
