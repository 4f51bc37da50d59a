"""Tables of the metrics reference that tests of several modules check against."""

# Reference 2, "Example / Status / Class / Raw success / Eligible".
OUTCOME_TABLE = [
    ("passed", None, True, True),
    ("failed", "agent", False, True),
    ("timeout", "agent", False, True),
    ("timeout", "unknown", None, False),
    ("failed", "unknown", False, True),
    ("failed", "unknown", None, False),
    ("skipped", "skipped", None, False),
    ("failed", "environment", False, False),
    ("judge_error", "evaluation", None, False),
]

# run-directory.md "results.jsonl": the keys of a row the generator writes, in its order.
GENERATED_ROW_KEYS = (
    "task_id", "attempt", "category", "artifact_dir", "episode_id", "active_skills", "status", "success",
    "agent_eligible", "failure_class", "first_failure_stage", "quality_score", "rubric_pass_count",
    "rubric_total", "rubric_spec", "rubric", "hard_assertions", "hard_assertion_failures",
    "expected_answer_match", "expected_recalled_memory_match", "memory_recall_evidence_source",
    "environment_state_assertions", "trace_observations", "recovery_attempted", "recovery_succeeded",
    "pre_screenshot_file", "post_screenshot_file", "started_at", "finished_at", "metrics",
)
