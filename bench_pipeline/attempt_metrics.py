"""Stage 2, derived attempt metrics: history and episode formulas (reference 3.1-3.6).

The formulas are pure functions over parsed JSON (``derive_history``, ``derive_episode``,
``outcome``); ``derive_attempt`` assembles one attempt row from a results.jsonl row and its
artifacts, choosing per field between the derived and the recorded value (3.1, R3, R34).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from .artifacts import (
    AVAILABLE,
    INVALID,
    MISSING,
    ArtifactDir,
    JsonFile,
    artifact_file,
    read_json_file,
    resolve_artifact_dir,
)
from .run_reader import RawRow, RawRun
from .stats import FLOAT_MAX_INT, INT64_MAX, is_number, number_or_none
from .vocabulary import (
    EPISODE_FIELDS,
    ERROR_TEXT_FIELDS,
    FAILED_STATUSES,
    HISTORY_FIELDS,
    INELIGIBLE_CLASSES,
    INFERRED_ELIGIBLE_STATUSES,
    TOKEN_FIELDS,
)

# --- Formula constants (reference 3.4, 3.5) -----------------------------------------------

#: Reference 3.4: the explicit device-action allowlist.
DEVICE_ACTION_TOOLS = frozenset({
    "touch_gesture", "enter_text", "keyboard_text", "keyboard_tap", "mouse_move",
    "mouse_scroll", "quick_action", "open_app", "launch_app", "open_url",
    "search_launch_app", "bridge_open_app", "bridge_clipboard", "bridge_contacts",
    "bridge_calendar", "bridge_notification", "bridge_media",
    "swipe", "tap", "long_press", "drag", "press_key",
})
#: Reference 3.4: a listed bridge_* tool with one of these actions is a read-only query.
READ_ONLY_BRIDGE_ACTIONS = frozenset({"query", "read", "get", "inspect", "list", "search"})

#: Reference 3.5: history usage keys (primary, fallback) and the episode ``extra`` override.
TOKEN_SOURCES = {
    "input_tokens": (("input_tokens", "prompt_tokens"), "prompt_tokens"),
    "output_tokens": (("output_tokens", "completion_tokens"), "completion_tokens"),
    "total_tokens": (("total_tokens",), "total_tokens"),
    "cached_input_tokens": (("cached_input_tokens", "cached_tokens"), "cached_prompt_tokens"),
    "reasoning_tokens": (("reasoning_tokens",), "reasoning_tokens"),
}
#: Integer-valued fields (a recorded non-integral value is unavailable).
COUNT_FIELDS = frozenset({
    "llm_calls", "vision_llm_calls", "tool_calls", "screenshots_taken", "device_actions",
    "tool_errors", "replan_count", "retry_count", "rubric_pass_count", "rubric_total",
})


# --- Small readers --------------------------------------------------------------------

def parse_tool_input(value: object) -> dict | None:
    """A tool input as an object, or None for "no input" (run-directory.md, R21).

    An object is used as is; a string holding a JSON object is parsed; anything else
    (an unparseable string, non-object JSON) is no input.
    """
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
        return parsed if isinstance(parsed, dict) else None
    return None


def is_device_action(tool_name: object, tool_input: dict | None) -> bool:
    """Reference 3.4: an allowlisted tool, minus the two read-only exclusions.

    quick_action with ``list`` exactly true (R20) and a listed bridge_* tool whose
    case-insensitive ``action`` is a query verb are excluded. No input excludes nothing.
    """
    if type(tool_name) is not str or tool_name not in DEVICE_ACTION_TOOLS:
        return False
    if tool_input is None:
        return True
    if tool_name == "quick_action":
        return tool_input.get("list") is not True
    if tool_name.startswith("bridge_"):
        action = tool_input.get("action")
        return not (isinstance(action, str) and action.lower() in READ_ONLY_BRIDGE_ACTIONS)
    return True


def is_device_call(tool_name: object, raw_input: object) -> bool:
    """is_device_action for a recorded call: the input is parsed only when it can matter.

    Only quick_action and listed bridge_* tools read their input (3.4), so the input of
    any other tool is never parsed.
    """
    if type(tool_name) is not str or tool_name not in DEVICE_ACTION_TOOLS:
        return False
    if tool_name == "quick_action" or tool_name.startswith("bridge_"):
        return is_device_action(tool_name, parse_tool_input(raw_input))
    return True


def _json_object(content: object) -> dict | None:
    """The JSON object a string tool result holds, when a formula could use it (R11-R15).

    Only strings are parsed. The formulas read only ``is_error``, ``ok`` (exactly false),
    ``data``, ``width`` and ``height``; an object whose text names none of the first three
    keys, or has no ``false`` for ``ok`` to hold, cannot change any of them, so it is not
    parsed (a ``\\u`` escape, which could spell a key, always is). Returns None otherwise.
    """
    if type(content) is not str:
        return None
    stripped = content.lstrip()
    if not stripped.startswith("{"):
        return None
    if not (
        '"is_error"' in stripped
        or '"data"' in stripped
        or ('"ok"' in stripped and "false" in stripped)
        or "\\u" in stripped
    ):
        return {}
    try:
        parsed = orjson.loads(stripped)
    except orjson.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _has_image(attachments: object) -> bool:
    """A message's ``attachments`` hold an image (3.3)."""
    if type(attachments) is not list:
        return False
    return any(isinstance(a, dict) and a.get("type") == "image" for a in attachments)


