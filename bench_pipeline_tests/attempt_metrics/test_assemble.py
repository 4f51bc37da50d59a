"""One attempt row from a results row and its artifacts (reference 3.1-3.6, outputs.md, R3,
R7, R17, R24, R34): ``derive_attempt`` on rows and artifact values in memory, choosing per
field between the derived and the recorded value, and the history and episode formulas on
any JSON a file can hold."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_pipeline.attempt_metrics import derive_episode, derive_history

from ..support.attempt_inputs import (
    JSON_VALUES, NAN, TOKENS, TOOL_ERROR_EVENTS, call, derive, derive_data, error_pair, event, model, result,
)

HISTORY_FIELDS = ("llm_calls", "llm_time_ms", "vision_llm_calls", "vision_llm_time_ms",
                  "tool_calls", "device_actions", "screenshots_taken")
OUTPUT_ATTEMPT_FIELDS = (
    "run_id", "task_id", "attempt", "line", "category", "artifact_dir",
    "status", "success_raw", "success", "agent_eligible_raw", "agent_eligible", "failure_class",
    "first_failure_stage", "failure_event_ref", "quality_score", "rubric_pass_count", "rubric_total",
    "task_wall_ms", "setup_ms", "screenshot_capture_ms", "time_to_first_token_ms", "llm_calls",
    "llm_time_ms", "vision_llm_calls", "vision_llm_time_ms", "device_actions", "device_execution_ms",
    "tool_calls", "screenshots_taken", "tool_errors", "replan_count", "retry_count",
    "input_tokens", "output_tokens", "total_tokens", "cached_input_tokens", "reasoning_tokens",
    "cost_usd", "recovery_attempted", "recovery_succeeded",
)
PROVENANCE_FIELDS = HISTORY_FIELDS + TOKENS + (
    "device_execution_ms", "replan_count", "time_to_first_token_ms", "tool_errors",
    "first_failure_stage", "failure_event_ref")


def _tokens(a: dict) -> tuple:
    return tuple(a[k] for k in TOKENS)


# --- identity, outcome and recorded values (outputs.md, R7, R24, R34) -----------------------

def test_attempt_row_has_every_output_field_and_provenance():
    a = derive([model(1)])
    for k in OUTPUT_ATTEMPT_FIELDS:
        assert k in a, k
    for k in PROVENANCE_FIELDS:
        assert a["provenance"][k] in ("derived", "recorded"), k


def test_identity_fields():
    a = derive(status="passed", artifact_dir="tasks/t", quality_score=0.5, rubric_pass_count=1, rubric_total=2)
    assert (a["task_id"], a["attempt"], a["line"], a["run_id"]) == ("t", 1, 1, "run-1")
    assert a["artifact_dir"] == "tasks/t"
    assert (a["status"], a["failure_class"]) == ("passed", None)
    assert (a["quality_score"], a["rubric_pass_count"], a["rubric_total"]) == (0.5, 1, 2)


@pytest.mark.parametrize(("row_category", "suite_category", "expected"), [
    ("nav", "other", "nav"),
    (None, "from-suite", "from-suite"),
    ("absent", "from-suite", "from-suite"),
    (None, None, None),
])
def test_category_falls_back_to_suite(row_category, suite_category, expected):
    task = {"id": "t", "prompt": "p"}
    if suite_category is not None:
        task["category"] = suite_category
    fields = {} if row_category == "absent" else {"category": row_category}
    assert derive(suite_tasks={"t": task}, **fields)["category"] == expected


@pytest.mark.parametrize("value", [True, "0.5", NAN, [0.5]])
def test_non_numeric_quality_is_unavailable(value):
    assert derive(quality_score=value)["quality_score"] is None


def test_recovery_fields_pass_through():
    a = derive(status="timeout", recovery_attempted=True, recovery_succeeded=None)
    assert a["recovery_attempted"] is True and a["recovery_succeeded"] is None
    a2 = derive(status="timeout", recovery_attempted=False, recovery_succeeded=False)
    assert a2["recovery_attempted"] is False and a2["recovery_succeeded"] is False


def test_legacy_row_without_metrics_object():
    a = derive_data({"task_id": "t", "status": "failed", "wall_ms": 1200, "setup_ms": 80, "llm_calls": 4})
    assert (a["task_wall_ms"], a["setup_ms"], a["llm_calls"]) == (1200, 80, 4)


@pytest.mark.parametrize(("fields", "expected"), [
    ({"metrics": {"task_wall_ms": 900, "wall_ms": 5}}, 900),
    ({"metrics": {"wall_ms": 700}}, 700),
    ({"metrics": {"task_wall_ms": None, "wall_ms": 700}}, 700),
    ({"metrics": {"task_wall_ms": "900", "wall_ms": 700}}, 700),
    ({"metrics": {"task_wall_ms": True, "wall_ms": 700}}, 700),
    ({"metrics": {"task_wall_ms": NAN, "wall_ms": 700}}, 700),
    ({"metrics": {}, "wall_ms": 600}, 600),
    ({"metrics": {}, "task_wall_ms": 650, "wall_ms": 600}, 650),
    ({"metrics": {"task_wall_ms": None}, "wall_ms": 600}, 600),
    ({"metrics": {"task_wall_ms": None, "wall_ms": None}}, None),
    ({"metrics": {"wall_ms": True}}, None),
    ({"metrics": {}}, None),
])
def test_task_wall_ms_falls_back_to_wall_ms(fields, expected):
    assert derive(**fields)["task_wall_ms"] == expected


@pytest.mark.parametrize("value", [True, False, "12", NAN, float("inf"), 10**400, [1], {"v": 1}])
def test_runner_values_that_are_not_numbers_are_null(value):
    keys = ["setup_ms", "screenshot_capture_ms", "retry_count", "cost_usd", "task_wall_ms"]
    a = derive(metrics={k: value for k in keys})
    for k in keys:
        assert a[k] is None, k


@pytest.mark.parametrize("metrics", ["oops", None, [1, 2], 5])
def test_metrics_that_is_not_an_object_uses_top_level_values(metrics):
    a = derive(metrics=metrics, setup_ms=5, wall_ms=700)
    assert (a["setup_ms"], a["task_wall_ms"]) == (5, 700)


def test_runner_fields_are_always_recorded_even_with_artifacts():
    """R34: task_wall_ms, setup_ms, screenshot_capture_ms, retry_count and cost_usd are the
    recorded values; retry_count stays null without an explicit source (3.5)."""
    history = [model(100), call("tap", {"x": 1}), result("tap"), call("tap", {"x": 2}), result("tap")]
    episode = {"events": [event("tap", 5, {}), event("tap", 6, {})], "extra": {"prompt_tokens": 1}}
    rec = {"task_wall_ms": 2500, "setup_ms": 30, "screenshot_capture_ms": 40, "retry_count": 2, "cost_usd": 0.125}
    a = derive(history, episode, metrics=rec)
    for k, v in rec.items():
        assert a[k] == v, k
    b = derive(history, episode, metrics={})
    assert (b["retry_count"], b["cost_usd"], b["screenshot_capture_ms"]) == (None, None, None)


# --- R3: derived when the file is available, else recorded, per file -----------------------

def test_history_unavailable_uses_recorded_history_fields():
    rec = {"llm_calls": 3, "llm_time_ms": 900, "vision_llm_calls": 1, "vision_llm_time_ms": 300,
           "tool_calls": 4, "device_actions": 2, "screenshots_taken": 1, "tool_errors": 2,
           "input_tokens": 100, "output_tokens": 20, "total_tokens": 120, "cached_input_tokens": 5,
           "reasoning_tokens": 7, "failure_event_ref": "history:3"}
    a = derive(metrics=rec)
    for k, v in rec.items():
        assert a[k] == v, k
        assert a["provenance"][k] == "recorded", k


def test_history_unavailable_without_recorded_values_is_null_recorded():
    a = derive(metrics={"tool_calls": True})
    for k in HISTORY_FIELDS + TOKENS + ("tool_errors", "device_execution_ms", "replan_count", "time_to_first_token_ms"):
        assert a[k] is None, k
        assert a["provenance"][k] == "recorded", k


def test_history_available_ignores_recorded_values():
    rec = {k: 99 for k in HISTORY_FIELDS + TOKENS + ("tool_errors",)}
    a = derive([model(100), call("tap", {}), result("tap")], metrics=rec)
    assert (a["llm_calls"], a["llm_time_ms"], a["tool_calls"], a["device_actions"], a["tool_errors"]) == (1, 100, 1, 1, 0)
    assert (a["input_tokens"], a["output_tokens"], a["total_tokens"]) == (10, 2, 12)
    assert a["cached_input_tokens"] is None and a["reasoning_tokens"] is None
    for k in HISTORY_FIELDS + TOKENS + ("tool_errors", "failure_event_ref"):
        assert a["provenance"][k] == "derived", k


def test_history_messages_object_form():
    a = derive({"messages": [model(100), model(200)]})
    assert (a["llm_calls"], a["llm_time_ms"]) == (2, 300)


def test_history_reference_index_in_messages_object():
    assert derive({"messages": [{"type": "user"}, 3] + error_pair("tap", {})})["failure_event_ref"] == "history:3"


def test_no_qualifying_message_gives_null_calls_time_and_tokens():
    """R8 and R3: history is available, so the recorded values are NOT used."""
    history = [{"type": "user", "content": "x"}, model(100, usage=None), call("tap", {}), result("tap")]
    rec = {"llm_calls": 5, "llm_time_ms": 50, "vision_llm_calls": 1, "vision_llm_time_ms": 5, "input_tokens": 100}
    a = derive(history, metrics=rec)
    for k in ("llm_calls", "llm_time_ms", "vision_llm_calls", "vision_llm_time_ms") + TOKENS:
        assert a[k] is None, k
        assert a["provenance"][k] == "derived", k
    assert a["tool_calls"] == 1


def test_no_qualifying_message_episode_override_still_applies():
    a = derive([{"type": "user", "content": "x"}], {"events": [], "extra": {"prompt_tokens": 7, "total_tokens": 0}})
    assert a["llm_calls"] is None
    assert a["input_tokens"] == 7
    assert a["total_tokens"] == 0
    assert a["output_tokens"] is None


def test_empty_history():
    a = derive([], metrics={"tool_errors": 4, "tool_calls": 4})
    assert a["llm_calls"] is None and a["llm_time_ms"] is None
    assert (a["tool_calls"], a["device_actions"], a["screenshots_taken"], a["tool_errors"]) == (0, 0, 0, 0)
    assert a["provenance"]["tool_errors"] == "derived"


def test_episode_unavailable_uses_recorded_episode_fields():
    rec = {"device_execution_ms": 321, "replan_count": 2, "time_to_first_token_ms": 88}
    a = derive([model(100)], metrics=rec)
    for k, v in rec.items():
        assert a[k] == v
        assert a["provenance"][k] == "recorded"


def test_episode_available_ignores_recorded_episode_fields():
    rec = {"device_execution_ms": 321, "replan_count": 2, "time_to_first_token_ms": 88}
    a = derive([model(100)], {"events": [event("tap", 10, {})]}, metrics=rec)
    assert a["device_execution_ms"] == 10
    assert a["replan_count"] is None  # no event carries needs_replan
    assert a["time_to_first_token_ms"] is None  # episode has no first-token value
    for k in rec:
        assert a["provenance"][k] == "derived"


@pytest.mark.parametrize("episode", [{"events": []}, {"episode_id": "e"}, {"events": "x"}, {"events": None},
                                     {"events": {"a": 1}}])
def test_episode_without_events_gives_a_derived_null_device_time(episode):
    a = derive([model(10)], episode, metrics={"device_execution_ms": 55})
    assert a["device_execution_ms"] is None
    assert a["provenance"]["device_execution_ms"] == "derived"


@pytest.mark.parametrize(("field", "episode", "value"), [
    # The episode's value, null or not, stands over the recorded 42 (R3).
    ("device_execution_ms", {"events": [event("tap", 200, {})]}, 200),
    ("device_execution_ms", {"events": [event("tap", 200, {}), event("tap", "100", {})]}, None),
    ("replan_count", {"events": [{"type": "tool_result", "needs_replan": True}]}, 1),
    ("replan_count", {"events": []}, None),
    ("time_to_first_token_ms", {"events": [], "extra": {"first_token_time_ms": 640}}, 640),
    ("time_to_first_token_ms", {"events": [], "extra": {"first_token_time_ms": 0}}, None),
])
def test_episode_values_are_derived_even_when_null(field, episode, value):
    a = derive([model(10)], episode, metrics={field: 42})
    assert a[field] == value
    assert a["provenance"][field] == "derived"


@pytest.mark.parametrize(("value", "expected"), [(300, 300), (0, None), (-5, None), (True, None), ("300", None),
                                                 (None, None)])
def test_ttft_recorded_value_positive_only(value, expected):
    a = derive([model(10)], metrics={"time_to_first_token_ms": value})
    assert a["time_to_first_token_ms"] == expected
    assert a["provenance"]["time_to_first_token_ms"] == "recorded"


# --- tool errors: the episode's count replaces history's (3.5) ------------------------------

HISTORY_3_ERRORS = [call("tap", {}, "a"), result("tap", "x", "a", is_error=True),
                    call("tap", {}, "b"), result("tap", "x", "b", is_error=True),
                    call("tap", {}, "c"), result("tap", '{"ok": false}', "c")]


@pytest.mark.parametrize(("history", "expected"), [
    ([call("capture", {}, "c1"), result("capture", "x", "c1", is_error=True)], 1),
    ([call("capture", {}, "c1"), result("capture", '{"ok": true}', "c1")], 0),
])
def test_history_tool_errors_are_derived(history, expected):
    a = derive(history, metrics={"tool_errors": 9})
    assert a["tool_errors"] == expected
    assert a["provenance"]["tool_errors"] == "derived"


def test_nonempty_episode_events_replace_tool_errors():
    events = TOOL_ERROR_EVENTS  # two tool_result events with is_error true
    a = derive(HISTORY_3_ERRORS, {"events": events})
    assert a["tool_errors"] == 2
    assert a["provenance"]["tool_errors"] == "derived"


def test_episode_events_without_errors_replace_with_zero():
    assert derive(HISTORY_3_ERRORS, {"events": [event("tap", 1, {})]})["tool_errors"] == 0


@pytest.mark.parametrize("events", ["absent", [], "not a list", {"0": {}}, None])
def test_empty_or_absent_episode_events_keep_history_tool_errors(events):
    episode = {"episode_id": "e"} if events == "absent" else {"events": events}
    assert derive(HISTORY_3_ERRORS, episode)["tool_errors"] == 3


def test_episode_tool_errors_when_history_unavailable():
    a = derive(None, {"events": [event("tap", 1, {}, is_error=True)]}, metrics={"tool_errors": 9})
    assert a["tool_errors"] == 1
    assert a["provenance"]["tool_errors"] == "derived"


def test_episode_events_without_errors_and_no_history_give_zero_tool_errors():
    a = derive(None, {"events": [event("tap", 1, {})]}, metrics={"tool_errors": 9})
    assert a["tool_errors"] == 0
    assert a["provenance"]["tool_errors"] == "derived"


def test_empty_episode_events_and_no_history_use_recorded_tool_errors():
    a = derive(None, {"events": []}, metrics={"tool_errors": 9})
    assert a["tool_errors"] == 9
    assert a["provenance"]["tool_errors"] == "recorded"


# --- tokens: an episode override replaces its field's history sum (3.5) ---------------------

def test_episode_override_replaces_including_zero():
    history = [model(1, {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12, "cached_input_tokens": 4,
                         "reasoning_tokens": 1})]
    extra = {"prompt_tokens": 0, "completion_tokens": 5, "cached_prompt_tokens": 0, "reasoning_tokens": 0}
    a = derive(history, {"events": [], "extra": extra})
    assert _tokens(a) == (0, 5, 12, 0, 0)  # total is history's: explicit totals are not recomputed
    for k in TOKENS:
        assert a["provenance"][k] == "derived"


def test_episode_total_is_preserved_not_forced_to_sum():
    """run-directory.md's episode example: the totals of extra stand as recorded."""
    history = [model(1, {"input_tokens": 10, "output_tokens": 2})]
    extra = {"prompt_tokens": 9120, "completion_tokens": 455, "total_tokens": 999, "cached_prompt_tokens": 4096}
    assert _tokens(derive(history, {"extra": extra})) == (9120, 455, 999, 4096, None)


