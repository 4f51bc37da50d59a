"""Tests of one attempt (bench_pipeline/generator/attempts.py): its row, its ``metrics`` object
and its files, deterministic per seed, in memory."""

from __future__ import annotations

import random
from datetime import datetime, timezone

import pytest

from bench_pipeline.generator.attempts import build_attempt, build_metrics, trace_observations
from bench_pipeline.generator.records import Evaluation, RunDraw, Task
from bench_pipeline.vocabulary import ROW_METRICS_KEYS
from bench_pipeline_tests.support.reference_tables import GENERATED_ROW_KEYS

STARTED = datetime(2026, 11, 28, 10, 0, 0, tzinfo=timezone.utc)
TASK = Task(id="send_sms_ana", category="messaging", prompt="Send it.",
            rubric_spec=[{"id": "r1", "requirement": "sent"}], expected_answer=None, expected_memory_ids=[],
            env_checks=["sms_sent"], skill="messaging", timeout_s=180, pass_probability=0.8)
TIMING = {"task_wall_ms": 900, "setup_ms": 40, "screenshot_capture_ms": None, "pre_error": None,
          "post_error": "adb screencap failed"}


def draw(with_cost: bool = False) -> RunDraw:
    return RunDraw(index=0, run_id="r", seed=1, started=STARTED, status="completed", model="agent-model-large",
                   device=("emulator-pixel", "android-15"), active_skills=["messaging"], judge_enabled=True,
                   judge_model="judge-model", with_cost=with_cost, edges=frozenset())


def test_an_attempt_is_deterministic_per_seed() -> None:
    one = build_attempt(random.Random(6), draw(), TASK, 2, STARTED, 20, frozenset())
    two = build_attempt(random.Random(6), draw(), TASK, 2, STARTED, 20, frozenset())
    assert one == two
    assert one != build_attempt(random.Random(7), draw(), TASK, 2, STARTED, 20, frozenset())


def test_a_clean_row_lists_every_field_and_its_folder() -> None:
    out = build_attempt(random.Random(6), draw(), TASK, 2, STARTED, 20, frozenset())
    assert list(out.row) == list(GENERATED_ROW_KEYS)
    assert list(out.row["metrics"]) == list(ROW_METRICS_KEYS)
    assert out.folder == "tasks/send_sms_ana/attempt-2" == out.row["artifact_dir"]
    assert out.row["started_at"] == "2026-11-28T10:00:00Z"
    assert out.finished > STARTED
    assert out.row["active_skills"] == ["messaging"]
    assert "history.json" in out.files


def test_the_first_attempt_has_the_conventional_folder() -> None:
    assert build_attempt(random.Random(6), draw(), TASK, 1, STARTED, 20, frozenset()).folder == "tasks/send_sms_ana"


def test_a_legacy_row_only_for_a_first_attempt_that_passed_or_failed_itself() -> None:
    kinds = set()
    for seed in range(60):
        for attempt in (1, 2):
            row = build_attempt(random.Random(seed), draw(), TASK, attempt, STARTED, 8, frozenset({"legacy_row"})).row
            legacy = "attempt" not in row
            kinds.add((attempt, legacy))
            if legacy:
                assert attempt == 1 and row["status"] in ("passed", "failed") and "metrics" not in row
    assert (1, True) in kinds and (2, False) in kinds and (2, True) not in kinds


def test_row_edge_cases_in_the_row() -> None:
    row = build_attempt(random.Random(6), draw(), TASK, 1, STARTED, 8, frozenset({"null_category", "extra_keys"})).row
    assert row["category"] is None
    assert row["runner_host"] == "bench-03" and set(row["x_debug"]) == {"queue_ms", "retries"}
    assert row["metrics"]["gpu_temp_c"] == 61


@pytest.mark.parametrize(("edge", "text"), [("missing_episode", "episode ep-1 not found"),
                                            ("episode_not_object", "episode payload is not an object")])
def test_an_unreadable_episode_is_an_episode_error(edge: str, text: str) -> None:
    metrics = build_metrics(random.Random(1), draw(), {}, TIMING, Evaluation(None, None, None), None,
                            frozenset({edge}), "ep-1")
    assert metrics["episode_error"] == text


def test_metrics_take_the_runner_timers_and_the_measured_values() -> None:
    measured = {"llm_calls": 3, "input_tokens": 1000, "output_tokens": 100, "evidence_stage": "unknown"}
    ev = Evaluation(None, None, None, errors={"agent_error": "chat request failed"})
    metrics = build_metrics(random.Random(1), draw(), measured, TIMING, ev, "history:4", frozenset(), None)
    assert list(metrics) == list(ROW_METRICS_KEYS)
    assert (metrics["task_wall_ms"], metrics["wall_ms"], metrics["setup_ms"]) == (900, 900, 40)
    assert metrics["llm_calls"] == 3 and metrics["failure_event_ref"] == "history:4"
    assert metrics["screenshot_capture_source"] is None
    assert metrics["post_screenshot_error"] == "adb screencap failed"
    assert metrics["agent_error"] == "chat request failed"
    assert metrics["cost_usd"] is None and metrics["cost_source"] is None


def test_cost_comes_from_the_price_table_when_the_run_records_it() -> None:
    measured = {"input_tokens": 1000, "output_tokens": 100}
    metrics = build_metrics(random.Random(1), draw(with_cost=True), measured, TIMING, Evaluation(None, None, None),
                            None, frozenset(), None)
    assert (metrics["cost_usd"], metrics["cost_source"]) == (0.0045, "price_table")


def test_a_boolean_in_a_numeric_field() -> None:
    metrics = build_metrics(random.Random(1), draw(), {}, TIMING, Evaluation(None, None, None), None,
                            frozenset({"bool_number"}), None)
    assert [key for key, value in metrics.items() if value is True] in (
        ["setup_ms"], ["screenshot_capture_ms"], ["task_wall_ms"], ["cost_usd"])


def test_trace_observations_need_an_agent_that_ran() -> None:
    assert trace_observations(random.Random(1), "skipped") == []
    assert trace_observations(random.Random(1), "timeout_no_evidence") == []
    observed = trace_observations(random.Random(1), "passed")
    assert observed[0]["id"] == "screenshot_before_action"
    assert {o["id"] for o in observed} <= {"screenshot_before_action", "no_redundant_app_launch"}


def test_observations_are_described_as_the_runner_describes_them_in_both_layouts() -> None:
    for seed in range(20):
        for o in trace_observations(random.Random(seed), "passed"):
            assert o["description"].endswith(".") and o["reason"] == (
                "seen in the trace" if o["passed"] else "not seen in the trace")
            assert list(o) == ["id", "description", "passed", "reason"]
