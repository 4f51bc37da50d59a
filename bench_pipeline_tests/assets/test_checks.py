"""assets/checks.py: every data-quality check as a partitioned Dagster check spec, and a
partition's check outcomes as Dagster check evaluations (on outcomes in memory)."""

from __future__ import annotations

import dagster as dg

from bench_pipeline.assets.checks import CHECK_SPECS, check_evaluations
from bench_pipeline.data_quality_checks import CHECKS, CheckOutcome
from bench_pipeline.partitions import runs_partitions


def test_one_partitioned_spec_per_check_on_its_stage_asset() -> None:
    assert [(s.name, s.asset_key.to_user_string(), s.description) for s in CHECK_SPECS] == [
        (c.name, c.asset, c.description) for c in CHECKS]
    assert [s.name for s in CHECK_SPECS][:3] == ["no_bad_rows", "no_duplicate_rows", "no_missing_attempts"]
    assert {s.partitions_def for s in CHECK_SPECS} == {runs_partitions}


def test_outcomes_become_evaluations_of_their_partition_with_their_severity() -> None:
    outcomes = [
        CheckOutcome("no_duplicate_rows", False, "ERROR", "2 task/attempt pairs on more than one line", 2,
                     [{"task_id": "a", "attempt": 1, "lines": [1, 2]}]),
        CheckOutcome("no_bad_rows", True, "WARN", "no bad rows", 0, []),
    ]
    first, second = check_evaluations("run-7", outcomes)
    assert (first.asset_key, first.check_name, first.passed, first.severity, first.partition) == (
        dg.AssetKey("raw_results"), "no_duplicate_rows", False, dg.AssetCheckSeverity.ERROR, "run-7")
    assert first.description == "2 task/attempt pairs on more than one line"
    assert first.metadata["count"].value == 2
    assert first.metadata["examples"].value == [{"task_id": "a", "attempt": 1, "lines": [1, 2]}]
    assert (second.asset_key, second.passed, second.severity) == (
        dg.AssetKey("raw_results"), True, dg.AssetCheckSeverity.WARN)
    assert list(check_evaluations("run-7", [])) == []


def test_checks_of_the_attempt_frame_name_its_asset() -> None:
    outcome = CheckOutcome("no_unsafe_artifact_dirs", False, "ERROR", "1 refused", 1, ["../x"])
    (evaluation,) = check_evaluations("r", [outcome])
    assert evaluation.asset_key == dg.AssetKey("attempt_metrics")
