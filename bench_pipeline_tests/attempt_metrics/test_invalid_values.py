"""Recorded values of the wrong type: located findings, one per refused value, saying what
was recorded and what it became."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from bench_pipeline.artifacts import loads_exact
from bench_pipeline.attempt_metrics import recorded_number
from bench_pipeline.attempt_metrics.invalid_values import (
    RECORDED_NUMBER_KEYS,
    VALUE_CHARS,
    invalid_values,
    value_text,
)
from bench_pipeline.attempt_metrics.recorded import field_number, number_problem
from bench_pipeline.run_reader import RawRow
from bench_pipeline.vocabulary import OUTCOME_NUMBER_FIELDS


def found(data: dict, line: int = 3) -> list[tuple[str, str, str]]:
    rows = invalid_values(RawRow(line, "t", 2, data))
    assert all((r["line"], r["task_id"], r["attempt"]) == (line, "t", 2) for r in rows)
    return [(r["field"], r["value"], r["reason"]) for r in rows]


def test_a_row_of_the_types_run_directory_md_gives_has_no_finding():
    row = {"task_id": "t", "attempt": 2, "status": "passed", "success": True, "agent_eligible": None,
           "category": "nav", "artifact_dir": None, "quality_score": 0.5, "rubric_pass_count": 2, "rubric_total": 3,
           "recovery_attempted": False, "metrics": {"task_wall_ms": 0, "tool_calls": 3.0, "cost_usd": 0.01,
                                                    "input_tokens": 12, "error": "boom", "failure_event_ref": None}}
    assert found(row) == []  # 0 ms (R40) and 3.0 calls are numbers of the right type


def test_each_wrong_type_is_named_with_what_it_became():
    row = loads_exact(b'{"task_id": "t", "success": "true", "agent_eligible": 1, "status": 3,'
                      b' "quality_score": 7.5, "rubric_total": 2.5, "expected_answer_match": "yes",'
                      b' "metrics": {"cost_usd": "0.12", "task_wall_ms": NaN, "llm_time_ms": 1e400,'
                      b' "tool_calls": true, "error": {"message": "boom"}}}')
    assert found(row) == [
        ("success", '"true"', "not true, false or null: success derived from status"),
        ("agent_eligible", "1", "not true, false or null: eligibility inferred"),
        ("expected_answer_match", '"yes"', "not true, false or null: unavailable"),
        ("status", "3", "not a string: unavailable"),
        ("quality_score", "7.5", "outside [0, 1]: unavailable"),
        ("rubric_total", "2.5", "not an integer: unavailable"),
        ("task_wall_ms", "NaN", "not a finite number: unavailable"),
        ("llm_time_ms", "Infinity", "not a finite number: unavailable"),
        ("tool_calls", "true", "a Boolean, not a number: unavailable"),
        ("cost_usd", '"0.12"', "a string, not a number: unavailable"),
        ("error", "an object of 1 key", "not a string: unavailable"),
    ]


def test_metrics_that_is_not_an_object_and_a_legacy_key_are_found_where_they_are_read():
    """A ``metrics`` that is not an object leaves the row's keys read at its top level (R6):
    there a legacy wall_ms that is not a number is found (R7), a count beyond 64 bits too."""
    assert found({"metrics": [1, 2], "wall_ms": "12 s", "retry_count": 2 ** 64}) == [
        ("metrics", "a list of 2", "not an object: its keys are read at the top level of the row"),
        ("wall_ms", '"12 s"', "a string, not a number: unavailable"),
        ("retry_count", str(2 ** 64), "beyond the 64-bit integer range: unavailable"),
    ]
    # with ``metrics`` an object, its value is the one read: a top-level string beside it is not
    assert found({"metrics": {"cost_usd": 0.5}, "cost_usd": "n/a"}) == []


def test_an_artifact_dir_that_is_not_a_string_is_one_finding_not_two(tmp_path):
    """``artifact_dir: 5`` is refused and said so among the unsafe artifact folders; it is not
    counted again among the values of the wrong type."""
    from bench_pipeline.pipeline import run_stages

    from ..run_builder import make_run, row

    assert found({"artifact_dir": 5}) == []
    quality = run_stages(make_run(tmp_path, [row("t", artifact_dir=5)])).processed.metrics["data_quality"]
    assert [u["reason"] for u in quality["unsafe_artifact_dirs"]] == ["artifact_dir is not a string"]
    assert quality["invalid_values"] == []


def test_an_integer_beyond_the_float_range_is_said_so():
    assert number_problem(10 ** 400, "cost_usd") == "beyond the float range"
    assert number_problem(None, "cost_usd") is None


VALUES = st.none() | st.booleans() | st.integers(-(2 ** 70), 2 ** 70) | st.floats() | st.text(max_size=3) \
    | st.lists(st.integers(), max_size=2) | st.sampled_from([0.5, 1.0, 1.5, -0.1, 2.0, 10 ** 400])


@given(value=VALUES, key=st.sampled_from([*OUTCOME_NUMBER_FIELDS, *RECORDED_NUMBER_KEYS]))
def test_a_number_is_a_finding_exactly_when_the_derivation_reads_it_as_unavailable(value, key):
    """One rule, two readers: ``number_problem`` finds a value exactly when
    ``recorded.field_number`` refuses it (a null is absent, not refused)."""
    assert (number_problem(value, key) is not None) == (value is not None and field_number(value, key) is None)


def test_the_row_read_by_the_derivation_and_the_findings_agree_on_a_recorded_value():
    row = {"metrics": {"cost_usd": "0.12", "input_tokens": 5}}
    assert recorded_number(row, "cost_usd") is None and recorded_number(row, "input_tokens") == 5
    assert [f for f, _, _ in found(row)] == ["cost_usd"]


def test_a_long_value_is_cut_and_shown_as_json_would_write_it():
    assert value_text("x" * 100) == '"' + "x" * (VALUE_CHARS - 2) + "…"
    assert len(value_text("x" * 100)) == VALUE_CHARS
    assert value_text(float("-inf")) == "-Infinity" and value_text(False) == "false"
    assert value_text({"a": 1, "b": 2}) == "an object of 2 keys"
    assert json.loads(value_text(12.5)) == 12.5
