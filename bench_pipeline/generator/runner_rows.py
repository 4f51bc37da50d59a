"""results.jsonl rows in the runner's layout (run-directory.md "The runner's layout"): the
flat row of an attempt turned into the runner's `TaskResult` row, its ``artifact_dir`` into
the runner's own path, and, for a re-judged run, the earlier judgement results.jsonl held
before results.rejudged.jsonl was written. The same flat rows always give the same bytes; no
row draws from the run's random generator, so both layouts of a seed carry the same data."""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass
from typing import Any

import orjson

from ..layouts import RUNNER_ROW_KEYS  # the runner's row keys; every other field lives in ``metrics``
from .files import flat_folder
from .records import Task
from .world import SUITE_NAME

#: The machines the runner ran on: where it keeps its runs folder (one per run, in turn).
RUNNER_ROOTS = ("/Users/alice/bench", "/home/ci/bench-runner", "/opt/bench")
#: A re-judged run is every REJUDGE_PERIOD-th run (index % period == 1), but a running one;
#: its earlier judgement differs on up to REJUDGED_ROWS rows.
REJUDGE_PERIOD = 4
REJUDGED_ROWS = 3


def runner_folder(task_id: str, attempt: int, repeats: int) -> str:
    """An attempt's folder in the runner's layout: ``tasks/<task>/attempt_<n>`` for every
    attempt of a task run more than once (attempt 1 included), ``tasks/<task>`` otherwise."""
    return f"tasks/{task_id}/attempt_{attempt}" if repeats > 1 else f"tasks/{task_id}"


def judge_description(task: Task) -> str:
    """What the judge is told the task is (the suite's ``description_for_judge``)."""
    return f"The user asked: {task.prompt} Judge the final screen and answer against the rubric."


def is_rejudged(index: int, status: str) -> bool:
    """Whether run ``index`` comes with a re-judged copy of its results."""
    return index % REJUDGE_PERIOD == 1 and status != "running"


@dataclass(frozen=True)
class RunnerRows:
    """Turns one run's flat rows into the runner's rows."""

    run_id: str
    repeats: int
    root: str  # the runner's own folder on its machine, holding runs/<run_id>

    def artifact_dir(self, recorded: object, task_id: str, attempt: int) -> object:
        """The runner's own path to the attempt folder, for a flat ``artifact_dir`` naming the
        attempt's flat folder: mostly absolute on the runner's machine; deterministically, for
        about 1 row in 12 each, relative to the runner's working directory or absolute on a
        machine where the run folder was renamed (only the ``tasks`` segment maps), and for 1
        in 24 a Windows path. A null or unsafe value is kept as it is: it is unsafe under the
        runner's mapping too (no run-name or ``tasks`` segment, or a relative path leaving the
        run folder), with the same reason, and the data-quality finding quotes it the same."""
        if recorded != flat_folder(task_id, attempt):
            return recorded
        folder = runner_folder(task_id, attempt, self.repeats)
        pick = zlib.crc32(f"{self.run_id}/{task_id}/{attempt}".encode()) % 24
        if pick < 2:
            return f"runs/{self.run_id}/{folder}"
        if pick < 4:
            return f"/mnt/archive/bench/runs/{self.run_id}-copy/{folder}"
        if pick == 4:
            return "\\".join(("C:", "Users", "alice", "bench", "runs", self.run_id, *folder.split("/")))
        return f"{self.root}/runs/{self.run_id}/{folder}"

    def row(self, flat: dict[str, Any], task: Task) -> dict[str, Any]:
        """The runner's row for a flat row of ``task`` (also one whose task_id was dropped or
        that carries unknown keys): the runner's top-level keys, every other field inside
        ``metrics``. A legacy row (no ``metrics``) keeps its fields at the top level."""
        if not isinstance(flat.get("metrics"), dict):
            return dict(flat)
        metrics = dict(flat["metrics"])
        top: dict[str, Any] = {}
        for key, value in flat.items():
            if key == "metrics":
                continue
            if key in RUNNER_ROW_KEYS:
                top[key] = value
            else:
                if key in metrics:
                    raise ValueError(f"{key} is both a row field and a recorded metric")
                metrics[key] = value
        top["suite"] = SUITE_NAME
        top["run_id"] = self.run_id
        top["description_for_judge"] = judge_description(task)
        top["artifact_dir"] = self.artifact_dir(flat.get("artifact_dir"), task.id, flat.get("attempt", 1))
        top["rubric_spec"] = [{"id": r["id"], "check": r["requirement"]} for r in flat["rubric_spec"]]
        metrics["environment_state_assertions"] = [
            {"path": a["id"], "expected": a["expected"], "actual": a["actual"], "passed": a["passed"]}
            for a in flat["environment_state_assertions"]]
        top["metrics"] = metrics
        return top

    def line(self, flat: dict[str, Any], task: Task) -> bytes:
        """The row's results.jsonl line: every key sorted, as the runner serialises it."""
        return orjson.dumps(self.row(flat, task), option=orjson.OPT_SORT_KEYS)


def earlier_judgement(lines: list[bytes], seed: int) -> list[bytes]:
    """results.jsonl of a re-judged run: its lines, but up to REJUDGED_ROWS judged rows (a
    non-empty ``rubric``, passed or failed) as an earlier judgement had them, chosen by
    ``seed``: the first a judge error, the others with the opposite verdict. Other lines,
    malformed ones included, are kept byte for byte, so line numbers do not move."""
    candidates = []
    for number, line in enumerate(lines):
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if (isinstance(row, dict) and isinstance(row.get("metrics"), dict) and row.get("rubric")
                and row.get("status") in ("passed", "failed") and isinstance(row["metrics"].get("success"), bool)):
            candidates.append((number, row))
    chosen = random.Random(f"rejudge-{seed}").sample(candidates, min(REJUDGED_ROWS, len(candidates)))
    earlier = list(lines)
    for position, (number, row) in enumerate(sorted(chosen, key=lambda c: c[0])):
        earlier[number] = orjson.dumps(judge_error_row(row) if position == 0 else flipped_row(row),
                                       option=orjson.OPT_SORT_KEYS)
    return earlier


def judge_error_row(row: dict) -> dict:
    """A judged row as it was when the judge failed (the reason to re-judge)."""
    metrics = {**row["metrics"], "success": None, "agent_eligible": False, "quality_score": None,
               "failure_class": "evaluation", "first_failure_stage": "evaluation",
               "judge_error": "judge request timed out after 60 s"}
    return {**row, "status": "judge_error", "rubric": [], "rubric_pass_count": None, "metrics": metrics}


def flipped_row(row: dict) -> dict:
    """A judged row with the opposite verdict: a pass failing its last requirement, or a
    failure passing them all."""
    rubric = row["rubric"]
    total = len(rubric)
    if row["status"] == "passed":
        verdicts = [*rubric[:-1], {**rubric[-1], "verdict": "no", "reason": "Not visible on the final screen."}]
        metrics = {**row["metrics"], "success": False, "agent_eligible": True, "quality_score": (total - 1) / total,
                   "failure_class": "agent", "first_failure_stage": "final_response"}
        return {**row, "status": "failed", "rubric": verdicts, "rubric_pass_count": total - 1, "metrics": metrics}
    verdicts = [{**r, "verdict": "yes", "reason": "Requirement met."} for r in rubric]
    metrics = {**row["metrics"], "success": True, "agent_eligible": True, "quality_score": 1.0,
               "failure_class": None, "first_failure_stage": None}
    return {**row, "status": "passed", "rubric": verdicts, "rubric_pass_count": total, "metrics": metrics}
