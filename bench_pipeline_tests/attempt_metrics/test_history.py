"""History formulas (reference 3.3, 3.5): model calls, model time, visual inference, tool
counters, tool errors and the first error, by ``derive_history`` on messages in memory."""

from __future__ import annotations

import math

import pytest

from bench_pipeline.attempt_metrics import derive_history

from ..support.attempt_inputs import IMG, NAN, call, error_pair, event, model, result


# --- model calls and model time (3.3, R8, R22) ----------------------------------------------

def test_only_usage_bearing_assistant_and_tool_call_messages_are_model_calls():
    history = [
        {"type": "system", "content": "s", "usage": {"input_tokens": 1, "output_tokens": 1}, "duration_ms": 1000},
        {"type": "user", "content": "u", "usage": {"input_tokens": 1, "output_tokens": 1}, "duration_ms": 1000},
        model(100),
        model(50, kind="tool_call", tool_name="tap", tool_input={"x": 1}),
        result("tap", usage={"input_tokens": 1, "output_tokens": 1}, duration_ms=1000),
        model(None, usage=None),
        model(None, usage=[1, 2]),
        model(None, usage="input_tokens=3"),
        model(None, usage=None, kind="tool_call", tool_name="swipe"),
        "not an object",
        7,
        model(25, usage={}),  # an empty mapping is still a mapping
    ]
    hist = derive_history(history)
    assert hist.llm_calls == 3
    assert hist.llm_time_ms == 175
    assert hist.tool_calls == 2


@pytest.mark.parametrize("bad", ["absent", None, -1, -0.5, "100", True, False, NAN, float("inf"), [100]])
def test_llm_time_null_when_any_qualifying_duration_is_missing_or_invalid(bad):
    hist = derive_history([model(900), model(None) if bad == "absent" else model(bad), model(700)])
    assert hist.llm_calls == 3
    assert hist.llm_time_ms is None


def test_zero_and_fractional_durations_are_valid():
    assert derive_history([model(0), model(12.5), model(100)]).llm_time_ms == pytest.approx(112.5)


def test_nan_duration_in_history_makes_llm_time_unavailable():
    hist = derive_history([model(NAN), model(100)])
    assert hist.llm_calls == 2
    assert hist.llm_time_ms is None
    assert not (isinstance(hist.llm_time_ms, float) and math.isnan(hist.llm_time_ms))


def test_huge_integer_duration_is_not_a_number():
    hist = derive_history([model(10**400), model(5)])
    assert (hist.llm_calls, hist.llm_time_ms) == (2, None)


def test_no_deduplication_by_request_id():
    hist = derive_history([model(100, request_id="r1", id="m1"), model(100, request_id="r1", id="m1")])
    assert (hist.llm_calls, hist.llm_time_ms) == (2, 200)


# --- visual inference (3.3, R10-R13) --------------------------------------------------------

def test_an_image_on_a_model_message_makes_that_message_visual():
    """R10 (re-pinned to the runner's derivation): the image sets the flag before the
    message's own model-call check, and the flag clears after it."""
    hist = derive_history([model(100, attachments=IMG), model(200), model(300)])
    assert (hist.vision_llm_calls, hist.vision_llm_time_ms) == (1, 100)


def test_an_image_on_a_tool_call_model_message_makes_it_visual():
    history = [model(None, usage=None), model(40, kind="tool_call", tool_name="tap", tool_input={}, attachments=IMG),
               model(60)]
    hist = derive_history(history)
    assert (hist.llm_calls, hist.vision_llm_calls, hist.vision_llm_time_ms) == (2, 1, 40)


def test_an_image_on_a_message_that_is_no_model_call_flags_the_next_call():
    hist = derive_history([model(None, usage=None, attachments=IMG), model(200), model(300)])
    assert (hist.vision_llm_calls, hist.vision_llm_time_ms) == (1, 200)


@pytest.mark.parametrize("attachment", [
    {"kind": "image", "path": "pre.jpg"},        # the runner's key
    {"type": "image"}, {"kind": "IMAGE"}, {"type": "Image"},
    {"kind": "file", "type": "image"},           # either key
])
def test_image_attachments_by_kind_or_type_in_any_case(attachment):
    hist = derive_history([{"type": "user", "content": "x", "attachments": [attachment]}, model(100)])
    assert (hist.vision_llm_calls, hist.vision_llm_time_ms) == (1, 100)


