"""The runner's layout read as the flat one (run-directory.md "The runner's layout").

The benchmark runner writes its rows with the outcome fields inside ``metrics``, its own
absolute attempt folders, ``attempt_<n>`` folders, a manifest of flat keys without a status,
the suite source as it is, trace.json calls as ``{tool, input}`` and, after a re-judge,
``results.rejudged.jsonl``. Every rule that maps one of these onto the flat layout is here,
once; the readers (run_reader, identity, artifacts, run_folders, the trace evidence) call
these functions, so every stage sees one layout. Each function is pure (but
``results_file_name`` and ``runner_attempt_dir``, which look at the run folder) and keeps a
flat-layout input as it is.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from typing import Any

#: The results files of a run, the one read first, first: a re-judged copy, when present,
#: is the run's results (run-directory.md "Re-judged results").
REJUDGED_RESULTS = "results.rejudged.jsonl"
RESULTS = "results.jsonl"
RESULTS_FILES = (REJUDGED_RESULTS, RESULTS)

#: The runner's own outputs, written at the very end of its run: either one beside
#: results.jsonl makes a run without a manifest status ready (run-directory.md).
RUNNER_DONE_FILES = ("metrics.json", "summary.md")

#: The top-level keys of a row the runner writes (its ``TaskResult``), in the spec's order.
RUNNER_ROW_KEYS = (
    "task_id", "attempt", "category", "status", "suite", "run_id", "artifact_dir", "rubric",
    "rubric_spec", "rubric_pass_count", "rubric_total", "hard_assertions", "hard_assertion_failures",
    "started_at", "finished_at", "description_for_judge", "metrics",
)
#: The flat layout's top-level fields the runner writes inside ``metrics`` (beside the
#: recorded numbers and error texts, vocabulary.ROW_METRICS_KEYS).
RUNNER_METRICS_FIELDS = (
    "success", "agent_eligible", "failure_class", "first_failure_stage", "failure_event_ref",
    "quality_score", "recovery_attempted", "recovery_succeeded", "episode_id", "active_skills",
    "trace_observations", "expected_answer_match", "expected_recalled_memory_match",
    "memory_recall_evidence_source", "environment_state_assertions", "pre_screenshot_file",
    "post_screenshot_file",
)

#: A row's identity, read at the top level only (parse_results); ``metrics`` itself.
_TOP_LEVEL_ONLY = frozenset(("task_id", "attempt", "metrics"))


# --- results.jsonl rows --------------------------------------------------------------------

def row_view(row: dict[str, Any]) -> dict[str, Any]:
    """The row as every stage reads it: **a field is read from ``metrics`` when the key is
    there, else from the top level** (run-directory.md, R6, for every field but the row's
    identity ``task_id`` and ``attempt``), and ``rubric_spec`` items with their
    ``requirement`` (``check``, else ``description``). ``metrics`` is kept as it is. The
    row itself is not changed; a flat row whose ``metrics`` holds only recorded numbers
    gets those numbers at the top level too, which changes nothing (the same rule)."""
    metrics = row.get("metrics")
    view = row
    if isinstance(metrics, dict) and metrics:
        lifted = {k: v for k, v in metrics.items() if k not in _TOP_LEVEL_ONLY}
        if lifted:
            view = {**row, **lifted}
    spec = view.get("rubric_spec")
    if isinstance(spec, list) and any(_needs_requirement(item) for item in spec):
        view = {**view, "rubric_spec": rubric_items(spec)}
    checks = view.get("environment_state_assertions")
    if isinstance(checks, list) and any(_needs_id(item) for item in checks):
        view = {**view, "environment_state_assertions": state_checks(checks)}
    return view


def _needs_id(item: object) -> bool:
    return isinstance(item, dict) and "id" not in item and isinstance(item.get("path"), str)


def state_checks(items: list) -> list:
    """Environment-state checks in the flat shape ``{id, passed, expected, actual}``: the
    runner's ``path`` (the state it looked at) is the check's ``id`` where it has none."""
    return [{("id" if k == "path" else k): v for k, v in item.items()} if _needs_id(item) else item
            for item in items]


def _needs_requirement(item: object) -> bool:
    return isinstance(item, dict) and not isinstance(item.get("requirement"), str) and (
        isinstance(item.get("check"), str) or isinstance(item.get("description"), str))


def rubric_items(items: list) -> list:
    """Rubric specification items in the flat shape ``{id, requirement}``: where an item has
    no requirement text of its own, the runner's ``check`` (else ``description``) is renamed
    ``requirement``; every other key is kept."""
    out = []
    for item in items:
        if _needs_requirement(item):
            key = "check" if isinstance(item.get("check"), str) else "description"
            item = {("requirement" if k == key else k): v for k, v in item.items()
                    if not (k == "requirement")}
        out.append(item)
    return out


# --- manifest.json -------------------------------------------------------------------------

def counts_as_planned_attempt(entry: object) -> bool:
    """Whether an entry of the runner's ``planned_task_attempts`` is counted: an object with a
    string ``task_id`` (``manifest_view``)."""
    return isinstance(entry, Mapping) and isinstance(entry.get("task_id"), str)


def manifest_view(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest with the flat keys the runner's flat fields stand for (run-directory.md,
    the manifest table), each added only where the flat key itself is absent:

    - ``git_sha``, ``git_dirty`` -> ``code.git_sha``, ``code.dirty``;
    - ``agent_model`` (a non-empty string) -> ``model.name`` (no provider);
    - ``judge_config`` (present) -> ``judge.enabled`` = whether it is an object,
      ``judge.model`` = its ``model``;
    - ``target_platform`` (a string) -> ``platform.os`` (``platform.device`` unknown);
    - ``suite_path`` / ``suite_sha256`` -> ``suite.name`` (the file name without its
      extension; suite.json's own ``name`` still comes first, R2) / ``suite.version``;
    - ``planned_task_attempts`` -> ``planned``: per task, in first-seen order, the count of
      its entries with a string ``task_id``.

    Nothing else changes: in particular no ``status`` is made up (readiness, run_folders).
    """
    view = dict(manifest)
    if "code" not in view and ("git_sha" in view or "git_dirty" in view):
        view["code"] = {"git_sha": view.get("git_sha"), "dirty": view.get("git_dirty")}
    if "model" not in view and isinstance(view.get("agent_model"), str) and view["agent_model"]:
        view["model"] = {"name": view["agent_model"]}
    if "judge" not in view and "judge_config" in view:
        judge = view["judge_config"]
        enabled = isinstance(judge, Mapping)
        view["judge"] = {"enabled": enabled, "model": judge.get("model") if enabled else None}
    if "platform" not in view and isinstance(view.get("target_platform"), str):
        view["platform"] = {"device": None, "os": view["target_platform"]}
    if "suite" not in view and ("suite_path" in view or "suite_sha256" in view):
        path = view.get("suite_path")
        name = posixpath.splitext(posixpath.basename(path.replace("\\", "/")))[0] if isinstance(path, str) else None
        view["suite"] = {"name": name or None, "version": view.get("suite_sha256")}
    if "planned" not in view and isinstance(view.get("planned_task_attempts"), list):
        counts: dict[str, int] = {}
        for entry in view["planned_task_attempts"]:
            if counts_as_planned_attempt(entry):
                counts[entry["task_id"]] = counts.get(entry["task_id"], 0) + 1
        view["planned"] = [{"task_id": task, "attempts": n} for task, n in counts.items()]
    return view


