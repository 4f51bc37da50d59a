"""The report's "Categories and observations": metrics.json's category and observations
sections, formatted, by name."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..format import fmt_int, fmt_pct


def category_rows(metrics: Mapping[str, Any]) -> list[dict[str, str]]:
    """Per category: pass rate over all its rows, rubric pass rate, attempts."""
    rows = []
    for name, entry in sorted((metrics.get("category") or {}).items()):
        entry = entry if isinstance(entry, dict) else {}
        rows.append({"name": name, "pass_rate": fmt_pct(entry.get("pass_rate")),
                     "rubric_pass_rate": fmt_pct(entry.get("rubric_pass_rate")),
                     "attempts": fmt_int(entry.get("attempts"))})
    return rows


def observation_rows(metrics: Mapping[str, Any]) -> list[dict[str, str]]:
    """Per trace observation: pass rate, passed rows, rows containing it."""
    rows = []
    for name, entry in sorted((metrics.get("observations") or {}).items()):
        entry = entry if isinstance(entry, dict) else {}
        rows.append({"name": name, "pass_rate": fmt_pct(entry.get("pass_rate")),
                     "passed": fmt_int(entry.get("passed_tasks")),
                     "observed": fmt_int(entry.get("observed_tasks"))})
    return rows


@dataclass(frozen=True)
class CategoriesView:
    """The section: category rows and observation rows."""

    rows: list[dict[str, str]]
    observations: list[dict[str, str]]


def categories_view(metrics: Mapping[str, Any]) -> CategoriesView:
    return CategoriesView(rows=category_rows(metrics), observations=observation_rows(metrics))
