"""The shared field lists in their published order (the order of the keys written from them)
and the legacy outcome vocabularies (metrics-reference 2, run-directory.md, outputs.md).

A new measured field (declared in ``measured_fields``) is added to these literals where the
files will show it.
"""

from __future__ import annotations

from bench_pipeline import vocabulary

TOKENS = ("input_tokens", "output_tokens", "total_tokens", "cached_input_tokens", "reasoning_tokens")


def test_the_attempt_row_order_of_outputs_md():
    assert vocabulary.MEASURED_FIELDS == (
        "task_wall_ms", "setup_ms", "screenshot_capture_ms", "time_to_first_token_ms", "llm_calls",
        "llm_time_ms", "vision_llm_calls", "vision_llm_time_ms", "device_actions", "device_execution_ms",
        "tool_calls", "screenshots_taken", "tool_errors", "replan_count", "retry_count", *TOKENS, "cost_usd",
    )
    assert vocabulary.ATTEMPT_FIELDS == (
        "run_id", "task_id", "attempt", "line", "category", "artifact_dir",
        "status", "success_raw", "success", "agent_eligible_raw", "agent_eligible", "failure_class",
        "first_failure_stage", "failure_event_ref", "quality_score", "rubric_pass_count", "rubric_total",
        *vocabulary.MEASURED_FIELDS, "recovery_attempted", "recovery_succeeded",
    )
    assert vocabulary.NUMERIC_FIELDS == ("quality_score", "rubric_pass_count", "rubric_total",
                                         *vocabulary.MEASURED_FIELDS)


def test_the_sources_and_the_provenance_order():
    assert vocabulary.HISTORY_FIELDS == (
        "llm_calls", "llm_time_ms", "vision_llm_calls", "vision_llm_time_ms",
        "tool_calls", "screenshots_taken", "device_actions",
    )
    assert vocabulary.EPISODE_FIELDS == ("device_execution_ms", "replan_count", "time_to_first_token_ms")
    assert vocabulary.TOKEN_FIELDS == TOKENS
    assert vocabulary.PROVENANCE_FIELDS == (
        *vocabulary.HISTORY_FIELDS, *vocabulary.EPISODE_FIELDS, *TOKENS,
        "tool_errors", "first_failure_stage", "failure_event_ref",
    )


def test_the_metrics_json_sections_and_comparison_resources():
    assert vocabulary.EFFICIENCY_FIELDS == (
        "task_wall_ms", "setup_ms", "llm_time_ms", "llm_calls", "vision_llm_calls",
        "vision_llm_time_ms", "time_to_first_token_ms", "device_execution_ms",
        "screenshot_capture_ms", "tool_calls", "device_actions", "screenshots_taken", *TOKENS, "cost_usd",
    )
    assert vocabulary.RELIABILITY_FIELDS == ("tool_errors", "replan_count", "retry_count")
    assert vocabulary.COST_FIELDS == ("task_wall_ms", "total_tokens", "cost_usd")
    assert vocabulary.COMPARISON_RESOURCE_FIELDS == ("task_wall_ms", "total_tokens", "cost_usd")


def test_the_row_metrics_keys_of_run_directory_md():
    assert vocabulary.ROW_METRICS_KEYS[:6] == (
        "task_wall_ms", "wall_ms", "setup_ms", "screenshot_capture_ms", "screenshot_capture_source",
        "time_to_first_token_ms")
    assert vocabulary.ROW_METRICS_KEYS[17:22] == TOKENS
    assert vocabulary.ROW_METRICS_KEYS[-7:] == (
        "error", "agent_error", "judge_error", "environment_state_error",
        "episode_error", "pre_screenshot_error", "post_screenshot_error")


def test_the_legacy_outcome_rules():
    assert vocabulary.FAILED_STATUSES == ("failed", "timeout")
    assert vocabulary.INFERRED_ELIGIBLE_STATUSES == ("passed", "failed", "timeout")
    assert vocabulary.INELIGIBLE_CLASSES == ("environment", "evaluation", "skipped")


def test_score_kinds_do_not_overlap_and_cover_the_outcome():
    kinds = (vocabulary.CATEGORICAL_FIELDS, vocabulary.BOOLEAN_FIELDS, vocabulary.NUMERIC_FIELDS)
    names = [n for kind in kinds for n in kind]
    assert len(names) == len(set(names))
    assert set(names) <= set(vocabulary.ATTEMPT_FIELDS)
    assert set(vocabulary.ATTEMPT_FIELDS) - set(names) == {
        "run_id", "task_id", "attempt", "line", "category", "artifact_dir", "failure_event_ref"}