@pytest.mark.parametrize("attachment", [{"kind": "screenshot"}, {"kind": None, "type": "file"}, {"kind": ["image"]},
                                        {"path": "image"}, "image"])
def test_other_attachments_are_not_images(attachment):
    hist = derive_history([{"type": "user", "content": "x", "attachments": [attachment]}, model(100)])
    assert (hist.vision_llm_calls, hist.vision_llm_time_ms) == (0, None)


def test_image_on_user_message_flags_next_call():
    hist = derive_history([{"type": "user", "content": "look", "attachments": IMG}, model(100), model(200)])
    assert (hist.vision_llm_calls, hist.vision_llm_time_ms) == (1, 100)


def test_non_image_attachment_does_not_flag():
    history = [{"type": "user", "content": "x", "attachments": [{"type": "file", "path": "a.txt"}]}, model(100)]
    hist = derive_history(history)
    assert (hist.vision_llm_calls, hist.vision_llm_time_ms) == (0, None)


def test_usage_without_match_gives_zero_calls_and_null_time():
    hist = derive_history([model(100), model(200)])
    assert (hist.vision_llm_calls, hist.vision_llm_time_ms) == (0, None)


def test_several_screenshots_before_one_call_count_once_and_flag_clears():
    history = [
        {"type": "user", "content": "x", "attachments": IMG + IMG},
        call("screenshot", {}, "s1"), result("screenshot", "ok", "s1"),
        model(100), model(200),
    ]
    hist = derive_history(history)
    assert (hist.llm_calls, hist.vision_llm_calls, hist.vision_llm_time_ms) == (2, 1, 100)


def test_non_qualifying_message_does_not_clear_the_flag():
    history = [{"type": "user", "content": "x", "attachments": IMG}, model(None, usage=None), model(300)]
    hist = derive_history(history)
    assert (hist.vision_llm_calls, hist.vision_llm_time_ms) == (1, 300)


def test_two_visual_calls():
    history = [{"type": "user", "attachments": IMG}, model(100), model(50),
               call("screenshot", {}, "s"), result("screenshot", "img", "s"), model(200)]
    hist = derive_history(history)
    assert (hist.vision_llm_calls, hist.vision_llm_time_ms, hist.llm_time_ms) == (2, 300, 350)


def test_vision_time_null_when_a_matching_call_lacks_duration():
    hist = derive_history([{"type": "user", "attachments": IMG}, model(None), model(200)])
    assert (hist.vision_llm_calls, hist.vision_llm_time_ms, hist.llm_time_ms) == (1, None, None)


def test_vision_time_only_needs_the_matching_calls_durations():
    hist = derive_history([model(None), {"type": "user", "attachments": IMG}, model(300)])
    assert hist.llm_time_ms is None
    assert (hist.vision_llm_calls, hist.vision_llm_time_ms) == (1, 300)


def test_image_after_last_call_counts_nothing():
    hist = derive_history([model(100), {"type": "user", "attachments": IMG}])
    assert (hist.vision_llm_calls, hist.vision_llm_time_ms) == (0, None)


@pytest.mark.parametrize(("result_msg", "visual"), [
    (result("screenshot", "done", "c1"), True),
    (result("screenshot", "", "c1"), True),
    (result("screenshot", {"data": "abc", "width": 1}, "c1"), False),    # R11: needs a string
    (result("screenshot", None, "c1"), False),
    (result("screenshot", ["screenshot observation"], "c1"), False),
    (result("capture", "here is a screenshot observation of home", "c1"), True),
    (result("capture", "Screenshot Observation", "c1"), False),          # R12: case-sensitive
    (result("capture", "SCREENSHOT OBSERVATION", "c1"), False),
    (result("capture", '{"data": "abc", "width": 100}', "c1"), True),
    (result("capture", '{"data": "abc", "height": 100}', "c1"), True),
    (result("capture", '{"data": "abc", "height": null}', "c1"), True),  # key present
    (result("capture", '{"data": "", "width": 1}', "c1"), True),         # a string data field
    (result("capture", '{"data": "abc"}', "c1"), False),
    (result("capture", '{"data": 5, "width": 1}', "c1"), False),
    (result("capture", '{"data": null, "width": 1}', "c1"), False),
    (result("capture", '{"data": ["a"], "height": 1}', "c1"), False),
    (result("capture", '[{"data": "abc", "width": 1}]', "c1"), False),
    (result("capture", "ok", "c1"), False),
    (result(None, "ok", "c1"), False),
])
def test_screenshot_like_result_detection(result_msg, visual):
    name = "screenshot" if result_msg.get("tool_name") == "screenshot" else "capture"
    hist = derive_history([call(name, {}, "c1"), result_msg, model(100)])
    assert hist.vision_llm_calls == (1 if visual else 0)
    assert hist.vision_llm_time_ms == (100 if visual else None)


