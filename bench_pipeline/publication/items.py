"""Pure: the Dataset and Dataset Item bodies of a run, and the merge of a run's items into the
shared ones: Dataset Items of a suite are shared by its runs, and ``merge_item`` decides what a
run may change in one (never erasing what it holds; docs/langfuse.md)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..layouts import rubric_items
from .ids import canonical_json
from .timestamps import parse_timestamp


def suite_tasks(suite_def: Mapping | None) -> dict[str, Mapping]:
    """suite.json's tasks by id (the first of a repeated id)."""
    tasks = (suite_def or {}).get("tasks")
    out: dict[str, Mapping] = {}
    if isinstance(tasks, list):
        for task in tasks:
            if isinstance(task, Mapping) and isinstance(task.get("id"), str):
                out.setdefault(task["id"], task)
    return out


def rubric_spec_items(spec: Any) -> Any:
    """A rubric specification as a Dataset Item holds it, in the flat layout's words
    ``[{id, requirement}]``: the runner's ``[{id, check}]`` read by ``layouts.rubric_items``
    (its ``check``, else ``description``, is the requirement), so that a run in either layout
    makes the same item; a specification already viewed (run_reader, the derived rows) stays
    as it is. Anything but a list is returned as it is."""
    return rubric_items(spec) if isinstance(spec, list) else spec


#: The parts of a Dataset Item that define its task: (field, where it lives in the item body).
#: A null value means "unknown" (a run whose suite.json lacks the task), never "empty".
DEFINITION_FIELDS = (
    ("prompt", ("input", "prompt")),
    ("expected_answer", ("expectedOutput", "expected_answer")),
    ("rubric_spec", ("expectedOutput", "rubric_spec")),
    ("expected_memory_ids", ("metadata", "expected_memory_ids")),
    ("category", ("metadata", "category")),
)


def dataset_body(suite: str) -> dict:
    """The Dataset of a suite (``POST /api/public/v2/datasets``)."""
    return {
        "name": suite,
        "description": f"Benchmark suite {suite}: one item per task attempt (bench_pipeline).",
        "metadata": {"source": "bench_pipeline", "suite": suite},
    }


def item_request(item: dict, body: dict) -> dict:
    """The ``POST /api/public/dataset-items`` body: ``body``'s content under ``item``'s ids.
    No status: a new item is ACTIVE, an existing one keeps its own."""
    return {"datasetName": item["datasetName"], "id": item["id"], "input": body["input"],
            "expectedOutput": body["expectedOutput"], "metadata": body["metadata"]}


def item_body(suite: str, task: Mapping | None, attempt: Mapping, provenance: Mapping) -> dict:
    """input / expectedOutput / metadata of the Dataset Item for one task attempt, as this run knows it.

    ``task`` is a suite.json task in the flat keys (``layouts.task_view``: a runner's
    ``rubric``, ``expected_recalled_memory_ids`` as ``rubric_spec``, ``expected_memory_ids``);
    the rubric specification, the task's else the attempt's, as ``rubric_spec_items`` words it.

    ``provenance`` ({run_id, run_started_at, suite_version}) says which run's suite definition
    the task comes from (``definition_source``); the item content itself never names the run.
    """
    task = task or {}
    evidence = attempt.get("evidence") or {}
    rubric_spec = rubric_spec_items(task.get("rubric_spec") if "rubric_spec" in task else evidence.get("rubric_spec"))
    category = task.get("category") if task.get("category") is not None else attempt.get("category")
    return {
        "input": {"prompt": task.get("prompt"), "task_id": attempt["task_id"], "attempt": attempt["attempt"]},
        "expectedOutput": {"expected_answer": task.get("expected_answer"), "rubric_spec": rubric_spec},
        "metadata": {
            "suite": suite,
            "suite_version": provenance.get("suite_version") if task else None,
            "task_id": attempt["task_id"],
            "attempt": attempt["attempt"],
            "category": category,
            "rubric_spec": rubric_spec,
            "expected_memory_ids": task.get("expected_memory_ids"),
            "in_suite_definition": bool(task),
            "definition_source": {**provenance, "in_suite_definition": bool(task)},
            "source": "bench_pipeline",
        },
    }


def definition_of(body: Mapping) -> dict[str, Any]:
    """The task definition an item body holds (DEFINITION_FIELDS; None = unknown)."""
    out: dict[str, Any] = {}
    for name, (part, key) in DEFINITION_FIELDS:
        section = body.get(part)
        out[name] = section.get(key) if isinstance(section, Mapping) else None
    if out["rubric_spec"] is None and isinstance(body.get("metadata"), Mapping):
        out["rubric_spec"] = body["metadata"].get("rubric_spec")
    return out


def _same(a: Any, b: Any) -> bool:
    return canonical_json(a) == canonical_json(b)


def _rank(source: Any) -> tuple[bool, dt.datetime]:
    """Which definition wins a conflict: one from a suite.json over one read off attempt
    records, then the run that started later (an unknown start counts as the oldest)."""
    if not isinstance(source, Mapping):
        return False, dt.datetime.min.replace(tzinfo=dt.UTC)
    started = parse_timestamp(source.get("run_started_at"))
    return bool(source.get("in_suite_definition")), started or dt.datetime.min.replace(tzinfo=dt.UTC)


