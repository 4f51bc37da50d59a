"""Stage 2 edge cases: one attempt row's outcome and derived numbers.

From metrics-reference.txt 2 (outcomes, legacy rules), 3.1-3.6 (sources, timers, model calls,
visual inference, device actions, tokens, work counters, failure evidence),
run-directory.md (results.jsonl and artifact formats) and readings R3, R6-R23, R28, R34, R36,
R39, R40, R42. Each test writes a run folder and reads the attempt row back; the failure-evidence
formula (R17) is also called on values in memory.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_pipeline.attempt_metrics import failure_evidence
from bench_pipeline.pipeline import process_run

from .run_builder import make_run, row

NAN = float("nan")
ALLOWLIST = [
    "touch_gesture", "enter_text", "keyboard_text", "keyboard_tap", "mouse_move",
    "mouse_scroll", "quick_action", "open_app", "launch_app", "open_url",
    "search_launch_app", "bridge_open_app", "bridge_clipboard", "bridge_contacts",
    "bridge_calendar", "bridge_notification", "bridge_media",
    "swipe", "tap", "long_press", "drag", "press_key",
]
BRIDGES = [n for n in ALLOWLIST if n.startswith("bridge_")]
READ_ONLY = ["query", "read", "get", "inspect", "list", "search"]
TOKENS = ("input_tokens", "output_tokens", "total_tokens", "cached_input_tokens", "reasoning_tokens")


# --- builders ------------------------------------------------------------------------------

def model(duration=100, usage="default", kind="assistant", **extra) -> dict:
    m = {"type": kind, "content": "..."}
    if usage is not None:
        m["usage"] = {"input_tokens": 10, "output_tokens": 2} if usage == "default" else usage
    if duration is not None:
        m["duration_ms"] = duration
    m.update(extra)
    return m


def call(name, tool_input=None, call_id=None, **extra) -> dict:
    m = {"type": "tool_call", "tool_name": name}
    if tool_input is not None:
        m["tool_input"] = tool_input
    if call_id is not None:
        m["tool_call_id"] = call_id
    m.update(extra)
    return m


def result(name, content="{\"ok\": true}", call_id=None, **extra) -> dict:
    m = {"type": "tool_result", "content": content}
    if name is not None:
        m["tool_name"] = name
    if call_id is not None:
        m["tool_call_id"] = call_id
    m.update(extra)
    return m


def event(name, duration="absent", tool_input="absent", kind="tool_result", **extra) -> dict:
    e = {"type": kind, "tool_name": name}
    if duration != "absent":
        e["duration_ms"] = duration
    if tool_input != "absent":
        e["tool_input"] = tool_input
    e.update(extra)
    return e


def derive(tmp_path, history=None, episode=None, status="failed", task_id="t", suite=None, **fields) -> dict:
    files = {}
    if history is not None:
        files["history.json"] = history
    if episode is not None:
        files["episode.json"] = episode
    r = row(task_id, status=status, **fields)
    run = make_run(tmp_path, [r], suite=suite, artifacts={f"tasks/{task_id}": files} if files else None)
    processed = process_run(run)
    assert processed.metrics["data_quality"]["bad_rows"] == []
    (a,) = processed.attempts
    return a


class Batch:
    """One run folder per parametrized table, one task per case (file creation is the slow
    part of these tests). A spec is ``{"history": ..., "episode": ..., "status": ..., **row fields}``."""

    def __init__(self, factory):
        self.factory = factory
        self.cache: dict[str, list[dict]] = {}

    def __call__(self, key: str, specs: list[dict]) -> list[dict]:
        if key not in self.cache:
            rows, artifacts = [], {}
            for i, spec in enumerate(specs):
                spec = dict(spec)
                files = {f"{n}.json": spec.pop(n) for n in ("history", "episode") if spec.get(n) is not None}
                spec.pop("history", None), spec.pop("episode", None)
                rows.append(row(f"c{i}", status=spec.pop("status", "failed"), **spec))
                if files:
                    artifacts[f"tasks/c{i}"] = files
            processed = process_run(make_run(self.factory.mktemp(key), rows, artifacts=artifacts))
            assert processed.metrics["data_quality"]["bad_rows"] == []
            by_task = {a["task_id"]: a for a in processed.attempts}
            self.cache[key] = [by_task[f"c{i}"] for i in range(len(specs))]
        return self.cache[key]


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    return Batch(tmp_path_factory)


def cases(table: list) -> list:
    """Parametrize rows prefixed with their index in the table."""
    return [(i, *c) if isinstance(c, tuple) else (i, c) for i, c in enumerate(table)]


def derive_rows(tmp_path, rows: list) -> dict[str, dict]:
    """Several rows (dicts or raw lines) in one run, without artifacts: {task_id: attempt row}."""
    processed = process_run(make_run(tmp_path, rows))
    assert processed.metrics["data_quality"]["bad_rows"] == []
    return {a["task_id"]: a for a in processed.attempts}


def derive_raw(tmp_path, line: str) -> dict:
    processed = process_run(make_run(tmp_path, [line]))
    assert processed.metrics["data_quality"]["bad_rows"] == []
    (a,) = processed.attempts
    return a


# =====================================================================================
# Outcome and eligibility (reference 2, run-directory.md legacy rules, R28)
# =====================================================================================

RAW_NON_BOOLEAN = ["absent", None, "true", 1, 0, "passed"]


@pytest.mark.parametrize(("status", "derived"), [
    ("passed", True), ("failed", False), ("timeout", False), ("judge_error", None), ("skipped", None),
])
def test_non_boolean_success_is_derived_from_status(tmp_path, status, derived):
    rows = []
    for i, raw_success in enumerate(RAW_NON_BOOLEAN):
        r = {"task_id": f"t{i}", "attempt": 1, "status": status, "agent_eligible": False}
        if raw_success != "absent":
            r["success"] = raw_success
        rows.append(r)
    by_task = derive_rows(tmp_path, rows)
    for i, raw_success in enumerate(RAW_NON_BOOLEAN):
        a = by_task[f"t{i}"]
        assert a["success"] is derived, raw_success
        assert a["success_raw"] is None, raw_success


@pytest.mark.parametrize("status", ["passed", "failed", "timeout", "judge_error", "skipped"])
@pytest.mark.parametrize("value", [True, False])
def test_boolean_success_is_kept(tmp_path, status, value):
    a = derive(tmp_path, status=status, success=value, agent_eligible=True)
    assert a["success"] is value
    assert a["success_raw"] is value


@pytest.mark.parametrize(("status", "failure_class", "eligible"), [
    ("passed", None, True),
    ("failed", "agent", True),
    ("timeout", "agent", True),
    ("failed", "unknown", True),
    ("timeout", None, True),
    ("failed", "environment", False),
    ("failed", "evaluation", False),
    ("failed", "skipped", False),
    ("timeout", "environment", False),
    ("passed", "evaluation", False),
    ("judge_error", "evaluation", False),
    ("judge_error", None, False),
    ("skipped", "skipped", False),
    ("skipped", None, False),
    ("weird", None, False),
    (None, None, False),
])
def test_missing_eligibility_is_inferred(tmp_path, status, failure_class, eligible):
    variants = ["absent", None, "true", 1]
    rows = []
    for i, raw_eligible in enumerate(variants):
        r = {"task_id": f"t{i}", "attempt": 1, "failure_class": failure_class}
        if status is not None:
            r["status"] = status
        if raw_eligible != "absent":
            r["agent_eligible"] = raw_eligible
        rows.append(r)
    by_task = derive_rows(tmp_path, rows)
    for i, raw_eligible in enumerate(variants):
        assert by_task[f"t{i}"]["agent_eligible"] is eligible, raw_eligible
        assert by_task[f"t{i}"]["agent_eligible_raw"] is None, raw_eligible


@pytest.mark.parametrize("status", ["passed", "failed", "timeout"])
def test_explicit_false_eligibility_always_excludes(tmp_path, status):
    a = derive(tmp_path, status=status, agent_eligible=False, failure_class=None)
    assert a["agent_eligible"] is False
    assert a["agent_eligible_raw"] is False


def test_explicit_true_eligibility_is_authoritative(tmp_path):
    """The runner sets eligibility explicitly: do not rebuild it from status (reference 2)."""
    a = derive(tmp_path, status="skipped", agent_eligible=True, failure_class="skipped")
    assert a["agent_eligible"] is True
    assert a["agent_eligible_raw"] is True


@pytest.mark.parametrize(("row_category", "suite_category", "expected"), [
    ("nav", "other", "nav"),
    (None, "from-suite", "from-suite"),
    ("absent", "from-suite", "from-suite"),
    (None, None, None),
])
def test_category_falls_back_to_suite(tmp_path, row_category, suite_category, expected):
    task = {"id": "t", "prompt": "p"}
    if suite_category is not None:
        task["category"] = suite_category
    fields = {} if row_category == "absent" else {"category": row_category}
    a = derive(tmp_path, suite={"name": "s", "tasks": [task]}, **fields)
    assert a["category"] == expected


def test_identity_fields(tmp_path):
    a = derive(tmp_path, status="passed", artifact_dir="tasks/t", quality_score=0.5, rubric_pass_count=1, rubric_total=2)
    assert (a["task_id"], a["attempt"], a["line"], a["run_id"]) == ("t", 1, 1, "run-1")
    assert a["artifact_dir"] == "tasks/t"
    assert (a["status"], a["failure_class"]) == ("passed", None)
    assert (a["quality_score"], a["rubric_pass_count"], a["rubric_total"]) == (0.5, 1, 2)


@pytest.mark.parametrize("value", [True, "0.5", NAN, [0.5]])
def test_non_numeric_quality_is_unavailable(tmp_path, value):
    assert derive(tmp_path, quality_score=value)["quality_score"] is None


def test_recovery_fields_pass_through(tmp_path):
    a = derive(tmp_path, status="timeout", recovery_attempted=True, recovery_succeeded=None)
    assert a["recovery_attempted"] is True and a["recovery_succeeded"] is None
    a2 = derive(tmp_path / "b", status="timeout", recovery_attempted=False, recovery_succeeded=False)
    assert a2["recovery_attempted"] is False and a2["recovery_succeeded"] is False


# =====================================================================================
# Recorded numbers: legacy keys (R6, R7), Booleans, R34, R42
# =====================================================================================

def test_metrics_key_wins_over_top_level(tmp_path):
    a = derive(tmp_path, metrics={"task_wall_ms": 1000, "setup_ms": 5}, task_wall_ms=50, setup_ms=7)
    assert (a["task_wall_ms"], a["setup_ms"]) == (1000, 5)


def test_metrics_key_wins_even_when_null(tmp_path):
    a = derive(tmp_path, metrics={"setup_ms": None, "tool_calls": None, "cost_usd": None},
               setup_ms=7, tool_calls=3, cost_usd=0.5)
    assert a["setup_ms"] is None
    assert a["tool_calls"] is None
    assert a["cost_usd"] is None


def test_legacy_top_level_values_are_used_when_metrics_lacks_them(tmp_path):
    a = derive(tmp_path, metrics={"setup_ms": 3}, screenshot_capture_ms=40, tool_calls=6, retry_count=1, cost_usd=0.25)
    assert (a["setup_ms"], a["screenshot_capture_ms"], a["tool_calls"], a["retry_count"], a["cost_usd"]) == (3, 40, 6, 1, 0.25)


def test_legacy_row_without_metrics_object(tmp_path):
    r = {"task_id": "t", "status": "failed", "wall_ms": 1200, "setup_ms": 80, "llm_calls": 4}
    a = derive_raw(tmp_path, json.dumps(r))
    assert (a["task_wall_ms"], a["setup_ms"], a["llm_calls"]) == (1200, 80, 4)


WALL_CASES = [
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
]


@pytest.mark.parametrize(("i", "fields", "expected"), cases(WALL_CASES))
def test_task_wall_ms_falls_back_to_wall_ms(batch, i, fields, expected):
    assert batch("wall", [f for f, _ in WALL_CASES])[i]["task_wall_ms"] == expected


@pytest.mark.parametrize("value", [True, False, "12", NAN, float("inf"), 10**400, [1], {"v": 1}])
def test_boolean_or_non_finite_is_never_a_number(tmp_path, value):
    keys = ["setup_ms", "screenshot_capture_ms", "retry_count", "cost_usd", "task_wall_ms"]
    a = derive(tmp_path, metrics={k: value for k in keys})
    for k in keys:
        assert a[k] is None, k


def test_runner_fields_are_always_recorded_even_with_artifacts(tmp_path):
    """R34: task_wall_ms, setup_ms, screenshot_capture_ms, retry_count and cost_usd are the
    recorded values; retry_count stays null without an explicit source (3.5)."""
    history = [model(100), call("tap", {"x": 1}), result("tap"), call("tap", {"x": 2}), result("tap")]
    episode = {"events": [event("tap", 5, {}), event("tap", 6, {})], "extra": {"prompt_tokens": 1}}
    rec = {"task_wall_ms": 2500, "setup_ms": 30, "screenshot_capture_ms": 40, "retry_count": 2, "cost_usd": 0.125}
    a = derive(tmp_path, history, episode, metrics=rec)
    for k, v in rec.items():
        assert a[k] == v, k
    b = derive(tmp_path / "b", history, episode, metrics={})
    assert (b["retry_count"], b["cost_usd"], b["screenshot_capture_ms"]) == (None, None, None)


# =====================================================================================
# R3: fallback to recorded values, per file, with provenance
# =====================================================================================

HISTORY_FIELDS = ("llm_calls", "llm_time_ms", "vision_llm_calls", "vision_llm_time_ms",
                  "tool_calls", "device_actions", "screenshots_taken")


def test_history_unavailable_uses_recorded_history_fields(tmp_path):
    rec = {"llm_calls": 3, "llm_time_ms": 900, "vision_llm_calls": 1, "vision_llm_time_ms": 300,
           "tool_calls": 4, "device_actions": 2, "screenshots_taken": 1, "tool_errors": 2,
           "input_tokens": 100, "output_tokens": 20, "total_tokens": 120, "cached_input_tokens": 5,
           "reasoning_tokens": 7, "failure_event_ref": "history:3"}
    a = derive(tmp_path, metrics=rec)
    for k, v in rec.items():
        assert a[k] == v, k
        assert a["provenance"][k] == "recorded", k


def test_history_unavailable_without_recorded_values_is_null_recorded(tmp_path):
    a = derive(tmp_path, metrics={"tool_calls": True})
    for k in HISTORY_FIELDS + TOKENS + ("tool_errors", "device_execution_ms", "replan_count", "time_to_first_token_ms"):
        assert a[k] is None, k
        assert a["provenance"][k] == "recorded", k


def test_history_available_ignores_recorded_values(tmp_path):
    rec = {k: 99 for k in HISTORY_FIELDS + TOKENS + ("tool_errors",)}
    a = derive(tmp_path, [model(100), call("tap", {}), result("tap")], metrics=rec)
    assert (a["llm_calls"], a["llm_time_ms"], a["tool_calls"], a["device_actions"], a["tool_errors"]) == (1, 100, 1, 1, 0)
    assert (a["input_tokens"], a["output_tokens"], a["total_tokens"]) == (10, 2, 12)
    assert a["cached_input_tokens"] is None and a["reasoning_tokens"] is None
    for k in HISTORY_FIELDS + TOKENS + ("tool_errors", "failure_event_ref"):
        assert a["provenance"][k] == "derived", k


def test_episode_unavailable_uses_recorded_episode_fields(tmp_path):
    rec = {"device_execution_ms": 321, "replan_count": 2, "time_to_first_token_ms": 88}
    a = derive(tmp_path, [model(100)], metrics=rec)
    for k, v in rec.items():
        assert a[k] == v
        assert a["provenance"][k] == "recorded"


def test_episode_available_ignores_recorded_episode_fields(tmp_path):
    rec = {"device_execution_ms": 321, "replan_count": 2, "time_to_first_token_ms": 88}
    a = derive(tmp_path, [model(100)], {"events": [event("tap", 10, {})]}, metrics=rec)
    assert a["device_execution_ms"] == 10
    assert a["replan_count"] is None  # no event carries needs_replan
    assert a["time_to_first_token_ms"] is None  # episode has no first-token value
    for k in rec:
        assert a["provenance"][k] == "derived"


# =====================================================================================
# 3.3 Model calls and model time (R8, R22)
# =====================================================================================

def test_only_usage_bearing_assistant_and_tool_call_messages_are_model_calls(tmp_path):
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
    a = derive(tmp_path, history)
    assert a["llm_calls"] == 3
    assert a["llm_time_ms"] == 175
    assert a["tool_calls"] == 2


BAD_DURATIONS = ["absent", None, -1, -0.5, "100", True, False, NAN, float("inf"), [100]]


@pytest.mark.parametrize(("i", "bad"), cases(BAD_DURATIONS))
def test_llm_time_null_when_any_qualifying_duration_is_missing_or_invalid(batch, i, bad):
    specs = [{"history": [model(900), model(None) if b == "absent" else model(b), model(700)]} for b in BAD_DURATIONS]
    a = batch("llm_time", specs)[i]
    assert a["llm_calls"] == 3
    assert a["llm_time_ms"] is None


def test_zero_and_fractional_durations_are_valid(tmp_path):
    a = derive(tmp_path, [model(0), model(12.5), model(100)])
    assert a["llm_time_ms"] == pytest.approx(112.5)


def test_no_qualifying_message_gives_null_calls_time_and_tokens(tmp_path):
    """R8 and R3: history is available, so the recorded values are NOT used."""
    history = [{"type": "user", "content": "x"}, model(100, usage=None), call("tap", {}), result("tap")]
    rec = {"llm_calls": 5, "llm_time_ms": 50, "vision_llm_calls": 1, "vision_llm_time_ms": 5, "input_tokens": 100}
    a = derive(tmp_path, history, metrics=rec)
    for k in ("llm_calls", "llm_time_ms", "vision_llm_calls", "vision_llm_time_ms") + TOKENS:
        assert a[k] is None, k
        assert a["provenance"][k] == "derived", k
    assert a["tool_calls"] == 1


def test_no_qualifying_message_episode_override_still_applies(tmp_path):
    episode = {"events": [], "extra": {"prompt_tokens": 7, "total_tokens": 0}}
    a = derive(tmp_path, [{"type": "user", "content": "x"}], episode)
    assert a["llm_calls"] is None
    assert a["input_tokens"] == 7
    assert a["total_tokens"] == 0
    assert a["output_tokens"] is None


def test_empty_history(tmp_path):
    a = derive(tmp_path, [], metrics={"tool_errors": 4, "tool_calls": 4})
    assert a["llm_calls"] is None and a["llm_time_ms"] is None
    assert (a["tool_calls"], a["device_actions"], a["screenshots_taken"], a["tool_errors"]) == (0, 0, 0, 0)
    assert a["provenance"]["tool_errors"] == "derived"


def test_history_messages_object_form(tmp_path):
    a = derive(tmp_path, {"messages": [model(100), model(200)]})
    assert (a["llm_calls"], a["llm_time_ms"]) == (2, 300)


# =====================================================================================
# 3.3 Visual inference (R10-R13)
# =====================================================================================

IMG = [{"type": "image", "path": "shot.png"}]


def test_image_flags_the_next_call_not_its_own(tmp_path):
    a = derive(tmp_path, [model(100, attachments=IMG), model(200), model(300)])
    assert (a["vision_llm_calls"], a["vision_llm_time_ms"]) == (1, 200)


def test_image_on_user_message_flags_next_call(tmp_path):
    a = derive(tmp_path, [{"type": "user", "content": "look", "attachments": IMG}, model(100), model(200)])
    assert (a["vision_llm_calls"], a["vision_llm_time_ms"]) == (1, 100)


def test_non_image_attachment_does_not_flag(tmp_path):
    history = [{"type": "user", "content": "x", "attachments": [{"type": "file", "path": "a.txt"}]}, model(100)]
    a = derive(tmp_path, history)
    assert (a["vision_llm_calls"], a["vision_llm_time_ms"]) == (0, None)


def test_usage_without_match_gives_zero_calls_and_null_time(tmp_path):
    a = derive(tmp_path, [model(100), model(200)])
    assert (a["vision_llm_calls"], a["vision_llm_time_ms"]) == (0, None)


def test_several_screenshots_before_one_call_count_once_and_flag_clears(tmp_path):
    history = [
        {"type": "user", "content": "x", "attachments": IMG + IMG},
        call("screenshot", {}, "s1"), result("screenshot", "ok", "s1"),
        model(100), model(200),
    ]
    a = derive(tmp_path, history)
    assert (a["llm_calls"], a["vision_llm_calls"], a["vision_llm_time_ms"]) == (2, 1, 100)


def test_non_qualifying_message_does_not_clear_the_flag(tmp_path):
    history = [{"type": "user", "content": "x", "attachments": IMG}, model(None, usage=None), model(300)]
    a = derive(tmp_path, history)
    assert (a["vision_llm_calls"], a["vision_llm_time_ms"]) == (1, 300)


def test_two_visual_calls(tmp_path):
    history = [{"type": "user", "attachments": IMG}, model(100), model(50),
               call("screenshot", {}, "s"), result("screenshot", "img", "s"), model(200)]
    a = derive(tmp_path, history)
    assert (a["vision_llm_calls"], a["vision_llm_time_ms"], a["llm_time_ms"]) == (2, 300, 350)


def test_vision_time_null_when_a_matching_call_lacks_duration(tmp_path):
    history = [{"type": "user", "attachments": IMG}, model(None), model(200)]
    a = derive(tmp_path, history)
    assert (a["vision_llm_calls"], a["vision_llm_time_ms"], a["llm_time_ms"]) == (1, None, None)


def test_vision_time_only_needs_the_matching_calls_durations(tmp_path):
    history = [model(None), {"type": "user", "attachments": IMG}, model(300)]
    a = derive(tmp_path, history)
    assert a["llm_time_ms"] is None
    assert (a["vision_llm_calls"], a["vision_llm_time_ms"]) == (1, 300)


def test_image_after_last_call_counts_nothing(tmp_path):
    a = derive(tmp_path, [model(100), {"type": "user", "attachments": IMG}])
    assert (a["vision_llm_calls"], a["vision_llm_time_ms"]) == (0, None)


SHOT_CASES = [
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
]


@pytest.mark.parametrize(("i", "result_msg", "visual"), cases(SHOT_CASES))
def test_screenshot_like_result_detection(batch, i, result_msg, visual):
    specs = [{"history": [call("screenshot" if m.get("tool_name") == "screenshot" else "capture", {}, "c1"), m, model(100)]}
             for m, _ in SHOT_CASES]
    a = batch("shots", specs)[i]
    assert a["vision_llm_calls"] == (1 if visual else 0)
    assert a["vision_llm_time_ms"] == (100 if visual else None)


def test_result_without_tool_name_uses_paired_call_name(tmp_path):
    history = [call("screenshot", {}, "c1"), result(None, "done", "c1"), model(100)]
    assert derive(tmp_path, history)["vision_llm_calls"] == 1
    history2 = [call("screenshot"), {"type": "tool_result", "content": "done"}, model(100)]
    # No id and no name: the result cannot be paired by name, so nothing names it screenshot.
    assert derive(tmp_path / "b", history2)["vision_llm_calls"] == 0


def test_result_tool_name_wins_over_paired_call_name(tmp_path):
    history = [call("screenshot", {}, "c1"), result("other", "done", "c1"), model(100)]
    assert derive(tmp_path, history)["vision_llm_calls"] == 0


def test_tool_call_with_usage_after_screenshot_is_the_visual_call(tmp_path):
    history = [call("screenshot", {}, "s"), result("screenshot", "x", "s"),
               model(70, kind="tool_call", tool_name="tap", tool_input={"x": 1}), model(30)]
    a = derive(tmp_path, history)
    assert (a["llm_calls"], a["vision_llm_calls"], a["vision_llm_time_ms"]) == (2, 1, 70)
    assert (a["tool_calls"], a["device_actions"]) == (2, 1)


# =====================================================================================
# 3.5 screenshots_taken (R13) and pairing (R14)
# =====================================================================================

TAKEN_CASES = [
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
]


@pytest.mark.parametrize(("i", "content", "counted"), cases(TAKEN_CASES))
def test_screenshots_taken_by_result_shape(batch, i, content, counted):
    a = batch("taken", [{"history": [call("capture", {}, "c1"), result("capture", c, "c1")]} for c, _ in TAKEN_CASES])[i]
    assert a["screenshots_taken"] == (1 if counted else 0)
    assert a["tool_calls"] == 1


def test_screenshot_tool_name_alone_does_not_count_as_screenshot_taken(tmp_path):
    a = derive(tmp_path, [call("screenshot", {}, "c1"), result("screenshot", "done", "c1")])
    assert a["screenshots_taken"] == 0


def test_call_without_result_counts_as_tool_call_only(tmp_path):
    a = derive(tmp_path, [call("capture", {}, "c1"), call("tap", {"x": 1}), model(100)])
    assert (a["tool_calls"], a["screenshots_taken"], a["device_actions"]) == (2, 0, 1)


def test_pairing_each_result_answers_at_most_one_call(tmp_path):
    history = [call("capture"), call("capture"), result("capture", '{"data": "x"}')]
    a = derive(tmp_path, history)
    assert (a["tool_calls"], a["screenshots_taken"]) == (2, 1)


def test_pairing_with_duplicate_ids_each_result_once(tmp_path):
    history = [call("capture", {}, "c1"), call("capture", {}, "c1"), result("capture", '{"data": "x"}', "c1")]
    assert derive(tmp_path, history)["screenshots_taken"] == 1


def test_pairing_needs_a_later_result(tmp_path):
    history = [result("capture", '{"data": "x"}'), call("capture")]
    assert derive(tmp_path, history)["screenshots_taken"] == 0


def test_pairing_without_ids_needs_the_same_name(tmp_path):
    history = [call("capture"), result("other", '{"data": "x"}')]
    assert derive(tmp_path, history)["screenshots_taken"] == 0


def test_call_with_id_does_not_pair_with_id_less_result(tmp_path):
    history = [call("capture", {}, "c1"), result("capture", '{"data": "x"}')]
    assert derive(tmp_path, history)["screenshots_taken"] == 0


def test_call_with_id_does_not_pair_with_other_id(tmp_path):
    history = [call("capture", {}, "c1"), result("capture", '{"data": "x"}', "c2")]
    assert derive(tmp_path, history)["screenshots_taken"] == 0


def test_pairing_by_id_out_of_order_decides_the_errored_call(tmp_path):
    """R14 + R18: the error result answers call c2 (screenshot), not c1 (tap)."""
    history = [call("tap", {"x": 1}, "c1"), call("screenshot", {}, "c2"),
               {"type": "tool_result", "tool_call_id": "c2", "content": "boom", "is_error": True},
               {"type": "tool_result", "tool_call_id": "c1", "content": "{\"ok\": true}"}]
    a = derive(tmp_path, history)
    assert (a["failure_event_ref"], a["first_failure_stage"]) == ("history:2", "unknown")
    history[2], history[3] = (
        {"type": "tool_result", "tool_call_id": "c2", "content": "{\"ok\": true}"},
        {"type": "tool_result", "tool_call_id": "c1", "content": "boom", "is_error": True},
    )
    b = derive(tmp_path / "b", history)
    assert (b["failure_event_ref"], b["first_failure_stage"]) == ("history:3", "device_execution")


@pytest.mark.parametrize(("error_first", "stage"), [(True, "unknown"), (False, "device_execution")])
def test_pairing_without_ids_in_call_order(tmp_path, error_first, stage):
    """Call 1 is a read-only query (not a device action), call 2 a device action; id-less
    results of the same name answer calls in order."""
    ok = result("bridge_contacts", "{\"ok\": true}")
    err = result("bridge_contacts", "denied", is_error=True)
    history = [call("bridge_contacts", {"action": "query"}), call("bridge_contacts", {"action": "create"}),
               err if error_first else ok, ok if error_first else err]
    a = derive(tmp_path, history)
    assert a["first_failure_stage"] == stage
    assert a["failure_event_ref"] == ("history:2" if error_first else "history:3")


# =====================================================================================
# 3.5 tool_errors (R15) and the episode replacement
# =====================================================================================

ERROR_CASES = [
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
]


@pytest.mark.parametrize(("i", "extra", "content", "errors"), cases(ERROR_CASES))
def test_history_tool_error_rules(batch, i, extra, content, errors):
    specs = [{"history": [call("capture", {}, "c1"), result("capture", c, "c1", **x)]} for x, c, _ in ERROR_CASES]
    a = batch("errors", specs)[i]
    assert a["tool_errors"] == errors
    assert a["provenance"]["tool_errors"] == "derived"


def test_only_tool_results_are_errors(tmp_path):
    history = [call("tap", {"x": 1}, is_error=True), model(100, is_error=True), {"type": "user", "is_error": True}]
    assert derive(tmp_path, history)["tool_errors"] == 0


def test_recovered_errors_still_count(tmp_path):
    history = [call("tap", {}, "a"), result("tap", "x", "a", is_error=True),
               call("tap", {}, "b"), result("tap", '{"ok": false}', "b"),
               call("tap", {}, "c"), result("tap", '{"ok": true}', "c")]
    a = derive(tmp_path, history, status="passed")
    assert a["tool_errors"] == 2


HISTORY_3_ERRORS = [call("tap", {}, "a"), result("tap", "x", "a", is_error=True),
                    call("tap", {}, "b"), result("tap", "x", "b", is_error=True),
                    call("tap", {}, "c"), result("tap", '{"ok": false}', "c")]


def test_nonempty_episode_events_replace_tool_errors(tmp_path):
    events = [
        event("tap", 1, {}, is_error=True),
        event("tap", 1, {}, is_error=False),
        event("tap", 1, {}, content='{"ok": false}'),  # content is not parsed again
        event("tap", 1, {}, kind="model_response", is_error=True),
        event("tap", 1, {}, kind="tool_call", is_error=True),
        {"type": "error", "is_error": True, "message": "x"},
        event("swipe", 1, {}, is_error=1),
    ]
    a = derive(tmp_path, HISTORY_3_ERRORS, {"events": events})
    assert a["tool_errors"] == 2
    assert a["provenance"]["tool_errors"] == "derived"


def test_episode_events_without_errors_replace_with_zero(tmp_path):
    a = derive(tmp_path, HISTORY_3_ERRORS, {"events": [event("tap", 1, {})]})
    assert a["tool_errors"] == 0


@pytest.mark.parametrize("events", ["absent", [], "not a list", {"0": {}}, None])
def test_empty_or_absent_episode_events_keep_history_tool_errors(tmp_path, events):
    episode = {"episode_id": "e"} if events == "absent" else {"events": events}
    assert derive(tmp_path, HISTORY_3_ERRORS, episode)["tool_errors"] == 3


def test_episode_tool_errors_when_history_unavailable(tmp_path):
    a = derive(tmp_path, None, {"events": [event("tap", 1, {}, is_error=True)]}, metrics={"tool_errors": 9})
    assert a["tool_errors"] == 1
    assert a["provenance"]["tool_errors"] == "derived"


def test_empty_episode_events_and_no_history_use_recorded_tool_errors(tmp_path):
    a = derive(tmp_path, None, {"events": []}, metrics={"tool_errors": 9})
    assert a["tool_errors"] == 9
    assert a["provenance"]["tool_errors"] == "recorded"


# =====================================================================================
# 3.4 device_actions (R18, R20, R21)
# =====================================================================================

def test_every_allowlisted_name_is_a_device_action(tmp_path):
    history = [call(n, {"x": 1}) for n in ALLOWLIST]
    a = derive(tmp_path, history)
    assert (a["device_actions"], a["tool_calls"]) == (len(ALLOWLIST), len(ALLOWLIST))


OUTSIDE = ["Tap", "TAP", "tap ", "screenshot", "bridge_files", "search", "recall_memory",
           "open", "quick_actions", "bridge_contact", ""]


@pytest.mark.parametrize(("i", "name"), cases(OUTSIDE))
def test_names_outside_the_allowlist_are_not_device_actions(batch, i, name):
    a = batch("outside", [{"history": [call(n, {"x": 1})]} for n in OUTSIDE])[i]
    assert (a["device_actions"], a["tool_calls"]) == (0, 1)


def test_only_tool_call_messages_count_as_device_actions(tmp_path):
    history = [result("tap", "x"), event("tap", 1, {}), model(10, kind="assistant", tool_name="tap")]
    assert derive(tmp_path, history)["device_actions"] == 0


QUICK_CASES = [
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
]


def _call_with_input(name, tool_input):
    return call(name) if tool_input == "absent" else {"type": "tool_call", "tool_name": name, "tool_input": tool_input}


@pytest.mark.parametrize(("i", "tool_input", "counted"), cases(QUICK_CASES))
def test_quick_action_list_exclusion(batch, i, tool_input, counted):
    a = batch("quick", [{"history": [_call_with_input("quick_action", t)]} for t, _ in QUICK_CASES])[i]
    assert a["device_actions"] == (1 if counted else 0)


RO_ACTIONS = READ_ONLY + ["Query", "LIST", "Search", "gEt"]


@pytest.mark.parametrize(("i", "action"), cases(RO_ACTIONS))
def test_read_only_bridge_actions_are_excluded_case_insensitively(batch, i, action):
    specs = [{"history": [m for name in BRIDGES for m in (call(name, {"action": act}), call(name, '{"action": "%s"}' % act))]}
             for act in RO_ACTIONS]
    a = batch("readonly", specs)[i]
    assert (a["device_actions"], a["tool_calls"]) == (0, 2 * len(BRIDGES))


BRIDGE_CASES = [
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
]


@pytest.mark.parametrize(("i", "tool_input", "counted"), cases(BRIDGE_CASES))
def test_bridge_action_edge_cases(batch, i, tool_input, counted):
    a = batch("bridge", [{"history": [_call_with_input("bridge_calendar", t)]} for t, _ in BRIDGE_CASES])[i]
    assert a["device_actions"] == (1 if counted else 0)


def test_list_flag_does_not_exclude_other_tools(tmp_path):
    a = derive(tmp_path, [call("open_app", {"list": True}), call("tap", {"action": "query"})])
    assert a["device_actions"] == 2


# =====================================================================================
# 3.4 device_execution_ms (R23, R39)
# =====================================================================================

DEVICE_MS_CASES = [
    ([event("tap", 200, {}), event("enter_text", 800, {}), event("swipe", 400, {}, is_error=True)], 1400),
    ([event("tap", -50, {}), event("swipe", 100, {})], 100),
    ([event("tap", -50, {})], 0),
    ([event("tap", 0, {}), event("tap", 0, {})], 0),
    ([event("tap", 212.4, {}), event("tap", 0.4, {})], pytest.approx(212.8)),
    ([event("screenshot", 300, {})], 0),                              # events, none qualifying
    ([event("screenshot", "absent", {})], 0),
    ([event("bridge_contacts", 11, {"action": "query"})], 0),
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
]


@pytest.mark.parametrize(("i", "events", "expected"), cases(DEVICE_MS_CASES))
def test_device_execution_ms(batch, i, events, expected):
    a = batch("device_ms", [{"history": [model(10)], "episode": {"events": e}} for e, _ in DEVICE_MS_CASES])[i]
    assert a["device_execution_ms"] == expected
    assert a["provenance"]["device_execution_ms"] == "derived"


@pytest.mark.parametrize("episode", [{"events": []}, {"episode_id": "e"}, {"events": "x"}, {"events": None},
                                     {"events": {"a": 1}}])
def test_device_execution_null_without_events(tmp_path, episode):
    a = derive(tmp_path, [model(10)], episode, metrics={"device_execution_ms": 55})
    assert a["device_execution_ms"] is None
    assert a["provenance"]["device_execution_ms"] == "derived"


FALLBACK_CASES = [
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
]


@pytest.mark.parametrize(("i", "events", "expected"), cases(FALLBACK_CASES))
def test_device_execution_input_fallback(batch, i, events, expected):
    a = batch("fallback", [{"history": [model(10)], "episode": {"events": e}} for e, _ in FALLBACK_CASES])[i]
    assert a["device_execution_ms"] == expected


def test_excluded_result_with_missing_duration_does_not_make_it_unavailable(tmp_path):
    events = [event("bridge_contacts", tool_input={"action": "query"}, kind="tool_call"),
              event("bridge_contacts"), event("tap", 9, {})]
    assert derive(tmp_path, [model(10)], {"events": events})["device_execution_ms"] == 9


# =====================================================================================
# 3.5 replan_count
# =====================================================================================

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
def test_replan_count(tmp_path, events, expected):
    a = derive(tmp_path, [model(10)], {"events": events}, metrics={"replan_count": 42})
    assert a["replan_count"] == expected
    assert a["provenance"]["replan_count"] == "derived"


def test_replan_count_null_when_events_not_a_list(tmp_path):
    assert derive(tmp_path, [model(10)], {"events": {"needs_replan": True}})["replan_count"] is None


# =====================================================================================
# 3.2 time_to_first_token_ms (R39, R40)
# =====================================================================================

TTFT_CASES = [
    (640, 640), (0.5, 0.5), (0, None), (-1, None), (True, None), ("640", None), (None, None), ("absent", None),
    (NAN, None), (float("inf"), None),
]


@pytest.mark.parametrize(("i", "value", "expected"), cases(TTFT_CASES))
def test_ttft_from_episode_positive_only(batch, i, value, expected):
    specs = [{"history": [model(10)], "metrics": {"time_to_first_token_ms": 300},
              "episode": {"events": [], "extra": {} if v == "absent" else {"first_token_time_ms": v}}}
             for v, _ in TTFT_CASES]
    a = batch("ttft", specs)[i]
    assert a["time_to_first_token_ms"] == expected
    assert a["provenance"]["time_to_first_token_ms"] == "derived"


@pytest.mark.parametrize(("value", "expected"), [(300, 300), (0, None), (-5, None), (True, None), ("300", None), (None, None)])
def test_ttft_recorded_value_positive_only(tmp_path, value, expected):
    a = derive(tmp_path, [model(10)], metrics={"time_to_first_token_ms": value})
    assert a["time_to_first_token_ms"] == expected
    assert a["provenance"]["time_to_first_token_ms"] == "recorded"


@pytest.mark.parametrize("extra", [[{"first_token_time_ms": 640}], "640", 640, None])
def test_ttft_non_object_extra_is_none(tmp_path, extra):
    a = derive(tmp_path, [model(10)], {"events": [], "extra": extra})
    assert a["time_to_first_token_ms"] is None


def test_extra_counts_when_events_is_not_a_list(tmp_path):
    a = derive(tmp_path, [model(10)], {"events": "x", "extra": {"first_token_time_ms": 50, "prompt_tokens": 3}})
    assert (a["time_to_first_token_ms"], a["input_tokens"]) == (50, 3)


# =====================================================================================
# 3.5 Tokens (R8, R9, R36)
# =====================================================================================

def _tokens(a: dict) -> tuple:
    return tuple(a[k] for k in TOKENS)


def test_token_sums_with_per_message_fallback_keys(tmp_path):
    history = [
        model(1, {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12, "cached_input_tokens": 4, "reasoning_tokens": 1}),
        model(1, {"prompt_tokens": 20, "completion_tokens": 3, "total_tokens": 23, "cached_tokens": 5, "reasoning_tokens": 2}),
    ]
    assert _tokens(derive(tmp_path, history)) == (30, 5, 35, 9, 3)


@pytest.mark.parametrize("bad", [None, "12", True, NAN, [3]])
def test_fallback_key_used_when_primary_is_not_a_number(tmp_path, bad):
    usage = {"input_tokens": bad, "prompt_tokens": 7, "output_tokens": bad, "completion_tokens": 2,
             "cached_input_tokens": bad, "cached_tokens": 1, "total_tokens": 9, "reasoning_tokens": 0}
    assert _tokens(derive(tmp_path, [model(1, usage)])) == (7, 2, 9, 1, 0)


def test_primary_key_wins_over_fallback_including_zero(tmp_path):
    usage = {"input_tokens": 0, "prompt_tokens": 100, "output_tokens": 5, "completion_tokens": 100,
             "cached_input_tokens": 0, "cached_tokens": 100, "total_tokens": 5}
    assert _tokens(derive(tmp_path, [model(1, usage)]))[:4] == (0, 5, 5, 0)


def test_total_fallback_is_per_message(tmp_path):
    history = [model(1, {"input_tokens": 10, "output_tokens": 2, "total_tokens": 50}),
               model(1, {"input_tokens": 3, "output_tokens": 4})]
    a = derive(tmp_path, history)
    assert (a["input_tokens"], a["output_tokens"], a["total_tokens"]) == (13, 6, 57)


def test_total_fallback_uses_input_output_fallback_keys(tmp_path):
    a = derive(tmp_path, [model(1, {"prompt_tokens": 3, "completion_tokens": 4})])
    assert a["total_tokens"] == 7


def test_total_fallback_needs_both_input_and_output(tmp_path):
    history = [model(1, {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}), model(1, {"input_tokens": 3})]
    a = derive(tmp_path, history)
    assert (a["input_tokens"], a["output_tokens"], a["total_tokens"]) == (13, None, None)


def test_missing_field_on_one_message_nulls_only_that_field(tmp_path):
    history = [model(1, {"input_tokens": 1, "output_tokens": 1, "reasoning_tokens": 4, "cached_input_tokens": 2}),
               model(1, {"input_tokens": 2, "output_tokens": 2, "cached_input_tokens": 3})]
    assert _tokens(derive(tmp_path, history)) == (3, 3, 6, 5, None)


def test_optional_token_fields_are_not_assumed_zero(tmp_path):
    a = derive(tmp_path, [model(1, {"input_tokens": 1, "output_tokens": 1})])
    assert (a["cached_input_tokens"], a["reasoning_tokens"]) == (None, None)


def test_tokens_on_non_qualifying_messages_are_ignored(tmp_path):
    history = [{"type": "user", "usage": {"input_tokens": 1000, "output_tokens": 1000}},
               result("tap", "x", usage={"input_tokens": 1000, "output_tokens": 1000}),
               model(1, {"input_tokens": 1, "output_tokens": 2})]
    assert _tokens(derive(tmp_path, history))[:3] == (1, 2, 3)


def test_episode_override_replaces_including_zero(tmp_path):
    history = [model(1, {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12, "cached_input_tokens": 4, "reasoning_tokens": 1})]
    extra = {"prompt_tokens": 0, "completion_tokens": 5, "cached_prompt_tokens": 0, "reasoning_tokens": 0}
    a = derive(tmp_path, history, {"events": [], "extra": extra})
    assert _tokens(a) == (0, 5, 12, 0, 0)  # total is history's: explicit totals are not recomputed
    for k in TOKENS:
        assert a["provenance"][k] == "derived"


def test_episode_total_is_preserved_not_forced_to_sum(tmp_path):
    history = [model(1, {"input_tokens": 10, "output_tokens": 2})]
    extra = {"prompt_tokens": 9120, "completion_tokens": 455, "total_tokens": 999, "cached_prompt_tokens": 4096}
    assert _tokens(derive(tmp_path, history, {"extra": extra})) == (9120, 455, 999, 4096, None)


NON_NUMERIC = ["9", True, False, None, NAN, [1], {"v": 1}]


@pytest.mark.parametrize(("i", "bad"), cases(NON_NUMERIC))
def test_non_numeric_episode_values_do_not_override(batch, i, bad):
    history = [model(1, {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12, "cached_input_tokens": 4, "reasoning_tokens": 1})]
    keys = ("prompt_tokens", "completion_tokens", "total_tokens", "cached_prompt_tokens", "reasoning_tokens")
    specs = [{"history": history, "episode": {"events": [], "extra": {k: b for k in keys}}} for b in NON_NUMERIC]
    assert _tokens(batch("non_numeric", specs)[i]) == (10, 2, 12, 4, 1)


def test_episode_override_key_names_are_the_episode_names(tmp_path):
    """extra.input_tokens / output_tokens / cached_input_tokens are not the override keys."""
    history = [model(1, {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12, "cached_input_tokens": 4})]
    extra = {"input_tokens": 1, "output_tokens": 1, "cached_input_tokens": 1, "cached_tokens": 1}
    assert _tokens(derive(tmp_path, history, {"extra": extra}))[:4] == (10, 2, 12, 4)


def test_episode_tokens_with_history_unavailable(tmp_path):
    rec = {"input_tokens": 77, "output_tokens": 8, "total_tokens": 85, "cached_input_tokens": 1, "reasoning_tokens": 2}
    a = derive(tmp_path, None, {"extra": {"prompt_tokens": 5, "reasoning_tokens": 0}}, metrics=rec)
    assert _tokens(a) == (5, 8, 85, 1, 0)
    assert a["provenance"]["input_tokens"] == "derived"
    assert a["provenance"]["reasoning_tokens"] == "derived"
    assert a["provenance"]["output_tokens"] == "recorded"
    assert a["provenance"]["total_tokens"] == "recorded"


# =====================================================================================
# 3.5 failure evidence: first_failure_stage / failure_event_ref (R16, R17, R18, R22)
# =====================================================================================

def _err(name, tool_input=None, call_id="e"):
    return [call(name, tool_input, call_id), result(name, "boom", call_id, is_error=True)]


STAGE_CASES = [
    ("tap", {"x": 1}, "device_execution"),
    ("bridge_calendar", {"action": "create"}, "device_execution"),
    ("quick_action", {"list": "true"}, "device_execution"),
    ("screenshot", {}, "unknown"),
    ("recall_memory", {}, "unknown"),
    ("bridge_contacts", {"action": "Query"}, "unknown"),   # R18: exclusions included
    ("quick_action", {"list": True}, "unknown"),
]


@pytest.mark.parametrize(("i", "name", "tool_input", "stage"), cases(STAGE_CASES))
def test_history_error_stage(batch, i, name, tool_input, stage):
    specs = [{"history": [model(10)] + _err(n, t), "first_failure_stage": None} for n, t, _ in STAGE_CASES]
    a = batch("stage", specs)[i]
    assert a["failure_event_ref"] == "history:2"
    assert a["first_failure_stage"] == stage
    assert a["provenance"]["failure_event_ref"] == "derived"
    assert a["provenance"]["first_failure_stage"] == "derived"


def test_first_recognized_error_is_the_reference(tmp_path):
    history = [call("tap", {}, "a"), result("tap", "fine", "a"),
               call("screenshot", {}, "b"), result("screenshot", '{"ok": false}', "b"),
               call("tap", {}, "c"), result("tap", "x", "c", is_error=True)]
    a = derive(tmp_path, history)
    assert (a["failure_event_ref"], a["first_failure_stage"]) == ("history:3", "unknown")


def test_history_reference_index_counts_skipped_entries(tmp_path):
    """R22: non-object entries are skipped but keep their index."""
    history = ["junk", 5, None, call("tap", {}, "c"), result("tap", "x", "c", is_error=True)]
    assert derive(tmp_path, history)["failure_event_ref"] == "history:4"


def test_history_reference_index_in_messages_object(tmp_path):
    history = {"messages": [{"type": "user"}, 3] + _err("tap", {})}
    assert derive(tmp_path, history)["failure_event_ref"] == "history:3"


def test_episode_error_replaces_history_reference(tmp_path):
    history = _err("screenshot", {})
    episode = {"events": ["junk", event("screenshot", 5, {}), event("tap", 5, {}, is_error=True),
                          event("swipe", 5, {}, is_error=True)]}
    a = derive(tmp_path, history, episode, first_failure_stage="planning")
    assert (a["failure_event_ref"], a["first_failure_stage"]) == ("episode:2", "device_execution")


def test_episode_error_stage_uses_input_fallback(tmp_path):
    """R18 + R23: the errored bridge result has no input; the preceding call's read-only
    action excludes it from device actions, so the stage is unknown."""
    episode = {"events": [event("bridge_contacts", tool_input={"action": "query"}, kind="tool_call"),
                          event("bridge_contacts", 11, is_error=True)]}
    a = derive(tmp_path, [model(10)], episode)
    assert (a["failure_event_ref"], a["first_failure_stage"]) == ("episode:1", "unknown")


def test_episode_only_tool_result_events_are_errors(tmp_path):
    history = [model(10)] + _err("screenshot", {})
    episode = {"events": [event("tap", 1, {}, kind="model_response", is_error=True),
                          {"type": "error", "is_error": True}, event("tap", 1, {}, kind="tool_call", is_error=True),
                          event("tap", 1, {})]}
    a = derive(tmp_path, history, episode)
    assert (a["failure_event_ref"], a["first_failure_stage"]) == ("history:2", "unknown")


def test_episode_without_error_keeps_history_reference(tmp_path):
    history = _err("tap", {})
    a = derive(tmp_path, history, {"events": [event("tap", 4, {})]})
    assert (a["failure_event_ref"], a["first_failure_stage"]) == ("history:1", "device_execution")


def test_episode_error_without_history(tmp_path):
    a = derive(tmp_path, None, {"events": [event("swipe", 4, {}, is_error=True)]},
               metrics={"failure_event_ref": "history:7"}, first_failure_stage="planning")
    assert (a["failure_event_ref"], a["first_failure_stage"]) == ("episode:0", "device_execution")
    assert a["provenance"]["failure_event_ref"] == "derived"


# R17 "with artifacts" per source, as in R3: (history.json, episode.json, recorded stage and
# reference) -> (stage, reference, provenance of both).
RECORDED = {"first_failure_stage": "planning", "metrics": {"failure_event_ref": "history:9"}}
PER_SOURCE_CASES = [
    # an episode error supplies the reference, over history's own error
    ({"history": _err("screenshot", {}), "episode": {"events": [event("tap", 3, {}, is_error=True)]}},
     ("device_execution", "episode:0", "derived")),
    # an episode error without history.json
    ({"episode": {"events": [event("screenshot", 3, {}), event("swipe", 3, {}, is_error=True)]}},
     ("device_execution", "episode:1", "derived")),
    # history available with an error; the episode has none
    ({"history": _err("tap", {}), "episode": {"events": [event("tap", 3, {})]}},
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
    ({"episode": {"events": [event("tap", 3, {})]}, "history": b"\xff not utf-8"},
     ("planning", "history:9", "recorded")),
]


@pytest.mark.parametrize(("i", "files", "expected"), cases(PER_SOURCE_CASES))
def test_failure_evidence_is_decided_per_source(batch, i, files, expected):
    specs = [{**files, **RECORDED} for files, _ in PER_SOURCE_CASES]
    a = batch("per_source", specs)[i]
    stage, ref, source = expected
    assert (a["first_failure_stage"], a["failure_event_ref"]) == (stage, ref)
    assert a["provenance"]["first_failure_stage"] == source
    assert a["provenance"]["failure_event_ref"] == source


def test_episode_without_errors_never_clears_a_recorded_reference(tmp_path):
    """R17: history.json missing, episode.json available with events but no error."""
    a = derive(tmp_path, None, {"events": [event("tap", 4, {}), event("swipe", 2, {})]},
               first_failure_stage="device_execution", metrics={"failure_event_ref": "history:3"})
    assert (a["first_failure_stage"], a["failure_event_ref"]) == ("device_execution", "history:3")
    assert (a["provenance"]["first_failure_stage"], a["provenance"]["failure_event_ref"]) == ("recorded", "recorded")
    assert a["provenance"]["tool_errors"] == "derived" and a["tool_errors"] == 0  # the episode still counts


@pytest.mark.parametrize(("history", "episode", "expected"), [
    # (reference, stage) of each file's first error; (None, None) = available without one;
    # None = unavailable
    (("history:1", "unknown"), ("episode:4", "device_execution"), ("device_execution", "episode:4", "derived")),
    (None, ("episode:4", "unknown"), ("unknown", "episode:4", "derived")),
    (("history:1", "device_execution"), (None, None), ("device_execution", "history:1", "derived")),
    (("history:1", "device_execution"), None, ("device_execution", "history:1", "derived")),
    ((None, None), (None, None), ("planning", None, "derived")),
    ((None, None), None, ("planning", None, "derived")),
    (None, (None, None), ("planning", "history:9", "recorded")),
    (None, None, ("planning", "history:9", "recorded")),
])
def test_failure_evidence_formula(history, episode, expected):
    assert failure_evidence("planning", "history:9", history, episode) == expected


@pytest.mark.parametrize("recorded_stage", ["setup", "evaluation"])
def test_failure_evidence_formula_keeps_outcome_stages(recorded_stage):
    assert failure_evidence(recorded_stage, None, ("history:1", "device_execution"), None) == (
        recorded_stage, "history:1", "derived")
    assert failure_evidence(recorded_stage, "episode:2", None, (None, None)) == (
        recorded_stage, "episode:2", "recorded")


@pytest.mark.parametrize("recorded", ["setup", "evaluation"])
def test_recorded_setup_or_evaluation_stage_wins_over_evidence(tmp_path, recorded):
    a = derive(tmp_path, _err("tap", {}), first_failure_stage=recorded)
    assert a["first_failure_stage"] == recorded
    assert a["failure_event_ref"] == "history:1"


@pytest.mark.parametrize(("recorded", "evidence_name", "expected"), [
    ("planning", "tap", "device_execution"),
    ("unknown", "tap", "device_execution"),
    ("device_execution", "screenshot", "unknown"),
    ("planning", "screenshot", "unknown"),
    (None, "tap", "device_execution"),
])
def test_evidence_stage_wins_over_other_recorded_labels(tmp_path, recorded, evidence_name, expected):
    a = derive(tmp_path, _err(evidence_name, {}), first_failure_stage=recorded)
    assert a["first_failure_stage"] == expected


@pytest.mark.parametrize("recorded", ["planning", "perception", "final_response", "unknown", None, "warp"])
def test_no_evidence_keeps_recorded_stage_and_derives_null_reference(tmp_path, recorded):
    history = [model(10), call("tap", {}, "c"), result("tap", "fine", "c")]
    a = derive(tmp_path, history, first_failure_stage=recorded, metrics={"failure_event_ref": "history:9"})
    assert a["first_failure_stage"] == recorded
    assert a["failure_event_ref"] is None
    assert a["provenance"]["failure_event_ref"] == "derived"


def test_without_artifacts_both_are_recorded(tmp_path):
    a = derive(tmp_path, first_failure_stage="perception", metrics={"failure_event_ref": "episode:3"})
    assert (a["first_failure_stage"], a["failure_event_ref"]) == ("perception", "episode:3")
    assert a["provenance"]["first_failure_stage"] == "recorded"
    assert a["provenance"]["failure_event_ref"] == "recorded"


def test_success_clears_stage_and_reference(tmp_path):
    a = derive(tmp_path, _err("tap", {}), status="passed", first_failure_stage="planning")
    assert (a["first_failure_stage"], a["failure_event_ref"]) == (None, None)
    assert a["tool_errors"] == 1


def test_success_clears_recorded_stage_and_reference_without_artifacts(tmp_path):
    a = derive(tmp_path, status="passed", first_failure_stage="planning", metrics={"failure_event_ref": "history:1"})
    assert (a["first_failure_stage"], a["failure_event_ref"]) == (None, None)


def test_derived_legacy_success_clears_too(tmp_path):
    r = {"task_id": "t", "status": "passed", "first_failure_stage": "planning",
         "metrics": {"failure_event_ref": "history:1"}}
    a = derive_raw(tmp_path, json.dumps(r))
    assert a["success"] is True
    assert (a["first_failure_stage"], a["failure_event_ref"]) == (None, None)


def test_unknown_success_does_not_clear(tmp_path):
    a = derive(tmp_path, _err("tap", {}), status="judge_error", first_failure_stage="evaluation")
    assert a["success"] is None
    assert (a["first_failure_stage"], a["failure_event_ref"]) == ("evaluation", "history:1")


def test_explicit_false_success_with_passed_status_does_not_clear(tmp_path):
    a = derive(tmp_path, _err("tap", {}), status="passed", success=False, first_failure_stage=None)
    assert (a["first_failure_stage"], a["failure_event_ref"]) == ("device_execution", "history:1")


# =====================================================================================
# Numbers in artifacts are never Booleans / NaN (run-directory.md, R42)
# =====================================================================================

def test_nan_duration_in_history_makes_llm_time_unavailable(tmp_path):
    a = derive(tmp_path, [model(NAN), model(100)])
    assert a["llm_calls"] == 2
    assert a["llm_time_ms"] is None
    assert not (isinstance(a["llm_time_ms"], float) and math.isnan(a["llm_time_ms"]))


def test_boolean_token_values_are_not_numbers(tmp_path):
    a = derive(tmp_path, [model(1, {"input_tokens": True, "output_tokens": 2, "reasoning_tokens": False})])
    assert (a["input_tokens"], a["output_tokens"], a["total_tokens"], a["reasoning_tokens"]) == (None, 2, None, None)


# =====================================================================================
# More edge cases
# =====================================================================================

def test_unlisted_failure_class_does_not_exclude_inferred_eligibility(tmp_path):
    a = derive_raw(tmp_path, json.dumps({"task_id": "t", "status": "failed", "failure_class": "network"}))
    assert a["agent_eligible"] is True


def test_total_tokens_null_falls_back_to_input_plus_output(tmp_path):
    """R36 reading: a total that is not a number is treated like an absent one (3.5, R9)."""
    a = derive(tmp_path, [model(1, {"input_tokens": 10, "output_tokens": 2, "total_tokens": None})])
    assert a["total_tokens"] == 12


def test_huge_integer_duration_is_not_a_number(tmp_path):
    a = derive(tmp_path, [model(10**400), model(5)])
    assert (a["llm_calls"], a["llm_time_ms"]) == (2, None)


@pytest.mark.parametrize("attachments", ["img", {"type": "image"}, [None, "image", 3], []])
def test_odd_attachments_do_not_flag_or_crash(tmp_path, attachments):
    a = derive(tmp_path, [{"type": "user", "attachments": attachments}, model(100)])
    assert (a["vision_llm_calls"], a["vision_llm_time_ms"]) == (0, None)


def test_image_among_odd_attachments_flags(tmp_path):
    a = derive(tmp_path, [{"type": "user", "attachments": [None, "image", {"type": "image"}]}, model(100)])
    assert (a["vision_llm_calls"], a["vision_llm_time_ms"]) == (1, 100)


def test_id_less_call_takes_next_same_name_result_in_call_order(tmp_path):
    """R14 literally: calls are paired in call order; the id-less first call takes the next
    later result of its name not yet taken, even though that result carries the second
    call's id."""
    history = [call("bridge_contacts", {"action": "query"}), call("bridge_contacts", {"action": "create"}, "c9"),
               result("bridge_contacts", "denied", "c9", is_error=True)]
    a = derive(tmp_path, history)
    assert (a["failure_event_ref"], a["first_failure_stage"]) == ("history:2", "unknown")


