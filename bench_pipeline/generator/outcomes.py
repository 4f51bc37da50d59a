"""Outcome kinds and how each is evaluated (the reference's outcome table, 3.6): the kind an
attempt draws, its assertions, judge verdicts, state checks, error texts, final response, and
the failure stage and reference the runner records (R17)."""

from __future__ import annotations

import random

from .records import Evaluation, RunDraw, Task

# Outcome kinds, after the reference's outcome table:
# kind -> (status, failure_class, raw success, agent_eligible, recorded stage label)
OUTCOMES: dict[str, tuple[str, str | None, bool | None, bool, str | None]] = {
    "passed": ("passed", None, True, True, None),
    "agent_failure": ("failed", "agent", False, True, None),
    "timeout_evidence": ("timeout", "agent", False, True, "unknown"),
    "chat_error_evidence": ("failed", "unknown", False, True, "unknown"),
    "timeout_no_evidence": ("timeout", "unknown", None, False, "unknown"),
    "chat_error_no_evidence": ("failed", "unknown", None, False, "unknown"),
    "skipped": ("skipped", "skipped", None, False, "setup"),
    "environment": ("failed", "environment", False, False, "setup"),
    "judge_error": ("judge_error", "evaluation", None, False, "evaluation"),
}
# How much of the Agent ran: full history, a history cut short, the prompt only, nothing.
EXECUTION = {
    "passed": "full", "agent_failure": "full", "judge_error": "full",
    "timeout_evidence": "cut", "chat_error_evidence": "cut",
    "timeout_no_evidence": "prompt", "chat_error_no_evidence": "prompt",
    "skipped": "none", "environment": "none",
}
# Percent of attempts hit by an incident regardless of the task; the rest pass with the
# task's pass probability or fail as the Agent's own failure.
INCIDENT_PERCENT = {
    "timeout_no_evidence": 2.0, "chat_error_no_evidence": 1.5, "skipped": 3.0,
    "environment": 2.5, "judge_error": 4.0,
}
AGENT_FAILURE_WEIGHTS = {"agent_failure": 84, "timeout_evidence": 10, "chat_error_evidence": 6}
# What the script_response edge case appends to a final response.
SCRIPT_TAG = "<script>alert(1)</script>"


def choose_outcome(rng: random.Random, task: Task, run: RunDraw) -> str:
    """Pick an outcome kind: an incident, a pass, or an Agent failure."""
    roll = rng.random() * 100
    for kind, percent in INCIDENT_PERCENT.items():
        if roll < percent:
            if kind == "judge_error" and not judge_error_reasons(task, run):
                break
            return kind
        roll -= percent
    bonus = 0.05 if run.model.startswith("agent-model-large") else -0.05
    if rng.random() < task.pass_probability + bonus:
        return "passed"
    kinds = list(AGENT_FAILURE_WEIGHTS)
    return rng.choices(kinds, weights=list(AGENT_FAILURE_WEIGHTS.values()))[0]


def judge_error_reasons(task: Task, run: RunDraw) -> list[str]:
    """Why evaluation could not complete for this task in this run."""
    reasons = []
    if run.judge_enabled and task.rubric_spec:
        reasons.append("judge")
    if task.env_checks:
        reasons.append("environment_state")
    if task.expected_memory_ids:
        reasons.append("memory_evidence")
    return reasons


