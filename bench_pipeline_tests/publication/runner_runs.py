"""One small benchmark run written by hand twice: in the runner's layout (run-directory.md
"The runner's layout": outcome fields inside each row's ``metrics``, the runner's own
absolute ``artifact_dir``, ``attempt_<n>`` folders, trace.json calls as ``{step, tool,
input, has_screenshot}``, suite.json tasks with ``rubric: [{id, check}]``, a manifest of
flat keys) and in the flat layout (the sections before it). The two folders hold the same
run, so every number and every Langfuse item and score made from them must be the same.

Built here, not by the generator, so that the publication tests do not depend on it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RUN_ID = "2026-09-21_063528"
SUITE = "android-core"
SUITE_SHA256 = "5e1f0c" + "9a" * 29
STARTED_AT = "2026-09-21T06:35:28Z"
FINISHED_AT = "2026-09-21T07:10:02Z"
#: The execution trace of attempt 2 of find_item_011 (episode.json's trace_id); tests seed
#: it in the stand-in, so that attempt binds to it.
SEEDED_TRACE = "b2" * 16
#: The trace of attempt 1 of find_item_011: named by episode.json, never seeded (pending).
PENDING_TRACE = "a1" * 16
#: A secret that must never reach Langfuse (judge_config's key).
JUDGE_KEY = "sk-judge-should-not-leak-0123"

# --- The suite: (task id, category, prompt, [(rubric id, requirement)], expected answer,
#     expected memory ids, timeout) --------------------------------------------------------

TASKS = [
    ("find_item_011", "search", "Find the blue notebook in the catalogue.",
     [("r1", "The catalogue is open"), ("r2", "The blue notebook is shown")], "blue notebook", [], 120),
    ("open_settings", "navigation", "Open the Wi-Fi settings.",
     [("r1", "The Wi-Fi settings page is visible")], None, [], 300),
    ("recall_note", "memory", "On which day is the dentist appointment I noted?",
     [("r1", "Names the day of the appointment")], "Tuesday", ["m1", "m4"], 60),
]


def runner_suite() -> dict:
    """The suite source as the runner copies it (no version; rubric ``[{id, check}]``)."""
    return {"name": SUITE, "description": "core Android tasks", "tasks": [
        {"id": tid, "category": cat, "prompt": prompt,
         "description_for_judge": f"The agent must: {prompt}",
         "rubric": [{"id": rid, "check": text} for rid, text in rubric],
         "expected_answer": answer, "expected_recalled_memory_ids": memory,
         "hard_assertions": {"must_complete_within_sec": timeout},
         "repeats": 2 if tid == "find_item_011" else 1}
        for tid, cat, prompt, rubric, answer, memory, timeout in TASKS]}


def flat_suite() -> dict:
    """The same suite in the flat layout (run-directory.md "suite.json")."""
    return {"name": SUITE, "tasks": [
        {"id": tid, "category": cat, "prompt": prompt,
         "rubric_spec": [{"id": rid, "requirement": text} for rid, text in rubric],
         "expected_answer": answer, "expected_memory_ids": memory, "timeout_s": timeout}
        for tid, cat, prompt, rubric, answer, memory, timeout in TASKS]}


PLANNED = [("find_item_011", 1), ("find_item_011", 2), ("open_settings", 1), ("recall_note", 1)]


def runner_manifest() -> dict:
    """The runner's manifest: flat keys, no status, no schema_version."""
    return {
        "run_id": RUN_ID, "started_at": STARTED_AT, "finished_at": FINISHED_AT,
        "active_skills": ["catalogue", "memory"],
        "git_sha": "4f2c9e1", "git_dirty": True,
        "agent_model": "agent-model-large",
        "judge_config": {"provider": "example", "model": "judge-model",
                         "base_url": "https://judge.example/v1", "api_key": JUDGE_KEY},
        "target_platform": "android-15",
        "suite_path": "suites/android-core.json", "suite_sha256": SUITE_SHA256,
        "suite_snapshot_path": f"/Users/x/bench/runs/{RUN_ID}/suite.json",
        "planned_task_attempts": [{"task_id": t, "attempt": n} for t, n in PLANNED],
        "totals": {"tasks": 3, "attempts": 4, "passed": 2},
        "selected_task_ids": ["find_item_011", "open_settings", "recall_note"],
        "agent_url": "http://agent:s3cret-pass@127.0.0.1:8100/run?token=tok-should-not-leak",
        "environment_url": "http://127.0.0.1:8200",
        "mock_environment": False,
        "judge_prompt_version": "judge-v3",
        "metrics_schema_version": 2,
    }


