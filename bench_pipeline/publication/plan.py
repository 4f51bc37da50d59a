"""Pure: the plan of a publication (``plan_run``): everything about a run that does not depend
on the Langfuse server (item bodies and ids, score values, the experiment's facts).

A run in the runner's layout (run-directory.md "The runner's layout") is read through
``layouts``: its manifest and suite.json as their flat equivalents (``manifest_view``,
``suite_view``; a no-op on what ``run_reader`` already viewed), its attempt records as the
pipeline derived them from ``layouts.row_view`` rows."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..layouts import manifest_view, suite_view
from ..run_reader import planned_attempts
from .attempt_scores import attempt_score_values
from .ids import (
    content_hash,
    dataset_item_id,
    dataset_name,
    evaluation_name,
    evaluation_span_id,
    normalize_trace_id,
    replay_root_span_id,
    replay_trace_id,
)
from .items import item_body, suite_tasks
from .otlp import span_attr
from .run_scores import run_score_values
from .timestamps import normalize_timestamp

#: Manifest keys copied into the experiment metadata (never credentials: see ``manifest_facts``).
#: A runner's manifest has its flat keys through ``layouts.manifest_view`` (``code`` from
#: git_sha/git_dirty, ``model`` from agent_model, ``judge`` from judge_config, ``platform`` from
#: target_platform, ``suite`` from suite_path/suite_sha256), so both layouts fill these.
MANIFEST_FACT_KEYS = (
    "schema_version", "run_id", "status", "started_at", "finished_at", "code", "suite", "model",
    "judge", "platform", "active_skills", "repeats", "metrics_k",
)
#: The runner's own manifest keys that say what was evaluated and have no flat equivalent
#: (run-directory.md, the runner's manifest table), copied too: the judge's provider and
#: endpoint (``judge_config``; its keys are dropped like any credential), the judge prompt's
#: version, whether the environment was mocked, and the suite file the run used. Not copied:
#: what the flat keys above already hold (agent_model, git_sha, git_dirty, target_platform,
#: suite_sha256), what is counted instead (planned_task_attempts: ``planned_*``;
#: selected_task_ids), the runner's own totals and metrics schema (metrics.json's are the
#: run's), the path of its own copy of the suite and its service addresses
#: (suite_snapshot_path, agent_url, environment_url: where it ran, not what was measured).
RUNNER_FACT_KEYS = ("judge_config", "judge_prompt_version", "mock_environment", "suite_path")
_SECRET_KEY_RE = re.compile(
    r"(secret|passw(or)?d|credential|cookie|authorization|private[_-]?key|api[_-]?key|access[_-]?key"
    r"|(^|[_-])token$|^auth$|^auth[_-]|[_-]auth([_-]|$))",
    re.IGNORECASE,
)


def _scrub(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _scrub(v) for k, v in value.items() if not _SECRET_KEY_RE.search(str(k))}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    if isinstance(value, str):
        return _safe_url(value)
    return value


def _safe_url(text: str) -> str:
    """A URL without what may hold a credential (user info, query, fragment): an endpoint
    such as judge_config.base_url is a fact, a key written into it is not. Other text, and a
    URL without any of these, as it is."""
    if not text[:8].lower().startswith(("http://", "https://")):
        return text
    try:
        parts = urlsplit(text)
    except ValueError:  # not a URL after all: nothing of it is kept
        return "(unreadable URL)"
    if "@" not in parts.netloc and not parts.query and not parts.fragment and "?" not in text and "#" not in text:
        return text
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))


def manifest_facts(manifest: Mapping | None, metrics: Mapping | None = None) -> dict:
    """Experiment metadata: the manifest's descriptive facts, never keys or secrets.

    Only known descriptive keys are copied (MANIFEST_FACT_KEYS, and RUNNER_FACT_KEYS of a
    runner's manifest, read through ``layouts.manifest_view``), any nested key that looks like
    a credential (secret, token, password, api key, auth, ...) is dropped, and URLs keep
    neither user info nor query.
    """
    manifest = manifest_view(manifest or {})
    facts = {k: _scrub(manifest[k]) for k in (*MANIFEST_FACT_KEYS, *RUNNER_FACT_KEYS) if k in manifest}
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
    """The server-independent part of a publication (pure).

    ``manifest`` and ``suite_def`` in either layout (viewed here through ``layouts``); the
    suite version is suite.json's, else the manifest's ``suite.version`` (a runner's
    ``suite_sha256``), as ``identity.run_identity`` reads it."""
    suite_def = suite_view(suite_def or {})
    suite = dataset_name(metrics, manifest, suite_def)  # before the view: a made-up name comes last
    manifest = manifest_view(manifest or {})
    suite_version = suite_def.get("version")
    if suite_version is None and isinstance(manifest.get("suite"), Mapping):
        suite_version = manifest["suite"].get("version")
    tasks = suite_tasks(suite_def)

    by_key: dict[tuple[str, int], Mapping] = {}
    duplicates: list[dict] = []
    for record in attempts:
        key = (str(record["task_id"]), int(record.get("attempt") or 1))
        if key in by_key:  # run-directory.md: the later line overwrites the earlier one
            earlier = by_key.pop(key)
            duplicates.append({"task_id": key[0], "attempt": key[1], "line": earlier.get("line")})
        by_key[key] = record

    started = normalize_timestamp(manifest.get("started_at"))
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
    if isinstance(facts.get("suite"), Mapping):
        # the suite the dataset is named after (R2: suite.json's name before the manifest's,
        # which a runner's manifest only makes up from its suite_path) and its version
        facts["suite"] = {**facts["suite"], "name": suite}
        if suite_version is not None:
            facts["suite"]["version"] = suite_version
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
