"""What episode.json supplies (reference 3.2, 3.4, 3.5): device time, replans, first-token
time, tool errors and the token totals that replace history's."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..stats import is_number, number_or_none
from ..vocabulary import TOKEN_FIELDS
from .recorded import refuse_number
from .sums import running_add
from .tokens import TOKEN_SOURCES
from .tools import is_device_call, json_key


@dataclass
class EpisodeMetrics:
    """Everything episode.json supplies for one attempt: the ``episode`` fields of
    ``measured_fields.MEASURED``, the tool errors and token totals that replace history's
    (None, or absent from ``tokens``: nothing to replace), the first error, and the ids
    shown as evidence."""

    device_execution_ms: float | None = None
    replan_count: int | None = None
    time_to_first_token_ms: float | None = None
    tool_errors: int | None = None  # None: the event list is empty, so it replaces nothing
    tokens: dict[str, float] = field(default_factory=dict)  # only the overrides present
    first_error_ref: str | None = None
    first_error_stage: str | None = None
    episode_id: str | None = None
    trace_id: str | None = None
    #: The values read and refused as of the wrong type, each (where in episode.json, value,
    #: what became of it) (data_quality.invalid_artifact_values).
    refused: list[tuple[str, object, str]] = field(default_factory=list)


def derive_episode(episode: dict) -> EpisodeMetrics:
    """Device time, replans, first-token time, tool errors and token overrides (3.2-3.5).

    ``events`` that is not an array means no events; a non-object ``extra`` means none (R39).
    """
    out = EpisodeMetrics()
    events = episode.get("events")
    if not isinstance(events, list):
        if events is not None:
            out.refused.append(("events", events, "not an array: no events (R39)"))
        events = []
    extra = episode.get("extra")
    if not isinstance(extra, dict):
        if extra is not None:
            out.refused.append(("extra", extra, "not an object: no extra values (R39)"))
        extra = {}

    last_input: dict[object, object] = {}
    device_sum: float = 0
    device_complete = True
    replan_seen = False
    replans = 0
    errors = 0
    for i, event in enumerate(events):
        if not isinstance(event, dict):
            continue  # R22
        if "needs_replan" in event:
            replan_seen = True
            if event["needs_replan"]:
                replans += 1
        name = event.get("tool_name")
        raw_input = event.get("tool_input")
        if event.get("type") == "tool_result":
            # 3.4: the result's own input, else the last preceding input for the same name (R23).
            effective = raw_input if raw_input is not None else last_input.get(json_key(name))
            device = is_device_call(name, effective)
            if device:
                duration = event.get("duration_ms")
                if is_number(duration):
                    device_sum = running_add(device_sum, max(0, duration))
                else:
                    device_complete = False
                    refuse_number(out.refused, f"events[{i}].duration_ms", duration,
                                  "the attempt's device_execution_ms is unavailable")
            if event.get("is_error"):
                errors += 1
                if out.first_error_ref is None:  # R16
                    out.first_error_ref = f"episode:{i}"
                    out.first_error_stage = "device_execution" if device else "unknown"
        if raw_input is not None:
            last_input[json_key(name)] = raw_input

    if events:
        out.device_execution_ms = number_or_none(device_sum) if device_complete else None
        out.tool_errors = errors
    out.replan_count = replans if replan_seen else None
    ttft = extra.get("first_token_time_ms")
    out.time_to_first_token_ms = ttft if is_number(ttft) and ttft > 0 else None  # R40
    refuse_number(out.refused, "extra.first_token_time_ms", ttft, "the attempt's time_to_first_token_ms is unavailable")
    for f in TOKEN_FIELDS:
        key = TOKEN_SOURCES[f][1]
        value = extra.get(key)
        if is_number(value):
            out.tokens[f] = value  # replaces the history sum, zero included (3.5)
        else:
            refuse_number(out.refused, f"extra.{key}", value, f"not used: {f} stays the history sum")
    for key in ("episode_id", "trace_id"):
        value = episode.get(key)
        if isinstance(value, str):
            setattr(out, key, value)
        elif value is not None:
            out.refused.append((key, value, "not a string: read as absent"))
    return out