def test_non_numeric_episode_values_keep_the_history_sums():
    history = [model(1, {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12, "cached_input_tokens": 4,
                         "reasoning_tokens": 1})]
    keys = ("prompt_tokens", "completion_tokens", "total_tokens", "cached_prompt_tokens", "reasoning_tokens")
    assert _tokens(derive(history, {"events": [], "extra": {k: "9" for k in keys}})) == (10, 2, 12, 4, 1)


def test_episode_tokens_with_history_unavailable():
    rec = {"input_tokens": 77, "output_tokens": 8, "total_tokens": 85, "cached_input_tokens": 1, "reasoning_tokens": 2}
    a = derive(None, {"extra": {"prompt_tokens": 5, "reasoning_tokens": 0}}, metrics=rec)
    assert _tokens(a) == (5, 8, 85, 1, 0)
    assert a["provenance"]["input_tokens"] == "derived"
    assert a["provenance"]["reasoning_tokens"] == "derived"
    assert a["provenance"]["output_tokens"] == "recorded"
    assert a["provenance"]["total_tokens"] == "recorded"


# --- failure evidence (3.1 step 4, 3.5, R16-R18) --------------------------------------------

@pytest.mark.parametrize(("name", "tool_input", "stage"), [
    ("tap", {"x": 1}, "device_execution"),
    ("screenshot", {}, "unknown"),
])
def test_history_error_is_the_derived_evidence(name, tool_input, stage):
    a = derive([model(10)] + error_pair(name, tool_input), first_failure_stage=None)
    assert (a["failure_event_ref"], a["first_failure_stage"]) == ("history:2", stage)
    assert a["provenance"]["failure_event_ref"] == "derived"
    assert a["provenance"]["first_failure_stage"] == "derived"


