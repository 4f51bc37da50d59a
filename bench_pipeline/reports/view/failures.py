"""The report's "Failures by class and stage": metrics.json's failures and diagnostics, and
the stage an attempt list shows for a row."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...task_groups import is_eligible
from ...vocabulary import FAILURE_CLASSES, FAILURE_STAGES
from ..format import dig, fmt_pct


def ordered_keys(counts: Mapping[str, Any], vocabulary: Sequence[str]) -> list[str]:
    """The vocabulary in order, then any unlisted keys (R35), sorted."""
    extra = sorted(str(k) for k in counts if k not in vocabulary)
    return [*vocabulary, *extra]


def shown_stage(rec: Mapping[str, Any]) -> Any:
    """The first failure stage the reports show: an eligible failure without a stage label
    is ``unknown``, the word failures.stage counts it under (docs/metric-choices.md), so the
    stage table and the attempt lists say the same; any other row shows its own value."""
    stage = rec.get("first_failure_stage")
    if stage in (None, "") and is_eligible(rec) and rec.get("success") is False:
        return "unknown"
    return stage


@dataclass(frozen=True)
class FailuresView:
    """Failure classes (every classified row) and first failure stages (eligible failures),
    in the vocabulary's order then unlisted keys; ``*_counts_ok`` is false when metrics.json
    has no such counts (every count is then n/a)."""

    class_items: list[tuple[str, int]]
    stage_items: list[tuple[str, int]]
    class_counts_ok: bool
    stage_counts_ok: bool
    class_total: int
    stage_total: int
    stage_coverage: str


def failures_view(metrics: Mapping[str, Any]) -> FailuresView:
    """The section from metrics.json's failures and diagnostics."""
    class_counts = dig(metrics, "failures", "class") or {}
    stage_counts = dig(metrics, "failures", "stage") or {}
    class_items = [(c, int(class_counts.get(c) or 0)) for c in ordered_keys(class_counts, FAILURE_CLASSES)]
    stage_items = [(s, int(stage_counts.get(s) or 0)) for s in ordered_keys(stage_counts, FAILURE_STAGES)]
    return FailuresView(
        class_items=class_items,
        stage_items=stage_items,
        class_counts_ok=isinstance(class_counts, dict) and bool(class_counts),
        stage_counts_ok=isinstance(stage_counts, dict) and bool(stage_counts),
        class_total=sum(c for _, c in class_items),
        stage_total=sum(c for _, c in stage_items),
        stage_coverage=fmt_pct(dig(metrics, "diagnostics", "failure_stage_coverage")),
    )