# --- History (3.3, 3.5) ---------------------------------------------------------------

@dataclass
class HistoryMetrics:
    """Everything history.json supplies for one attempt."""

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


def json_key(value: object) -> object:
    """A dict key for any JSON value: a string as is, anything else by type and content.

    Ids and names are compared as JSON values of the same type (R14): an object or array
    id (unhashable in Python) still pairs with an equal one, and ``1``, ``1.0`` and
    ``true`` stay different ids.
    """
    if type(value) is str:
        return value
    try:
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except TypeError:
        text = repr(value).encode()
    return (type(value).__name__, text)


def pair_tool_calls(messages: list, calls: list[int], results: list[int]) -> dict[int, int]:
    """Pair tool_call messages with tool_result messages (run-directory.md, R14).

    In call order, each result answering at most one call: a call with an id takes the
    first later result with that id not already taken; a call without an id takes the next
    later result with the same tool name not already taken. Returns {call index: result index}.
    """
    by_id: dict[object, list[int]] = {}
    for r in results:
        rid = messages[r].get("tool_call_id")
        if rid is not None:
            rid = json_key(rid)
            if rid in by_id:
                by_id[rid].append(r)
            else:
                by_id[rid] = [r]
    by_name: dict[object, list[int]] | None = None  # built only when a call has no id
    # Per candidate list (by id or by name): the first position that may still be free.
    # Indices before a call, or taken, can never serve a later call of the same key either.
    id_cursor: dict[object, int] = {}
    name_cursor: dict[object, int] = {}
    taken: set[int] = set()
    pairs: dict[int, int] = {}
    for c in calls:
        msg = messages[c]
        cid = msg.get("tool_call_id")
        if cid is not None:
            key = json_key(cid)
            candidates, cursor = by_id.get(key, ()), id_cursor
        else:
            if by_name is None:
                by_name = {}
                for r in results:
                    by_name.setdefault(json_key(messages[r].get("tool_name")), []).append(r)
            key = json_key(msg.get("tool_name"))
            candidates, cursor = by_name.get(key, ()), name_cursor
        pos = cursor.get(key, 0)
        while pos < len(candidates) and (candidates[pos] < c or candidates[pos] in taken):
            pos += 1
        if pos < len(candidates):
            pairs[c] = candidates[pos]
            taken.add(candidates[pos])
            pos += 1
        cursor[key] = pos
    return pairs


def _is_screenshot_result(message: dict, parsed: dict | None, call: dict | None) -> bool:
    """Reference 3.3 step 1, R11-R13: a screenshot-like tool result (string content only)."""
    content = message.get("content")
    if not isinstance(content, str):
        return False
    name = message.get("tool_name")
    if name is None and call is not None:
        name = call.get("tool_name")
    if name == "screenshot" or "screenshot observation" in content:
        return True
    return (
        parsed is not None
        and isinstance(parsed.get("data"), str)
        and ("width" in parsed or "height" in parsed)
    )


