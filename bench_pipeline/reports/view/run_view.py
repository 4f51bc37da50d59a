"""The view both reports render: ``build_view`` assembles a ``RunView`` of named parts, one
per report section, each made by its own module of this package."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..format import dig
from .capability import CapabilityView, capability_view
from .categories import CategoriesView, categories_view
from .data_quality import DataQualityView, data_quality_view
from .exclusions import ExclusionsView, exclusions_view
from .facts import attempt_facts, task_facts
from .failed_tasks import FailedTask, failed_tasks
from .failures import FailuresView, failures_view
from .limits import LIST_CAP
from .resources import ResourcesView, resources_view
from .run_facts import RunHeader, run_header, view_k
from .stability import stability_view
from .tasks import TasksView


@dataclass(frozen=True)
class RunView:
    """Everything both reports show, section by section, pre-formatted (strings from the run
    left raw, to be escaped where they are rendered).

    ``stability`` is None unless metrics_k >= 2; ``comparison`` (``compared.comparison_view``)
    None without a baseline, and ``not_compared`` then why, when a baseline was looked for;
    ``cap``: how many items of one kind a report lists."""

    run: RunHeader
    capability: CapabilityView
    stability: dict[str, Any] | None
    comparison: Mapping[str, Any] | None
    exclusions: ExclusionsView
    failures: FailuresView
    resources: ResourcesView
    failed_tasks: list[FailedTask]
    data_quality: DataQualityView
    categories: CategoriesView
    tasks: TasksView
    not_compared: str | None = None
    cap: int = LIST_CAP


def build_view(metrics: Mapping[str, Any], attempts: Sequence[Mapping[str, Any]], manifest: Mapping[str, Any],
               run_id: str, evidence_base: str | None = None, facts: Mapping[str, Any] | None = None,
               per_task_facts: Mapping[str, Any] | None = None,
               comparison: Mapping[str, Any] | None = None, not_compared: str | None = None) -> RunView:
    """The view of one run. Every number is taken from metrics.json or counted over the
    attempt records; nothing here recomputes a capability metric.

    ``facts`` (attempt_facts) and ``per_task_facts`` (task_facts), when given, were computed
    already (for instance in parallel with the metrics); else they are computed here.
    ``comparison``: the comparison with a baseline (``compared.comparison_view``), or None;
    ``not_compared``: without one, why the run has no baseline (baselines.Baseline.not_compared),
    or None when nothing chose a baseline for it (the command line's ``process``).
    """
    metrics = metrics if isinstance(metrics, dict) else {}
    manifest = manifest if isinstance(manifest, dict) else {}
    k = view_k(metrics, manifest)
    if facts is None:
        facts = attempt_facts(attempts)
    if per_task_facts is None:
        per_task_facts = task_facts(attempts, dig(metrics, "aggregate", "per_task"), k)
    data_quality = data_quality_view(metrics, facts)
    unsafe_lines = data_quality.unsafe_lines
    tasks = TasksView(rows=per_task_facts["task_rows"], by_id=per_task_facts["tasks"], unsafe_lines=unsafe_lines)
    return RunView(
        run=run_header(metrics, manifest, run_id, k),
        capability=capability_view(metrics, manifest, k, facts["status_counts"]),
        stability=stability_view(k, tasks.by_id, unsafe_lines, evidence_base),
        comparison=comparison,
        exclusions=exclusions_view(facts, per_task_facts),
        failures=failures_view(metrics),
        resources=resources_view(metrics, tasks.rows),
        failed_tasks=failed_tasks(tasks.rows, k, unsafe_lines, evidence_base),
        data_quality=data_quality,
        categories=categories_view(metrics),
        tasks=tasks,
        not_compared=not_compared,
    )