def flat_manifest() -> dict:
    """The same facts in the flat manifest (what ``layouts.manifest_view`` maps to)."""
    return {
        "schema_version": 1, "run_id": RUN_ID, "status": "completed",
        "started_at": STARTED_AT, "finished_at": FINISHED_AT,
        "code": {"git_sha": "4f2c9e1", "dirty": True},
        "suite": {"name": SUITE, "version": SUITE_SHA256},
        "model": {"name": "agent-model-large"},
        "judge": {"enabled": True, "model": "judge-model"},
        "platform": {"device": None, "os": "android-15"},
        "active_skills": ["catalogue", "memory"],
        "planned": [{"task_id": "find_item_011", "attempts": 2}, {"task_id": "open_settings", "attempts": 1},
                    {"task_id": "recall_note", "attempts": 1}],
    }


# --- The attempts -------------------------------------------------------------------------

#: trace.json's tool calls per attempt, as (tool, input) pairs; None: no trace.json.
CALLS: dict[tuple[str, int], list[tuple[str, Any]] | None] = {
    ("find_item_011", 1): [("open_app", {"app": "catalogue"}), ("tap", {"x": 10, "y": 20})],
    ("find_item_011", 2): [("open_app", {"app": "catalogue"}), ("scroll", {"direction": "down", "pages": 2}),
                           ("tap", {"x": 140, "y": 610})],
    ("open_settings", 1): [("open_settings", {"section": "wifi"})],
    ("recall_note", 1): None,
}
FINAL = {
    ("find_item_011", 1): "I could not find it.",
    ("find_item_011", 2): "The blue notebook is on page 2.",
    ("open_settings", 1): "The Wi-Fi settings are open.",
    ("recall_note", 1): None,
}
#: episode ids recorded in each row (inside ``metrics`` in the runner's layout).
EPISODES = {("find_item_011", 1): "ep-find-1", ("find_item_011", 2): "ep-find-2",
            ("open_settings", 1): None, ("recall_note", 1): "ep-recall"}
#: the trace id episode.json names (no episode.json when the attempt has none here).
EPISODE_TRACES = {("find_item_011", 1): PENDING_TRACE, ("find_item_011", 2): SEEDED_TRACE}


def _outcome(task: str, n: int) -> dict:
    """The flat layout's outcome fields of an attempt (everything but identity and metrics)."""
    passed = (task, n) in (("find_item_011", 2), ("open_settings", 1))
    rubric = [r for t in TASKS if t[0] == task for r in t[3]]
    verdicts = [{"id": rid, "verdict": "yes" if passed or i == 0 else "no", "reason": "seen on screen"}
                for i, (rid, _) in enumerate(rubric)]
    out = {
        "category": next(t[1] for t in TASKS if t[0] == task),
        "status": "passed" if passed else "failed",
        "success": passed, "agent_eligible": True,
        "failure_class": None if passed else "agent",
        "first_failure_stage": None if passed else ("action_selection" if task == "find_item_011" else "final_response"),
        "quality_score": 1.0 if passed else round(sum(v["verdict"] == "yes" for v in verdicts) / len(verdicts), 3),
        "rubric": verdicts,
        "rubric_pass_count": sum(v["verdict"] == "yes" for v in verdicts), "rubric_total": len(verdicts),
        "hard_assertions": {"must_complete_within_sec": True},
        "hard_assertion_failures": [],
        "episode_id": EPISODES[(task, n)],
        "active_skills": ["catalogue", "memory"],
        "trace_observations": [{"id": "opened_app", "passed": task != "recall_note"}],
        "expected_answer_match": None if task == "open_settings" else passed,
        "expected_recalled_memory_match": False if task == "recall_note" else None,
        "memory_recall_evidence_source": "trace" if task == "recall_note" else None,
        "recovery_attempted": task == "find_item_011", "recovery_succeeded": passed if task == "find_item_011" else None,
        "started_at": f"2026-09-21T06:{36 + n + len(task) % 7:02d}:00Z",
        "finished_at": f"2026-09-21T06:{37 + n + len(task) % 7:02d}:30Z",
    }
    if not passed:
        out["failure_event_ref"] = "history:3"
    return out