def _is_error_result(message: dict, parsed: dict | None) -> bool:
    """Reference 3.5, R15: result-level is_error, JSON is_error, or JSON ok exactly false."""
    if message.get("is_error"):
        return True
    return parsed is not None and (bool(parsed.get("is_error")) or parsed.get("ok") is False)


def _usage_count(usage: dict, key: str, fallback: str | None) -> int | float | None:
    """One usage count: ``key`` when it is a number, else ``fallback``'s (3.5, R9, R36)."""
    value = number_or_none(usage.get(key))
    if value is None and fallback is not None:
        value = number_or_none(usage.get(fallback))
    return value


def _usage_sum(usages: list[dict], key: str, fallback: str | None) -> int | float | None:
    """One token field summed over model calls (3.5): ``key``, else ``fallback`` per call;
    None as soon as a call has neither (the sum is then unavailable for good)."""
    total: int | float = 0
    try:
        for usage in usages:
            value = usage.get(key)
            if value is None and fallback is not None:
                value = usage.get(fallback)
            if type(value) is not int or not -FLOAT_MAX_INT <= value <= FLOAT_MAX_INT:
                value = _usage_count(usage, key, fallback)  # not a plain integer: the careful path
                if value is None:
                    return None
            total += value
    except OverflowError:  # an integer sum beyond the float range met a float
        return None
    return number_or_none(total)  # a total beyond the float range is unavailable (R42)


def _total_tokens_sum(usages: list[dict]) -> int | float | None:
    """total_tokens summed over model calls (3.5, R9): a call without a total counts its own
    input + output when both are known; None as soon as a call has neither."""
    total: int | float = 0
    try:
        for usage in usages:
            value = usage.get("total_tokens")
            if type(value) is int and -FLOAT_MAX_INT <= value <= FLOAT_MAX_INT:
                total += value
                continue
            if value is None:  # the common case of a missing total: two plain integers?
                inp, out = usage.get("input_tokens"), usage.get("output_tokens")
                if inp is None:
                    inp = usage.get("prompt_tokens")
                if out is None:
                    out = usage.get("completion_tokens")
                if (type(inp) is int and type(out) is int
                        and -FLOAT_MAX_INT <= inp <= FLOAT_MAX_INT and -FLOAT_MAX_INT <= out <= FLOAT_MAX_INT):
                    total += inp + out
                    continue
            value = _usage_count(usage, "total_tokens", None)  # the careful path
            if value is None:
                inp = _usage_count(usage, "input_tokens", "prompt_tokens")
                out = _usage_count(usage, "output_tokens", "completion_tokens")
                if inp is None or out is None:
                    return None
                value = inp + out
            total += value
    except OverflowError:
        return None
    return number_or_none(total)


def _add(total: int | float, value: int | float) -> int | float:
    """A running sum of in-range numbers; infinity once it cannot be represented (an integer
    sum beyond the float range meeting a float), so the final check makes it unavailable."""
    try:
        return total + value
    except OverflowError:
        return math.inf


def token_sums(usages: list[dict]) -> dict[str, int | float | None]:
    """The five history token fields over the model calls' ``usage`` mappings (3.5, R9, R36).

    Each field falls back to its older key per call (input_tokens -> prompt_tokens,
    output_tokens -> completion_tokens, cached_input_tokens -> cached_tokens); a field that
    some call lacks is unavailable (None) for the whole attempt.
    """
    plain = _plain_token_sums(usages)
    if plain is not None:
        return plain
    return {
        "input_tokens": _usage_sum(usages, "input_tokens", "prompt_tokens"),
        "output_tokens": _usage_sum(usages, "output_tokens", "completion_tokens"),
        "total_tokens": _total_tokens_sum(usages),
        "cached_input_tokens": _usage_sum(usages, "cached_input_tokens", "cached_tokens"),
        "reasoning_tokens": _usage_sum(usages, "reasoning_tokens", None),
    }


