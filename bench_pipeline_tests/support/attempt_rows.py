"""Attempt rows as stage 2 makes them, built from values, for the tests of the run-level
formulas (task groups, capability, comparison), which read such rows and nothing else.

``attempt`` is one row: every ``vocabulary.ATTEMPT_FIELDS`` key (None unless given), the
outcome stage 2's own rule (``attempt_metrics.outcome``) derives from a results row's
status, success, agent_eligible and failure_class (``run_builder.row``'s defaults per
status), and its observations (none unless given). Every other value is given as stage 2
leaves it: a recorded value it makes unavailable (a Boolean, NaN, a number beyond the
float range) is None here, and a passing attempt has no failure stage.
``in_file_order`` numbers rows' lines as results.jsonl's order does; ``metrics_of`` is
the aggregate sections of metrics.json over such rows (stages 3 and 4, no run folder).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from bench_pipeline.attempt_metrics import outcome
from bench_pipeline.capability import attempt_sections, combine_sections, task_sections
from bench_pipeline.run_reader import RawRow, resolve_metrics_k
from bench_pipeline.task_groups import group_tasks
from bench_pipeline.vocabulary import ATTEMPT_FIELDS

from ..run_builder import row

#: The results-row fields ``attempt_metrics.outcome`` reads besides the status.
OUTCOME_INPUTS = ("success", "agent_eligible", "failure_class")
#: An attempt row's keys: the output fields and the observations (reference 3.8) that
#: capability.observations reads.
ROW_KEYS = (*ATTEMPT_FIELDS, "observations")


def attempt(task_id: str, attempt: int = 1, status: str = "passed", *, line: int = 1, **fields: Any) -> dict:
    """The attempt row of ``run_builder.row(task_id, attempt, status)`` in run "run-1":
    ``success``, ``agent_eligible`` and ``failure_class`` as that results row records them
    (stage 2 derives the outcome from them), any other attempt field as stage 2 leaves it."""
    unknown = set(fields) - set(ROW_KEYS) - set(OUTCOME_INPUTS)
    if unknown:
        raise TypeError(f"not an attempt field: {sorted(unknown)}")
    recorded = {k: fields.pop(k) for k in OUTCOME_INPUTS if k in fields}
    result: dict[str, Any] = dict.fromkeys(ATTEMPT_FIELDS)
    result.update(run_id="run-1", task_id=task_id, attempt=attempt, line=line, observations={})
    result.update(outcome(row(task_id, attempt, status, **recorded)))
    result.update(fields)
    return result


def unknown(task_id: str, attempt_number: int = 1, **fields: Any) -> dict:
    """An eligible attempt whose success is unknown (R19): a judge error recorded eligible."""
    return attempt(task_id, attempt_number, "judge_error", agent_eligible=True, failure_class="unknown", **fields)


def in_file_order(rows: Iterable[Mapping[str, Any]]) -> list[dict]:
    """The rows as results.jsonl lines 1, 2, ... in the order given (copies; the later line
    wins a duplicated task/attempt, R29)."""
    return [{**r, "line": n} for n, r in enumerate(rows, start=1)]


def observed_k(rows: Iterable[Mapping[str, Any]], manifest: Mapping[str, Any] | None = None) -> int | None:
    """k as stage 1 resolves it for these rows (``run_reader.resolve_metrics_k``): the
    manifest's metrics_k, else the lowest highest attempt over the tasks."""
    raw = [RawRow(r["line"], r["task_id"], r["attempt"], {}) for r in rows]
    return resolve_metrics_k(dict(manifest or {}), raw)


def metrics_of(rows: Iterable[Mapping[str, Any]], metrics_k: int | None = None) -> dict:
    """metrics.json's aggregate sections over the rows in results.jsonl order (their lines
    numbered here): task groups, then ``task_sections`` and ``attempt_sections``.
    ``metrics_k`` is the manifest's (None: the k stage 1 resolves from the rows); no plan,
    so the planned and missing attempt counts are unknown."""
    attempts = in_file_order(rows)
    k = observed_k(attempts, {"metrics_k": metrics_k} if metrics_k is not None else None)
    tasks = group_tasks(attempts, k)
    task_part = task_sections(attempts, tasks, metrics_k=k, planned_attempts=None, missing_attempts=None)
    return combine_sections(task_part, attempt_sections(attempts))
