"""The report's "Data quality": metrics.json's data_quality findings (the run's input:
bad and duplicate rows, missing attempts, unsafe or invalid artifacts, values of the wrong
type in the results file and in the artifact files, run files) and the
evidence availability counted over the attempt rows. Not quality_score, the judge's score."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...data_quality import data_quality_findings, missing_attempts_count
from ...layouts import RESULTS
from .limits import LIST_CAP


@dataclass(frozen=True)
class DataQualityView:
    """The section: each finding list of metrics.json's data_quality (dict entries only),
    the missing attempts' full count, the number of findings as the command's summary line
    counts them, whether the block is there at all, attempt_facts' evidence counts, and the
    results file the run was read from (its bad rows' lines and missing attempts are that
    file's: run-directory.md "the outputs name the file they read")."""

    bad_rows: list[Mapping[str, Any]]
    duplicate_rows: list[Mapping[str, Any]]
    missing_attempts: list[Mapping[str, Any]]
    missing_count: Any
    unsafe_artifact_dirs: list[Mapping[str, Any]]
    invalid_artifacts: list[Mapping[str, Any]]
    invalid_values: list[Mapping[str, Any]]
    invalid_artifact_values: list[Mapping[str, Any]]
    run_files: list[Mapping[str, Any]]
    findings: int
    present: bool
    trace_status: list[tuple[str, int]]
    recorded_attempts: int
    recorded_fields: list[tuple[str, int]]
    results_file: str = RESULTS
    cap: int = LIST_CAP

    @property
    def unsafe_lines(self) -> set[int]:
        """The result lines whose artifact_dir was refused as unsafe."""
        return {u.get("line") for u in self.unsafe_artifact_dirs if isinstance(u.get("line"), int)}


def data_quality_view(metrics: Mapping[str, Any], facts: Mapping[str, Any]) -> DataQualityView:
    """Data-quality findings (from metrics) plus evidence availability counts (attempt_facts)."""
    block = metrics.get("data_quality") if isinstance(metrics.get("data_quality"), dict) else {}

    def listed(key: str) -> list[Mapping[str, Any]]:
        value = block.get(key)
        return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []

    return DataQualityView(
        bad_rows=listed("bad_rows"),
        duplicate_rows=listed("duplicate_rows"),
        missing_attempts=listed("missing_attempts"),
        missing_count=missing_attempts_count(metrics),  # the list names at most 100,000
        unsafe_artifact_dirs=listed("unsafe_artifact_dirs"),
        invalid_artifacts=listed("invalid_artifacts"),
        invalid_values=listed("invalid_values"),
        invalid_artifact_values=listed("invalid_artifact_values"),
        run_files=listed("run_files"),
        findings=data_quality_findings(metrics),  # as the command's summary line counts them
        present=bool(block),
        trace_status=facts["trace_status"],
        recorded_attempts=facts["recorded_attempts"],
        recorded_fields=facts["recorded_fields"],
        results_file=metrics["results_file"] if isinstance(metrics.get("results_file"), str) else RESULTS,
    )