def _plain_token_sums(usages: list[dict]) -> dict[str, int | None] | None:
    """token_sums in one pass over the calls for the common case, else None.

    The common case: every call's input and output (each after its fallback key) and any
    total, cached or reasoning count it records are plain integers in the float range.
    Integer sums are exact, so this equals the field-by-field rule; anything else (a
    float, a string, a Boolean, a missing input or output) returns None and takes it.
    One pass touches each call's mapping once instead of five times.
    """
    limit = FLOAT_MAX_INT
    inp = out = total = 0
    cached: int | None = 0
    reasoning: int | None = 0
    for usage in usages:
        get = usage.get
        i = get("input_tokens")
        if i is None:
            i = get("prompt_tokens")
        o = get("output_tokens")
        if o is None:
            o = get("completion_tokens")
        if type(i) is not int or type(o) is not int or not -limit <= i <= limit or not -limit <= o <= limit:
            return None
        inp += i
        out += o
        t = get("total_tokens")
        if t is None:
            total += i + o  # a call without a total counts its input + output (R9)
        elif type(t) is int and -limit <= t <= limit:
            total += t
        else:
            return None
        if cached is not None:  # unavailable for good once a call has neither key
            c = get("cached_input_tokens")
            if c is None:
                c = get("cached_tokens")
            if c is None:
                cached = None
            elif type(c) is int and -limit <= c <= limit:
                cached += c
            else:
                return None
        if reasoning is not None:
            r = get("reasoning_tokens")
            if r is None:
                reasoning = None
            elif type(r) is int and -limit <= r <= limit:
                reasoning += r
            else:
                return None
    return {
        "input_tokens": number_or_none(inp),  # a sum beyond the float range is unavailable (R42)
        "output_tokens": number_or_none(out),
        "total_tokens": number_or_none(total),
        "cached_input_tokens": number_or_none(cached),
        "reasoning_tokens": number_or_none(reasoning),
    }


#: Kinds of the ordered events behind the pending-image flag (3.3).
_MODEL, _RESULT, _IMAGE = 0, 1, 2


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

    for i, msg in enumerate(messages):
        if type(msg) is not dict:
            continue
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
                    time_sum = _add(time_sum, duration)
                else:
                    duration = None
                    time_complete = False
                vision_events.append((i, _MODEL, duration))
                usages.append(usage)
            if kind == "tool_call":
                calls.append(i)
        attachments = msg.get("attachments")
        if attachments is not None and _has_image(attachments):
            vision_events.append((i, _IMAGE, None))

    pairs = pair_tool_calls(messages, calls, results)
    call_of = {r: c for c, r in pairs.items()}
    parsed = {r: _json_object(messages[r].get("content")) for r in results}

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
        if _is_error_result(messages[r], parsed[r]):
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
                else:
                    vision_time = _add(vision_time, duration)
                pending = False
        elif kind == _IMAGE:
            pending = True
        elif not pending:  # a result can only raise the flag
            c = call_of.get(i)
            if _is_screenshot_result(messages[i], parsed[i], messages[c] if c is not None else None):
                pending = True

    if n_model:  # R8: no qualifying model message -> all of these stay null
        out.llm_calls = n_model
        out.llm_time_ms = number_or_none(time_sum) if time_complete else None
        out.vision_llm_calls = vision_calls
        out.vision_llm_time_ms = number_or_none(vision_time) if vision_calls and vision_complete else None
        out.tokens = token_sums(usages)
    else:
        out.tokens = {f: None for f in TOKEN_FIELDS}
    return out


# --- Episode (3.2, 3.4, 3.5) ------------------------------------------------------------

@dataclass
class EpisodeMetrics:
    """Everything episode.json supplies for one attempt."""

    device_execution_ms: float | None = None
    replan_count: int | None = None
    time_to_first_token_ms: float | None = None
    tool_errors: int | None = None  # None: the event list is empty, so it replaces nothing
    tokens: dict[str, float] = field(default_factory=dict)  # only the overrides present
    first_error_ref: str | None = None
    first_error_stage: str | None = None
    episode_id: str | None = None
    trace_id: str | None = None


