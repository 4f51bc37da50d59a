"""Tool classification (reference 3.4, R18, R20, R21) and tool-call pairing (run-directory.md,
R14): ``is_device_action``/``is_device_call`` and what ``derive_history`` and ``derive_episode``
decide with them, on messages and events in memory."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_pipeline.attempt_metrics import (
    derive_episode,
    derive_history,
    is_device_action,
    is_device_call,
    pair_tool_calls,
    parse_tool_input,
)

from ..support.attempt_inputs import JSON_VALUES, call, call_with_input, event, model, result

#: Reference 3.4's allowlist, as the reference writes it.
ALLOWLIST = [
    "touch_gesture", "enter_text", "keyboard_text", "keyboard_tap", "mouse_move",
    "mouse_scroll", "quick_action", "open_app", "launch_app", "open_url",
    "search_launch_app", "bridge_open_app", "bridge_clipboard", "bridge_contacts",
    "bridge_calendar", "bridge_notification", "bridge_media",
    "swipe", "tap", "long_press", "drag", "press_key",
]
BRIDGES = [n for n in ALLOWLIST if n.startswith("bridge_")]
READ_ONLY = ["query", "read", "get", "inspect", "list", "search"]


# --- device actions (3.4) -------------------------------------------------------------------

def test_every_allowlisted_name_is_a_device_action():
    hist = derive_history([call(n, {"x": 1}) for n in ALLOWLIST])
    assert (hist.device_actions, hist.tool_calls) == (len(ALLOWLIST), len(ALLOWLIST))
    assert all(is_device_action(n, {"x": 1}) for n in ALLOWLIST)


@pytest.mark.parametrize("name", ["Tap", "TAP", "tap ", "screenshot", "bridge_files", "search", "recall_memory",
                                  "open", "quick_actions", "bridge_contact", ""])
def test_names_outside_the_allowlist_are_not_device_actions(name):
    hist = derive_history([call(name, {"x": 1})])
    assert (hist.device_actions, hist.tool_calls) == (0, 1)
    assert is_device_action(name, {"x": 1}) is False


@pytest.mark.parametrize(("tool_input", "counted"), [
    ({"list": True}, False),
    ('{"list": true}', False),
    ({"list": True, "name": "x"}, False),
    ({"list": "true"}, True),       # R20: only JSON true
    ({"list": 1}, True),
    ({"list": False}, True),
    ({"list": None}, True),
    ({"name": "wifi"}, True),
    ("absent", True),
    (None, True),
    ("{not json", True),            # unparseable: no input, no exclusion
    ('[true]', True),               # R21: non-object JSON is no input
    ("true", True),
])
def test_quick_action_list_exclusion(tool_input, counted):
    assert derive_history([call_with_input("quick_action", tool_input)]).device_actions == (1 if counted else 0)


@pytest.mark.parametrize("action", READ_ONLY + ["Query", "LIST", "Search", "gEt"])
def test_read_only_bridge_actions_are_excluded_case_insensitively(action):
    history = [m for name in BRIDGES for m in (call(name, {"action": action}), call(name, '{"action": "%s"}' % action))]
    hist = derive_history(history)
    assert (hist.device_actions, hist.tool_calls) == (0, 2 * len(BRIDGES))


@pytest.mark.parametrize(("tool_input", "counted"), [
    ({"action": "create"}, True),
    ({"action": "send"}, True),
    ({"action": 5}, True),
    ({"action": None}, True),
    ({"action": ["query"]}, True),
    ({"query": "x"}, True),
    ({}, True),
    ("absent", True),
    ("not json", True),
    ('["query"]', True),
    ('"query"', True),
    ('{"action": "query"}', False),
    ({"action": "querying"}, True),
])
def test_bridge_action_edge_cases(tool_input, counted):
    assert derive_history([call_with_input("bridge_calendar", tool_input)]).device_actions == (1 if counted else 0)


def test_list_flag_does_not_exclude_other_tools():
    assert derive_history([call("open_app", {"list": True}), call("tap", {"action": "query"})]).device_actions == 2


def test_tool_names_that_are_not_strings_are_no_device_actions():
    history = [model(), call({"name": "tap"}), result({"name": "tap"}, content="{\"is_error\": true}"),
               call(["tap"], call_id="x"), result(["tap"], call_id="x")]
    episode = {"events": [event({"n": 1}, duration=5, tool_input={"a": 1}), event({"n": 1}, duration=7, is_error=True)]}
    hist = derive_history(history)
    assert (hist.tool_calls, hist.device_actions) == (2, 0)
    epi = derive_episode(episode)
    assert (epi.device_execution_ms, epi.tool_errors, epi.first_error_ref) == (0, 1, "episode:1")
    assert epi.first_error_stage == "unknown"


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(ALLOWLIST + ["screenshot", "search", ""]) | JSON_VALUES,
       raw_input=JSON_VALUES | st.sampled_from(['{"list": true}', '{"action": "Query"}', '{"action": "send"}', "{oops"]))
def test_is_device_call_parses_only_when_needed_and_agrees_with_the_rule(name, raw_input):
    """3.4: deciding without parsing the input of tools whose input cannot matter gives the
    same answer as parsing every input first."""
    assert is_device_call(name, raw_input) == is_device_action(name, parse_tool_input(raw_input))


# --- pairing (R14) --------------------------------------------------------------------------

def test_pairing_each_result_answers_at_most_one_call():
    history = [call("capture"), call("capture"), result("capture", '{"data": "x"}')]
    hist = derive_history(history)
    assert (hist.tool_calls, hist.screenshots_taken) == (2, 1)
    assert pair_tool_calls(history, [0, 1], [2]) == {0: 2}


def test_pairing_with_duplicate_ids_each_result_once():
    history = [call("capture", {}, "c1"), call("capture", {}, "c1"), result("capture", '{"data": "x"}', "c1")]
    assert derive_history(history).screenshots_taken == 1


def test_pairing_needs_a_later_result():
    history = [result("capture", '{"data": "x"}'), call("capture")]
    assert derive_history(history).screenshots_taken == 0
    assert pair_tool_calls(history, [1], [0]) == {}


def test_pairing_without_ids_needs_the_same_name():
    assert derive_history([call("capture"), result("other", '{"data": "x"}')]).screenshots_taken == 0


def test_call_with_id_does_not_pair_with_id_less_result():
    assert derive_history([call("capture", {}, "c1"), result("capture", '{"data": "x"}')]).screenshots_taken == 0


def test_call_with_id_does_not_pair_with_other_id():
    assert derive_history([call("capture", {}, "c1"), result("capture", '{"data": "x"}', "c2")]).screenshots_taken == 0


def test_result_before_call_with_same_id_does_not_pair():
    assert derive_history([result("capture", '{"data": "x"}', "c1"), call("capture", {}, "c1")]).screenshots_taken == 0


def test_pairing_by_id_out_of_order_decides_the_errored_call():
    """R14 + R18: the error result answers call c2 (screenshot), not c1 (tap)."""
    history = [call("tap", {"x": 1}, "c1"), call("screenshot", {}, "c2"),
               {"type": "tool_result", "tool_call_id": "c2", "content": "boom", "is_error": True},
               {"type": "tool_result", "tool_call_id": "c1", "content": "{\"ok\": true}"}]
    hist = derive_history(history)
    assert (hist.first_error_ref, hist.first_error_stage) == ("history:2", "unknown")
    assert pair_tool_calls(history, [0, 1], [2, 3]) == {0: 3, 1: 2}
    history[2], history[3] = (
        {"type": "tool_result", "tool_call_id": "c2", "content": "{\"ok\": true}"},
        {"type": "tool_result", "tool_call_id": "c1", "content": "boom", "is_error": True},
    )
    hist = derive_history(history)
    assert (hist.first_error_ref, hist.first_error_stage) == ("history:3", "device_execution")


@pytest.mark.parametrize(("error_first", "stage"), [(True, "unknown"), (False, "device_execution")])
def test_pairing_without_ids_in_call_order(error_first, stage):
    """Call 1 is a read-only query (not a device action), call 2 a device action; id-less
    results of the same name answer calls in order."""
    ok = result("bridge_contacts", "{\"ok\": true}")
    err = result("bridge_contacts", "denied", is_error=True)
    history = [call("bridge_contacts", {"action": "query"}), call("bridge_contacts", {"action": "create"}),
               err if error_first else ok, ok if error_first else err]
    hist = derive_history(history)
    assert hist.first_error_stage == stage
    assert hist.first_error_ref == ("history:2" if error_first else "history:3")


def test_id_less_call_takes_next_same_name_result_in_call_order():
    """R14 literally: calls are paired in call order; the id-less first call takes the next
    later result of its name not yet taken, even though that result carries the second
    call's id."""
    history = [call("bridge_contacts", {"action": "query"}), call("bridge_contacts", {"action": "create"}, "c9"),
               result("bridge_contacts", "denied", "c9", is_error=True)]
    hist = derive_history(history)
    assert (hist.first_error_ref, hist.first_error_stage) == ("history:2", "unknown")