def test_episode_events_without_errors_and_no_history_give_zero_tool_errors(tmp_path):
    a = derive(tmp_path, None, {"events": [event("tap", 1, {})]}, metrics={"tool_errors": 9})
    assert a["tool_errors"] == 0
    assert a["provenance"]["tool_errors"] == "derived"


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


def test_attempt_row_has_every_output_field_and_provenance(tmp_path):
    a = derive(tmp_path, [model(1)])
    for k in OUTPUT_ATTEMPT_FIELDS:
        assert k in a, k
    for k in PROVENANCE_FIELDS:
        assert a["provenance"][k] in ("derived", "recorded"), k


def test_screenshot_result_without_a_call_still_flags(tmp_path):
    a = derive(tmp_path, [result("screenshot", "done"), model(100)])
    assert (a["vision_llm_calls"], a["vision_llm_time_ms"], a["tool_calls"]) == (1, 100, 0)


def test_image_attachment_on_tool_result_flags_even_without_string_content(tmp_path):
    history = [call("capture", {}, "c"), result("capture", {"bytes": 1}, "c", attachments=IMG), model(100)]
    assert derive(tmp_path, history)["vision_llm_calls"] == 1


def test_flagged_call_carrying_an_image_flags_the_following_call(tmp_path):
    """The call after a screenshot is visual and clears the flag; its own image (R10) then
    flags the next call."""
    history = [result("screenshot", "done"), model(100, attachments=IMG), model(200), model(400)]
    a = derive(tmp_path, history)
    assert (a["vision_llm_calls"], a["vision_llm_time_ms"], a["llm_time_ms"]) == (2, 300, 700)


