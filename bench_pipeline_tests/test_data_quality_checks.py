"""The per-run data-quality checks (bench_pipeline/data_quality_checks.py), on runs in memory."""

from __future__ import annotations

from pathlib import Path

from bench_pipeline.data_quality_checks import CHECKS, EXAMPLES, recorded_vs_derived, run_checks
from bench_pipeline.run_reader import RawRow, RawRun


def raw_run(rows: list[RawRow], **kw) -> RawRun:
    return RawRun(run_id="r", run_dir=Path("/nowhere"), manifest={}, suite_def={}, suite=None, rows=rows,
                  metrics_k=None, planned=None, **kw)


def attempt(line: int, task_id: str = "A", attempt: int = 1, **values) -> dict:
    provenance = {f: "derived" for f in values}
    return {"line": line, "task_id": task_id, "attempt": attempt, "provenance": provenance, **values}


EMPTY_SECTION = {"unsafe_artifact_dirs": [], "invalid_artifacts": [], "invalid_values": [], "invalid_artifact_values": []}


def test_recorded_numbers_that_disagree_with_the_derived_ones_are_found():
    raw = raw_run([RawRow(1, "A", 1, {"llm_calls": 3, "tool_calls": 5}),
                   RawRow(2, "B", 1, {"metrics": {"llm_calls": None}, "tool_calls": 2})])
    attempts = [attempt(1, llm_calls=4, tool_calls=5), attempt(2, "B", llm_calls=7, tool_calls=2)]
    # line 1: llm_calls recorded 3, derived 4; tool_calls agree. Line 2: a recorded null is no disagreement.
    assert recorded_vs_derived(raw, attempts) == [
        {"line": 1, "task_id": "A", "attempt": 1, "fields": {"llm_calls": {"recorded": 3, "derived": 4}}}]


def test_a_recorded_value_is_compared_only_with_a_derived_one():
    raw = raw_run([RawRow(1, "A", 1, {"llm_calls": 3})])
    row = attempt(1, llm_calls=4)
    row["provenance"]["llm_calls"] = "recorded"
    assert recorded_vs_derived(raw, [row]) == []


def test_a_clean_run_passes_every_check_in_order():
    raw = raw_run([RawRow(1, "A", 1, {})])
    outcomes = run_checks(raw, [attempt(1)], EMPTY_SECTION)
    assert [o.name for o in outcomes] == [c.name for c in CHECKS]
    assert all(o.passed and o.count == 0 and o.examples == [] for o in outcomes)
    assert outcomes[0].description == "no bad rows"


def test_findings_give_a_count_a_severity_and_at_most_examples():
    duplicates = [{"task_id": "A", "attempt": 1, "lines": [1, n]} for n in range(2, 2 + EXAMPLES + 5)]
    raw = raw_run([RawRow(1, "A", 1, {})], bad_rows=[{"line": 9, "reason": "not JSON"}], duplicate_rows=duplicates)
    section = {"unsafe_artifact_dirs": [{"line": 1}], "invalid_artifacts": [],
               "invalid_values": [{"line": 1, "field": "cost_usd"}, {"line": 1, "field": "success"}],
               "invalid_artifact_values": [{"line": 1, "file": "tasks/A/history.json", "field": "[3].duration_ms"}]}
    by_name = {o.name: o for o in run_checks(raw, [attempt(1)], section)}
    assert (by_name["no_bad_rows"].passed, by_name["no_bad_rows"].severity) == (False, "WARN")
    assert by_name["no_bad_rows"].description == "1 bad rows"
    dup = by_name["no_duplicate_rows"]
    assert (dup.severity, dup.count, len(dup.examples)) == ("ERROR", EXAMPLES + 5, EXAMPLES)
    assert by_name["no_unsafe_artifact_dirs"].description == "1 unsafe artifact folders"
    assert by_name["no_missing_attempts"].passed  # no plan: nothing missing
    values = by_name["no_invalid_values"]
    assert (values.passed, values.severity, values.count) == (False, "WARN", 2)
    assert values.description == "2 recorded values of the wrong type"
    artifact_values = by_name["no_invalid_artifact_values"]
    assert (artifact_values.passed, artifact_values.severity, artifact_values.count) == (False, "WARN", 1)
    assert artifact_values.description == "1 artifact values of the wrong type"
    assert artifact_values.examples == [{"line": 1, "file": "tasks/A/history.json", "field": "[3].duration_ms"}]


def test_a_run_without_a_usable_row_is_an_error():
    raw = raw_run([], bad_rows=[{"line": 1, "reason": "not JSON"}])
    bad = run_checks(raw, [], EMPTY_SECTION)[0]
    assert (bad.passed, bad.severity, bad.count) == (False, "ERROR", 2)
    assert bad.examples[0] == {"reason": "no usable row in results.jsonl"}
