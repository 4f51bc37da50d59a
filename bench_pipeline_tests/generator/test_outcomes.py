"""Tests of the outcome kinds and their evaluation (bench_pipeline/generator/outcomes.py):
the reference's outcome table, quality after reference 3.6, and the runner's failure labels."""

from __future__ import annotations

import random
from datetime import datetime, timezone

import pytest

from bench_pipeline.generator.outcomes import (
    EXECUTION,
    INCIDENT_PERCENT,
    OUTCOMES,
    SCRIPT_TAG,
    choose_outcome,
    evaluate,
    failure_labels,
    final_response,
    judge_error_reasons,
)
from bench_pipeline.generator.records import RunDraw, Task
from bench_pipeline.vocabulary import FAILURE_CLASSES, FAILURE_STAGES, STATUSES
from bench_pipeline_tests.support.reference_tables import OUTCOME_TABLE

# metrics-reference.txt section 2, the outcome table: (status, failure_class, raw success, agent_eligible).
REFERENCE_OUTCOME_TABLE = set(OUTCOME_TABLE)


def task(**overrides: object) -> Task:
    fields: dict = {"id": "t1", "category": "settings", "prompt": "Turn Bluetooth on.",
                    "rubric_spec": [{"id": "r1", "requirement": "on"}, {"id": "r2", "requirement": "nothing else"}],
                    "expected_answer": None, "expected_memory_ids": [], "env_checks": ["bluetooth_on"],
                    "skill": None, "timeout_s": 180, "pass_probability": 0.8}
    return Task(**{**fields, **overrides})


def run(judge_enabled: bool = True, model: str = "agent-model-large") -> RunDraw:
    return RunDraw(index=0, run_id="r", seed=1, started=datetime(2026, 11, 28, tzinfo=timezone.utc),
                   status="completed", model=model, device=("emulator-pixel", "android-15"), active_skills=[],
                   judge_enabled=judge_enabled, judge_model="judge-model", with_cost=False, edges=frozenset())


def test_the_outcome_kinds_are_the_reference_outcome_table() -> None:
    assert {outcome[:4] for outcome in OUTCOMES.values()} == REFERENCE_OUTCOME_TABLE
    assert len(OUTCOMES) == len(REFERENCE_OUTCOME_TABLE)


def test_outcomes_speak_the_pipeline_vocabulary() -> None:
    for status, failure_class, _, _, stage in OUTCOMES.values():
        assert status in STATUSES
        assert failure_class in (*FAILURE_CLASSES, None)
        assert stage in (*FAILURE_STAGES, None)
    assert set(EXECUTION) == set(OUTCOMES)
    assert set(INCIDENT_PERCENT) <= set(OUTCOMES)


def test_judge_error_reasons_are_what_evaluation_depends_on() -> None:
    assert judge_error_reasons(task(), run()) == ["judge", "environment_state"]
    assert judge_error_reasons(task(), run(judge_enabled=False)) == ["environment_state"]
    assert judge_error_reasons(task(rubric_spec=[], env_checks=[], expected_memory_ids=["m1"]), run()) == [
        "memory_evidence"]
    assert judge_error_reasons(task(rubric_spec=[], env_checks=[]), run()) == []


def test_no_judge_error_where_evaluation_cannot_fail() -> None:
    plain = task(rubric_spec=[], env_checks=[])
    kinds = {choose_outcome(random.Random(seed), plain, run()) for seed in range(2000)}
    assert "judge_error" not in kinds
    assert {"passed", "agent_failure", "skipped", "environment"} <= kinds


def test_choose_outcome_is_deterministic_per_seed() -> None:
    draws = [choose_outcome(random.Random(seed), task(), run()) for seed in range(50)]
    assert draws == [choose_outcome(random.Random(seed), task(), run()) for seed in range(50)]


