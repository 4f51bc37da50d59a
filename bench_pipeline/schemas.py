"""pandera schemas of the frames passed between stages.

Nullable integer (Int64), Boolean (boolean) and float (Float64) columns keep null distinct
from 0 and false: the product's first rule is that unknown is not zero. Nested values
(provenance, evidence, the raw row) travel as JSON text so that Parquet round-trips them.
The attempt frame's measured columns are made from their declarations in ``measured_fields``.
"""

from __future__ import annotations

import pandas as pd
import pandera.pandas as pa
from pandera.typing import Series

from .measured_fields import COUNT, MEASURED, MeasuredField
from .vocabulary import FAILURE_CLASSES, FAILURE_STAGES, STATUSES

Int = pd.Int64Dtype
Bool = pd.BooleanDtype
Float = pd.Float64Dtype


class RawResultsSchema(pa.DataFrameModel):
    """Stage 1: every non-blank results.jsonl line, usable or bad (run-directory.md)."""

    line: Series[Int] = pa.Field(ge=1, unique=True, description="1-based line number in results.jsonl")
    task_id: Series[str] = pa.Field(nullable=True, description="task id; null on a bad row")
    attempt: Series[Int] = pa.Field(ge=1, nullable=True, description="actual attempt number (absent/null means 1); null on a bad row")
    status: Series[str] = pa.Field(nullable=True, description="runner's terminal status as recorded")
    bad_reason: Series[str] = pa.Field(nullable=True, description="why the line is not a usable row (R27); null for usable rows")
    row_json: Series[str] = pa.Field(nullable=True, description="the row object as JSON text; null on a bad row")

    class Config:
        strict = True
        coerce = True


class _AttemptOutcomeColumns(pa.DataFrameModel):
    """Stage 2's first columns: an attempt's identity and outcome (outputs.md "attempt metrics")."""

    run_id: Series[str] = pa.Field(description="the run folder's name (R1)")
    task_id: Series[str] = pa.Field(description="benchmark task id")
    attempt: Series[Int] = pa.Field(ge=1, description="actual attempt number")
    line: Series[Int] = pa.Field(ge=1, unique=True, description="line in results.jsonl")
    category: Series[str] = pa.Field(nullable=True, description="row category, else the suite task's")
    artifact_dir: Series[str] = pa.Field(nullable=True, description="artifact_dir as recorded")
    status: Series[str] = pa.Field(nullable=True, description=f"{', '.join(STATUSES[:-1])} or {STATUSES[-1]}")
    success_raw: Series[Bool] = pa.Field(nullable=True, description="success when the row holds a real Boolean")
    success: Series[Bool] = pa.Field(nullable=True, description="success after the legacy derivation; null = unknown")
    agent_eligible_raw: Series[Bool] = pa.Field(nullable=True, description="eligibility when the row holds a real Boolean")
    agent_eligible: Series[Bool] = pa.Field(nullable=False, description="eligibility after inference")
    failure_class: Series[str] = pa.Field(nullable=True, description=f"one of {', '.join(FAILURE_CLASSES)} (or another recorded string)")
    first_failure_stage: Series[str] = pa.Field(nullable=True, description=f"one of {', '.join(FAILURE_STAGES)} (or another recorded string)")
    failure_event_ref: Series[str] = pa.Field(nullable=True, description="history:<i> or episode:<i>")
    quality_score: Series[Float] = pa.Field(nullable=True, description="quality in [0, 1]; null = unavailable")
    rubric_pass_count: Series[Int] = pa.Field(nullable=True, description="stored rubric passes")
    rubric_total: Series[Int] = pa.Field(nullable=True, description="stored rubric checks")


def _measured_column(measured: MeasuredField) -> tuple[object, pa.Field]:
    """A measured field's column: a nullable integer for a count, else a nullable float."""
    dtype = Series[Int] if measured.kind == COUNT else Series[Float]
    return dtype, pa.Field(nullable=True, gt=0 if measured.positive_only else None,
                           description=f"{measured.reference} {measured.description}")