@pytest.mark.parametrize("metrics", ["oops", None, [1, 2], 5])
def test_metrics_that_is_not_an_object_uses_top_level_values(tmp_path, metrics):
    a = derive(tmp_path, metrics=metrics, setup_ms=5, wall_ms=700)
    assert (a["setup_ms"], a["task_wall_ms"]) == (5, 700)


def test_no_deduplication_by_request_id(tmp_path):
    history = [model(100, request_id="r1", id="m1"), model(100, request_id="r1", id="m1")]
    assert (derive(tmp_path, history)["llm_calls"], derive(tmp_path / "b", history)["llm_time_ms"]) == (2, 200)


def test_every_tool_call_message_is_a_tool_call(tmp_path):
    history = [{"type": "tool_call"}, {"type": "tool_call", "tool_name": 5}, call("tap", {})]
    a = derive(tmp_path, history)
    assert (a["tool_calls"], a["device_actions"]) == (3, 1)


def test_result_before_call_with_same_id_does_not_pair(tmp_path):
    history = [result("capture", '{"data": "x"}', "c1"), call("capture", {}, "c1")]
    assert derive(tmp_path, history)["screenshots_taken"] == 0


def test_top_level_episode_error_does_not_replace_history_reference(tmp_path):
    """R16: the replacing episode error is the first tool_result event with is_error."""
    episode = {"events": [event("tap", 3, {})], "error": "agent crashed"}
    a = derive(tmp_path, _err("tap", {}), episode)
    assert a["failure_event_ref"] == "history:1"


