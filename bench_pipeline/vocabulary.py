"""The names the product shares: outcome vocabularies and field lists, each defined once.

The stages, the reports, the Langfuse mapping, the frame schemas and the run generator take
these from here. Each tuple is in the order the specification lists it, which is also the
order of the keys written from it (metrics.json, attempts.jsonl, a generated row), so it is
not to be re-sorted; a module that needs another subset or order derives it from these and
says why.

Sources: run-directory.md "results.jsonl" (the input's fields), metrics-reference.txt
section 2 (the status, class and stage vocabularies) and outputs.md (the output's fields).
The lists of measured attempt metrics are derived from their declarations in
``measured_fields`` (where a metric is added).
"""

from __future__ import annotations

from .measured_fields import (
    COMPARISON_RESOURCES,
    COST_TO_FIRST_SUCCESS,
    EFFICIENCY,
    EFFICIENCY_ORDER,
    EPISODE,
    HISTORY,
    PROVENANCE_ORDER,
    RELIABILITY,
    TOKENS,
    field_names,
)

# --- Outcome vocabularies (metrics-reference 2 "Status, failure class, stage, and eligibility
#     are different dimensions"; run-directory.md "results.jsonl") -----------------------------

#: ``status``: the runner's terminal statuses.
STATUSES = ("passed", "failed", "timeout", "judge_error", "skipped")
#: ``failure_class``: the reference's class table; outputs.md "metrics.json": every class
#: appears in ``failures.class``, zero included.
FAILURE_CLASSES = ("agent", "environment", "evaluation", "skipped", "unknown")
#: ``first_failure_stage``: the reference's stage vocabulary (metrics-reference 2 "Coverage
#: and diagnostics"), with underscores (readings R17); every stage appears in
#: ``failures.stage``, zero included.
FAILURE_STAGES = (
    "setup", "perception", "planning", "action_selection", "device_execution",
    "state_verification", "recovery", "final_response", "evaluation", "unknown",
)

# The legacy rules (metrics-reference 2; run-directory.md "results.jsonl"): a success that is
# not a Boolean is derived from the status, an eligibility that is not one is inferred.

#: Statuses whose missing success is derived false (passed derives true, the rest unknown).
FAILED_STATUSES = tuple(s for s in STATUSES if s in ("failed", "timeout"))
#: Statuses under which a missing eligibility is inferred true (unless the class excludes).
INFERRED_ELIGIBLE_STATUSES = ("passed", *FAILED_STATUSES)
#: Classes under which a missing eligibility is inferred false.
INELIGIBLE_CLASSES = tuple(c for c in FAILURE_CLASSES if c in ("environment", "evaluation", "skipped"))

# --- Measured attempt metrics (measured_fields.MEASURED), by source ------------------------------

#: Fields whose value comes from history.json alone (reference 3.3-3.5), in provenance order.
HISTORY_FIELDS = field_names(source=HISTORY, order=PROVENANCE_ORDER)
#: Fields only episode.json supplies (readings R3), in provenance order.
EPISODE_FIELDS = field_names(source=EPISODE, order=PROVENANCE_ORDER)
#: Token totals (reference 3.5): from history.json usage, overridden by episode.json.
TOKEN_FIELDS = field_names(kind=TOKENS)
#: The failure evidence fields (reference 3.5): an outcome, with a provenance entry.
FAILURE_EVIDENCE_FIELDS = ("first_failure_stage", "failure_event_ref")
#: Every field with a provenance entry, in the provenance object's order (outputs.md
#: "attempt metrics", readings R34).
PROVENANCE_FIELDS = field_names(provenance=True, order=PROVENANCE_ORDER) + FAILURE_EVIDENCE_FIELDS

# --- Fields of a results.jsonl row (run-directory.md "results.jsonl") --------------------------