# --- suite.json ----------------------------------------------------------------------------

def suite_view(suite_def: Mapping[str, Any]) -> dict[str, Any]:
    """suite.json with each task in the flat keys (run-directory.md "suite.json"): the
    runner's ``rubric`` (``[{id, check}]``) as ``rubric_spec``, ``expected_recalled_memory_ids``
    as ``expected_memory_ids``, ``hard_assertions.must_complete_within_sec`` as
    ``timeout_s``; each only where the flat key is absent. Other keys are kept."""
    tasks = suite_def.get("tasks")
    if not isinstance(tasks, list):
        return dict(suite_def)
    return {**suite_def, "tasks": [task_view(t) if isinstance(t, dict) else t for t in tasks]}


def task_view(task: dict[str, Any]) -> dict[str, Any]:
    """One suite task in the flat keys (see ``suite_view``)."""
    view = dict(task)
    if "rubric_spec" not in view and isinstance(view.get("rubric"), list):
        view["rubric_spec"] = view["rubric"]
    if isinstance(view.get("rubric_spec"), list):
        view["rubric_spec"] = rubric_items(view["rubric_spec"])
    if "expected_memory_ids" not in view and "expected_recalled_memory_ids" in view:
        view["expected_memory_ids"] = view["expected_recalled_memory_ids"]
    hard = view.get("hard_assertions")
    if "timeout_s" not in view and isinstance(hard, Mapping) and "must_complete_within_sec" in hard:
        view["timeout_s"] = hard["must_complete_within_sec"]
    return view