#: Stage 2's measured columns, one per ``measured_fields.MEASURED`` field, in its order.
_AttemptMeasuredColumns = type("AttemptMeasuredColumns", (_AttemptOutcomeColumns,), {
    "__module__": __name__,
    "__doc__": "Stage 2's measured columns (reference 3.2-3.5), declared in measured_fields.",
    "__annotations__": {f.name: _measured_column(f)[0] for f in MEASURED},
    **{f.name: _measured_column(f)[1] for f in MEASURED},
})


class AttemptMetricsSchema(_AttemptMeasuredColumns):
    """Stage 2: one row per usable results row (outputs.md "attempt metrics", reference 3.1-3.6):
    identity and outcome, the measured fields, recovery, then the JSON columns."""

    recovery_attempted: Series[Bool] = pa.Field(nullable=True, description="runner entered timeout recovery")
    recovery_succeeded: Series[Bool] = pa.Field(nullable=True, description="recovery's own result")
    provenance: Series[str] = pa.Field(description="JSON {field: derived|recorded} (R34)")
    observations: Series[str] = pa.Field(description="JSON {observation id: passed in this row} (R38)")
    evidence: Series[str] = pa.Field(description="JSON evidence for reports and Langfuse (docs/design.md)")

    class Config:
        strict = True
        coerce = True


class TaskGroupsSchema(pa.DataFrameModel):
    """Stage 3: one row per observed task after de-duplication (reference 3.7)."""

    task_id: Series[str] = pa.Field(unique=True, description="benchmark task id")
    category: Series[str] = pa.Field(nullable=True, description="task category")
    attempts: Series[Int] = pa.Field(ge=1, description="observed attempts, ineligible included")
    max_attempt: Series[Int] = pa.Field(ge=1, description="highest observed attempt number")
    eligible_attempts: Series[Int] = pa.Field(ge=0, description="agent-eligible attempts")
    passed: Series[Int] = pa.Field(ge=0, description="eligible attempts with success true")
    failed: Series[Int] = pa.Field(ge=0, description="eligible attempts with success false")
    pass_rate: Series[Float] = pa.Field(nullable=True, ge=0, le=1, description="passed / eligible_attempts (R31)")
    best_quality: Series[Float] = pa.Field(nullable=True, description="best quality of the eligible attempts (R30)")
    avg_quality: Series[Float] = pa.Field(nullable=True, description="mean quality of the eligible attempts (R30)")
    avg_wall_ms: Series[Float] = pa.Field(nullable=True, description="mean task_wall_ms of the eligible attempts (R30)")
    first_attempt_passed: Series[Bool] = pa.Field(nullable=True, description="success of the first eligible attempt (R31)")
    in_e1: Series[Bool] = pa.Field(description="attempt 1 present and eligible")
    attempt1_success: Series[Bool] = pa.Field(description="in E1 and attempt 1 succeeded")
    in_ek: Series[Bool] = pa.Field(description="attempts 1..k all present and eligible")
    any_success_k: Series[Bool] = pa.Field(description="in Ek with a success in 1..k")
    all_success_k: Series[Bool] = pa.Field(description="in Ek with all of 1..k successes")
    best_quality_k: Series[Float] = pa.Field(nullable=True, description="best known quality in 1..k for Ek tasks")
    first_success_attempt: Series[Int] = pa.Field(nullable=True, ge=1, description="first success in the eligible prefix")
    cost_to_first_success_task_wall_ms: Series[Float] = pa.Field(nullable=True, description="task_wall_ms through first success")
    cost_to_first_success_total_tokens: Series[Float] = pa.Field(nullable=True, description="total_tokens through first success")
    cost_to_first_success_cost_usd: Series[Float] = pa.Field(nullable=True, description="cost_usd through first success")

    class Config:
        strict = True
        coerce = True