def _recorded(task: str, n: int) -> dict:
    """The recorded numbers and error texts (``metrics`` in both layouts)."""
    return {"task_wall_ms": 30_000 + 1000 * n + len(task), "setup_ms": 1200, "llm_calls": 2,
            "input_tokens": 1600, "output_tokens": 90, "total_tokens": 1690, "cost_usd": 0.0123,
            "cost_source": "price_table", "error": None if task != "recall_note" else "wrong day"}


def _history(task: str, n: int) -> list:
    calls = CALLS[(task, n)] or []
    messages: list[dict] = [{"type": "user", "content": next(t[2] for t in TASKS if t[0] == task)}]
    for i, (tool, args) in enumerate(calls):
        messages.append({"type": "assistant", "content": f"step {i}", "duration_ms": 800 + i,
                         "usage": {"input_tokens": 700 + i, "output_tokens": 30}})
        messages.append({"type": "tool_call", "tool_name": tool, "tool_input": args, "tool_call_id": f"c{i}"})
        messages.append({"type": "tool_result", "tool_name": tool, "tool_call_id": f"c{i}",
                         "content": json.dumps({"ok": True}), "is_error": False})
    messages.append({"type": "assistant", "content": FINAL[(task, n)] or "", "duration_ms": 600,
                     "usage": {"input_tokens": 900, "output_tokens": 25}})
    return messages


def _episode(task: str, n: int) -> dict | None:
    if (task, n) not in EPISODE_TRACES:
        return None
    return {"episode_id": EPISODES[(task, n)], "trace_id": EPISODE_TRACES[(task, n)],
            "events": [{"type": "tool_result", "tool_name": tool, "tool_input": args, "is_error": False,
                        "duration_ms": 210.5, "needs_replan": False} for tool, args in CALLS[(task, n)] or []],
            "extra": {"first_token_time_ms": 640}, "error": None}


#: Where the runner recorded each attempt's folder (its own path), None: no artifact_dir.
RUNNER_DIRS = {
    ("find_item_011", 1): f"/Users/x/bench/runs/{RUN_ID}/tasks/find_item_011/attempt_1",
    ("find_item_011", 2): f"/Users/x/bench/runs/{RUN_ID}/tasks/find_item_011/attempt_2",
    ("open_settings", 1): "/home/ci/work/out/tasks/open_settings",  # another machine, another folder name
    ("recall_note", 1): None,  # the convention: tasks/recall_note
}
#: The runner's attempt folders in the run folder.
RUNNER_FOLDERS = {("find_item_011", 1): "tasks/find_item_011/attempt_1",
                  ("find_item_011", 2): "tasks/find_item_011/attempt_2",
                  ("open_settings", 1): "tasks/open_settings", ("recall_note", 1): "tasks/recall_note"}
#: The flat layout's attempt folders (relative artifact_dir; attempt-<n> for n > 1).
FLAT_FOLDERS = {("find_item_011", 1): "tasks/find_item_011", ("find_item_011", 2): "tasks/find_item_011/attempt-2",
                ("open_settings", 1): "tasks/open_settings", ("recall_note", 1): "tasks/recall_note"}

#: Row keys the runner writes at the top level; every other field lives in ``metrics``.
RUNNER_TOP_LEVEL = ("category", "status", "rubric", "rubric_total", "rubric_pass_count", "hard_assertions",
                    "hard_assertion_failures", "started_at", "finished_at")