def test_episode_error_replaces_history_reference():
    episode = {"events": ["junk", event("screenshot", 5, {}), event("tap", 5, {}, is_error=True),
                          event("swipe", 5, {}, is_error=True)]}
    a = derive(error_pair("screenshot", {}), episode, first_failure_stage="planning")
    assert (a["failure_event_ref"], a["first_failure_stage"]) == ("episode:2", "device_execution")


def test_episode_only_tool_result_events_are_errors():
    episode = {"events": [event("tap", 1, {}, kind="model_response", is_error=True),
                          {"type": "error", "is_error": True}, event("tap", 1, {}, kind="tool_call", is_error=True),
                          event("tap", 1, {})]}
    a = derive([model(10)] + error_pair("screenshot", {}), episode)
    assert (a["failure_event_ref"], a["first_failure_stage"]) == ("history:2", "unknown")


def test_episode_without_error_keeps_history_reference():
    a = derive(error_pair("tap", {}), {"events": [event("tap", 4, {})]})
    assert (a["failure_event_ref"], a["first_failure_stage"]) == ("history:1", "device_execution")


def test_top_level_episode_error_does_not_replace_history_reference():
    """R16: the replacing episode error is the first tool_result event with is_error."""
    a = derive(error_pair("tap", {}), {"events": [event("tap", 3, {})], "error": "agent crashed"})
    assert a["failure_event_ref"] == "history:1"


