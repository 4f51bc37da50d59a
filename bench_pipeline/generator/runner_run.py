"""A run folder's top-level files in the runner's layout (run-directory.md "The runner's
layout"): the suite source as it is, the runner's flat manifest, results.jsonl (and, for a
re-judged run, results.rejudged.jsonl), then the runner's own metrics.json and summary.md.

Run states: a completed run gets every file. An aborted run (the flat manifest's
``aborted``) is one the runner stopped early and closed normally: every file, its rows those
of the attempts it ran, and an ``abort_reason``. A running run (``running``) is one whose
runner has not finished: suite.json, manifest.json (``finished_at`` null) and its rows so
far, but none of the runner's own end-of-run files, so the pipeline waits for the
quiet period as it does for a legacy run. Either way the rows are the flat run's, so the
pipeline gives both layouts of a seed the same numbers.
"""

from __future__ import annotations

import collections
import hashlib
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from .files import iso, run_code, with_manifest_edges
from .records import RunDraw, Task
from .runner_rows import earlier_judgement, is_rejudged, judge_description
from .world import SUITE_NAME

#: Where the runner's suites live in its repository.
SUITE_DIR = "suites"


def runner_suite(suite: list[Task], repeats: int) -> dict[str, Any]:
    """The suite source the runner copies: ``name``, ``tasks[]`` with ``rubric`` as
    ``[{id, check}]``, ``expected_recalled_memory_ids``, ``hard_assertions`` and ``repeats``."""
    return {
        "name": SUITE_NAME,
        "description": "Everyday Android tasks on an emulator or a lab device.",
        "tasks": [{
            "id": t.id,
            "category": t.category,
            "prompt": t.prompt,
            "description_for_judge": judge_description(t),
            "rubric": [{"id": r["id"], "check": r["requirement"]} for r in t.rubric_spec],
            "expected_answer": t.expected_answer,
            "expected_recalled_memory_ids": t.expected_memory_ids,
            "hard_assertions": {"must_complete_within_sec": t.timeout_s},
            "repeats": repeats,
        } for t in suite],
    }


def runner_manifest(run: RunDraw, suite: list[Task], repeats: int, finished: datetime, suite_sha256: str,
                    root: str, statuses: collections.Counter) -> dict[str, Any]:
    """The runner's manifest.json: flat keys, no ``status`` or ``schema_version``
    (run-directory.md, the manifest table), for the same run as the flat manifest."""
    sha, dirty = run_code(run)
    manifest: dict[str, Any] = {
        "run_id": run.run_id,
        "started_at": iso(run.started),
        "finished_at": None if run.status == "running" else iso(finished),
        "git_sha": sha,
        "git_dirty": dirty,
        "agent_model": run.model,
        "agent_url": "http://127.0.0.1:8765/v1",
        "judge_config": ({"provider": "example", "model": run.judge_model, "base_url": "http://127.0.0.1:8800/v1"}
                         if run.judge_enabled else None),
        "judge_prompt_version": "rubric-v3",
        "target_platform": run.device[1],
        "environment_url": f"http://127.0.0.1:8766/{run.device[0]}",
        "mock_environment": False,
        "suite_path": f"{SUITE_DIR}/{SUITE_NAME}.json",
        "suite_sha256": suite_sha256,
        "suite_snapshot_path": f"{root}/runs/{run.run_id}/suite.json",
        "selected_task_ids": [t.id for t in suite],
        "planned_task_attempts": [{"task_id": t.id, "attempt": n} for t in suite for n in range(1, repeats + 1)],
        "active_skills": run.active_skills,
        "metrics_k": repeats,
        "metrics_schema_version": 3,
        "totals": {"attempts": sum(statuses.values()), **dict(sorted(statuses.items()))},
    }
    return with_manifest_edges(manifest, run)


def runner_outputs(run: RunDraw, statuses: collections.Counter) -> tuple[bytes, bytes]:
    """The runner's own metrics.json and summary.md (small: the pipeline does not read them)."""
    attempts = sum(statuses.values())
    passed = statuses.get("passed", 0)
    rate = round(passed / attempts, 4) if attempts else None
    metrics = {"run_id": run.run_id, "attempts": attempts, "passed": passed, "pass_rate": rate,
               "statuses": dict(sorted(statuses.items()))}
    summary = (f"# Benchmark run {run.run_id}\n\n- Suite: {SUITE_NAME}\n- Agent model: {run.model}\n"
               f"- Attempts: {attempts}\n- Passed: {passed}"
               + (f" ({rate:.1%})" if rate is not None else "") + "\n")
    return orjson.dumps(metrics, option=orjson.OPT_INDENT_2), summary.encode()


def write_runner_run(run_dir: Path, run: RunDraw, suite: list[Task], repeats: int, finished: datetime,
                     lines: list[bytes], statuses: collections.Counter, root: str) -> None:
    """Write the run's top-level files in the runner's order: suite.json, manifest.json,
    results.jsonl (an earlier judgement when re-judged, then results.rejudged.jsonl with the
    rows), then, for a finished run, summary.md and metrics.json: either makes the run
    ready, and every file the pipeline reads is written before them, so a watcher never sees
    a half-written run. (The runner's re-judge command comes later in real life; here the
    run is whole before it is ready.)"""
    suite_bytes = orjson.dumps(runner_suite(suite, repeats), option=orjson.OPT_INDENT_2)
    (run_dir / "suite.json").write_bytes(suite_bytes)
    manifest = runner_manifest(run, suite, repeats, finished, hashlib.sha256(suite_bytes).hexdigest(), root,
                               statuses)
    (run_dir / "manifest.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    results = lines
    if is_rejudged(run.index, run.status):
        results = earlier_judgement(lines, run.seed)
    (run_dir / "results.jsonl").write_bytes(b"".join(line + b"\n" for line in results))
    if results is not lines:
        (run_dir / "results.rejudged.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    if run.status == "running":
        return
    metrics, summary = runner_outputs(run, statuses)
    (run_dir / "summary.md").write_bytes(summary)
    tmp = run_dir / "metrics.json.tmp"
    tmp.write_bytes(metrics)
    tmp.replace(run_dir / "metrics.json")