def test_success_clears_even_a_recorded_setup_stage(tmp_path):
    a = derive(tmp_path, _err("tap", {}), status="passed", first_failure_stage="setup")
    assert (a["first_failure_stage"], a["failure_event_ref"]) == (None, None)


# --- ids, names and messages of any JSON type (R14, R22; bad input never stops a run) -----

def test_object_and_array_ids_pair_with_equal_ids(tmp_path):
    history = [
        model(),
        call("tap", call_id=["c", 1]), call("swipe", call_id={"id": "c2"}),
        result("swipe", content="{\"ok\": false}", call_id={"id": "c2"}),
        result("tap", content="screenshot observation", call_id=["c", 1]),
    ]
    a = derive(tmp_path, history=history)
    assert (a["tool_calls"], a["device_actions"], a["screenshots_taken"], a["tool_errors"]) == (2, 2, 1, 1)
    assert a["failure_event_ref"] == "history:3" and a["first_failure_stage"] == "device_execution"


def test_ids_of_different_json_types_do_not_pair(tmp_path):
    """1, 1.0 and true are different ids (R14 "with that id"); only the exact one pairs."""
    history = [call("tap", call_id=1), result("tap", content="screenshot observation", call_id=True),
               result("tap", content="screenshot observation", call_id=1.0)]
    assert derive(tmp_path, history=history)["screenshots_taken"] == 0