def test_episode_error_without_history():
    a = derive(None, {"events": [event("swipe", 4, {}, is_error=True)]},
               metrics={"failure_event_ref": "history:7"}, first_failure_stage="planning")
    assert (a["failure_event_ref"], a["first_failure_stage"]) == ("episode:0", "device_execution")
    assert a["provenance"]["failure_event_ref"] == "derived"


# R17 "with artifacts" per source, as in R3: (history.json, episode.json, recorded stage and
# reference) -> (stage, reference, provenance of both). A history.json that is not UTF-8 is
# in test_attempt_artifacts_on_disk.py.
RECORDED = {"first_failure_stage": "planning", "metrics": {"failure_event_ref": "history:9"}}


@pytest.mark.parametrize(("files", "expected"), [
    # an episode error supplies the reference, over history's own error
    ({"history": error_pair("screenshot", {}), "episode": {"events": [event("tap", 3, {}, is_error=True)]}},
     ("device_execution", "episode:0", "derived")),
    # an episode error without history.json
    ({"episode": {"events": [event("screenshot", 3, {}), event("swipe", 3, {}, is_error=True)]}},
     ("device_execution", "episode:1", "derived")),
    # history available with an error; the episode has none
    ({"history": error_pair("tap", {}), "episode": {"events": [event("tap", 3, {})]}},
     ("device_execution", "history:1", "derived")),
    # history available without an error: its own null, the recorded stage label stays
    ({"history": [model(10), call("tap", {}, "c"), result("tap", "fine", "c")],
      "episode": {"events": [event("tap", 3, {})]}},
     ("planning", None, "derived")),
    # history unavailable, an episode without errors: the recorded values stand
    ({"episode": {"events": [event("tap", 3, {})]}}, ("planning", "history:9", "recorded")),
    ({"episode": {"events": []}}, ("planning", "history:9", "recorded")),
    ({"episode": {"events": [event("tap", 3, {})]}, "history": {"not": "messages"}},
     ("planning", "history:9", "recorded")),
])
def test_failure_evidence_is_decided_per_source(files, expected):
    a = derive(files.get("history"), files.get("episode"), **RECORDED)
    stage, ref, source = expected
    assert (a["first_failure_stage"], a["failure_event_ref"]) == (stage, ref)
    assert a["provenance"]["first_failure_stage"] == source
    assert a["provenance"]["failure_event_ref"] == source