def test_result_without_tool_name_uses_paired_call_name():
    assert derive_history([call("screenshot", {}, "c1"), result(None, "done", "c1"), model(100)]).vision_llm_calls == 1
    # No id and no name: the result cannot be paired by name, so nothing names it screenshot.
    history = [call("screenshot"), {"type": "tool_result", "content": "done"}, model(100)]
    assert derive_history(history).vision_llm_calls == 0


def test_result_tool_name_wins_over_paired_call_name():
    history = [call("screenshot", {}, "c1"), result("other", "done", "c1"), model(100)]
    assert derive_history(history).vision_llm_calls == 0


def test_tool_call_with_usage_after_screenshot_is_the_visual_call():
    history = [call("screenshot", {}, "s"), result("screenshot", "x", "s"),
               model(70, kind="tool_call", tool_name="tap", tool_input={"x": 1}), model(30)]
    hist = derive_history(history)
    assert (hist.llm_calls, hist.vision_llm_calls, hist.vision_llm_time_ms) == (2, 1, 70)
    assert (hist.tool_calls, hist.device_actions) == (2, 1)


@pytest.mark.parametrize("attachments", ["img", {"type": "image"}, [None, "image", 3], []])
def test_odd_attachments_do_not_flag_or_crash(attachments):
    hist = derive_history([{"type": "user", "attachments": attachments}, model(100)])
    assert (hist.vision_llm_calls, hist.vision_llm_time_ms) == (0, None)


def test_image_among_odd_attachments_flags():
    hist = derive_history([{"type": "user", "attachments": [None, "image", {"type": "image"}]}, model(100)])
    assert (hist.vision_llm_calls, hist.vision_llm_time_ms) == (1, 100)


def test_screenshot_result_without_a_call_still_flags():
    hist = derive_history([result("screenshot", "done"), model(100)])
    assert (hist.vision_llm_calls, hist.vision_llm_time_ms, hist.tool_calls) == (1, 100, 0)


def test_image_attachment_on_tool_result_flags_even_without_string_content():
    history = [call("capture", {}, "c"), result("capture", {"bytes": 1}, "c", attachments=IMG), model(100)]
    assert derive_history(history).vision_llm_calls == 1


def test_a_flagged_call_carrying_an_image_is_one_visual_call():
    """The screenshot and the call's own image (R10: set before its model-call check) both
    flag that call; the flag clears after it, so the next call is not visual."""
    hist = derive_history([result("screenshot", "done"), model(100, attachments=IMG), model(200), model(400)])
    assert (hist.vision_llm_calls, hist.vision_llm_time_ms, hist.llm_time_ms) == (1, 100, 700)


# --- tool calls, device actions, screenshots_taken (3.4, 3.5, R13) --------------------------

@pytest.mark.parametrize(("content", "counted"), [
    ('{"data": "abc"}', True),
    ('{"data": 1}', True),
    ('{"data": {"k": 1}}', True),
    ('{"data": ""}', False),
    ('{"data": 0}', False),
    ('{"data": null}', False),
    ('{"data": []}', False),
    ('{"image": "abc"}', False),
    ("screenshot observation: home", True),
    ("a Screenshot observation", False),
    ('["data"]', False),
    ({"data": "abc"}, False),   # not a string
    ("done", False),
])
def test_screenshots_taken_by_result_shape(content, counted):
    hist = derive_history([call("capture", {}, "c1"), result("capture", content, "c1")])
    assert hist.screenshots_taken == (1 if counted else 0)
    assert hist.tool_calls == 1


def test_screenshot_tool_name_alone_does_not_count_as_screenshot_taken():
    assert derive_history([call("screenshot", {}, "c1"), result("screenshot", "done", "c1")]).screenshots_taken == 0


