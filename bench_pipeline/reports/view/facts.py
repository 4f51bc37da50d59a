"""What a run counts for its reports beside its metrics (``pipeline._run_level``):
``attempt_facts`` over the attempt rows alone, ``task_facts`` over the task groups."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...task_groups import deduplicate
from ..format import dig
from .exclusions import exclusion_rows, task_exclusions
from .tasks import task_rows


def attempt_facts(attempts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """What the reports count over the attempt rows alone, needing neither the metrics nor
    the task groups: statuses, eligibility, the exclusion table (status x failure class x
    eligibility, with outcomes), evidence availability. One pass over the rows."""
    n = ineligible = eligible_unknown = recorded_attempts = 0
    status_counts: Counter = Counter()
    trace_status: Counter = Counter()
    recorded_fields: Counter = Counter()
    groups: dict[tuple[Any, Any, Any], Counter] = {}
    for rec in attempts:
        if not isinstance(rec, dict):
            continue
        n += 1
        status, eligible, outcome = rec.get("status"), rec.get("agent_eligible"), rec.get("success")
        if eligible is not True:
            ineligible += 1
        elif outcome is None:
            eligible_unknown += 1
        status_counts[str(status)] += 1
        label = "true" if outcome is True else "false" if outcome is False else "unknown"
        if outcome is not None and rec.get("success_raw") is None:
            label += "_from_status"  # the legacy derivation filled a missing raw success
        groups.setdefault((status, rec.get("failure_class"), eligible), Counter())[label] += 1
        trace_status[str(dig(rec, "evidence", "trace_artifact", "status") or "n/a")] += 1
        prov = rec.get("provenance")
        if isinstance(prov, dict) and "recorded" in prov.values():
            recorded_attempts += 1
            recorded_fields.update(f for f, v in prov.items() if v == "recorded")
    return {
        "n_attempts": n,
        "ineligible": ineligible,
        "eligible_unknown": eligible_unknown,
        "status_counts": status_counts,
        "exclusions": exclusion_rows(groups),
        "trace_status": sorted(trace_status.items(), key=lambda kv: (-kv[1], kv[0])),
        "recorded_attempts": recorded_attempts,
        "recorded_fields": recorded_fields.most_common(6),
    }


def task_facts(attempts: Sequence[Mapping[str, Any]], per_task: Any, k: Any) -> dict[str, Any]:
    """The reports' per-task part: attempts grouped by task as task_groups groups them (the
    later line wins, R29), the task table rows joined with aggregate.per_task, and the tasks
    outside each denominator. ``attempts`` are attempt records, whose task id, attempt
    number and line run_reader has already checked (R27)."""
    tasks = deduplicate(a for a in attempts if isinstance(a, dict))
    per_task = per_task if isinstance(per_task, dict) else {}
    return {"tasks": tasks, "task_rows": task_rows(tasks, per_task, k), "task_exclusions": task_exclusions(tasks, k)}