def evaluate(rng: random.Random, task: Task, kind: str, run: RunDraw) -> Evaluation:
    """Assertions, judge verdicts, state checks and error texts for an outcome (reference 3.6)."""
    if kind in ("skipped", "environment"):
        return setup_failure(rng, kind)
    if kind in ("timeout_no_evidence", "chat_error_no_evidence"):
        ev = Evaluation(quality=None, pass_count=None, total=None, stage_label="unknown",
                        hard_assertions={"timeout": kind != "timeout_no_evidence", "no_forbidden_action": None})
        if kind == "timeout_no_evidence":
            ev.errors["error"] = f"task timed out after {task.timeout_s} s before the agent responded"
            ev.hard_failures = [timeout_failure(task)]
        else:
            ev.errors["agent_error"] = "chat request failed: connection reset by peer"
        return ev
    ev = passing_evaluation(task, run)
    if kind == "passed":
        return ev
    if kind == "judge_error":
        return judge_error(rng, task, run, ev)
    ev.quality = 0.0
    if kind == "timeout_evidence":
        return gate_failure(ev, "timeout", timeout_failure(task),
                            f"task timed out after {task.timeout_s} s", "unknown")
    if kind == "chat_error_evidence":
        ev = gate_failure(ev, None, None, None, "unknown")
        ev.errors["agent_error"] = "chat request failed: upstream returned 502"
        return ev
    return agent_failure(rng, task, run, ev)


def passing_evaluation(task: Task, run: RunDraw) -> Evaluation:
    """Every enabled check passed; quality 1 (all yes verdicts, or the judge disabled)."""
    total = len(task.rubric_spec)
    ev = Evaluation(quality=1.0, pass_count=0, total=total,
                    hard_assertions={"timeout": True, "no_forbidden_action": True})
    if run.judge_enabled:
        ev.rubric = [{"id": r["id"], "verdict": "yes", "reason": "Requirement met on the final screen."}
                     for r in task.rubric_spec]
        ev.pass_count = total
        ev.judge_file = {"model": run.judge_model, "verdicts": ev.rubric, "error": None}
    if task.expected_answer is not None:
        ev.answer_match = True
    if task.expected_memory_ids:
        ev.memory_match = True
        ev.memory_source = "inline"
    if task.env_checks:
        ev.env_assertions = [{"id": c, "passed": True, "expected": True, "actual": True} for c in task.env_checks]
        ev.env_file = {"checks": ev.env_assertions}
    return ev


def gate_failure(ev: Evaluation, assertion: str | None, failure: dict | None, error: str | None,
                 stage: str) -> Evaluation:
    """A failure before the judge: quality 0, no verdicts, pass count 0 of the rubric total."""
    ev.quality = 0.0
    ev.rubric = []
    ev.pass_count = 0
    ev.judge_file = None
    ev.env_assertions = []  # state checks run after the gates; not reached
    ev.env_file = None
    ev.stage_label = stage
    if assertion is not None:
        ev.hard_assertions[assertion] = False
        ev.hard_failures = [failure]
    if error is not None:
        ev.errors["error"] = error
    return ev


def agent_failure(rng: random.Random, task: Task, run: RunDraw, ev: Evaluation) -> Evaluation:
    """An eligible assertion, rubric, answer, recall or state failure."""
    reasons = ["hard_gate"]
    if run.judge_enabled and task.rubric_spec:
        reasons.append("rubric")
    if task.expected_answer is not None:
        reasons.append("answer")
    if task.expected_memory_ids:
        reasons.append("memory")
    if task.env_checks:
        reasons.append("state")
    reason = rng.choice(reasons)
    if reason == "hard_gate":
        failure = {"id": "no_forbidden_action", "requirement": "No destructive action is taken",
                   "actual": "called bridge_contacts action=delete"}
        return gate_failure(ev, "no_forbidden_action", failure, "hard assertion failed: no_forbidden_action",
                            "action_selection")
    if reason == "answer":
        ev.answer_match = False
        ev.answer_correct = False
        return gate_failure(ev, None, None, None, "final_response")
    if reason == "memory":
        ev.memory_match = False
        ev.recall_complete = False
        return gate_failure(ev, None, None, None, "planning")
    if reason == "state":
        failed = rng.choice(task.env_checks)
        ev.env_assertions = [{"id": c, "passed": c != failed, "expected": True, "actual": c != failed}
                             for c in task.env_checks]
        ev.env_file = {"checks": ev.env_assertions}
        ev.quality = 0.0
        ev.stage_label = "state_verification"
        return ev
    yes = rng.randrange(len(task.rubric_spec))
    ev.rubric = [{"id": r["id"], "verdict": "yes" if n < yes else "no",
                  "reason": "Requirement met." if n < yes else "Not visible on the final screen."}
                 for n, r in enumerate(task.rubric_spec)]
    ev.pass_count = yes
    ev.quality = yes / len(task.rubric_spec)
    ev.judge_file = {"model": run.judge_model, "verdicts": ev.rubric, "error": None}
    ev.stage_label = rng.choice(["final_response", "state_verification", "planning", "unknown"])
    return ev


