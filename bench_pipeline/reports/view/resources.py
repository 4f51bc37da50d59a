"""The report's "Time, work and cost": metrics.json's efficiency, reliability and
cost_to_first_success distributions, and the slowest and most expensive tasks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...stats import is_number
from ...vocabulary import COST_FIELDS, EFFICIENCY_FIELDS, RELIABILITY_FIELDS
from ..format import FIELD_LABELS, fmt_int, formatter_for
from .limits import TOP_N

#: The efficiency table's rows: metrics.json's efficiency fields in FIELD_LABELS' order.
EFFICIENCY_ROWS = tuple(f for f in FIELD_LABELS if f in EFFICIENCY_FIELDS)
#: The statistics of a full distribution's row, and of a short one (cost to first success).
FULL_STATS = ("count", "mean", "p50", "p90", "p95", "sum")
SHORT_STATS = ("count", "mean", "p50")


def distribution_rows(block: Any, fields: Sequence[str], stats: Sequence[str]) -> list[dict[str, Any]]:
    """Formatted rows of an efficiency/reliability/cost_to_first_success block."""
    rows = []
    for field in fields:
        entry = block.get(field) if isinstance(block, dict) else None
        entry = entry if isinstance(entry, dict) else {}
        fmt = formatter_for(field)
        cells = {"count": fmt_int(entry.get("count"))}
        for stat in stats:
            if stat != "count":
                cells[stat] = fmt(entry.get(stat))
        rows.append({"field": field, "label": FIELD_LABELS[field], **cells})
    return rows


def slowest_tasks(task_rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The TOP_N tasks with the highest mean eligible wall time (avg_wall_ms), then task id;
    a task without one is not ranked."""
    with_wall = [t for t in task_rows if is_number(t["avg_wall_ms"])]
    return sorted(with_wall, key=lambda t: (-t["avg_wall_ms"], t["task_id"]))[:TOP_N]


def most_expensive_tasks(task_rows: Sequence[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], bool]:
    """(the TOP_N most expensive tasks, ranked by cost): by summed cost_usd when any task has
    one, else by mean total tokens per attempt."""
    if any(t["sum_cost"] is not None for t in task_rows):
        return sorted([t for t in task_rows if t["sum_cost"] is not None],
                      key=lambda t: (-t["sum_cost"], t["task_id"]))[:TOP_N], True
    return sorted([t for t in task_rows if t["mean_tokens"] is not None],
                  key=lambda t: (-t["mean_tokens"], t["task_id"]))[:TOP_N], False


@dataclass(frozen=True)
class ResourcesView:
    """The section: formatted distribution rows and the ranked tasks (``expensive_by_cost``:
    ranked by cost_usd rather than by tokens)."""

    efficiency: list[dict[str, Any]]
    reliability: list[dict[str, Any]]
    cost_first: list[dict[str, Any]]
    slowest: list[Mapping[str, Any]]
    expensive: list[Mapping[str, Any]]
    expensive_by_cost: bool


def resources_view(metrics: Mapping[str, Any], task_rows: Sequence[Mapping[str, Any]]) -> ResourcesView:
    """The section from metrics.json and the task table's rows."""
    expensive, by_cost = most_expensive_tasks(task_rows)
    return ResourcesView(
        efficiency=distribution_rows(metrics.get("efficiency") or {}, EFFICIENCY_ROWS, FULL_STATS),
        reliability=distribution_rows(metrics.get("reliability") or {}, RELIABILITY_FIELDS, FULL_STATS),
        cost_first=distribution_rows(metrics.get("cost_to_first_success") or {}, COST_FIELDS, SHORT_STATS),
        slowest=slowest_tasks(task_rows),
        expensive=expensive,
        expensive_by_cost=by_cost,
    )
