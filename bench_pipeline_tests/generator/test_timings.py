"""Tests of the runner's timers (bench_pipeline/generator/timings.py, reference 3.2)."""

from __future__ import annotations

import random

from bench_pipeline.generator.records import Evaluation, History, ModelCall, Task, ToolStep
from bench_pipeline.generator.timings import attempt_timing

TASK = Task(id="t1", category="settings", prompt="p", rubric_spec=[], expected_answer=None, expected_memory_ids=[],
            env_checks=[], skill=None, timeout_s=120, pass_probability=0.8)
EMPTY = History([], [], [], [], None)
NO_JUDGE = Evaluation(None, None, None)


def test_a_skipped_attempt_has_no_task_time_and_no_post_screenshot() -> None:
    timing = attempt_timing(random.Random(1), TASK, "skipped", EMPTY, NO_JUDGE)
    assert timing["task_wall_ms"] is None
    assert timing["post_ok"] is False and timing["post_error"] is None
    assert 400 <= timing["setup_ms"] < 6000


def test_an_environment_failure_never_tried_the_pre_screenshot() -> None:
    timing = attempt_timing(random.Random(1), TASK, "environment", EMPTY, NO_JUDGE)
    assert timing["pre_ok"] is False and timing["pre_error"] is None
    assert 3400 <= timing["setup_ms"] < 9000


def test_a_missing_input_screenshot_fails_the_pre_screenshot() -> None:
    ev = Evaluation(None, None, None, errors={"error": "input screenshot missing"})
    timing = attempt_timing(random.Random(1), TASK, "skipped", EMPTY, ev)
    assert timing["pre_ok"] is False and timing["pre_error"] == "screencap returned an empty image"


def test_a_timeout_runs_past_the_task_limit() -> None:
    for seed in range(20):
        wall = attempt_timing(random.Random(seed), TASK, "timeout_no_evidence", EMPTY, NO_JUDGE)["task_wall_ms"]
        assert 120_005 <= wall < 120_400


def test_a_full_run_takes_at_least_its_model_and_tool_time_and_elapsed_adds_the_timers() -> None:
    history = History([], [ModelCall(1, 1, 2, None, None, 1000), ModelCall(1, 1, 2, None, None, None)],
                      [ToolStep("tap", {}, True, 250.5)], [], "Done.")
    judged = Evaluation(1.0, 0, 0, judge_file={"model": "judge-model", "verdicts": [], "error": None})
    timing = attempt_timing(random.Random(3), TASK, "passed", history, judged)
    assert 1250 + 200 <= timing["task_wall_ms"] < 1250 + 3000
    captured = timing["screenshot_capture_ms"] or 0
    judge_ms = timing["elapsed_ms"] - timing["setup_ms"] - timing["task_wall_ms"] - captured
    assert 1000 <= judge_ms < 6000
    assert timing["screenshot_capture_ms"] is None or timing["pre_ok"] or timing["post_ok"]


def test_timers_are_deterministic_per_seed() -> None:
    one = attempt_timing(random.Random(9), TASK, "agent_failure", EMPTY, NO_JUDGE)
    assert one == attempt_timing(random.Random(9), TASK, "agent_failure", EMPTY, NO_JUDGE)