def test_episode_without_errors_never_clears_a_recorded_reference():
    """R17: history.json missing, episode.json available with events but no error."""
    a = derive(None, {"events": [event("tap", 4, {}), event("swipe", 2, {})]},
               first_failure_stage="device_execution", metrics={"failure_event_ref": "history:3"})
    assert (a["first_failure_stage"], a["failure_event_ref"]) == ("device_execution", "history:3")
    assert (a["provenance"]["first_failure_stage"], a["provenance"]["failure_event_ref"]) == ("recorded", "recorded")
    assert a["provenance"]["tool_errors"] == "derived" and a["tool_errors"] == 0  # the episode still counts


@pytest.mark.parametrize("recorded", ["setup", "evaluation"])
def test_recorded_setup_or_evaluation_stage_wins_over_evidence(recorded):
    a = derive(error_pair("tap", {}), first_failure_stage=recorded)
    assert a["first_failure_stage"] == recorded
    assert a["failure_event_ref"] == "history:1"


@pytest.mark.parametrize(("recorded", "evidence_name", "expected"), [
    ("planning", "tap", "device_execution"),
    ("unknown", "tap", "device_execution"),
    ("device_execution", "screenshot", "unknown"),
    ("planning", "screenshot", "unknown"),
    (None, "tap", "device_execution"),
])
def test_evidence_stage_wins_over_other_recorded_labels(recorded, evidence_name, expected):
    assert derive(error_pair(evidence_name, {}), first_failure_stage=recorded)["first_failure_stage"] == expected