# --- ids and names of any JSON type (R14, R22) ----------------------------------------------

def test_object_and_array_ids_pair_with_equal_ids():
    history = [
        model(),
        call("tap", call_id=["c", 1]), call("swipe", call_id={"id": "c2"}),
        result("swipe", content="{\"ok\": false}", call_id={"id": "c2"}),
        result("tap", content="screenshot observation", call_id=["c", 1]),
    ]
    hist = derive_history(history)
    assert (hist.tool_calls, hist.device_actions, hist.screenshots_taken, hist.tool_errors) == (2, 2, 1, 1)
    assert hist.first_error_ref == "history:3" and hist.first_error_stage == "device_execution"


def test_ids_of_different_json_types_do_not_pair():
    """1, 1.0 and true are different ids (R14 "with that id"); only the exact one pairs."""
    history = [call("tap", call_id=1), result("tap", content="screenshot observation", call_id=True),
               result("tap", content="screenshot observation", call_id=1.0)]
    assert derive_history(history).screenshots_taken == 0


@pytest.mark.parametrize("tool_input", ["list", ["list", True], 7, True])
@pytest.mark.parametrize("name", ["quick_action", "bridge_clipboard"])
def test_an_input_that_is_not_an_object_excludes_nothing(name, tool_input):
    """Reference 3.4: an unparseable input does not establish either exclusion."""
    assert is_device_action(name, tool_input) is True