def test_call_without_result_counts_as_tool_call_only():
    hist = derive_history([call("capture", {}, "c1"), call("tap", {"x": 1}), model(100)])
    assert (hist.tool_calls, hist.screenshots_taken, hist.device_actions) == (2, 0, 1)


def test_every_tool_call_message_is_a_tool_call():
    hist = derive_history([{"type": "tool_call"}, {"type": "tool_call", "tool_name": 5}, call("tap", {})])
    assert (hist.tool_calls, hist.device_actions) == (3, 1)


def test_only_tool_call_messages_count_as_device_actions():
    history = [result("tap", "x"), event("tap", 1, {}), model(10, kind="assistant", tool_name="tap")]
    assert derive_history(history).device_actions == 0


def test_tokens_on_non_qualifying_messages_are_ignored():
    history = [{"type": "user", "usage": {"input_tokens": 1000, "output_tokens": 1000}},
               result("tap", "x", usage={"input_tokens": 1000, "output_tokens": 1000}),
               model(1, {"input_tokens": 1, "output_tokens": 2})]
    tokens = derive_history(history).tokens
    assert (tokens["input_tokens"], tokens["output_tokens"], tokens["total_tokens"]) == (1, 2, 3)


# --- tool errors and the first error (3.5, R15-R18, R22) ------------------------------------

@pytest.mark.parametrize(("extra", "content", "errors"), [
    ({"is_error": True}, "x", 1),
    ({"is_error": 1}, "x", 1),
    ({"is_error": "yes"}, "x", 1),
    ({"is_error": False}, "x", 0),
    ({"is_error": 0}, "x", 0),
    ({"is_error": None}, "x", 0),
    ({"is_error": ""}, "x", 0),
    ({}, '{"is_error": true}', 1),
    ({}, '{"is_error": 1}', 1),
    ({}, '{"is_error": false}', 0),
    ({}, '{"ok": false}', 1),
    ({}, '{"ok": false, "is_error": false}', 1),
    ({}, '{"ok": 0}', 0),
    ({}, '{"ok": null}', 0),
    ({}, '{"ok": "false"}', 0),
    ({}, '{"ok": true}', 0),
    ({}, "ok=false", 0),
    ({}, '[{"ok": false}]', 0),
    ({}, {"ok": False}, 0),        # only string content is parsed
    ({}, {"is_error": True}, 0),
    ({"is_error": True}, {"ok": True}, 1),
])
def test_history_tool_error_rules(extra, content, errors):
    assert derive_history([call("capture", {}, "c1"), result("capture", content, "c1", **extra)]).tool_errors == errors


def test_only_tool_results_are_errors():
    history = [call("tap", {"x": 1}, is_error=True), model(100, is_error=True), {"type": "user", "is_error": True}]
    assert derive_history(history).tool_errors == 0


@pytest.mark.parametrize(("name", "tool_input", "stage"), [
    ("tap", {"x": 1}, "device_execution"),
    ("bridge_calendar", {"action": "create"}, "device_execution"),
    ("quick_action", {"list": "true"}, "device_execution"),
    ("screenshot", {}, "unknown"),
    ("recall_memory", {}, "unknown"),
    ("bridge_contacts", {"action": "Query"}, "unknown"),   # R18: exclusions included
    ("quick_action", {"list": True}, "unknown"),
])
def test_history_error_stage(name, tool_input, stage):
    hist = derive_history([model(10)] + error_pair(name, tool_input))
    assert hist.first_error_ref == "history:2"
    assert hist.first_error_stage == stage


def test_first_recognized_error_is_the_reference():
    history = [call("tap", {}, "a"), result("tap", "fine", "a"),
               call("screenshot", {}, "b"), result("screenshot", '{"ok": false}', "b"),
               call("tap", {}, "c"), result("tap", "x", "c", is_error=True)]
    hist = derive_history(history)
    assert (hist.first_error_ref, hist.first_error_stage) == ("history:3", "unknown")


def test_history_reference_index_counts_skipped_entries():
    """R22: non-object entries are skipped but keep their index."""
    history = ["junk", 5, None, call("tap", {}, "c"), result("tap", "x", "c", is_error=True)]
    assert derive_history(history).first_error_ref == "history:4"



# --- values of the wrong type, located (data_quality.invalid_artifact_values) ---------------