def _history_entry(definition: Mapping, source: Any) -> dict:
    src = source if isinstance(source, Mapping) else {}
    return {**{name: definition.get(name) for name, _ in DEFINITION_FIELDS},
            "run_id": src.get("run_id"), "run_started_at": src.get("run_started_at"),
            "suite_version": src.get("suite_version")}


@dataclass
class ItemMerge:
    """What publishing this run does to one shared Dataset Item (``merge_item``)."""

    body: dict | None  # the complete input/expectedOutput/metadata to send; None: leave the item as it is
    outcome: str  # created | unchanged | filled | replaced | kept | foreign
    conflicts: list[str]  # definition fields this run knows differently from the item


def merge_item(existing: Mapping | None, ours: Mapping) -> ItemMerge:
    """The item content after this run, never erasing what the item holds (docs/langfuse.md).

    ``existing``: the item's input/expectedOutput/metadata in Langfuse (None: no such item);
    ``ours``: this run's item body (``item_body``). Rules:

    * a field this run does not know (null) never replaces a known one; a field the item
      lacks is filled in; keys of the item this publisher does not write are kept;
    * a field known differently on both sides is a changed task: the winning definition
      (``_rank``: from a suite.json over one read off attempt records, then the run that
      started later; a tie goes to this publication) becomes the item's, with its
      ``definition_source``; the other one is appended to ``metadata.definition_history``
      (nothing is dropped);
    * nothing is sent when the result equals the item (no new item version on the server).
    """
    ours_def = definition_of(ours)
    ours_src = ours["metadata"].get("definition_source")
    if existing is None:
        return ItemMerge({k: ours[k] for k in ("input", "expectedOutput", "metadata")}, "created", [])
    parts = {k: existing.get(k) for k in ("input", "expectedOutput", "metadata")}
    if any(v is not None and not isinstance(v, Mapping) for v in parts.values()):
        return ItemMerge(None, "foreign", [])  # not an item this publisher wrote: never overwritten
    ex = {k: dict(v or {}) for k, v in parts.items()}
    ex_def = definition_of(ex)
    ex_src = ex["metadata"].get("definition_source")
    history = list(ex["metadata"].get("definition_history") or [])
    conflicts = [name for name, _ in DEFINITION_FIELDS
                 if ours_def[name] is not None and ex_def[name] is not None and not _same(ours_def[name], ex_def[name])]
    if conflicts:
        ours_wins = _rank(ours_src) >= _rank(ex_src)  # a tie: the later publication
        first, second = (ours_def, ex_def) if ours_wins else (ex_def, ours_def)
        current = {n: first[n] if first[n] is not None else second[n] for n, _ in DEFINITION_FIELDS}
        source = ours_src if ours_wins else ex_src
        superseded = _history_entry(ex_def, ex_src) if ours_wins else _history_entry(ours_def, ours_src)
        if not any(all(_same(h.get(n), superseded[n]) for n, _ in DEFINITION_FIELDS)
                   for h in history if isinstance(h, Mapping)):
            history.append(superseded)
        history.sort(key=lambda h: str(h.get("run_started_at") or "") if isinstance(h, Mapping) else "")
        outcome = "replaced" if ours_wins else "kept"
    else:
        current = {n: ex_def[n] if ex_def[n] is not None else ours_def[n] for n, _ in DEFINITION_FIELDS}
        filled = any(ex_def[n] is None and ours_def[n] is not None for n, _ in DEFINITION_FIELDS)
        source = ours_src if ex_src is None or (filled and _rank(ours_src)[0] and not _rank(ex_src)[0]) else ex_src
        outcome = "filled" if filled else "unchanged"
    metadata = {**ex["metadata"], **{k: v for k, v in ours["metadata"].items()
                                     if k not in ("definition_source", "in_suite_definition", "suite_version")}}
    for name, (part, key) in DEFINITION_FIELDS:
        if part == "metadata":
            metadata[key] = current[name]
    metadata["rubric_spec"] = current["rubric_spec"]
    metadata["definition_source"] = source
    metadata["suite_version"] = source.get("suite_version") if _rank(source)[0] else ex["metadata"].get(
        "suite_version")
    metadata["in_suite_definition"] = bool(ex["metadata"].get("in_suite_definition")) or bool(
        ours["metadata"].get("in_suite_definition"))
    if history:
        metadata["definition_history"] = history
    body = {
        "input": {**ex["input"], **{k: v for k, v in ours["input"].items() if k != "prompt"},
                  "prompt": current["prompt"]},
        "expectedOutput": {**ex["expectedOutput"], "expected_answer": current["expected_answer"],
                           "rubric_spec": current["rubric_spec"]},
        "metadata": metadata,
    }
    if all(_same(body[k], existing.get(k)) for k in body):
        return ItemMerge(None, "unchanged" if outcome in ("unchanged", "filled") else outcome, conflicts)
    return ItemMerge(body, outcome, conflicts)