def test_tool_names_that_are_not_strings_are_no_device_actions(tmp_path):
    history = [model(), call({"name": "tap"}), result({"name": "tap"}, content="{\"is_error\": true}"),
               call(["tap"], call_id="x"), result(["tap"], call_id="x")]
    episode = {"events": [event({"n": 1}, duration=5, tool_input={"a": 1}), event({"n": 1}, duration=7, is_error=True)]}
    a = derive(tmp_path, history=history, episode=episode)
    assert (a["tool_calls"], a["device_actions"]) == (2, 0)
    assert (a["device_execution_ms"], a["tool_errors"], a["failure_event_ref"]) == (0, 1, "episode:1")
    assert a["first_failure_stage"] == "unknown"


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30)
    | st.sampled_from(["tool_call", "tool_result", "assistant", "image", "tap", "quick_action", "bridge_media",
                       "screenshot observation", '{"ok": false, "data": "x", "width": 1}', '{"is_error": 1}']),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["type", "usage", "duration_ms", "tool_name", "tool_input", "tool_call_id", "content",
                         "is_error", "attachments", "input_tokens", "prompt_tokens", "needs_replan", "list",
                         "action", "events", "extra", "first_token_time_ms", "ok", "data"]), children, max_size=6),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(messages=st.lists(JSON_VALUES, max_size=12), events=JSON_VALUES, extra=JSON_VALUES)
