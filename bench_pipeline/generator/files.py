"""The files of a run folder (run-directory.md): an attempt folder's artifacts with the
artifact edge cases applied (in the flat or the runner's layout, `runner_files` holding the
runner's shapes), manifest.json's content, and writing an attempt's folder."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from .records import Evaluation, History, RunDraw, Task
from .runner_files import JPEG_BYTES, runner_environment_state, runner_judge, runner_messages, runner_trace
from .world import PNG_BYTES, SUITE_NAME, SUITE_VERSION

LAYOUTS = ("flat", "runner")


def flat_folder(task_id: str, attempt: int) -> str:
    """An attempt's folder in the flat layout (run-directory.md "Layout")."""
    return f"tasks/{task_id}" if attempt == 1 else f"tasks/{task_id}/attempt-{attempt}"


def attempt_files(history: History, episode: dict | None, ev: Evaluation, timing: dict,
                  edges: frozenset[str], layout: str = "flat") -> dict[str, bytes]:
    """The attempt folder's files, with the artifact edge cases applied. The runner's
    layout holds the same content in the runner's shapes (`runner_files`): images as
    ``kind``, its trace.json, judge.json and environment_state.json, pre.jpg and post.jpg.
    Its history.json has the flat one's length, so a cut history breaks at the same place."""
    runner = layout == "runner"
    files: dict[str, bytes] = {}
    messages = runner_messages(history.messages) if runner else history.messages
    if "history_object" in edges:
        history_bytes = orjson.dumps({"messages": messages})
    else:
        history_bytes = orjson.dumps(messages)
    if "broken_history" in edges:
        history_bytes = history_bytes[: len(history_bytes) // 2] if len(history_bytes) > 8 else b'{"msgs": []}'
    files["history.json"] = history_bytes
    if runner:
        trace = runner_trace(history)
    else:
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
        files["judge.json"] = orjson.dumps(runner_judge(ev.judge_file) if runner else ev.judge_file)
    if ev.env_file is not None:
        files["environment_state.json"] = orjson.dumps(runner_environment_state(ev.env_file) if runner
                                                       else ev.env_file)
    image, suffix = (JPEG_BYTES, "jpg") if runner else (PNG_BYTES, "png")
    if timing["pre_ok"]:
        files[f"pre.{suffix}"] = image
    if timing["post_ok"]:
        files[f"post.{suffix}"] = image
    return files


def run_code(run: RunDraw) -> tuple[str, bool]:
    """The run's git sha and whether its tree was dirty: the system's clean sha, else one
    drawn from the run's seed (dirty for every 11th run)."""
    if run.git_sha is not None:
        return run.git_sha, False
    return f"{run.seed % (16 ** 7):07x}", run.index % 11 == 3


def build_manifest(run: RunDraw, suite: list[Task], repeats: int, finished: datetime) -> dict:
    """manifest.json content for a run."""
    sha, dirty = run_code(run)
    manifest: dict[str, Any] = {
        "schema_version": 1,
        "run_id": run.run_id,
        "status": run.status,
        "started_at": iso(run.started),
        "finished_at": None if run.status == "running" else iso(finished),
        "code": {"git_sha": sha, "dirty": dirty},
        "suite": {"name": SUITE_NAME, "version": SUITE_VERSION},
        "model": {"provider": "example", "name": run.model},
        "judge": {"enabled": run.judge_enabled, "model": run.judge_model if run.judge_enabled else None},
        "platform": {"device": run.device[0], "os": run.device[1]},
        "active_skills": run.active_skills,
        "repeats": repeats,
        "metrics_k": repeats,
        "planned": [{"task_id": task.id, "attempts": repeats} for task in suite],
    }
    return with_manifest_edges(manifest, run)


def with_manifest_edges(manifest: dict[str, Any], run: RunDraw) -> dict[str, Any]:
    """A manifest (either layout's) with the run's manifest edge cases applied."""
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