#: Error texts that interpret the coarse failure labels (metrics-reference 2 "Numeric
#: suffixes and remaining interpretation details"): the attempt's own errors.
FAILURE_ERROR_FIELDS = ("error", "agent_error", "judge_error", "environment_state_error")
#: Error texts about acquiring the attempt's artifacts (same table: they may reduce the
#: evidence without failing the attempt).
ARTIFACT_ERROR_FIELDS = ("episode_error", "pre_screenshot_error", "post_screenshot_error")
#: Every error text a row records.
ERROR_TEXT_FIELDS = FAILURE_ERROR_FIELDS + ARTIFACT_ERROR_FIELDS
#: Every key of a row's ``metrics`` object, in run-directory.md order.
ROW_METRICS_KEYS = (
    "task_wall_ms", "wall_ms", "setup_ms", "screenshot_capture_ms", "screenshot_capture_source",
    "time_to_first_token_ms", "llm_calls", "llm_time_ms", "vision_llm_calls", "vision_llm_time_ms",
    "device_execution_ms", "tool_calls", "device_actions", "screenshots_taken", "tool_errors",
    "replan_count", "retry_count", *TOKEN_FIELDS, "cost_usd", "cost_source", "failure_event_ref",
    *ERROR_TEXT_FIELDS,
)

# --- Attempt metrics (outputs.md "attempt metrics") -------------------------------------------

#: The derived numbers of an attempt (reference 3.2-3.5, and the recorded cost), in the row's
#: order: the names of ``measured_fields.MEASURED``.
MEASURED_FIELDS = field_names()
#: The recorded outcome numbers (reference 3.6), counts among them.
RUBRIC_COUNT_FIELDS = ("rubric_pass_count", "rubric_total")
OUTCOME_NUMBER_FIELDS = ("quality_score", *RUBRIC_COUNT_FIELDS)
#: Every attempt field, in outputs.md order: identity, outcome, derived numbers, recovery.
ATTEMPT_FIELDS = (
    "run_id", "task_id", "attempt", "line", "category", "artifact_dir",
    "status", "success_raw", "success", "agent_eligible_raw", "agent_eligible", "failure_class",
    *FAILURE_EVIDENCE_FIELDS, *OUTCOME_NUMBER_FIELDS,
    *MEASURED_FIELDS, "recovery_attempted", "recovery_succeeded",
)

# Score kinds of the attempt fields (outputs.md "Langfuse publication": Booleans as Boolean
# scores, status/failure_class/first_failure_stage as categorical, the numbers as numeric).

#: Attempt fields exported as CATEGORICAL scores.
CATEGORICAL_FIELDS = ("status", "failure_class", "first_failure_stage")
#: Attempt fields exported as BOOLEAN scores (raw and derived outcome, recovery).
BOOLEAN_FIELDS = (
    "success_raw", "success", "agent_eligible_raw", "agent_eligible",
    "recovery_attempted", "recovery_succeeded",
)
#: Attempt fields exported as NUMERIC scores, in outputs.md order.
NUMERIC_FIELDS = (*OUTCOME_NUMBER_FIELDS, *MEASURED_FIELDS)

# --- Run metrics (outputs.md "metrics.json") ---------------------------------------------------

#: ``efficiency``'s fields, in outputs.md order (the order of the keys in metrics.json).
EFFICIENCY_FIELDS = field_names(section=EFFICIENCY, order=EFFICIENCY_ORDER)
#: ``reliability``'s fields.
RELIABILITY_FIELDS = field_names(section=RELIABILITY)
#: ``cost_to_first_success``'s fields: resources summed up to the first success (reference 2).
COST_FIELDS = field_names(section=COST_TO_FIRST_SUCCESS)

# --- Paired run comparison (comparison.md) -----------------------------------------------------

#: ``resources.<field>`` of comparison.json, in comparison.md's order: per task, the mean of
#: the field over eligible attempts with a value (more is worse).
COMPARISON_RESOURCE_FIELDS = field_names(section=COMPARISON_RESOURCES)
