"""Episode formulas (reference 3.2, 3.4, 3.5, R16, R23, R39, R40): device execution time,
replans, first-token time, tool errors, the first error and the token overrides, by
``derive_episode`` on episode objects in memory."""

from __future__ import annotations

import pytest

from bench_pipeline.attempt_metrics import derive_episode

from ..support.attempt_inputs import NAN, TOOL_ERROR_EVENTS, event


# --- device_execution_ms (3.4, R23, R39) ----------------------------------------------------

def test_reference_3_4_device_execution_example():
    """3.4: a 200 ms tap, 800 ms text entry and 400 ms failed swipe contribute 1,400 ms; a
    300 ms screenshot and an 11 ms bridge_contacts query contribute nothing."""
    events = [event("tap", 200, {}), event("enter_text", 800, {}), event("swipe", 400, {}, is_error=True)]
    assert derive_episode({"events": events}).device_execution_ms == 1400
    assert derive_episode({"events": [event("screenshot", 300, {})]}).device_execution_ms == 0
    assert derive_episode({"events": [event("bridge_contacts", 11, {"action": "query"})]}).device_execution_ms == 0


@pytest.mark.parametrize(("events", "expected"), [
    ([event("tap", -50, {}), event("swipe", 100, {})], 100),
    ([event("tap", -50, {})], 0),
    ([event("tap", 0, {}), event("tap", 0, {})], 0),
    ([event("tap", 212.4, {}), event("tap", 0.4, {})], pytest.approx(212.8)),
    ([event("screenshot", "absent", {})], 0),                         # events, none qualifying
    ([event("bridge_contacts", "absent", {"action": "Query"}), event("tap", 5, {})], 5),
    ([event("quick_action", 30, {"list": True}), event("quick_action", 20, {"list": "true"})], 20),
    ([event("tap", 500, {}, kind="tool_call"), event("tap", 100, {})], 100),
    ([event("tap", "absent", {}, kind="tool_call"), event("tap", 100, {})], 100),
    ([event("tap", 500, {}, kind="model_response")], 0),
    (["junk", 3, event("tap", 10, {})], 10),
    ([event("tap", 200, {}), event("tap", "absent", {})], None),       # incomplete
    ([event("tap", 200, {}), event("tap", None, {})], None),
    ([event("tap", 200, {}), event("tap", True, {})], None),
    ([event("tap", 200, {}), event("tap", "100", {})], None),
    ([event("tap", 200, {}), event("tap", NAN, {})], None),
    ([event("Tap", "absent", {}), event("tap", 7, {})], 7),
])
def test_device_execution_ms(events, expected):
    assert derive_episode({"events": events}).device_execution_ms == expected


@pytest.mark.parametrize("episode", [{"events": []}, {"episode_id": "e"}, {"events": "x"}, {"events": None},
                                     {"events": {"a": 1}}])
def test_device_execution_null_without_events(episode):
    assert derive_episode(episode).device_execution_ms is None


@pytest.mark.parametrize(("events", "expected"), [
    # Missing/null result input: the last preceding input for the same tool name, any event type.
    ([event("bridge_calendar", tool_input={"action": "list"}, kind="tool_call"),
      event("bridge_calendar", 40), event("tap", 10, {})], 10),
    ([event("bridge_calendar", tool_input={"action": "list"}, kind="tool_call"),
      event("bridge_calendar", 40, None), event("tap", 10, {})], 10),
    ([event("bridge_calendar", tool_input={"action": "list"}, kind="model_response"),
      event("bridge_calendar", 40), event("tap", 10, {})], 10),
    ([event("bridge_calendar", tool_input={"action": "list"}, kind="error"),
      event("bridge_calendar", 40), event("tap", 10, {})], 10),
    ([event("bridge_calendar", 1, {"action": "get"}), event("bridge_calendar", 40)], 0),
    # The *last* preceding input is used.
    ([event("bridge_calendar", tool_input={"action": "list"}, kind="tool_call"),
      event("bridge_calendar", tool_input={"action": "create"}, kind="tool_call"),
      event("bridge_calendar", 40)], 40),
    ([event("bridge_calendar", tool_input={"action": "create"}, kind="tool_call"),
      event("bridge_calendar", tool_input={"action": "search"}, kind="tool_call"),
      event("bridge_calendar", 40)], 0),
    # The result's own input takes precedence.
    ([event("bridge_calendar", tool_input={"action": "list"}, kind="tool_call"),
      event("bridge_calendar", 40, {"action": "create"})], 40),
    ([event("bridge_calendar", tool_input={"action": "create"}, kind="tool_call"),
      event("bridge_calendar", 40, {"action": "list"})], 0),
    # Only preceding inputs, and only for the same tool name.
    ([event("bridge_calendar", 40), event("bridge_calendar", tool_input={"action": "list"}, kind="tool_call")], 40),
    ([event("bridge_media", tool_input={"action": "list"}, kind="tool_call"), event("bridge_calendar", 40)], 40),
    ([event("quick_action", tool_input={"list": True}, kind="tool_call"), event("quick_action", 25)], 0),
    # A string input holding JSON is parsed.
    ([event("bridge_calendar", tool_input='{"action": "read"}', kind="tool_call"), event("bridge_calendar", 40)], 0),
])
def test_device_execution_input_fallback(events, expected):
    assert derive_episode({"events": events}).device_execution_ms == expected


