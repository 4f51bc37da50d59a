"""The stage frames' pandera schemas: column order, nullable types (unknown is not zero) and
the checks they enforce."""

from __future__ import annotations

import pandas as pd
import pandera.errors
import pytest

from bench_pipeline.schemas import AttemptMetricsSchema, RawResultsSchema, TaskGroupsSchema
from bench_pipeline.vocabulary import ATTEMPT_FIELDS


def _columns(schema) -> dict:
    return schema.to_schema().columns


def test_the_attempt_frame_has_the_attempt_fields_then_the_json_columns():
    assert list(_columns(AttemptMetricsSchema)) == [*ATTEMPT_FIELDS, "provenance", "observations", "evidence"]


def test_attempt_counts_are_nullable_integers_and_times_nullable_floats():
    columns = _columns(AttemptMetricsSchema)
    assert {name: str(columns[name].dtype) for name in (
        "llm_calls", "tool_errors", "retry_count", "rubric_total", "llm_time_ms", "total_tokens", "cost_usd",
        "success", "status")} == {
        "llm_calls": "Int64", "tool_errors": "Int64", "retry_count": "Int64", "rubric_total": "Int64",
        "llm_time_ms": "Float64", "total_tokens": "Float64", "cost_usd": "Float64",
        "success": "boolean", "status": "str"}
    assert columns["time_to_first_token_ms"].description == "3.2 episode first-token time, positive only"
    assert not columns["agent_eligible"].nullable and columns["success"].nullable


def _attempt_frame(**changes) -> pd.DataFrame:
    columns = _columns(AttemptMetricsSchema)
    record = {name: None for name in columns}
    record.update(run_id="r", task_id="t", attempt=1, line=1, agent_eligible=True,
                  provenance="{}", observations="{}", evidence="{}")
    record.update(changes)
    return pd.DataFrame({name: pd.Series([record[name]], dtype=str(c.dtype)) for name, c in columns.items()})


def test_an_attempt_with_every_measure_unknown_is_valid():
    frame = AttemptMetricsSchema.validate(_attempt_frame())
    assert frame["llm_calls"].isna().all() and frame["cost_usd"].isna().all()


@pytest.mark.parametrize("changes", [{"time_to_first_token_ms": 0.0}, {"attempt": 0}])
def test_a_non_positive_first_token_time_or_attempt_is_refused(changes):
    with pytest.raises(pandera.errors.SchemaError):
        AttemptMetricsSchema.validate(_attempt_frame(**changes))


def test_an_unknown_column_is_refused():
    with pytest.raises((pandera.errors.SchemaError, pandera.errors.SchemaErrors), match="gpu_ms"):
        AttemptMetricsSchema.validate(_attempt_frame().assign(gpu_ms=1.0))


def test_raw_results_and_task_groups_columns():
    assert list(_columns(RawResultsSchema)) == ["line", "task_id", "attempt", "status", "bad_reason", "row_json"]
    task_columns = list(_columns(TaskGroupsSchema))
    assert task_columns[:3] == ["task_id", "category", "attempts"]
    assert task_columns[-3:] == ["cost_to_first_success_task_wall_ms", "cost_to_first_success_total_tokens",
                                 "cost_to_first_success_cost_usd"]