def derive_episode(episode: dict) -> EpisodeMetrics:
    """Device time, replans, first-token time, tool errors and token overrides (3.2-3.5).

    ``events`` that is not an array means no events; a non-object ``extra`` means none (R39).
    """
    out = EpisodeMetrics()
    events = episode.get("events")
    if not isinstance(events, list):
        events = []
    extra = episode.get("extra")
    if not isinstance(extra, dict):
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
                    device_sum = _add(device_sum, max(0, duration))
                else:
                    device_complete = False
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
    for f in TOKEN_FIELDS:
        value = extra.get(TOKEN_SOURCES[f][1])
        if is_number(value):
            out.tokens[f] = value  # replaces the history sum, zero included (3.5)
    if isinstance(episode.get("episode_id"), str):
        out.episode_id = episode["episode_id"]
    if isinstance(episode.get("trace_id"), str):
        out.trace_id = episode["trace_id"]
    return out


# --- Outcome (reference 2 "legacy compatibility", run-directory.md) ---------------------

def outcome(row: dict) -> dict:
    """status, raw and effective success/eligibility, class (reference 2, R28).

    A non-Boolean success is derived from status (passed -> true, failed/timeout -> false,
    else unknown). A non-Boolean eligibility is inferred: eligible exactly when status is
    passed, failed or timeout and the class is not environment, evaluation or skipped.
    """
    status = row.get("status") if isinstance(row.get("status"), str) else None
    failure_class = row.get("failure_class") if isinstance(row.get("failure_class"), str) else None
    success_raw = row.get("success") if isinstance(row.get("success"), bool) else None
    eligible_raw = row.get("agent_eligible") if isinstance(row.get("agent_eligible"), bool) else None
    if success_raw is not None:
        success = success_raw
    elif status == "passed":
        success = True
    elif status in FAILED_STATUSES:
        success = False
    else:
        success = None
    if eligible_raw is not None:
        eligible = eligible_raw
    else:
        eligible = status in INFERRED_ELIGIBLE_STATUSES and failure_class not in INELIGIBLE_CLASSES
    return {
        "status": status,
        "success_raw": success_raw,
        "success": success,
        "agent_eligible_raw": eligible_raw,
        "agent_eligible": eligible,
        "failure_class": failure_class,
    }


# --- Recorded values (run-directory.md "metrics", R6, R7) -------------------------------

def recorded(row: dict, key: str) -> object:
    """A recorded value: the ``metrics`` key when present (even null, R6), else top level."""
    metrics = row.get("metrics")
    if isinstance(metrics, dict) and key in metrics:
        return metrics[key]
    return row.get(key)


def recorded_number(row: dict, key: str) -> float | None:
    """A recorded number, None when unavailable; integral for count fields."""
    return _number_or_none(recorded(row, key), key)


#: Counts beyond a 64-bit integer are unavailable: no run gets there, and the typed frames
#: of the Dagster stages (nullable Int64) could not hold them (docs/metric-choices.md).
COUNT_LIMIT = INT64_MAX


def _number_or_none(value: object, key: str) -> float | None:
    """A number (R42), None otherwise; for count fields an integer within COUNT_LIMIT."""
    if not is_number(value):
        return None
    if key in COUNT_FIELDS:
        if isinstance(value, float):
            if not value.is_integer():
                return None
            value = int(value)
        if not -COUNT_LIMIT <= value <= COUNT_LIMIT:
            return None
    return value


def _bool_or_none(value: object) -> bool | None:
    return value if isinstance(value, bool) else None


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


# --- Assembly ---------------------------------------------------------------------------

@dataclass
class RunContext:
    """What every attempt of a run shares."""

    run_id: str
    run_dir: Path
    real_run_dir: str
    suite_tasks: dict[str, dict]
    #: Folders below the run folder already known to be plain folders (not symlinks).
    checked_dirs: dict[str, bool] = field(default_factory=dict)

    @classmethod
    def of(cls, raw: RawRun) -> "RunContext":
        return cls(raw.run_id, raw.run_dir, os.path.realpath(raw.run_dir), raw.suite_tasks)