# --- Attempt folders -----------------------------------------------------------------------

def map_artifact_dir(recorded: str, run_name: str) -> str:
    """A recorded ``artifact_dir`` as a path relative to the run folder (run-directory.md
    "artifact_dir"): the part after the last segment equal to the run folder's name; else,
    for an absolute path, from the last ``tasks`` segment on; else the path as it is. The
    result still goes through every containment rule (artifacts.normalize_relative): an
    absolute path with neither segment stays absolute, and is refused there."""
    unified = recorded.replace("\\", "/")
    segments = unified.split("/")
    if run_name and run_name in segments:
        last = len(segments) - 1 - segments[::-1].index(run_name)
        return "/".join(segments[last + 1:]) or "."
    if _is_absolute(unified) and "tasks" in segments:
        last = len(segments) - 1 - segments[::-1].index("tasks")
        return "/".join(segments[last:])
    return recorded


def _is_absolute(path: str) -> bool:
    return path.startswith("/") or (len(path) >= 2 and path[1] == ":" and path[0].isalpha())


def runner_attempt_dir(task_id: str, attempt: int) -> str:
    """The runner's folder of an attempt of a task run more than once (R4)."""
    return f"tasks/{task_id}/attempt_{attempt}"


# --- trace.json ----------------------------------------------------------------------------

def trace_call(call: Mapping[str, Any]) -> dict[str, Any]:
    """A trace.json tool call as ``{name, arguments}``: the flat keys, else the runner's
    ``tool`` and ``input`` (run-directory.md "Attempt folders")."""
    return {
        "name": call["name"] if "name" in call else call.get("tool"),
        "arguments": call["arguments"] if "arguments" in call else call.get("input"),
    }


# --- Run folders ---------------------------------------------------------------------------

#: Why a file of a run folder is not read (here for the results files, in artifacts.py for
#: the rest): R5's refusal of a symlink out of the run folder, and only regular files read.
OUTSIDE_RUN_FOLDER = "symlink resolves outside the run folder"
NOT_REGULAR_FILE = "not a regular file"


def results_file_name(real_run_dir: str) -> str:
    """The results file a run is read from: results.rejudged.jsonl when it is a regular
    file in the run folder, else results.jsonl (run-directory.md "Re-judged results")."""
    present = os.path.lexists(os.path.join(real_run_dir, REJUDGED_RESULTS))
    return REJUDGED_RESULTS if present and results_refusal(real_run_dir, REJUDGED_RESULTS) is None else RESULTS


def rejudged_refusal(real_run_dir: str) -> str | None:
    """Why the run folder's results.rejudged.jsonl is not its results (``results_refusal``);
    None when there is none, or when it is the results."""
    if not os.path.lexists(os.path.join(real_run_dir, REJUDGED_RESULTS)):
        return None
    return results_refusal(real_run_dir, REJUDGED_RESULTS)


def results_refusal(real_run_dir: str, name: str) -> str | None:
    """Why the results file ``name`` of a run folder cannot be read, None when it can: a
    symlink resolving outside the run folder (OUTSIDE_RUN_FOLDER: its rows would be another
    folder's, refused as R5 refuses an attempt's files), or no regular file there
    (NOT_REGULAR_FILE: a folder, a FIFO, a device, or nothing)."""
    real = os.path.realpath(os.path.join(real_run_dir, name))
    if not real.startswith(real_run_dir + os.sep):
        return OUTSIDE_RUN_FOLDER
    return None if os.path.isfile(real) else NOT_REGULAR_FILE


def results_in(names: set[str] | Mapping[str, Any]) -> str | None:
    """The results file among a folder's (or a listing's) file names, None without one."""
    for name in RESULTS_FILES:
        if name in names:
            return name
    return None


def runner_finished(names: set[str] | Mapping[str, Any]) -> bool:
    """Whether the runner's own end-of-run outputs are among a run folder's file names: a
    run without a manifest status is then ready (run-directory.md "Run folder and readiness")."""
    return any(name in names for name in RUNNER_DONE_FILES)
