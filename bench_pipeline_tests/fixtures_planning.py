"""Runs for the planning tests (test_planning_outputs.py, reports/test_planning_text.py):
RepeatRuns built in memory, each number of their planning worked out where it is tested."""

from __future__ import annotations

from bench_pipeline.comparison_sides import make_side
from bench_pipeline.identity import RunIdentity
from bench_pipeline.repeats import RepeatRun


def run(run_id, outcomes, *, model="m"):
    """A RepeatRun from {task: [True / False, ...]} by attempt number (every attempt eligible)."""
    rows, line = [], 0
    for task, results in outcomes.items():
        for attempt, outcome in enumerate(results, start=1):
            line += 1
            rows.append({"task_id": task, "attempt": attempt, "line": line, "success": outcome,
                         "agent_eligible": True, "quality_score": None, "task_wall_ms": None, "total_tokens": None,
                         "cost_usd": None})
    identity = RunIdentity(suite="suite", model_name=model, git_sha="g", started_at=None)
    return RepeatRun(make_side(rows, run_id=run_id, suite="suite", metrics_k=1, identity=identity), None)


# A system of three runs with one flaky task, c. First attempt: a 1 1 1, b 0 0 0, c 1 0 1, d 1 1 1.
# Task c has two attempts in each run, so its task success differs: 1, 1/2, 1/2.
THREE = [
    run("r1", {"a": [True], "b": [False], "c": [True, True], "d": [True]}),
    run("r2", {"a": [True], "b": [False], "c": [False, True], "d": [True]}),
    run("r3", {"a": [True], "b": [False], "c": [True, False], "d": [True]}),
]


# Two sets of two runs where the change differs by task: a got worse, c better, b and d the same.
# First attempt per task, baseline: a 1 1, b 1 0, c 0 0, d 1 1; candidate: a 0 0, b 1 0, c 1 1, d 1 1.
DIFFERS_BASELINE = [run("b1", {"a": [True], "b": [True], "c": [False], "d": [True]}),
                    run("b2", {"a": [True], "b": [False], "c": [False], "d": [True]})]
DIFFERS_CANDIDATE = [run("c1", {"a": [False], "b": [True], "c": [True], "d": [True]}, model="n"),
                     run("c2", {"a": [False], "b": [False], "c": [True], "d": [True]}, model="n")]