def _read_artifact(ctx: RunContext, folder: ArtifactDir, name: str) -> JsonFile:
    relative = artifact_file(folder, name)
    if relative is None:
        return JsonFile(MISSING, reason=f"artifact folder refused: {folder.refused_reason}")
    return read_json_file(ctx.run_dir, ctx.real_run_dir, relative)


def history_messages(file: JsonFile) -> list | None:
    """The message list of an available history.json, None for the wrong shape (R3)."""
    if not file.available:
        return None
    value = file.value
    if isinstance(value, list):
        return value
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        return value["messages"]
    return None


def trace_evidence(file: JsonFile) -> tuple[str, str | None, list | None]:
    """trace.json status, final response and tool calls for the experiment output (1)."""
    if not file.available:
        return file.status, None, None
    value = file.value
    if not isinstance(value, dict):
        return INVALID, None, None
    final = value.get("final_response")
    calls = value.get("tool_calls", [])
    if not (final is None or isinstance(final, str)) or not isinstance(calls, list):
        return INVALID, None, None
    tool_calls = [
        {"name": c.get("name"), "arguments": c.get("arguments")} for c in calls if isinstance(c, dict)
    ]
    return AVAILABLE, final, tool_calls


def derive_attempt(raw: RawRow, ctx: RunContext) -> dict:
    """One attempt-metrics row (outputs.md) from a results row and its artifacts (3.1-3.6).

    Data-quality findings made on the way (a refused folder, a broken artifact) are kept
    in ``evidence.findings`` so that stage 4 can list them with their location.
    """
    row = raw.data
    unsafe_dir: dict | None = None
    artifact_problems: list[dict] = []
    folder = resolve_artifact_dir(
        ctx.run_dir, ctx.real_run_dir, row.get("artifact_dir"), raw.task_id, raw.attempt, ctx.checked_dirs
    )
    if folder.refused:
        unsafe_dir = {
            "line": raw.line,
            "task_id": raw.task_id,
            "attempt": raw.attempt,
            "artifact_dir": row.get("artifact_dir") if "artifact_dir" in row else None,
            "reason": folder.refused_reason,
        }

    history_file = _read_artifact(ctx, folder, "history.json")
    episode_file = _read_artifact(ctx, folder, "episode.json")
    trace_file = _read_artifact(ctx, folder, "trace.json")

    messages = history_messages(history_file)
    if history_file.available and messages is None:
        history_file = JsonFile(INVALID, reason="neither an array nor {\"messages\": [...]}", path=history_file.path)
    episode_obj = episode_file.value if episode_file.available and isinstance(episode_file.value, dict) else None
    if episode_file.available and episode_obj is None:
        episode_file = JsonFile(INVALID, reason="not a JSON object", path=episode_file.path)
    trace_status, final_response, trace_calls = trace_evidence(trace_file)

    hist, history_file = _derived_or_invalid(derive_history, messages, history_file)
    epi, episode_file = _derived_or_invalid(derive_episode, episode_obj, episode_file)

    for name, f, status in (
        ("history.json", history_file, history_file.status),
        ("episode.json", episode_file, episode_file.status),
        ("trace.json", trace_file, trace_status),
    ):
        if status not in (AVAILABLE, MISSING):
            artifact_problems.append({
                "line": raw.line, "task_id": raw.task_id, "attempt": raw.attempt,
                "file": f.path or name, "status": status,
                "reason": f.reason or "unexpected structure",
            })

    result = {
        "run_id": ctx.run_id,
        "task_id": raw.task_id,
        "attempt": raw.attempt,
        "line": raw.line,
        "category": _category(row, ctx.suite_tasks.get(raw.task_id)),
        "artifact_dir": _str_or_none(row.get("artifact_dir")),
    }
    out = outcome(row)
    result.update(out)
    result["quality_score"] = _number_or_none(row.get("quality_score"), "quality_score")
    result["rubric_pass_count"] = _number_or_none(row.get("rubric_pass_count"), "rubric_pass_count")
    result["rubric_total"] = _number_or_none(row.get("rubric_total"), "rubric_total")

    provenance: dict[str, str] = {}
    values: dict[str, object] = {}

    # History-only fields (R3).
    for f in HISTORY_FIELDS:
        if hist is not None:
            values[f], provenance[f] = getattr(hist, f), "derived"
        else:
            values[f], provenance[f] = recorded_number(row, f), "recorded"
    # Episode-only fields (R3, R40).
    for f in EPISODE_FIELDS:
        if epi is not None:
            values[f], provenance[f] = getattr(epi, f), "derived"
        else:
            values[f], provenance[f] = recorded_number(row, f), "recorded"
    if provenance["time_to_first_token_ms"] == "recorded":
        ttft = values["time_to_first_token_ms"]
        values["time_to_first_token_ms"] = ttft if ttft is not None and ttft > 0 else None
    # Tokens and tool errors: episode where it supplies a value, else history, else recorded.
    for f in TOKEN_FIELDS:
        if epi is not None and f in epi.tokens:
            values[f], provenance[f] = epi.tokens[f], "derived"
        elif hist is not None:
            values[f], provenance[f] = hist.tokens[f], "derived"
        else:
            values[f], provenance[f] = recorded_number(row, f), "recorded"
    if epi is not None and epi.tool_errors is not None:
        values["tool_errors"], provenance["tool_errors"] = epi.tool_errors, "derived"
    elif hist is not None:
        values["tool_errors"], provenance["tool_errors"] = hist.tool_errors, "derived"
    else:
        values["tool_errors"], provenance["tool_errors"] = recorded_number(row, "tool_errors"), "recorded"

    stage, ref, source = failure_evidence(
        _str_or_none(row.get("first_failure_stage")),
        _str_or_none(recorded(row, "failure_event_ref")),
        (hist.first_error_ref, hist.first_error_stage) if hist is not None else None,
        (epi.first_error_ref, epi.first_error_stage) if epi is not None else None,
    )
    provenance["first_failure_stage"] = provenance["failure_event_ref"] = source
    if out["success"] is True:  # 3.1 step 4: a passing result clears both
        stage, ref = None, None

    result.update({
        "first_failure_stage": stage,
        "failure_event_ref": ref,
        "task_wall_ms": _task_wall_ms(row),
        "setup_ms": recorded_number(row, "setup_ms"),
        "screenshot_capture_ms": recorded_number(row, "screenshot_capture_ms"),
        "time_to_first_token_ms": values["time_to_first_token_ms"],
        "llm_calls": values["llm_calls"],
        "llm_time_ms": values["llm_time_ms"],
        "vision_llm_calls": values["vision_llm_calls"],
        "vision_llm_time_ms": values["vision_llm_time_ms"],
        "device_actions": values["device_actions"],
        "device_execution_ms": values["device_execution_ms"],
        "tool_calls": values["tool_calls"],
        "screenshots_taken": values["screenshots_taken"],
        "tool_errors": values["tool_errors"],
        "replan_count": values["replan_count"],
        "retry_count": recorded_number(row, "retry_count"),
        **{f: values[f] for f in TOKEN_FIELDS},
        "cost_usd": recorded_number(row, "cost_usd"),
        "recovery_attempted": _bool_or_none(row.get("recovery_attempted")),
        "recovery_succeeded": _bool_or_none(row.get("recovery_succeeded")),
        "provenance": provenance,
        "observations": _observations(row.get("trace_observations")),
        "evidence": _evidence(row, folder, trace_file, trace_status, final_response, trace_calls, epi),
    })
    result["evidence"]["findings"] = {"unsafe_dir": unsafe_dir, "artifacts": artifact_problems}
    return result


