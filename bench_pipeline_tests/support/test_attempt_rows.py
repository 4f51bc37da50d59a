"""The attempt-row builder makes the rows stage 2 makes: on the same inputs, ``attempt``
equals ``derive_attempt``'s row (assembled in memory, ``attempt_inputs.derive``) on every
key the run-level formulas read."""

from __future__ import annotations

import pytest

from bench_pipeline.vocabulary import ATTEMPT_FIELDS

from .attempt_inputs import derive
from .attempt_rows import ROW_KEYS, attempt, in_file_order, metrics_of, observed_k, unknown


def _stage2(status: str, **fields) -> dict:
    derived = derive(status=status, **fields)
    return {k: derived[k] for k in ROW_KEYS}


@pytest.mark.parametrize(("built", "status", "recorded"), [
    (attempt("t", 1, "passed"), "passed", {}),
    (attempt("t", 1, "failed"), "failed", {}),
    (attempt("t", 1, "timeout"), "timeout", {}),
    (attempt("t", 1, "skipped"), "skipped", {}),
    (attempt("t", 1, "judge_error"), "judge_error", {}),
    (unknown("t"), "judge_error", {"agent_eligible": True, "failure_class": "unknown"}),
    (attempt("t", 1, "failed", success=None, agent_eligible=False, failure_class="unknown"),  # success derived false
     "failed", {"success": None, "agent_eligible": False, "failure_class": "unknown"}),
    (attempt("t", 1, "timeout", success=None, agent_eligible=None, failure_class="environment"),  # eligibility inferred
     "timeout", {"success": None, "agent_eligible": None, "failure_class": "environment"}),
    (attempt("t", 1, "failed", category="nav", quality_score=0.25, rubric_pass_count=1, rubric_total=4,
             first_failure_stage="planning", task_wall_ms=100, setup_ms=5, total_tokens=10, cost_usd=0,
             tool_errors=2, replan_count=1),
     "failed", {"category": "nav", "quality_score": 0.25, "rubric_pass_count": 1, "rubric_total": 4,
                "first_failure_stage": "planning",
                "metrics": {"task_wall_ms": 100, "setup_ms": 5, "total_tokens": 10, "cost_usd": 0,
                            "tool_errors": 2, "replan_count": 1}}),
    (attempt("t", 1, "passed", observations={"o1": True, "o2": False}),
     "passed", {"trace_observations": [{"id": "o1", "passed": True}, {"id": "o2", "passed": False}]}),
    (attempt("t", 1, "passed", task_wall_ms=None, quality_score=None),  # recorded non-numbers: unavailable
     "passed", {"quality_score": True, "metrics": {"task_wall_ms": float("nan")}}),
])
def test_a_built_row_equals_stage_2s_row(built, status, recorded):
    assert built == _stage2(status, **recorded)


def test_a_row_has_every_attempt_field_in_output_order():
    built = attempt("a", 2, "failed", line=7)
    assert list(built) == [*ATTEMPT_FIELDS, "observations"]
    assert (built["run_id"], built["task_id"], built["attempt"], built["line"]) == ("run-1", "a", 2, 7)
    with pytest.raises(TypeError, match="not an attempt field"):
        attempt("a", metrics={"task_wall_ms": 1})


def test_lines_follow_the_order_given_and_k_is_stage_1s():
    rows = in_file_order([attempt("a", 1), attempt("a", 2), attempt("b", 3), attempt("b", 1)])
    assert [r["line"] for r in rows] == [1, 2, 3, 4]
    assert observed_k(rows) == 2  # the lowest highest attempt over the tasks (a: 2, b: 3)
    assert observed_k(rows, {"metrics_k": 5}) == 5
    assert observed_k([]) is None


def test_metrics_of_has_the_sections_of_metrics_json():
    m = metrics_of([attempt("a"), attempt("b", 1, "failed")])
    assert list(m) == ["capability", "coverage", "failures", "diagnostics", "category", "observations",
                       "efficiency", "reliability", "cost_to_first_success", "aggregate", "uncertainty",
                       "estimators"]
    assert (m["coverage"]["metrics_k"], m["capability"]["pass_at_1"]["value"]) == (1, 0.5)