def test_history_and_episode_formulas_accept_any_json(messages, events, extra):
    from bench_pipeline.attempt_metrics import derive_episode, derive_history

    hist = derive_history(messages)
    assert hist.tool_errors >= 0 and hist.device_actions <= hist.tool_calls
    epi = derive_episode({"events": events, "extra": extra})
    assert epi.tool_errors is None or epi.tool_errors >= 0


def test_a_formula_failure_marks_the_file_invalid_and_keeps_the_run_going(tmp_path, monkeypatch):
    """The safety net: an unforeseen error in a formula is a located data-quality finding."""
    import bench_pipeline.attempt_metrics.assemble as am

    def broken(messages):
        raise KeyError("surprise")

    monkeypatch.setattr(am, "derive_history", broken)
    run = make_run(tmp_path, [row("t", status="failed", metrics={"llm_calls": 4}), row("u", status="passed")],
                   artifacts={"tasks/t": {"history.json": [model()]}})
    processed = process_run(run)
    a = next(x for x in processed.attempts if x["task_id"] == "t")
    assert a["llm_calls"] == 4 and a["provenance"]["llm_calls"] == "recorded"
    (finding,) = processed.metrics["data_quality"]["invalid_artifacts"]
    assert finding["file"] == "tasks/t/history.json" and finding["line"] == 1 and finding["status"] == "invalid"
    assert finding["reason"].startswith("could not be evaluated (KeyError")
    assert len(processed.attempts) == 2


