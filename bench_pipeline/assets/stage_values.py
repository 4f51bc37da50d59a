"""How each per-run stage before the publication is stored and what its materialization
shows: the values of one partition's run through the stages (``Computed``), stored where
their IO managers load them from (``store_partition``), and the metadata the UI shows of
each (STORED_STAGES, in stage order). partition_work.py calls ``store_stages`` for a run
processed in full, and two of them for a run compared again from its stored values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd

from .. import object_store
from ..comparison_inputs import ComparisonInputs
from ..formula import FORMULA_VERSION
from ..frames import attempts_frame, raw_results_frame, tasks_frame
from ..processed import ProcessedRun
from ..resources.io_managers import store_partition
from .stage_metadata import comparison_metadata, headline_metadata

@dataclass(frozen=True)
class Computed:
    """A partition's run through the stages: what its stages store and show. ``storage_base``
    and ``key``: where its values are stored; ``baseline``: the baseline's run id (None: no
    comparison); ``inputs``: what its comparison was computed from."""

    storage_base: str
    key: str
    processed: ProcessedRun
    written: dict[str, Path]
    comparison: dict | None
    baseline: str | None
    baseline_reason: str
    inputs: ComparisonInputs | None


def store_stages(computed: Computed) -> tuple[dict[str, dict], str | None, Exception | None]:
    """Every stage before the publication stored and described (STORED_STAGES, in stage
    order), up to the first that fails: (metadata by stage, the failed stage, its exception)."""
    materialized: dict[str, dict] = {}
    for stage, store in STORED_STAGES.items():
        try:
            materialized[stage] = store(stage, computed)
        except Exception as exc:  # noqa: BLE001 - one broken run must not stop the others
            return materialized, stage, exc
    return materialized, None, None


def _raw_results(stage: str, computed: Computed) -> dict[str, Any]:
    raw = computed.processed.raw
    frame = raw_results_frame(raw)
    store_partition(computed.storage_base, stage, computed.key, frame)
    return {
        "dagster/row_count": len(frame),
        "usable_rows": len(raw.rows),
        "bad_rows": len(raw.bad_rows),
        "duplicate_task_attempts": len(raw.duplicate_rows),
        "suite": raw.suite or "unknown",
        "metrics_k": raw.metrics_k if raw.metrics_k is not None else "unknown",
        "run_folder": dg.MetadataValue.path(object_store.location_text(raw.run_dir)),
        "preview": _preview(frame, ["line", "task_id", "attempt", "status", "bad_reason"]),
    }


def _attempt_metrics(stage: str, computed: Computed) -> dict[str, Any]:
    attempts = computed.processed.attempts
    frame = attempts_frame(attempts)
    store_partition(computed.storage_base, stage, computed.key, frame)
    return {
        "dagster/row_count": len(frame),
        "eligible_attempts": int(frame["agent_eligible"].sum()),
        "recorded_fallback_values": sum(1 for a in attempts for v in a["provenance"].values() if v == "recorded"),
        "preview": _preview(frame, ["task_id", "attempt", "status", "success", "agent_eligible",
                                    "task_wall_ms", "total_tokens"]),
    }


def _task_groups(stage: str, computed: Computed) -> dict[str, Any]:
    frame = tasks_frame(computed.processed.tasks)
    store_partition(computed.storage_base, stage, computed.key, frame)
    return {
        "dagster/row_count": len(frame),
        "tasks_in_E1": int(frame["in_e1"].sum()),
        "tasks_in_Ek": int(frame["in_ek"].sum()),
        "preview": _preview(frame, ["task_id", "attempts", "eligible_attempts", "passed", "in_e1", "in_ek"]),
    }


def _capability_aggregates(stage: str, computed: Computed) -> dict[str, Any]:
    metrics, written = computed.processed.metrics, computed.written
    store_partition(computed.storage_base, stage, computed.key, metrics)
    return {
        **headline_metadata(metrics),
        "formula_version": FORMULA_VERSION,
        "metrics_json": dg.MetadataValue.path(object_store.location_text(written["metrics.json"])),
        "attempts_jsonl": dg.MetadataValue.path(object_store.location_text(written["attempts.jsonl"])),
    }


def _run_comparison(stage: str, computed: Computed) -> dict[str, Any]:
    metadata = comparison_metadata(computed.comparison, computed.baseline, computed.baseline_reason,
                                   computed.written)
    inputs = computed.inputs
    if inputs is not None and computed.comparison is not None:  # what it was computed from
        metadata["candidate_data_version"] = inputs.candidate_version or "unknown"
        metadata["baseline_data_version"] = inputs.baseline_version or "unknown"
    elif inputs is not None and inputs.not_compared is not None:  # what its reports say of it
        metadata["not_compared"] = inputs.not_compared
    return metadata


def _reports(stage: str, computed: Computed) -> dict[str, Any]:
    written = computed.written
    summary = Path(written["summary.md"]).read_text(encoding="utf-8")
    return {
        "summary_md": dg.MetadataValue.path(object_store.location_text(written["summary.md"])),
        "report_html": dg.MetadataValue.path(object_store.location_text(written["report.html"])),
        "report_bytes": Path(written["report.html"]).stat().st_size,
        "preview": dg.MetadataValue.md(summary[:4000]),
    }


#: How each stage before the publication is stored (``store_partition``) and what its
#: materialization shows; run in STAGES order.
STORED_STAGES: dict[str, Callable[[str, Computed], dict[str, Any]]] = {
    "raw_results": _raw_results,
    "attempt_metrics": _attempt_metrics,
    "task_groups": _task_groups,
    "capability_aggregates": _capability_aggregates,
    "run_comparison": _run_comparison,
    "reports": _reports,
}


def _preview(frame: pd.DataFrame, columns: list[str], rows: int = 10) -> dg.MetadataValue:
    return dg.MetadataValue.md(frame[columns].head(rows).to_markdown(index=False))
