"""Pure attempt scores: types, omission of unavailable values, the rubric pass rate."""

from __future__ import annotations

from bench_pipeline.publication.attempt_scores import attempt_score_values

from .builders import attempt


def test_attempt_scores_types_and_omission_of_unavailable_values():
    scores = {name: (value, dtype) for name, value, dtype in attempt_score_values(attempt())}
    assert scores["benchmark.status"] == ("failed", "CATEGORICAL")
    assert scores["benchmark.failure_class"] == ("agent", "CATEGORICAL")
    assert scores["benchmark.first_failure_stage"] == ("device_execution", "CATEGORICAL")
    assert scores["benchmark.success"] == (0, "BOOLEAN") and scores["benchmark.agent_eligible"] == (1, "BOOLEAN")
    assert scores["benchmark.success_raw"] == (0, "BOOLEAN")
    assert scores["benchmark.recovery_attempted"] == (0, "BOOLEAN")
    assert scores["benchmark.expected_recalled_memory_match"] == (1, "BOOLEAN")
    assert scores["benchmark.quality_score"] == (0.0, "NUMERIC")  # a recorded zero is sent
    assert scores["benchmark.device_execution_ms"] == (0, "NUMERIC")
    assert scores["benchmark.setup_ms"] == (30.5, "NUMERIC")
    assert scores["benchmark.rubric_pass_rate"] == (0.75, "NUMERIC")
    for absent in ("retry_count", "cost_usd", "replan_count", "recovery_succeeded", "agent_eligible_raw",
                   "expected_answer_match", "failure_event_ref", "run_id", "task_id", "line", "category"):
        assert f"benchmark.{absent}" not in scores
    assert not any(isinstance(v, bool) for v, _ in scores.values())


def test_rubric_pass_rate_only_with_a_nonzero_stored_total():
    names = lambda rec: {n for n, _, _ in attempt_score_values(rec)}
    assert "benchmark.rubric_pass_rate" not in names(attempt(rubric_total=0, rubric_pass_count=0))
    assert "benchmark.rubric_pass_rate" not in names(attempt(rubric_total=None))
    assert "benchmark.rubric_pass_rate" not in names(attempt(rubric_pass_count=None))
    zero = {n: v for n, v, _ in attempt_score_values(attempt(rubric_pass_count=0, rubric_total=4, quality_score=1))}
    assert zero["benchmark.rubric_pass_rate"] == 0.0 and zero["benchmark.quality_score"] == 1  # --no-judge case


def test_booleans_and_non_finite_values_are_never_numbers():
    rec = attempt(llm_calls=True, task_wall_ms=float("nan"), status=None, success="yes")
    names = {n for n, _, _ in attempt_score_values(rec)}
    assert not {"benchmark.llm_calls", "benchmark.task_wall_ms", "benchmark.status", "benchmark.success"} & names