def test_a_pass_meets_every_enabled_check() -> None:
    ev = evaluate(random.Random(1), task(), "passed", run())
    assert (ev.quality, ev.pass_count, ev.total) == (1.0, 2, 2)
    assert [v["verdict"] for v in ev.rubric] == ["yes", "yes"]
    assert ev.judge_file == {"model": "judge-model", "verdicts": ev.rubric, "error": None}
    assert ev.env_assertions == [{"id": "bluetooth_on", "passed": True, "expected": True, "actual": True}]
    assert ev.hard_assertions == {"timeout": True, "no_forbidden_action": True}
    assert ev.errors == {}


def test_a_pass_without_the_judge_has_no_verdicts() -> None:
    ev = evaluate(random.Random(1), task(), "passed", run(judge_enabled=False))
    assert (ev.quality, ev.pass_count, ev.total) == (1.0, 0, 2)
    assert ev.rubric == [] and ev.judge_file is None


@pytest.mark.parametrize("kind", ["skipped", "environment", "timeout_no_evidence", "chat_error_no_evidence"])
def test_an_ineligible_attempt_has_no_quality(kind: str) -> None:
    ev = evaluate(random.Random(3), task(), kind, run())
    assert (ev.quality, ev.pass_count, ev.total) == (None, None, None)
    assert ev.errors


def test_a_timeout_with_evidence_fails_the_timeout_gate() -> None:
    ev = evaluate(random.Random(1), task(), "timeout_evidence", run())
    assert (ev.quality, ev.pass_count, ev.total) == (0.0, 0, 2)
    assert ev.hard_assertions["timeout"] is False
    assert ev.hard_failures == [{"id": "timeout", "requirement": "finish within 180 s", "actual": "timed out after 180 s"}]
    assert ev.errors == {"error": "task timed out after 180 s"}
    assert ev.stage_label == "unknown" and ev.judge_file is None and ev.env_file is None


def test_an_environment_failure_names_the_failed_setup_assertion() -> None:
    ev = evaluate(random.Random(1), task(), "environment", run())
    assert ev.hard_assertions["setup"] is False and ev.stage_label == "setup"
    assert ev.errors["error"] == f"setup assertion failed: {ev.hard_failures[0]['id']} ({ev.hard_failures[0]['actual']})"


def test_a_judge_error_leaves_quality_unknown() -> None:
    ev = evaluate(random.Random(1), task(), "judge_error", run())
    assert ev.quality is None and ev.stage_label == "evaluation"
    assert set(ev.errors) & {"judge_error", "environment_state_error"}


def test_an_agent_failure_scores_its_rubric_or_zero() -> None:
    """Reference 3.6: a rubric failure scores the share of yes verdicts; any other failure 0."""
    stages = set()
    for seed in range(40):
        ev = evaluate(random.Random(seed), task(), "agent_failure", run())
        stages.add(ev.stage_label)
        if ev.rubric and ev.pass_count < ev.total:
            assert ev.quality == ev.pass_count / ev.total < 1
        else:
            assert ev.quality == 0.0
    assert "action_selection" in stages and "state_verification" in stages


def test_the_final_response_follows_the_task_and_the_evaluation() -> None:
    ev = evaluate(random.Random(1), task(), "passed", run())
    assert final_response(task(), "passed", ev, False) == "Done: Turn Bluetooth on."
    assert final_response(task(), "passed", ev, True) == f"Done: Turn Bluetooth on. {SCRIPT_TAG}"
    assert final_response(task(), "timeout_evidence", ev, False) is None
    quiz = task(expected_answer="B", rubric_spec=[], env_checks=[])
    assert final_response(quiz, "passed", evaluate(random.Random(1), quiz, "passed", run()), False) == "The answer is B."
    ev.answer_correct = False
    assert final_response(quiz, "agent_failure", ev, False) == "The answer is D."


def test_failure_labels_follow_the_runner() -> None:
    """R17: a success has none; setup and evaluation keep their label; else the evidence's stage."""
    measured = {"failure_event_ref": "history:5", "evidence_stage": "device_execution"}
    assert failure_labels(True, "unknown", measured) == (None, None)
    assert failure_labels(False, "setup", measured) == ("setup", "history:5")
    assert failure_labels(False, "planning", measured) == ("device_execution", "history:5")
    assert failure_labels(None, "unknown", {"failure_event_ref": None, "evidence_stage": None}) == ("unknown", None)