def test_excluded_result_with_missing_duration_does_not_make_it_unavailable():
    events = [event("bridge_contacts", tool_input={"action": "query"}, kind="tool_call"),
              event("bridge_contacts"), event("tap", 9, {})]
    assert derive_episode({"events": events}).device_execution_ms == 9


# --- replan_count (3.5) ---------------------------------------------------------------------

@pytest.mark.parametrize(("events", "expected"), [
    ([{"type": "tool_result", "needs_replan": True}, {"type": "tool_result", "needs_replan": False},
      {"type": "tool_result", "needs_replan": 1}, {"type": "model_response", "needs_replan": "yes"},
      {"type": "tool_call"}], 3),
    ([{"type": "tool_result", "needs_replan": False}, {"type": "tool_result", "needs_replan": False}], 0),
    ([{"type": "tool_result", "needs_replan": None}], 0),
    ([{"type": "tool_result", "needs_replan": 0}, {"type": "tool_result"}], 0),
    ([{"type": "tool_result"}, {"type": "model_response"}], None),
    (["x", {"type": "error", "needs_replan": True}], 1),
    ([], None),
])
def test_replan_count(events, expected):
    assert derive_episode({"events": events}).replan_count == expected


def test_replan_count_null_when_events_not_a_list():
    assert derive_episode({"events": {"needs_replan": True}}).replan_count is None


# --- time_to_first_token_ms (3.2, R39, R40) -------------------------------------------------

@pytest.mark.parametrize(("value", "expected"), [
    (640, 640), (0.5, 0.5), (0, None), (-1, None), (True, None), ("640", None), (None, None), ("absent", None),
    (NAN, None), (float("inf"), None),
])
def test_ttft_from_episode_positive_only(value, expected):
    extra = {} if value == "absent" else {"first_token_time_ms": value}
    assert derive_episode({"events": [], "extra": extra}).time_to_first_token_ms == expected


@pytest.mark.parametrize("extra", [[{"first_token_time_ms": 640}], "640", 640, None])
def test_ttft_non_object_extra_is_none(extra):
    assert derive_episode({"events": [], "extra": extra}).time_to_first_token_ms is None


def test_extra_counts_when_events_is_not_a_list():
    epi = derive_episode({"events": "x", "extra": {"first_token_time_ms": 50, "prompt_tokens": 3}})
    assert (epi.time_to_first_token_ms, epi.tokens["input_tokens"]) == (50, 3)


# --- token overrides (3.5) ------------------------------------------------------------------

def test_token_overrides_are_the_numeric_extra_values_including_zero():
    extra = {"prompt_tokens": 0, "completion_tokens": 5, "cached_prompt_tokens": 0, "reasoning_tokens": 0}
    assert derive_episode({"events": [], "extra": extra}).tokens == {
        "input_tokens": 0, "output_tokens": 5, "cached_input_tokens": 0, "reasoning_tokens": 0}


@pytest.mark.parametrize("bad", ["9", True, False, None, NAN, [1], {"v": 1}])
def test_non_numeric_episode_values_do_not_override(bad):
    keys = ("prompt_tokens", "completion_tokens", "total_tokens", "cached_prompt_tokens", "reasoning_tokens")
    assert derive_episode({"events": [], "extra": {k: bad for k in keys}}).tokens == {}