def _token_sums_by_the_letter(usages: list[dict]) -> dict:
    """3.5 as written: per call each field (primary, else fallback; total else input +
    output of that call), summed; a field missing on any call is None."""
    from bench_pipeline.stats import finite_sum, number_or_none

    def field(usage, key, fallback=None):
        value = number_or_none(usage.get(key))
        return value if value is not None or fallback is None else number_or_none(usage.get(fallback))

    per_call: dict[str, list] = {f: [] for f in TOKENS}
    for usage in usages:
        inp, out = field(usage, "input_tokens", "prompt_tokens"), field(usage, "output_tokens", "completion_tokens")
        total = field(usage, "total_tokens")
        if total is None and inp is not None and out is not None:
            total = inp + out
        values = (inp, out, total, field(usage, "cached_input_tokens", "cached_tokens"), field(usage, "reasoning_tokens"))
        for f, v in zip(TOKENS, values):
            per_call[f].append(v)
    # A field missing on a call is unavailable; so is a sum beyond the float range (R42).
    return {f: None if None in vs else finite_sum(vs) for f, vs in per_call.items()}


TOKEN_VALUES = (st.none() | st.booleans() | st.integers(-10**3, 10**6) | st.integers(10**308, 10**309)
                | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=3))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["input_tokens", "prompt_tokens", "output_tokens", "completion_tokens",
                                                 "total_tokens", "cached_input_tokens", "cached_tokens",
                                                 "reasoning_tokens"]), TOKEN_VALUES, max_size=8), max_size=6))
