"""Asset checks: data quality of every run, with a severity that says what it means.

ERROR: the run's numbers cannot be trusted as they are (duplicate task/attempt rows make
task grouping depend on line order; an artifact folder pointing outside the run folder is
a corrupted or hostile input; no usable row at all). WARN: findings that leave the run
measurable but deserve a look (bad lines, planned attempts missing, broken artifacts,
recorded numbers disagreeing with the derived ones).
"""


import json
import warnings

import dagster as dg
import pandas as pd
from dagster_shared.utils.warnings import PreviewWarning

from ..partitions import runs_partitions
from ..frames import attempts_from_frame, raw_run_from_frame
from ..process import data_quality
from ..quality import recorded_vs_derived
from ..resources import PipelineSettings
from .run_stages import attempt_metrics, raw_results


# Per-run checks need partitioned asset checks, a "preview" feature of Dagster 1.13
# (docs/operations.md); an unpartitioned check would load every run's frame at once.
warnings.filterwarnings("ignore", message="Specifying a partitions_def on an AssetCheckSpec", category=PreviewWarning)


def _artifact_quality(context, settings: PipelineSettings, raw_results: pd.DataFrame, attempt_metrics: pd.DataFrame) -> dict:
    """data_quality from the findings kept in each attempt's evidence (only that column is decoded)."""
    raw = raw_run_from_frame(settings.run_dir(context.partition_key), raw_results)
    return data_quality(raw, [{"evidence": json.loads(e)} for e in attempt_metrics["evidence"]])


def _result(findings: list, severity: dg.AssetCheckSeverity, what: str, count: int | None = None) -> dg.AssetCheckResult:
    """A check over located findings; ``count`` when there are more than the list names."""
    count = len(findings) if count is None else count
    return dg.AssetCheckResult(
        passed=not findings,
        severity=severity,
        description=f"{count} {what}" if findings else f"no {what}",
        metadata={"count": count, "examples": dg.MetadataValue.json(findings[:20])},
    )


@dg.asset_check(partitions_def=runs_partitions, asset=raw_results, description="Lines of results.jsonl that are not usable rows (R27).")
def no_bad_rows(context: dg.AssetCheckExecutionContext, settings: PipelineSettings, raw_results: pd.DataFrame) -> dg.AssetCheckResult:
    raw = raw_run_from_frame(settings.run_dir(context.partition_key), raw_results)
    if not raw.rows:
        return _result([{"reason": "no usable row in results.jsonl"}] + raw.bad_rows, dg.AssetCheckSeverity.ERROR, "usable rows missing")
    return _result(raw.bad_rows, dg.AssetCheckSeverity.WARN, "bad rows")


@dg.asset_check(partitions_def=runs_partitions, asset=raw_results, description="Task/attempt pairs recorded on more than one line (R29, R33).")
def no_duplicate_rows(context: dg.AssetCheckExecutionContext, settings: PipelineSettings, raw_results: pd.DataFrame) -> dg.AssetCheckResult:
    raw = raw_run_from_frame(settings.run_dir(context.partition_key), raw_results)
    return _result(raw.duplicate_rows, dg.AssetCheckSeverity.ERROR, "duplicated task/attempt rows")


@dg.asset_check(partitions_def=runs_partitions, asset=raw_results, description="Attempts planned in the manifest but absent from results.jsonl (R32).")
def no_missing_attempts(context: dg.AssetCheckExecutionContext, settings: PipelineSettings, raw_results: pd.DataFrame) -> dg.AssetCheckResult:
    raw = raw_run_from_frame(settings.run_dir(context.partition_key), raw_results)
    return _result(raw.missing_attempts or [], dg.AssetCheckSeverity.WARN, "planned attempts missing",
                   count=raw.missing_count)


@dg.asset_check(partitions_def=runs_partitions, asset=attempt_metrics, additional_ins={"raw_results": dg.AssetIn("raw_results")}, description="artifact_dir values refused as absolute or leaving the run folder (R5).")
def no_unsafe_artifact_dirs(context: dg.AssetCheckExecutionContext, settings: PipelineSettings, raw_results: pd.DataFrame, attempt_metrics: pd.DataFrame) -> dg.AssetCheckResult:
    return _result(_artifact_quality(context, settings, raw_results, attempt_metrics)["unsafe_artifact_dirs"],
                   dg.AssetCheckSeverity.ERROR, "unsafe artifact folders")


@dg.asset_check(partitions_def=runs_partitions, asset=attempt_metrics, additional_ins={"raw_results": dg.AssetIn("raw_results")}, description="history/episode/trace files that exist but cannot be used (R3).")
def no_invalid_artifacts(context: dg.AssetCheckExecutionContext, settings: PipelineSettings, raw_results: pd.DataFrame, attempt_metrics: pd.DataFrame) -> dg.AssetCheckResult:
    return _result(_artifact_quality(context, settings, raw_results, attempt_metrics)["invalid_artifacts"],
                   dg.AssetCheckSeverity.WARN, "invalid or unreadable artifacts")


@dg.asset_check(partitions_def=runs_partitions, asset=attempt_metrics, additional_ins={"raw_results": dg.AssetIn("raw_results")}, description="Recorded history-derived numbers that differ from the values derived from history.json.")
def recorded_matches_derived(context: dg.AssetCheckExecutionContext, settings: PipelineSettings, raw_results: pd.DataFrame, attempt_metrics: pd.DataFrame) -> dg.AssetCheckResult:
    raw = raw_run_from_frame(settings.run_dir(context.partition_key), raw_results)
    return _result(recorded_vs_derived(raw, attempts_from_frame(attempt_metrics)), dg.AssetCheckSeverity.WARN, "attempts with recorded/derived disagreement")


run_checks = [no_bad_rows, no_duplicate_rows, no_missing_attempts, no_unsafe_artifact_dirs, no_invalid_artifacts, recorded_matches_derived]