def runner_row(task: str, n: int) -> dict:
    outcome = _outcome(task, n)
    rubric = next(t[3] for t in TASKS if t[0] == task)
    row = {"task_id": task, "attempt": n, "suite": SUITE, "run_id": RUN_ID,
           "artifact_dir": RUNNER_DIRS[(task, n)],
           "rubric_spec": [{"id": rid, "check": text} for rid, text in rubric],
           "description_for_judge": f"The agent must: {next(t[2] for t in TASKS if t[0] == task)}",
           **{k: outcome.pop(k) for k in RUNNER_TOP_LEVEL}}
    row["hard_assertion_failures"] = [{**f, "label": f["id"]} for f in row["hard_assertion_failures"]]
    row["metrics"] = {**outcome, **_recorded(task, n),
                      "environment_state_assertions": [{"path": "settings.wifi", "expected": True,
                                                        "actual": task == "open_settings",
                                                        "passed": task == "open_settings"}],
                      "pre_screenshot_file": True, "post_screenshot_file": True}
    return dict(sorted(row.items()))  # the runner sorts every key


def flat_row(task: str, n: int) -> dict:
    rubric = next(t[3] for t in TASKS if t[0] == task)
    recorded_dir = FLAT_FOLDERS[(task, n)] if (task, n) != ("recall_note", 1) else None  # the convention
    row = {"task_id": task, "attempt": n, "artifact_dir": recorded_dir,
           **_outcome(task, n),
           "rubric_spec": [{"id": rid, "requirement": text} for rid, text in rubric],
           "environment_state_assertions": [{"id": "settings.wifi", "passed": task == "open_settings",
                                             "expected": True, "actual": task == "open_settings"}],
           "pre_screenshot_file": True, "post_screenshot_file": True,
           "metrics": _recorded(task, n)}
    return row


def runner_trace(task: str, n: int) -> dict | None:
    calls = CALLS[(task, n)]
    if calls is None:
        return None
    trace = {"tool_calls": [{"step": i + 1, "tool": tool, "input": args, "has_screenshot": i % 2 == 0}
                            for i, (tool, args) in enumerate(calls)],
             "final_response": FINAL[(task, n)], "total_tool_calls": len(calls)}
    if task == "recall_note":
        trace["recalled_memory_ids"] = ["m1"]
    return trace


def flat_trace(task: str, n: int) -> dict | None:
    calls = CALLS[(task, n)]
    if calls is None:
        return None
    return {"final_response": FINAL[(task, n)], "tool_calls": [{"name": tool, "arguments": args} for tool, args in calls]}


def _write(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, sort_keys=True), encoding="utf-8")


def write_runner_run(root: Path) -> Path:
    """The run in the runner's layout under ``root``/RUN_ID (with the runner's own end-of-run
    files, so it is ready without a manifest status)."""
    run = root / RUN_ID
    _write(run / "manifest.json", runner_manifest())
    _write(run / "suite.json", runner_suite())
    (run / "results.jsonl").write_text("".join(json.dumps(runner_row(t, n), sort_keys=True) + "\n"
                                               for t, n in PLANNED), encoding="utf-8")
    for key, folder in RUNNER_FOLDERS.items():
        _write(run / folder / "history.json", _history(*key))
        if runner_trace(*key) is not None:
            _write(run / folder / "trace.json", runner_trace(*key))
        if _episode(*key) is not None:
            _write(run / folder / "episode.json", _episode(*key))
    _write(run / "metrics.json", {"runner": "own metrics"})
    (run / "summary.md").write_text("# runner summary\n", encoding="utf-8")
    return run


def write_flat_run(root: Path) -> Path:
    """The same run in the flat layout under ``root``/RUN_ID."""
    run = root / RUN_ID
    _write(run / "manifest.json", flat_manifest())
    _write(run / "suite.json", flat_suite())
    (run / "results.jsonl").write_text("".join(json.dumps(flat_row(t, n)) + "\n" for t, n in PLANNED),
                                       encoding="utf-8")
    for key, folder in FLAT_FOLDERS.items():
        _write(run / folder / "history.json", _history(*key))
        if flat_trace(*key) is not None:
            _write(run / folder / "trace.json", flat_trace(*key))
        if _episode(*key) is not None:
            _write(run / folder / "episode.json", _episode(*key))
    return run