def test_values_of_the_wrong_type_are_refused_where_they_are_read():
    """Each value a formula reads and refuses is named with its message and key and what
    became of it; a number of any sign, an absent key and a key no formula reads are not."""
    inf = float("inf")
    usage = {"input_tokens": "10", "prompt_tokens": 12, "output_tokens": True, "completion_tokens": "2",
             "total_tokens": inf, "reasoning_tokens": [1]}
    messages = [model(duration="900"), {"type": "user", "usage": "not read"}, model(usage="lots"),
                model(usage=usage), model(duration=-5), model(duration=None), model(usage={"input_tokens": 3,
                                                                                            "prompt_tokens": "x"})]
    out = derive_history(messages)
    assert out.refused == [
        ("[0].duration_ms", "900", "a string, not a number: the attempt's llm_time_ms is unavailable"),
        ("[2].usage", "lots", "not an object: not a model call (3.3)"),
        ("[3].usage.input_tokens", "10", "a string, not a number: not counted, prompt_tokens read instead"),
        ("[3].usage.output_tokens", True, "a Boolean, not a number: not counted, completion_tokens read instead"),
        ("[3].usage.completion_tokens", "2", "a string, not a number: not counted, the attempt's output_tokens is unavailable"),
        ("[3].usage.total_tokens", inf, "not a finite number: not counted, the call's input + output counted instead"),
    ]  # [6]'s prompt_tokens is not read: its input_tokens is a number; nor [3]'s reasoning_tokens:
    # [0] has none, so the attempt's reasoning_tokens is already unavailable (3.5)
    assert (out.llm_calls, out.llm_time_ms) == (5, None)
    assert out.tokens["input_tokens"] == 10 + 12 + 10 + 10 + 3  # the older key read for [3]
    assert out.tokens["output_tokens"] is None and out.tokens["reasoning_tokens"] is None


def test_a_visual_call_s_refused_duration_says_both_times_are_unavailable():
    """A visual call's duration that is not a number makes vision_llm_time_ms null as well
    as llm_time_ms (3.3): its finding says both; a non-visual call's says llm_time_ms only."""
    out = derive_history([model(duration="8"), {"type": "user", "attachments": IMG}, model(duration="900"),
                          model(duration=None)])
    assert (out.vision_llm_calls, out.vision_llm_time_ms, out.llm_time_ms) == (1, None, None)
    assert out.refused == [
        ("[0].duration_ms", "8", "a string, not a number: the attempt's llm_time_ms is unavailable"),
        ("[2].duration_ms", "900",
         "a string, not a number: the attempt's llm_time_ms and vision_llm_time_ms are unavailable"),
    ]  # [3]'s absent duration is no finding


def test_a_history_of_the_right_types_refuses_nothing():
    messages = [model(duration=0), model(duration=12.5, usage={"prompt_tokens": 4, "completion_tokens": 1,
                                                               "total_tokens": 5, "reasoning_tokens": 0.0}),
                model(usage=None), {"type": "assistant", "usage": None}, "junk", result("tap", content="ok"),
                model(usage={"input_tokens": 1, "output_tokens": 1, "cost_usd": 0.5, "details": {"cached": "n/a"}})]
    assert derive_history(messages).refused == []  # keys no formula reads are not looked at


def test_a_count_is_checked_while_its_field_is_known_and_not_after():
    """cached_input_tokens and reasoning_tokens are unavailable for the attempt once one call
    lacks them (3.5): the calls after are not read for them, so not checked either."""
    messages = [model(usage={"input_tokens": 1, "output_tokens": 1, "cached_tokens": "2", "reasoning_tokens": None}),
                model(usage={"input_tokens": 1, "output_tokens": 1, "cached_input_tokens": 1, "reasoning_tokens": "3"})]
    out = derive_history(messages)
    assert out.refused == [
        ("[0].usage.cached_tokens", "2", "a string, not a number: not counted, the attempt's cached_input_tokens is unavailable"),
    ]
    assert (out.tokens["cached_input_tokens"], out.tokens["reasoning_tokens"]) == (None, None)
    first = derive_history([model(usage={"input_tokens": 1, "output_tokens": 1, "reasoning_tokens": "3"})])
    assert first.refused == [("[0].usage.reasoning_tokens", "3",
                              "a string, not a number: not counted, the attempt's reasoning_tokens is unavailable")]