@pytest.mark.parametrize("recorded", ["planning", "perception", "final_response", "unknown", None, "warp"])
def test_no_evidence_keeps_recorded_stage_and_derives_null_reference(recorded):
    history = [model(10), call("tap", {}, "c"), result("tap", "fine", "c")]
    a = derive(history, first_failure_stage=recorded, metrics={"failure_event_ref": "history:9"})
    assert a["first_failure_stage"] == recorded
    assert a["failure_event_ref"] is None
    assert a["provenance"]["failure_event_ref"] == "derived"


def test_without_artifacts_both_are_recorded():
    a = derive(first_failure_stage="perception", metrics={"failure_event_ref": "episode:3"})
    assert (a["first_failure_stage"], a["failure_event_ref"]) == ("perception", "episode:3")
    assert a["provenance"]["first_failure_stage"] == "recorded"
    assert a["provenance"]["failure_event_ref"] == "recorded"


def test_success_clears_stage_and_reference():
    a = derive(error_pair("tap", {}), status="passed", first_failure_stage="planning")
    assert (a["first_failure_stage"], a["failure_event_ref"]) == (None, None)
    assert a["tool_errors"] == 1


def test_success_clears_recorded_stage_and_reference_without_artifacts():
    a = derive(status="passed", first_failure_stage="planning", metrics={"failure_event_ref": "history:1"})
    assert (a["first_failure_stage"], a["failure_event_ref"]) == (None, None)