def _derived_or_invalid(formula, value, file: JsonFile) -> tuple[object | None, JsonFile]:
    """``formula(value)``, or (None, the file marked invalid) when the formula fails.

    The formulas accept any JSON (tests feed them arbitrary values); this is the safety net
    that keeps one file nobody foresaw from stopping a whole run: the attempt falls back to
    its recorded values and the file is listed in data_quality with the error.
    """
    if value is None:
        return None, file
    try:
        return formula(value), file
    except Exception as exc:  # noqa: BLE001 - reported as a located data-quality finding
        reason = f"could not be evaluated ({type(exc).__name__}: {str(exc)[:200]})"
        return None, JsonFile(INVALID, reason=reason, path=file.path)


def _task_wall_ms(row: dict) -> float | None:
    """R7: task_wall_ms, falling back to legacy wall_ms when it is not a number."""
    value = recorded_number(row, "task_wall_ms")
    return value if value is not None else recorded_number(row, "wall_ms")


def _category(row: dict, suite_task: dict | None) -> str | None:
    """The row's category, else the suite task's (outputs.md, R24)."""
    if isinstance(row.get("category"), str):
        return row["category"]
    if suite_task is not None and isinstance(suite_task.get("category"), str):
        return suite_task["category"]
    return None


def failure_evidence(
    recorded_stage: str | None,
    recorded_ref: str | None,
    history_error: tuple[str | None, str | None] | None,
    episode_error: tuple[str | None, str | None] | None,
) -> tuple[str | None, str | None, str]:
    """(first_failure_stage, failure_event_ref, provenance) before success clearing (3.5, R3, R17).

    ``history_error`` / ``episode_error`` are the (reference, stage) of the file's first
    error, ``(None, None)`` when the file is available without one, and None when the file
    is unavailable. The sources are taken one by one, as R3 takes them: an episode error
    supplies the reference; else an available history.json supplies its own (its first
    error, or null); else (history.json unavailable and no episode error, even when
    episode.json is available) the recorded stage and reference stand, with provenance
    ``recorded``. An episode without error events says nothing about history's errors, so
    it never clears a recorded reference. With a derived reference the stage is the
    recorded label when it is setup or evaluation (outcome handling), else the evidence's
    stage, else the recorded label.
    """
    if episode_error is not None and episode_error[0] is not None:
        ref, evidence_stage = episode_error
    elif history_error is not None:
        ref, evidence_stage = history_error
    else:
        return recorded_stage, recorded_ref, "recorded"
    if recorded_stage in ("setup", "evaluation"):
        return recorded_stage, ref, "derived"
    return (evidence_stage if evidence_stage is not None else recorded_stage), ref, "derived"


