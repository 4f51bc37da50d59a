"""Pure mapping from a processed run to the Langfuse objects that represent it.

Nothing here does I/O. Every id is a function of stable inputs (suite name, run id, task id,
attempt number, score name), so publishing the same run twice addresses the same objects:

==========================  =================================================================
object                      id
==========================  =================================================================
Dataset                     the suite name (``dataset_name``)
Dataset Item                ``dataset_item_id(suite, task_id, attempt)``: ``suite:task:attempt``
                            when readable and unambiguous, else ``bench-item-<sha256>``
Experiment (dataset run)    the SDK formula (``experiment_id``) over project, dataset id and
                            run name (= run id)
replay trace / root span    ``replay_trace_id`` / ``replay_root_span_id`` (suite, run, item)
evaluation observation      ``evaluation_span_id`` (suite, run, item): the experiment item
attempt score               ``attempt_score_id`` (suite, run, item, score name)
run score                   ``run_score_id`` (suite, run, score name)
==========================  =================================================================

Here too: the plan of a run (``plan_run``: item bodies, score values, the experiment's
facts), the binding of each experiment item (``decide_binding``) and the merge of a run's
items into the shared ones: Dataset Items of a suite are shared by its runs, and
``merge_item`` decides what a run may change in one (never erasing what it holds). The wire
payloads made from the plan are in ``payloads``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import numbers
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson

from ..run_reader import planned_attempts
from ..vocabulary import BOOLEAN_FIELDS, CATEGORICAL_FIELDS, NUMERIC_FIELDS

T = TypeVar("T")

MAX_ITEM_ID_LENGTH = 255
UNKNOWN_SUITE = "unknown-suite"
SCOPE_NAME = "bench_pipeline.publication"
SCOPE_VERSION = "1"

# Execution-trace status of an experiment item (metrics-reference "Experiment output ...").
AVAILABLE = "available"
PENDING_OR_MISSING = "pending_or_missing"
NO_EPISODE = "no_episode"

# Binding modes: under the Agent's execution trace, or under a deterministic replay trace.
EXECUTION_TRACE = "execution_trace"
REPLAY = "replay"

# --- score fields (outputs.md "attempt metrics", metrics-reference section 2) ----------------

# Attempt fields by score kind (``benchmark.<field>``): CATEGORICAL_FIELDS, BOOLEAN_FIELDS and
# NUMERIC_FIELDS, from vocabulary.
#: Deterministic checks kept in the attempt record's ``evidence`` (reference: exported scores).
EVIDENCE_BOOLEAN_FIELDS = ("expected_answer_match", "expected_recalled_memory_match")
#: metrics.json sections exported as run-level scores (outputs.md "Langfuse publication").
RUN_SCORE_SECTIONS = (
    "capability", "coverage", "failures", "diagnostics", "category", "observations",
    "efficiency", "reliability", "cost_to_first_success",
)
#: Manifest keys copied into the experiment metadata (never credentials: see ``manifest_facts``).
MANIFEST_FACT_KEYS = (
    "schema_version", "run_id", "status", "started_at", "finished_at", "code", "suite", "model",
    "judge", "platform", "active_skills", "repeats", "metrics_k",
)
_SECRET_KEY_RE = re.compile(
    r"(secret|passw(or)?d|credential|cookie|authorization|private[_-]?key|api[_-]?key|access[_-]?key"
    r"|(^|[_-])token$|^auth$|^auth[_-]|[_-]auth([_-]|$))",
    re.IGNORECASE,
)
_HEX32 = re.compile(r"^[0-9a-f]{32}$")


# =============================================================================== helpers


def canonical_json(value: Any) -> bytes:
    """Deterministic JSON bytes (sorted keys) used for hashes."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY,
                        default=str)


def content_hash(value: Any) -> str:
    return hashlib.sha256(canonical_json(value)).hexdigest()[:24]