def test_success_clears_even_a_recorded_setup_stage():
    a = derive(error_pair("tap", {}), status="passed", first_failure_stage="setup")
    assert (a["first_failure_stage"], a["failure_event_ref"]) == (None, None)


def test_derived_legacy_success_clears_too():
    a = derive_data({"task_id": "t", "status": "passed", "first_failure_stage": "planning",
                     "metrics": {"failure_event_ref": "history:1"}})
    assert a["success"] is True
    assert (a["first_failure_stage"], a["failure_event_ref"]) == (None, None)


def test_recovered_errors_still_count_on_a_passing_attempt():
    history = [call("tap", {}, "a"), result("tap", "x", "a", is_error=True),
               call("tap", {}, "b"), result("tap", '{"ok": false}', "b"),
               call("tap", {}, "c"), result("tap", '{"ok": true}', "c")]
    assert derive(history, status="passed")["tool_errors"] == 2


def test_unknown_success_does_not_clear():
    a = derive(error_pair("tap", {}), status="judge_error", first_failure_stage="evaluation")
    assert a["success"] is None
    assert (a["first_failure_stage"], a["failure_event_ref"]) == ("evaluation", "history:1")


def test_explicit_false_success_with_passed_status_does_not_clear():
    a = derive(error_pair("tap", {}), status="passed", success=False, first_failure_stage=None)
    assert (a["first_failure_stage"], a["failure_event_ref"]) == ("device_execution", "history:1")


# --- the formulas on whatever a file holds --------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(messages=st.lists(JSON_VALUES, max_size=12), events=JSON_VALUES, extra=JSON_VALUES)
def test_history_and_episode_formulas_accept_any_json(messages, events, extra):
    """What derive_attempt hands them from a file is any JSON: the formulas never fail on it."""
    hist = derive_history(messages)
    assert hist.tool_errors >= 0 and hist.device_actions <= hist.tool_calls
    epi = derive_episode({"events": events, "extra": extra})
    assert epi.tool_errors is None or epi.tool_errors >= 0