def _observations(entries: object) -> dict[str, bool]:
    """{observation id: passed in this row} (reference 3.8 observations, R38)."""
    result: dict[str, bool] = {}
    if not isinstance(entries, list):
        return result
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            result[entry["id"]] = result.get(entry["id"], False) or entry.get("passed") is True
    return result


def _evidence(
    row: dict,
    folder: ArtifactDir,
    trace_file: JsonFile,
    trace_status: str,
    final_response: str | None,
    trace_calls: list | None,
    epi: EpisodeMetrics | None,
) -> dict:
    """What reports and Langfuse show for an attempt (docs/design.md), never used by a formula."""
    row_episode = _str_or_none(row.get("episode_id"))
    file_episode = epi.episode_id if epi is not None else None
    if row_episode is not None and file_episode is not None and row_episode != file_episode:
        episode_id = None  # ambiguous (run-directory.md episode.json)
    else:
        episode_id = row_episode if row_episode is not None else file_episode
    errors = {k: recorded(row, k) for k in ERROR_TEXT_FIELDS if isinstance(recorded(row, k), str)}
    return {
        "dir": folder.relative,
        "trace_artifact": {
            "status": trace_status,
            "path": trace_file.path if trace_status != MISSING else None,
        },
        "final_response": final_response,
        "tool_calls": trace_calls,
        "episode_id": episode_id,
        "trace_id": epi.trace_id if epi is not None else None,
        "hard_assertions": row.get("hard_assertions"),
        "hard_assertion_failures": row.get("hard_assertion_failures"),
        "rubric": row.get("rubric"),
        "rubric_spec": row.get("rubric_spec"),
        "environment_state_assertions": row.get("environment_state_assertions"),
        "trace_observations": row.get("trace_observations"),
        "expected_answer_match": _bool_or_none(row.get("expected_answer_match")),
        "expected_recalled_memory_match": _bool_or_none(row.get("expected_recalled_memory_match")),
        "memory_recall_evidence_source": _str_or_none(row.get("memory_recall_evidence_source")),
        "errors": errors,
        "started_at": _str_or_none(row.get("started_at")),
        "finished_at": _str_or_none(row.get("finished_at")),
    }
