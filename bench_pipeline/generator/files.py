"""The files of a run folder (run-directory.md): an attempt folder's artifacts with the
artifact edge cases applied, manifest.json's content, and writing an attempt's folder."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from .records import Evaluation, History, RunDraw, Task
from .world import PNG_BYTES, SUITE_NAME, SUITE_VERSION


def attempt_files(history: History, episode: dict | None, ev: Evaluation, timing: dict,
                  edges: frozenset[str]) -> dict[str, bytes]:
    """The attempt folder's files, with the artifact edge cases applied."""
    files: dict[str, bytes] = {}
    if "history_object" in edges:
        history_bytes = orjson.dumps({"messages": history.messages})
    else:
        history_bytes = orjson.dumps(history.messages)
    if "broken_history" in edges:
        history_bytes = history_bytes[: len(history_bytes) // 2] if len(history_bytes) > 8 else b'{"msgs": []}'
    files["history.json"] = history_bytes
    trace = {"final_response": history.final_response,
             "tool_calls": [{"name": s.name, "arguments": s.tool_input} for s in history.steps]}
    if "invalid_trace" in edges:
        files["trace.json"] = b'{"final_response": "Done' if len(history.steps) % 2 else b'["not", "an", "object"]'
    elif "missing_trace" not in edges:
        files["trace.json"] = orjson.dumps(trace)
    if episode is not None and "missing_episode" not in edges:
        if "episode_not_object" in edges:
            files["episode.json"] = b"[]" if len(history.steps) % 2 else b'"episode unavailable"'
        else:
            files["episode.json"] = orjson.dumps(episode)
    if ev.judge_file is not None:
        files["judge.json"] = orjson.dumps(ev.judge_file)
    if ev.env_file is not None:
        files["environment_state.json"] = orjson.dumps(ev.env_file)
    if timing["pre_ok"]:
        files["pre.png"] = PNG_BYTES
    if timing["post_ok"]:
        files["post.png"] = PNG_BYTES
    return files


def build_manifest(run: RunDraw, suite: list[Task], repeats: int, finished: datetime) -> dict:
    """manifest.json content for a run."""
    manifest: dict[str, Any] = {
        "schema_version": 1,
        "run_id": run.run_id,
        "status": run.status,
        "started_at": iso(run.started),
        "finished_at": None if run.status == "running" else iso(finished),
        "code": ({"git_sha": f"{run.seed % (16 ** 7):07x}", "dirty": run.index % 11 == 3} if run.git_sha is None
                 else {"git_sha": run.git_sha, "dirty": False}),
        "suite": {"name": SUITE_NAME, "version": SUITE_VERSION},
        "model": {"provider": "example", "name": run.model},
        "judge": {"enabled": run.judge_enabled, "model": run.judge_model if run.judge_enabled else None},
        "platform": {"device": run.device[0], "os": run.device[1]},
        "active_skills": run.active_skills,
        "repeats": repeats,
        "metrics_k": repeats,
        "planned": [{"task_id": task.id, "attempts": repeats} for task in suite],
    }
    if "metrics_k_absent" in run.edges:
        del manifest["metrics_k"]
    if "manifest_extra_keys" in run.edges:
        manifest["runner"] = {"host": "bench-03", "version": "2.4.1"}
    if run.status == "aborted":
        manifest["abort_reason"] = "device went offline"
    return manifest


def write_files(run_dir: Path, folder: str, files: dict[str, bytes], made_dirs: set[str]) -> None:
    """Write an attempt's artifact files into its folder."""
    if folder not in made_dirs:
        (run_dir / folder).mkdir(parents=True, exist_ok=True)
        made_dirs.add(folder)
    base = run_dir / folder
    for name, content in files.items():
        (base / name).write_bytes(content)


def iso(moment: datetime) -> str:
    """ISO-8601 UTC timestamp with a Z suffix."""
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
