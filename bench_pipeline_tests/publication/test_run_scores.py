"""Pure run scores: flattening, names, omission of nulls, the exported sections."""

from __future__ import annotations

import json
import math

from bench_pipeline.generator import generate_runs
from bench_pipeline.pipeline import run_stages
from bench_pipeline.publication.run_scores import NOT_EXPORTED_SECTIONS, RUN_SCORE_SECTIONS, run_score_values


def test_run_scores_flatten_rename_and_omit_nulls():
    metrics = {
        "suite": "android-core", "run_id": "run-7", "schema_version": 1,
        "capability": {
            "pass_at_1": {"value": 0.5, "successes": 1, "eligible_tasks": 2, "total_tasks": 2,
                          "ci95": {"lower": 0.09, "upper": 0.91}},
            "pass_at_k": {"value": None, "successes": 0, "eligible_tasks": 0, "total_tasks": 2,
                          "ci95": {"lower": None, "upper": None}},
            "first_success_attempt": {"mean": 1.5, "p50": 1.5, "count": 2},
        },
        "coverage": {"pass_at_1": 1.0, "metrics_k": 2, "planned_attempts": None},
        "failures": {"class": {"agent": 3, "environment": 0}, "stage": {"unknown": 1}},
        "diagnostics": {"failure_stage_coverage": None},
        "category": {"navigation": {"pass_rate": 0.5, "rubric_pass_rate": None, "attempts": 2}},
        "observations": {"obs.1": {"pass_rate": 1.0, "passed_tasks": 1, "observed_tasks": 1}},
        "efficiency": {"cost_usd": {"count": 0, "sum": None, "mean": None, "p50": None, "p90": None, "p95": None}},
        "reliability": {"tool_errors": {"count": 2, "sum": 1, "mean": 0.5, "p50": 0.5, "p90": 0.9, "p95": 0.95}},
        "cost_to_first_success": {"task_wall_ms": {"count": 1, "mean": 5000.0, "p50": 5000.0}},
        "aggregate": {"tasks": 4}, "data_quality": {"bad_rows": []},
    }
    scores = dict(run_score_values(metrics))
    assert scores["capability.pass_at_1"] == 0.5
    assert scores["capability.pass_at_1.ci95_lower"] == 0.09 and scores["capability.pass_at_1.ci95_upper"] == 0.91
    assert scores["capability.pass_at_1.successes"] == 1
    assert scores["capability.pass_at_k.total_tasks"] == 2 and "capability.pass_at_k" not in scores
    assert "capability.pass_at_k.ci95_lower" not in scores
    assert scores["capability.first_success_attempt.mean"] == 1.5
    assert scores["coverage.metrics_k"] == 2 and "coverage.planned_attempts" not in scores
    assert scores["failures.class.environment"] == 0 and scores["failures.stage.unknown"] == 1
    assert "diagnostics.failure_stage_coverage" not in scores
    assert scores["category.navigation.pass_rate"] == 0.5 and "category.navigation.rubric_pass_rate" not in scores
    assert scores["observations.obs.1.pass_rate"] == 1.0
    assert scores["efficiency.cost_usd.count"] == 0 and "efficiency.cost_usd.mean" not in scores
    assert scores["reliability.tool_errors.p95"] == 0.95
    assert scores["cost_to_first_success.task_wall_ms.p50"] == 5000.0
    assert not any(k.startswith(("aggregate", "data_quality", "schema", "run_id")) for k in scores)
    assert not any(k.endswith(".value") or ".ci95." in k for k in scores)
    assert all(math.isfinite(v) for v in scores.values())


def test_run_scores_carry_the_grouped_interval_and_the_estimators_under_their_own_names():
    """comparison.md's two metrics.json additions become run scores named for what they are:
    ``uncertainty.`` beside (not instead of) capability's Wilson bounds, ``estimators.``
    apart from the observed fixed-k values."""
    metrics = {
        "capability": {"attempt_success_rate": {"value": 5 / 7, "ci95": {"lower": 0.36, "upper": 0.92}},
                       "pass_at_k": {"value": 1.0}},
        "uncertainty": {"attempt_success_rate": {
            "value": 5 / 7, "tasks": 4, "attempts": 7, "se_simple": 0.1707, "se_clustered": 0.1258,
            "ci95": {"lower": 0.4677, "upper": 0.9609}, "design_effect": 0.5429}},
        "estimators": {"pass_at_k_unbiased": {"value": 1.0, "tasks": 3, "k": 2},
                       "pass_pow_k_unbiased": {"value": None, "tasks": 0, "k": None}},
    }
    scores = dict(run_score_values(metrics))
    assert scores["uncertainty.attempt_success_rate"] == 5 / 7
    assert scores["uncertainty.attempt_success_rate.ci95_lower"] == 0.4677
    assert scores["uncertainty.attempt_success_rate.ci95_upper"] == 0.9609
    assert scores["uncertainty.attempt_success_rate.se_clustered"] == 0.1258
    assert scores["uncertainty.attempt_success_rate.se_simple"] == 0.1707
    assert scores["uncertainty.attempt_success_rate.design_effect"] == 0.5429
    assert (scores["uncertainty.attempt_success_rate.tasks"], scores["uncertainty.attempt_success_rate.attempts"]) == (4, 7)
    assert scores["capability.attempt_success_rate.ci95_lower"] == 0.36  # the Wilson bound stays as it is
    assert scores["estimators.pass_at_k_unbiased"] == 1.0 and scores["capability.pass_at_k"] == 1.0
    assert (scores["estimators.pass_at_k_unbiased.tasks"], scores["estimators.pass_at_k_unbiased.k"]) == (3, 2)
    # an estimate with no qualifying task is omitted, never sent as 0; its count is a number
    assert "estimators.pass_pow_k_unbiased" not in scores and "estimators.pass_pow_k_unbiased.k" not in scores
    assert scores["estimators.pass_pow_k_unbiased.tasks"] == 0


def test_no_section_is_both_exported_and_not_and_each_reason_is_said():
    assert not set(RUN_SCORE_SECTIONS) & set(NOT_EXPORTED_SECTIONS)
    assert len(set(RUN_SCORE_SECTIONS)) == len(RUN_SCORE_SECTIONS)
    assert all(isinstance(why, str) and why for why in NOT_EXPORTED_SECTIONS.values())
    metrics = {section: {"n": 1} for section in (*RUN_SCORE_SECTIONS, *NOT_EXPORTED_SECTIONS)}
    assert [name for name, _ in run_score_values(metrics)] == [f"{s}.n" for s in RUN_SCORE_SECTIONS]


def test_every_section_of_a_generated_runs_metrics_json_is_exported_or_declared_not_to_be(tmp_path):
    """A section metrics.json gains is a decision: a run-level score (RUN_SCORE_SECTIONS) or
    not, with the reason (NOT_EXPORTED_SECTIONS); one in neither list fails here."""
    (run_dir,) = generate_runs(tmp_path / "runs", runs=1, seed=5, tasks=3, repeats=2, history_messages=4)
    run_stages(run_dir, tmp_path / "out")
    written = json.loads((tmp_path / "out" / "metrics.json").read_bytes())
    undeclared = set(written) - set(RUN_SCORE_SECTIONS) - set(NOT_EXPORTED_SECTIONS)
    assert not undeclared, f"metrics.json sections neither exported nor declared not to be: {sorted(undeclared)}"
    assert set(RUN_SCORE_SECTIONS) <= set(written)  # every exported section is one the pipeline writes