def test_episode_override_key_names_are_the_episode_names():
    """extra.input_tokens / output_tokens / cached_input_tokens are not the override keys."""
    extra = {"input_tokens": 1, "output_tokens": 1, "cached_input_tokens": 1, "cached_tokens": 1}
    assert derive_episode({"extra": extra}).tokens == {}


# --- tool errors and the first error (3.5, R16, R18, R23) -----------------------------------

def test_episode_tool_errors_count_tool_result_events_marked_is_error():
    events = TOOL_ERROR_EVENTS  # two tool_result events with is_error true
    assert derive_episode({"events": events}).tool_errors == 2


@pytest.mark.parametrize("events", ["absent", [], "not a list", {"0": {}}, None])
def test_empty_or_absent_episode_events_replace_no_tool_errors(events):
    episode = {"episode_id": "e"} if events == "absent" else {"events": events}
    assert derive_episode(episode).tool_errors is None


def test_episode_error_stage_uses_input_fallback():
    """R18 + R23: the errored bridge result has no input; the preceding call's read-only
    action excludes it from device actions, so the stage is unknown."""
    epi = derive_episode({"events": [event("bridge_contacts", tool_input={"action": "query"}, kind="tool_call"),
                                     event("bridge_contacts", 11, is_error=True)]})
    assert (epi.first_error_ref, epi.first_error_stage) == ("episode:1", "unknown")


def test_first_episode_error_is_the_first_tool_result_event_marked_is_error():
    """R16: error and model events do not count; the index counts every entry (R22)."""
    epi = derive_episode({"events": ["junk", event("screenshot", 5, {}), event("tap", 5, {}, is_error=True),
                                     event("swipe", 5, {}, is_error=True)]})
    assert (epi.first_error_ref, epi.first_error_stage) == ("episode:2", "device_execution")
    epi = derive_episode({"events": [event("tap", 1, {}, kind="model_response", is_error=True),
                                     {"type": "error", "is_error": True},
                                     event("tap", 1, {}, kind="tool_call", is_error=True), event("tap", 1, {})],
                          "error": "agent crashed"})
    assert (epi.first_error_ref, epi.first_error_stage) == (None, None)



# --- values of the wrong type, located (data_quality.invalid_artifact_values) ---------------

def test_an_events_list_or_extra_of_another_type_and_ids_that_are_not_texts_are_refused():
    out = derive_episode({"events": "none", "extra": [1], "episode_id": 5, "trace_id": True})
    assert out.refused == [
        ("events", "none", "not an array: no events (R39)"),
        ("extra", [1], "not an object: no extra values (R39)"),
        ("episode_id", 5, "not a string: read as absent"),
        ("trace_id", True, "not a string: read as absent"),
    ]
    assert (out.device_execution_ms, out.episode_id, out.trace_id) == (None, None, None)


def test_values_of_the_wrong_type_are_refused_where_they_are_read():
    """A device result's duration, the first-token time and a token override that are not
    numbers are named with what became of them; a non-device result's duration (not read),
    a negative override (a number) and absent keys are not."""
    events = [event("tap", 200, {}), event("tap", "100", {}), event("screenshot", "x", {})]
    extra = {"first_token_time_ms": "12", "prompt_tokens": "5", "total_tokens": -3}
    out = derive_episode({"events": events, "extra": extra, "episode_id": "e-1"})
    assert out.refused == [
        ("events[1].duration_ms", "100", "a string, not a number: the attempt's device_execution_ms is unavailable"),
        ("extra.first_token_time_ms", "12", "a string, not a number: the attempt's time_to_first_token_ms is unavailable"),
        ("extra.prompt_tokens", "5", "a string, not a number: not used: input_tokens stays the history sum"),
    ]
    assert (out.device_execution_ms, out.time_to_first_token_ms, out.tokens) == (None, None, {"total_tokens": -3})


def test_an_episode_of_the_right_types_refuses_nothing():
    extra = {"first_token_time_ms": 0, "prompt_tokens": 5, "completion_tokens": 1.5}
    assert derive_episode({"events": [event("tap", -5, {}), event("tap", "absent", {}), "junk"],
                           "extra": extra, "episode_id": None}).refused == []
