"""Tool calls and results: device-action classification (reference 3.4), call/result pairing
(run-directory.md, R14) and what a result says (a screenshot, an error: 3.3, 3.5, R11-R15).

History and episode derivation both classify with these; the run generator uses the same
allowlist so that its runs exercise the rule.
"""

from __future__ import annotations

import orjson

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


# --- Device actions (3.4) ---------------------------------------------------------------------

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


def is_device_action(tool_name: object, tool_input: object) -> bool:
    """Reference 3.4: an allowlisted tool, minus the two read-only exclusions.

    quick_action with ``list`` exactly true (R20) and a listed bridge_* tool whose
    case-insensitive ``action`` is a query verb are excluded. No input, or one that is not
    a JSON object, excludes nothing ("an absent or unparseable input does not establish
    either exclusion").
    """
    if type(tool_name) is not str or tool_name not in DEVICE_ACTION_TOOLS:
        return False
    if not isinstance(tool_input, dict):
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


# --- Pairing calls with results (run-directory.md, R14) -----------------------------------------

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


# --- What a result says (3.3, 3.5, R11-R15) -----------------------------------------------------

def result_object(content: object) -> dict | None:
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


def is_screenshot_result(message: dict, parsed: dict | None, call: dict | None) -> bool:
    """Reference 3.3 step 1, R11-R13: a screenshot-like tool result (string content only).

    ``parsed`` is ``result_object`` of its content; ``call`` the call it answers, if any,
    whose tool name stands in for a result without one.
    """
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


def is_error_result(message: dict, parsed: dict | None) -> bool:
    """Reference 3.5, R15: result-level is_error, JSON is_error, or JSON ok exactly false."""
    if message.get("is_error"):
        return True
    return parsed is not None and (bool(parsed.get("is_error")) or parsed.get("ok") is False)