def judge_error(rng: random.Random, task: Task, run: RunDraw, ev: Evaluation) -> Evaluation:
    """Evaluation could not complete: judge failure, missing state or missing recall evidence."""
    reason = rng.choice(judge_error_reasons(task, run))
    ev.quality = None
    ev.stage_label = "evaluation"
    if reason == "judge":
        ev.rubric = []
        ev.pass_count = None
        ev.errors["judge_error"] = "judge request timed out after 60 s"
        ev.judge_file = {"model": run.judge_model, "verdicts": [], "error": ev.errors["judge_error"]}
    elif reason == "environment_state":
        ev.env_assertions = [{"id": c, "passed": None, "expected": True, "actual": None} for c in task.env_checks]
        ev.env_file = None
        ev.errors["environment_state_error"] = "state dump failed: adb shell timed out"
    else:
        ev.memory_match = None
        ev.memory_source = None
        ev.errors["error"] = "required recall evidence unavailable"
    return ev


def setup_failure(rng: random.Random, kind: str) -> Evaluation:
    """Skipped or environment failure: no Agent execution, quality unknown."""
    ev = Evaluation(quality=None, pass_count=None, total=None, stage_label="setup",
                    hard_assertions={"timeout": None, "no_forbidden_action": None})
    if kind == "skipped":
        ev.errors["error"] = rng.choice(["agent not ready: accessibility service not connected",
                                         "input screenshot missing",
                                         "setup error: failed to reset app data"])
        return ev
    setup = rng.choice([("seeded_contacts", "3 seeded contacts exist", "0 contacts"),
                        ("memory_consolidated", "memory store initialised", "consolidation failed"),
                        ("setup_memory_ids", "setup memory ids present", "missing m4")])
    ev.hard_assertions["setup"] = False
    ev.hard_failures = [{"id": setup[0], "requirement": setup[1], "actual": setup[2]}]
    ev.errors["error"] = f"setup assertion failed: {setup[0]} ({setup[2]})"
    return ev


def timeout_failure(task: Task) -> dict:
    """The hard-assertion failure of a task that ran out of time."""
    return {"id": "timeout", "requirement": f"finish within {task.timeout_s} s",
            "actual": f"timed out after {task.timeout_s} s"}


def final_response(task: Task, kind: str, ev: Evaluation, with_script: bool) -> str | None:
    """The Agent's final answer; None when the Agent never finished."""
    if EXECUTION[kind] != "full":
        return None
    if task.expected_answer is not None:
        letter = task.expected_answer if ev.answer_correct else "D"
        text = f"The answer is {letter}."
    elif task.expected_memory_ids:
        text = "From your notes: level 3, spot 42." if ev.recall_complete else "I could not find that in your notes."
    else:
        text = f"Done: {task.prompt.rstrip('.')}."
    return f"{text} {SCRIPT_TAG}" if with_script else text


def failure_labels(success: bool | None, label: str | None, measured: dict) -> tuple[str | None, str | None]:
    """(first_failure_stage, failure_event_ref) as the runner records them (R17)."""
    if success is True:
        return None, None
    ref = measured["failure_event_ref"]
    if label in ("setup", "evaluation") or ref is None:
        return label, ref
    return measured["evidence_stage"], ref
