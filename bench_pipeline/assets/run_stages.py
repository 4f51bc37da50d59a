"""The per-run assets, one per stage, partitioned by run folder.

raw_results -> attempt_metrics -> task_groups -> capability_aggregates -> reports
-> langfuse_publication. Every asset whose output depends on a formula carries the
formula version as its code version, so a formula change marks every run stale.
The assets only wire stages together; the work is in the stage modules.
"""


import json
import warnings
from pathlib import Path

import dagster as dg
import pandas as pd
from dagster_pandera import pandera_schema_to_dagster_type

from ..formula import FORMULA_VERSION
from ..frames import (
    attempts_frame,
    attempts_from_frame,
    raw_results_frame,
    raw_run_from_frame,
    tasks_frame,
    tasks_from_frame,
)
from ..partitions import runs_partitions
from ..process import (
    attempt_record, build_metrics, data_quality, data_quality_findings, derive_attempts, write_metrics_files,
)
from ..reports import write_reports
from ..publication import publish_run
from ..resources import LangfuseResource, PipelineSettings
from ..run_reader import read_run
from ..schemas import AttemptMetricsSchema, RawResultsSchema, TaskGroupsSchema
from ..task_groups import group_tasks

GROUP = "per_run"
with warnings.catch_warnings():
    warnings.simplefilter("ignore", dg.BetaWarning)  # dagster-pandera is marked beta
    RawResultsType = pandera_schema_to_dagster_type(RawResultsSchema)
    AttemptMetricsType = pandera_schema_to_dagster_type(AttemptMetricsSchema)
    TaskGroupsType = pandera_schema_to_dagster_type(TaskGroupsSchema)


def per_run_asset(**kwargs):
    """``@dg.asset`` for a per-run stage: partitioned by run, grouped, formula-versioned."""
    return dg.asset(partitions_def=runs_partitions, group_name=GROUP, code_version=FORMULA_VERSION, **kwargs)


def _preview(frame: pd.DataFrame, columns: list[str], rows: int = 10) -> dg.MetadataValue:
    return dg.MetadataValue.md(frame[columns].head(rows).to_markdown(index=False))


@per_run_asset(
    kinds={"python", "pandas"},
    io_manager_key="parquet_io_manager",
    dagster_type=RawResultsType,
)
def raw_results(context: dg.AssetExecutionContext, settings: PipelineSettings) -> pd.DataFrame:
    """Every non-blank results.jsonl line of the run: usable rows and located bad rows
    (run-directory.md). A folder without results.jsonl fails with its path."""
    raw = read_run(settings.run_dir(context.partition_key))
    frame = raw_results_frame(raw)
    context.add_output_metadata({
        "dagster/row_count": len(frame),
        "usable_rows": len(raw.rows),
        "bad_rows": len(raw.bad_rows),
        "duplicate_task_attempts": len(raw.duplicate_rows),
        "suite": raw.suite or "",
        "metrics_k": raw.metrics_k if raw.metrics_k is not None else -1,
        "run_folder": dg.MetadataValue.path(str(raw.run_dir)),
        "preview": _preview(frame, ["line", "task_id", "attempt", "status", "bad_reason"]),
    })
    return frame


@per_run_asset(
    kinds={"python", "pandas"},
    io_manager_key="parquet_io_manager",
    dagster_type=AttemptMetricsType,
)
def attempt_metrics(
    context: dg.AssetExecutionContext, settings: PipelineSettings, raw_results: pd.DataFrame
) -> pd.DataFrame:
    """One row per attempt with the derived metrics of reference 3.1-3.6 and the provenance
    (derived from artifacts or recorded) of every history/episode field."""
    raw = raw_run_from_frame(settings.run_dir(context.partition_key), raw_results)
    rows = derive_attempts(raw, progress=lambda i, n: context.log.info(f"attempts derived: {i}/{n}"))
    frame = attempts_frame(rows)
    recorded = sum(1 for r in rows for v in r["provenance"].values() if v == "recorded")
    context.add_output_metadata({
        "dagster/row_count": len(frame),
        "eligible_attempts": int(frame["agent_eligible"].sum()),
        "recorded_fallback_values": recorded,
        "preview": _preview(frame, ["task_id", "attempt", "status", "success", "agent_eligible", "task_wall_ms", "total_tokens"]),
    })
    return frame


@per_run_asset(
    kinds={"python", "pandas"},
    io_manager_key="parquet_io_manager",
    dagster_type=TaskGroupsType,
)
def task_groups(
    context: dg.AssetExecutionContext, raw_results: pd.DataFrame, attempt_metrics: pd.DataFrame, settings: PipelineSettings
) -> pd.DataFrame:
    """One row per observed task after de-duplication: E1/Ek membership, fixed-k outcomes,
    first success and the per-task aggregate (reference 3.7)."""
    raw = raw_run_from_frame(settings.run_dir(context.partition_key), raw_results)
    frame = tasks_frame(group_tasks(attempts_from_frame(attempt_metrics), raw.metrics_k))
    context.add_output_metadata({
        "dagster/row_count": len(frame),
        "tasks_in_E1": int(frame["in_e1"].sum()),
        "tasks_in_Ek": int(frame["in_ek"].sum()),
        "preview": _preview(frame, ["task_id", "attempts", "eligible_attempts", "passed", "in_e1", "in_ek"]),
    })
    return frame