def test_token_sums_equal_the_reference_rule_call_by_call(usages):
    from bench_pipeline.attempt_metrics import token_sums

    expected = _token_sums_by_the_letter(usages)
    got = token_sums(usages)
    assert set(got) == set(TOKENS)
    for f in TOKENS:
        assert (got[f] is None and expected[f] is None) or got[f] == expected[f] or (
            isinstance(got[f], float) and math.isnan(got[f]) and math.isnan(expected[f])), (f, got, expected)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["input_tokens", "prompt_tokens", "output_tokens", "completion_tokens",
                                                 "total_tokens", "cached_input_tokens", "cached_tokens",
                                                 "reasoning_tokens"]),
                                st.integers(-10**3, 10**6) | st.none() | st.integers(10**308, 10**309)
                                | st.sampled_from([1.5, True, "7"]), max_size=8),
                min_size=1, max_size=6))
def test_token_sums_of_mostly_plain_integers_equal_the_reference_rule(usages):
    """The one-pass path for plain integers, and its hand-over to the careful path."""
    from bench_pipeline.attempt_metrics import token_sums

    assert token_sums(usages) == _token_sums_by_the_letter(usages)


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(ALLOWLIST + ["screenshot", "search", ""]) | JSON_VALUES,
       raw_input=JSON_VALUES | st.sampled_from(['{"list": true}', '{"action": "Query"}', '{"action": "send"}', "{oops"]))
def test_is_device_call_parses_only_when_needed_and_agrees_with_the_rule(name, raw_input):
    """3.4: deciding without parsing the input of tools whose input cannot matter gives the
    same answer as parsing every input first."""
    from bench_pipeline.attempt_metrics import is_device_action, is_device_call, parse_tool_input

    assert is_device_call(name, raw_input) == is_device_action(name, parse_tool_input(raw_input))