def _id_json(parts: list) -> bytes:
    """``json.dumps(parts, separators=(",", ":"), ensure_ascii=False)`` as UTF-8: the text ids
    are hashed from (orjson gives the same bytes for strings and 64-bit ints, and is faster)."""
    try:
        return orjson.dumps(parts)
    except (TypeError, orjson.JSONEncodeError):  # lone surrogates, huge ints: the slow, exact path
        return json.dumps(parts, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")


def _digest(*parts: Any) -> str:
    return hashlib.sha256(_id_json(list(parts))).hexdigest()


class PrefixDigest:
    """``_digest(*prefix, last)`` for many ``last`` values: the prefix is hashed once."""

    def __init__(self, *prefix: Any):
        head = _id_json([*prefix, ""])  # [..., ""] -> cut the closing '""]'
        self._base = hashlib.sha256(head[:-3])

    def __call__(self, last: Any) -> str:
        h = self._base.copy()
        h.update(_id_json([last])[1:])  # '"name"]'
        return h.hexdigest()


def _span_id(*parts: Any) -> str:
    sid = _digest(*parts)[:16]
    return sid if sid != "0" * 16 else "0" * 15 + "1"  # an all-zero id is invalid in OTLP


def _trace_id(*parts: Any) -> str:
    tid = _digest(*parts)[:32]
    return tid if tid != "0" * 32 else "0" * 31 + "1"


def is_bool(value: Any) -> bool:
    """A Boolean (numpy's ``bool_`` included)."""
    return isinstance(value, bool) or type(value).__name__ in ("bool_", "bool")  # numpy 1 and 2


def is_number(value: Any) -> bool:
    """A finite real number that is not a Boolean (run-directory.md: a Boolean is never a number)."""
    kind = type(value)
    if kind is float:  # the common cases first: some 260,000 calls for a 10,000-attempt run
        return math.isfinite(value)
    if kind is int:
        return True
    return isinstance(value, numbers.Real) and not is_bool(value) and math.isfinite(value)


def iso_ms(value: dt.datetime) -> str:
    """UTC ISO 8601 with millisecond precision (what the score store keeps)."""
    value = value.astimezone(dt.UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def parse_timestamp(value: Any) -> dt.datetime | None:
    """An ISO 8601 text as an aware UTC datetime (naive = UTC), else None."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.astimezone(dt.UTC)


def normalize_timestamp(value: Any) -> str | None:
    parsed = parse_timestamp(value)
    return iso_ms(parsed) if parsed is not None else None


def to_nanos(value: str) -> int:
    parsed = parse_timestamp(value)
    if parsed is None:
        raise ValueError(f"not a timestamp: {value!r}")
    return int(parsed.timestamp()) * 1_000_000_000 + parsed.microsecond * 1000


def json_text(value: Any) -> str:
    """Input/output/metadata attribute values are JSON text (as the SDK sends them; compact)."""
    return orjson.dumps(value, default=str, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS).decode()


def span_attr(key: str, value: Any) -> dict:
    """An OTLP/JSON span attribute: a Boolean as such, anything else as text (JSON text when
    not a string, as the SDK sends input/output/metadata)."""
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    return {"key": key, "value": {"stringValue": value if isinstance(value, str) else json_text(value)}}


# =============================================================================== ids


def dataset_name(metrics: Mapping | None, manifest: Mapping | None, suite_def: Mapping | None = None) -> str:
    """The stable suite name: metrics.json ``suite``, else the manifest's, else suite.json's."""
    candidates: list[Any] = [(metrics or {}).get("suite")]
    suite = (manifest or {}).get("suite")
    candidates.append(suite.get("name") if isinstance(suite, Mapping) else suite)
    candidates.append((suite_def or {}).get("name"))
    for value in candidates:
        if isinstance(value, str) and value.strip():
            return value.strip()
    return UNKNOWN_SUITE


def dataset_item_id(suite: str, task_id: str, attempt: int) -> str:
    """Deterministic Dataset Item id for (suite, task, attempt); unique per project, <= 255 chars.

    ``suite:task:attempt`` when neither part contains ``:`` or control characters and the id
    fits; otherwise ``bench-item-`` + sha256 of the three parts (the two forms cannot collide:
    a hashed id has no ``:``).
    """
    readable = f"{suite}:{task_id}:{attempt}"
    if (
        ":" not in suite
        and ":" not in task_id
        and readable.isprintable()
        and len(readable) <= MAX_ITEM_ID_LENGTH
    ):
        return readable
    return "bench-item-" + _digest("bench-pipeline/dataset-item/v1", suite, task_id, attempt)[:48]


def experiment_id(project_id: str, dataset_id: str, run_name: str) -> str:
    """The SDK's deterministic experiment (dataset run) id (``Langfuse._create_experiment_id``)."""
    payload = json.dumps(
        ["langfuse-experiment-v1", project_id, dataset_id, run_name],
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def replay_trace_id(suite: str, run_id: str, item_id: str) -> str:
    return _trace_id("bench-pipeline/replay-trace/v1", suite, run_id, item_id)


def replay_root_span_id(suite: str, run_id: str, item_id: str) -> str:
    return _span_id("bench-pipeline/replay-root/v1", suite, run_id, item_id)


def evaluation_span_id(suite: str, run_id: str, item_id: str) -> str:
    return _span_id("bench-pipeline/evaluation-span/v1", suite, run_id, item_id)


def attempt_score_id(suite: str, run_id: str, item_id: str, name: str) -> str:
    return "bench-" + _digest("bench-pipeline/attempt-score/v1", suite, run_id, item_id, name)[:32]


def run_score_id(suite: str, run_id: str, name: str) -> str:
    return "bench-" + _digest("bench-pipeline/run-score/v1", suite, run_id, name)[:32]


def evaluation_name(task_id: str, attempt: int) -> str:
    return f"benchmark/{task_id}#attempt-{attempt}"


def normalize_trace_id(value: Any) -> str | None:
    """A 32-hex OTLP trace id (lower-cased), else None."""
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    return text if _HEX32.match(text) and text != "0" * 32 else None


def trace_url(base_url: str | None, project_id: str | None, trace_id: str | None) -> str | None:
    """``<base>/project/<project>/traces/<trace>`` (the SDK's ``get_trace_url``), credentials stripped."""
    if not base_url or not project_id or not trace_id:
        return None
    base = re.sub(r"^(https?://)[^/@]*@", r"\1", base_url.rstrip("/"))
    return f"{base}/project/{project_id}/traces/{trace_id}"


# =============================================================================== attempts


def _suite_tasks(suite_def: Mapping | None) -> dict[str, Mapping]:
    tasks = (suite_def or {}).get("tasks")
    out: dict[str, Mapping] = {}
    if isinstance(tasks, list):
        for task in tasks:
            if isinstance(task, Mapping) and isinstance(task.get("id"), str):
                out.setdefault(task["id"], task)
    return out


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

    ``provenance`` ({run_id, run_started_at, suite_version}) says which run's suite definition
    the task comes from (``definition_source``); the item content itself never names the run.
    """
    task = task or {}
    evidence = attempt.get("evidence") or {}
    rubric_spec = task.get("rubric_spec") if "rubric_spec" in task else evidence.get("rubric_spec")
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


def attempt_score_values(attempt: Mapping) -> list[tuple[str, Any, str]]:
    """(name, value, data type) of every available ``benchmark.<field>`` score of an attempt.

    Null, non-finite and wrongly-typed values are unavailable and omitted, never sent as 0.
    """
    out: list[tuple[str, Any, str]] = []
    for name in CATEGORICAL_FIELDS:
        value = attempt.get(name)
        if isinstance(value, str) and value:
            out.append((f"benchmark.{name}", value, "CATEGORICAL"))
    evidence = attempt.get("evidence") or {}
    for name in BOOLEAN_FIELDS + EVIDENCE_BOOLEAN_FIELDS:
        value = attempt.get(name) if name in BOOLEAN_FIELDS else evidence.get(name)
        if is_bool(value):
            out.append((f"benchmark.{name}", 1 if value else 0, "BOOLEAN"))
    for name in NUMERIC_FIELDS:
        value = attempt.get(name)
        if is_number(value):
            out.append((f"benchmark.{name}", value, "NUMERIC"))
    passed, total = attempt.get("rubric_pass_count"), attempt.get("rubric_total")
    if is_number(passed) and is_number(total) and total != 0:
        out.append(("benchmark.rubric_pass_rate", float(passed) / float(total), "NUMERIC"))
    return out


def run_score_values(metrics: Mapping) -> list[tuple[str, float]]:
    """(name, value) for every number under the run-score sections of metrics.json, then
    under comparison.md's two additions, each under its own name: ``uncertainty.`` (the
    attempt-success interval grouped by task, e.g. ``uncertainty.attempt_success_rate.ci95_lower``)
    and ``estimators.`` (e.g. ``estimators.pass_at_k_unbiased``, an estimate, apart from
    ``capability.pass_at_k``).

    ``.value`` is dropped from the primary name and ``ci95.lower/upper`` become
    ``ci95_lower/ci95_upper``; nulls (and Booleans) are omitted.
    """
    out: list[tuple[str, float]] = []
    sections = (*RUN_SCORE_SECTIONS, "uncertainty", "estimators")

    def walk(value: Any, path: list[str]) -> None:
        if isinstance(value, Mapping):
            for key, child in value.items():
                walk(child, path + [str(key)])
        elif is_number(value):
            parts = list(path)
            if len(parts) >= 2 and parts[-2] == "ci95" and parts[-1] in ("lower", "upper"):
                parts[-2:] = [f"ci95_{parts[-1]}"]
            elif len(parts) >= 2 and parts[-1] == "value":
                parts = parts[:-1]
            out.append((".".join(parts), value))

    for section in sections:
        if section in metrics:
            walk(metrics[section], [section])
    return out


def _scrub(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _scrub(v) for k, v in value.items() if not _SECRET_KEY_RE.search(str(k))}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def manifest_facts(manifest: Mapping | None, metrics: Mapping | None = None) -> dict:
    """Experiment metadata: the manifest's descriptive facts, never keys or secrets.

    Only known descriptive keys are copied, and any nested key that looks like a credential
    (secret, token, password, api key, auth, ...) is dropped.
    """
    manifest = manifest or {}
    facts = {k: _scrub(manifest[k]) for k in MANIFEST_FACT_KEYS if k in manifest}
    plan = planned_attempts(dict(manifest))
    if plan is not None:  # the same valid entries and distinct pairs as coverage (R26, R32)
        facts["planned_tasks"] = len(plan.highest())
        facts["planned_attempts"] = plan.size
    if metrics:
        facts["formula_version"] = metrics.get("formula_version")
        facts["metrics_schema_version"] = metrics.get("schema_version")
    facts["publisher"] = "bench_pipeline.publication"
    return facts


@dataclass
class AttemptPlan:
    """Everything about one attempt that does not depend on the Langfuse server."""

    item_id: str
    task_id: str
    attempt: int
    line: Any
    item: dict  # the Dataset Item wire body as this run knows it (datasetName, id, input, expectedOutput, metadata)
    item_hash: str
    episode_id: str | None
    execution_trace_id: str | None  # valid 32-hex id from the episode, when the episode is known
    replay_trace_id: str
    replay_root_span_id: str
    evaluation_span_id: str
    name: str  # benchmark/<task>#attempt-<n>
    scores: list[tuple[str, Any, str]]
    evidence: dict = field(default_factory=dict)


@dataclass
class RunPlan:
    suite: str
    run_id: str
    attempts: list[AttemptPlan]
    duplicates: list[dict]  # attempt records dropped because a later line has the same task/attempt
    run_scores: list[tuple[str, float]]
    experiment_metadata: dict
    experiment_description: str
    provenance: dict  # {run_id, run_started_at, suite_version}: the source of this run's task definitions
    _attrs: dict = field(default_factory=dict, repr=False)  # run-level span attributes, encoded once

    def run_attr(self, key: str, value: Any) -> dict:
        """A span attribute every experiment item of the run carries (encoded once)."""
        if key not in self._attrs:
            self._attrs[key] = span_attr(key, value)
        return self._attrs[key]


def plan_run(*, run_id: str, metrics: Mapping, attempts: Iterable[Mapping], manifest: Mapping | None,
             suite_def: Mapping | None) -> RunPlan:
    """The server-independent part of a publication (pure)."""
    suite = dataset_name(metrics, manifest, suite_def)
    suite_version = (suite_def or {}).get("version")
    if suite_version is None and isinstance((manifest or {}).get("suite"), Mapping):
        suite_version = manifest["suite"].get("version")
    tasks = _suite_tasks(suite_def)

    by_key: dict[tuple[str, int], Mapping] = {}
    duplicates: list[dict] = []
    for record in attempts:
        key = (str(record["task_id"]), int(record.get("attempt") or 1))
        if key in by_key:  # run-directory.md: the later line overwrites the earlier one
            earlier = by_key.pop(key)
            duplicates.append({"task_id": key[0], "attempt": key[1], "line": earlier.get("line")})
        by_key[key] = record

    started = normalize_timestamp((manifest or {}).get("started_at"))
    if started is None:
        starts = [t for t in (normalize_timestamp((r.get("evidence") or {}).get("started_at"))
                              for r in by_key.values()) if t]
        started = min(starts) if starts else None
    provenance = {"run_id": run_id, "run_started_at": started, "suite_version": suite_version}
    plans: list[AttemptPlan] = []
    for (task_id, attempt_no), record in by_key.items():
        record = {**record, "task_id": task_id, "attempt": attempt_no}
        item_id = dataset_item_id(suite, task_id, attempt_no)
        body = item_body(suite, tasks.get(task_id), record, provenance)
        item = {"datasetName": suite, "id": item_id, **body}
        evidence = dict(record.get("evidence") or {})
        episode = evidence.get("episode_id") if isinstance(evidence.get("episode_id"), str) else None
        plans.append(AttemptPlan(
            item_id=item_id,
            task_id=task_id,
            attempt=attempt_no,
            line=record.get("line"),
            item=item,
            item_hash=content_hash(item),
            episode_id=episode,
            execution_trace_id=normalize_trace_id(evidence.get("trace_id")) if episode else None,
            replay_trace_id=replay_trace_id(suite, run_id, item_id),
            replay_root_span_id=replay_root_span_id(suite, run_id, item_id),
            evaluation_span_id=evaluation_span_id(suite, run_id, item_id),
            name=evaluation_name(task_id, attempt_no),
            scores=attempt_score_values(record),
            evidence=evidence,
        ))

    facts = manifest_facts(manifest, metrics)
    facts.setdefault("run_id", run_id)
    return RunPlan(
        suite=suite,
        run_id=run_id,
        attempts=plans,
        duplicates=duplicates,
        run_scores=run_score_values(metrics or {}),
        experiment_metadata=facts,
        experiment_description=f"bench_pipeline benchmark run {run_id} of suite {suite}",
        provenance=provenance,
    )


# =============================================================================== bindings


@dataclass
class Binding:
    """Where an attempt's experiment item lives (kept for good once published)."""

    mode: str  # EXECUTION_TRACE | REPLAY
    trace_id: str
    parent_span_id: str | None  # execution root (EXECUTION_TRACE) or replay root span (REPLAY)
    observation_id: str  # the evaluation span = experiment item root observation
    status: str  # AVAILABLE | PENDING_OR_MISSING | NO_EPISODE

    def to_json(self) -> dict:
        return {
            "mode": self.mode, "trace_id": self.trace_id, "parent_span_id": self.parent_span_id,
            "observation_id": self.observation_id, "execution_trace_status": self.status,
        }

    @classmethod
    def from_json(cls, data: Mapping) -> Binding:
        return cls(data["mode"], data["trace_id"], data.get("parent_span_id"), data["observation_id"],
                   data["execution_trace_status"])


def decide_binding(plan: AttemptPlan, execution_root: str | None) -> Binding:
    """Binding for a new experiment item.

    ``execution_root`` is the root span id found in Langfuse for the attempt's execution
    trace (None: not found, or nothing to look up). Only a found root makes it ``available``.
    """
    if plan.episode_id is None:
        status = NO_EPISODE
    elif plan.execution_trace_id is not None and execution_root is not None:
        return Binding(EXECUTION_TRACE, plan.execution_trace_id, execution_root, plan.evaluation_span_id, AVAILABLE)
    else:
        status = PENDING_OR_MISSING
    return Binding(REPLAY, plan.replay_trace_id, plan.replay_root_span_id, plan.evaluation_span_id, status)


def binding_from_server(plan: AttemptPlan, trace_id: str, observation_id: str) -> Binding:
    """The binding of an experiment item that already exists in Langfuse (kept as it is)."""
    if trace_id == plan.replay_trace_id:
        status = NO_EPISODE if plan.episode_id is None else PENDING_OR_MISSING
        return Binding(REPLAY, trace_id, plan.replay_root_span_id, observation_id, status)
    return Binding(EXECUTION_TRACE, trace_id, None, observation_id, AVAILABLE)