def _headline(metrics: dict) -> dict:
    """The numbers a user wants on the asset page (null shown as -1 is avoided: text)."""
    cap = metrics["capability"]

    def fmt(m: dict) -> str:
        if m["value"] is None:
            return "n/a (no eligible denominator)"
        return f"{m['value']:.3f} [{m['ci95']['lower']:.3f}, {m['ci95']['upper']:.3f}] ({m['successes']}/{m.get('eligible_tasks', m.get('eligible_attempts'))})"

    return {
        "pass_at_1": fmt(cap["pass_at_1"]),
        "pass_at_k": fmt(cap["pass_at_k"]),
        "pass_pow_k": fmt(cap["pass_pow_k"]),
        "attempt_success_rate": fmt(cap["attempt_success_rate"]),
        "metrics_k": str(metrics["coverage"]["metrics_k"]),
        "coverage_pass_at_k": f"{metrics['coverage']['pass_at_k']:.3f}",
    }


@per_run_asset(
    kinds={"python", "json"},
    io_manager_key="json_io_manager",
)
def capability_aggregates(
    context: dg.AssetExecutionContext,
    settings: PipelineSettings,
    raw_results: pd.DataFrame,
    attempt_metrics: pd.DataFrame,
    task_groups: pd.DataFrame,
) -> dict:
    """The run's metrics.json (outputs.md): capability with Wilson bounds, coverage,
    failures, diagnostics, categories, observations, distributions, cost to first success,
    per-task aggregate and data quality. Also writes metrics.json and attempts.jsonl to the
    run's output folder."""
    run_id = context.partition_key
    raw = raw_run_from_frame(settings.run_dir(run_id), raw_results)
    attempts = attempts_from_frame(attempt_metrics)
    tasks = tasks_from_frame(task_groups)
    metrics = build_metrics(raw, attempts, tasks, data_quality(raw, attempts))
    written = write_metrics_files(settings.output_dir(run_id), metrics, attempts)
    context.add_output_metadata({
        **_headline(metrics),
        "formula_version": FORMULA_VERSION,
        "metrics_json": dg.MetadataValue.path(str(written["metrics.json"])),
        "data_quality_findings": data_quality_findings(metrics),
    })
    return metrics


@per_run_asset(
    kinds={"python", "html", "markdown"},
)
def reports(
    context: dg.AssetExecutionContext,
    settings: PipelineSettings,
    capability_aggregates: dict,
    attempt_metrics: pd.DataFrame,
) -> dg.MaterializeResult:
    """summary.md and the self-contained report.html, next to metrics.json."""
    run_id = context.partition_key
    raw_manifest = _json_object(settings.run_dir(run_id), "manifest.json")
    attempts = [attempt_record(a) for a in attempts_from_frame(attempt_metrics)]
    written = write_reports(
        settings.output_dir(run_id), capability_aggregates, attempts, raw_manifest, run_id,
        run_dir=settings.run_dir(run_id),
    )
    summary = Path(written["summary.md"]).read_text(encoding="utf-8")
    return dg.MaterializeResult(
        metadata={
            "summary_md": dg.MetadataValue.path(str(written["summary.md"])),
            "report_html": dg.MetadataValue.path(str(written["report.html"])),
            "report_bytes": Path(written["report.html"]).stat().st_size,
            "preview": dg.MetadataValue.md(summary[:4000]),
        }
    )


@per_run_asset(
    kinds={"python", "langfuse"},
    deps=[reports],
)
def langfuse_publication(
    context: dg.AssetExecutionContext,
    settings: PipelineSettings,
    langfuse: LangfuseResource,
    capability_aggregates: dict,
    attempt_metrics: pd.DataFrame,
) -> dg.MaterializeResult:
    """The run in Langfuse: a Dataset per suite, an Item per task/attempt, an Experiment Run
    per run with the evaluation of each attempt, and benchmark scores (docs/langfuse.md).
    Without Langfuse settings the exact payloads go to langfuse_outbox.jsonl instead; a
    delivery that cannot be confirmed fails the step, and a retry sends only what is missing."""
    run_id = context.partition_key
    run_dir = settings.run_dir(run_id)
    attempts = [attempt_record(a) for a in attempts_from_frame(attempt_metrics)]
    target = langfuse.settings()
    done_word = "published" if target.configured else "written to the outbox (Langfuse not configured)"
    result = publish_run(
        run_id=run_id,
        metrics=capability_aggregates,
        attempts=attempts,
        manifest=_json_object(run_dir, "manifest.json"),
        suite_def=_json_object(run_dir, "suite.json"),
        out_dir=settings.output_dir(run_id),
        settings=target,
        progress=lambda done, total: context.log.info(f"langfuse: {done}/{total} attempts {done_word}"),
    )
    metadata = {
        "status": result.status,
        "dataset": result.dataset,
        "experiment_id": result.experiment_id or "",
        "items": result.items,
        "scores": result.scores,
        "spans": result.spans,
        "already_published": result.skipped_existing,
    }
    if result.http_requests is not None:
        metadata["http_requests"] = result.http_requests
    if result.record_path is not None:
        metadata["publication_record"] = dg.MetadataValue.path(str(result.record_path))
    if result.outbox_path is not None:
        metadata["outbox"] = dg.MetadataValue.path(str(result.outbox_path))
    return dg.MaterializeResult(metadata=metadata)


def _json_object(run_dir: Path, name: str) -> dict:
    """A top-level JSON object file of the run, {} when unavailable (stage 1 reports why)."""
    try:
        value = json.loads((run_dir / name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
