"""One attempt: its outcome, evaluation, history, episode and timers drawn in a fixed order,
assembled into its results.jsonl row (with its ``metrics`` object) and its folder's files."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

from ..vocabulary import ROW_METRICS_KEYS
from .edge_cases import artifact_dir_value, legacy_row
from .episodes import apply_episode, build_episode, clear_episode_fields
from .files import attempt_files, flat_folder, iso
from .history import build_history, history_measurements
from .outcomes import EXECUTION, OUTCOMES, choose_outcome, evaluate, failure_labels, final_response
from .records import AttemptOutput, EpisodeFacts, Evaluation, RunDraw, Task
from .timings import attempt_timing


def build_attempt(rng: random.Random, run: RunDraw, task: Task, attempt: int, started: datetime,
                  history_messages: int, edges: frozenset[str], layout: str = "flat") -> AttemptOutput:
    """Build one attempt's results row (in the flat layout) and artifact files (in
    ``layout``'s shapes); the layout draws nothing, so both layouts carry the same data."""
    kind = choose_outcome(rng, task, run)
    if "legacy_row" in edges and not (attempt == 1 and kind in ("passed", "agent_failure")):
        edges = edges - {"legacy_row"}
    status, failure_class, success, eligible, stage_label = OUTCOMES[kind]
    evaluation = evaluate(rng, task, kind, run)
    final = final_response(task, kind, evaluation, "script_response" in edges)
    history = build_history(rng, task, kind, history_messages, final, evaluation.recall_complete)
    measured = history_measurements(history)
    episode_doc: dict | None = None
    episode_id: str | None = None
    facts: EpisodeFacts | None = None
    if EXECUTION[kind] in ("full", "cut"):
        episode_id = f"ep-{rng.getrandbits(40):010x}"
        episode_doc, facts = build_episode(rng, history, measured, episode_id, task, evaluation, kind)
    if facts is not None and not edges & {"missing_episode", "episode_not_object"}:
        apply_episode(measured, facts)
    else:
        clear_episode_fields(measured)
    stage, ref = failure_labels(success, stage_label or evaluation.stage_label, measured)
    timing = attempt_timing(rng, task, kind, history, evaluation)
    finished = started + timedelta(milliseconds=timing["elapsed_ms"])
    metrics = build_metrics(rng, run, measured, timing, evaluation, ref, edges, episode_id)
    folder = flat_folder(task.id, attempt)
    row = {
        "task_id": task.id,
        "attempt": attempt,
        "category": None if "null_category" in edges else task.category,
        "artifact_dir": artifact_dir_value(rng, folder, task, edges),
        "episode_id": episode_id if rng.random() < 0.9 else None,
        "active_skills": [task.skill] if task.skill in run.active_skills else [],
        "status": status,
        "success": success,
        "agent_eligible": eligible,
        "failure_class": failure_class,
        "first_failure_stage": stage,
        "quality_score": evaluation.quality,
        "rubric_pass_count": evaluation.pass_count,
        "rubric_total": evaluation.total,
        "rubric_spec": task.rubric_spec,
        "rubric": evaluation.rubric,
        "hard_assertions": evaluation.hard_assertions,
        "hard_assertion_failures": [{**f, "label": f["id"].replace("_", " ").capitalize()}
                                    for f in evaluation.hard_failures],
        "expected_answer_match": evaluation.answer_match,
        "expected_recalled_memory_match": evaluation.memory_match,
        "memory_recall_evidence_source": evaluation.memory_source,
        "environment_state_assertions": evaluation.env_assertions,
        "trace_observations": trace_observations(rng, kind),
        "recovery_attempted": kind.startswith("timeout"),
        "recovery_succeeded": (rng.random() < 0.7) if kind.startswith("timeout") else None,
        "pre_screenshot_file": timing["pre_ok"],
        "post_screenshot_file": timing["post_ok"],
        "started_at": iso(started),
        "finished_at": iso(finished),
        "metrics": metrics,
    }
    if "extra_keys" in edges:
        row["runner_host"] = "bench-03"
        row["x_debug"] = {"queue_ms": rng.randrange(500), "retries": [1, 2]}
    if "legacy_row" in edges:
        row = legacy_row(row)
    files = attempt_files(history, episode_doc, evaluation, timing, edges, layout)
    return AttemptOutput(row=row, folder=folder, files=files, finished=finished)


def build_metrics(rng: random.Random, run: RunDraw, measured: dict, timing: dict, ev: Evaluation,
                  ref: str | None, edges: frozenset[str], episode_id: str | None) -> dict:
    """The row's `metrics` object: recorded timers, derived counters and error texts."""
    metrics: dict[str, Any] = dict.fromkeys(ROW_METRICS_KEYS)
    for key in ROW_METRICS_KEYS:
        if key in measured:
            metrics[key] = measured[key]
    metrics["task_wall_ms"] = timing["task_wall_ms"]
    metrics["wall_ms"] = timing["task_wall_ms"]
    metrics["setup_ms"] = timing["setup_ms"]
    metrics["screenshot_capture_ms"] = timing["screenshot_capture_ms"]
    metrics["screenshot_capture_source"] = "runner" if timing["screenshot_capture_ms"] is not None else None
    metrics["failure_event_ref"] = ref
    metrics["pre_screenshot_error"] = timing["pre_error"]
    metrics["post_screenshot_error"] = timing["post_error"]
    metrics.update(ev.errors)
    if run.with_cost and metrics["input_tokens"] is not None and metrics["output_tokens"] is not None:
        metrics["cost_usd"] = round(metrics["input_tokens"] * 3e-6 + metrics["output_tokens"] * 15e-6, 6)
        metrics["cost_source"] = "price_table"
    if "missing_episode" in edges and episode_id is not None:
        metrics["episode_error"] = f"episode {episode_id} not found"
    if "episode_not_object" in edges and episode_id is not None:
        metrics["episode_error"] = "episode payload is not an object"
    if "extra_keys" in edges:
        metrics["gpu_temp_c"] = 61
    if "bool_number" in edges:
        metrics[rng.choice(["setup_ms", "screenshot_capture_ms", "task_wall_ms", "cost_usd"])] = True
    return metrics


#: What each trace observation checks, as the runner describes it.
OBSERVATION_TEXT = {"screenshot_before_action": "A screenshot was taken before the first action.",
                    "no_redundant_app_launch": "No app was launched while it was already open."}


def described(observations: list[dict]) -> list[dict]:
    """Observations as the runner writes them, in both layouts: ``{id, description, passed,
    reason}`` (a flat row keeps the extra keys, run-directory.md)."""
    return [{"id": o["id"], "description": OBSERVATION_TEXT.get(o["id"], o["id"]), "passed": o["passed"],
             "reason": "seen in the trace" if o["passed"] else "not seen in the trace"} for o in observations]


def trace_observations(rng: random.Random, kind: str) -> list[dict]:
    """Behavioural observations, described (``described``); an id can repeat within a row."""
    if EXECUTION[kind] in ("none", "prompt"):
        return []
    observations = [{"id": "screenshot_before_action", "passed": rng.random() < 0.9}]
    if rng.random() < 0.5:
        observations.append({"id": "no_redundant_app_launch", "passed": rng.random() < 0.8})
    if rng.random() < 0.1:
        observations.append({"id": "screenshot_before_action", "passed": rng.random() < 0.5})
    return described(observations)
