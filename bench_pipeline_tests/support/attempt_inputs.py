"""Attempt-metric inputs as Python values, and an attempt row derived from them in memory.

Builders for history messages (``model``, ``call``, ``result``) and episode events
(``event``), and ``derive``/``derive_data``: the attempt row of one results row whose
history.json and episode.json are given as values (trace.json is missing), assembled by
``derive_attempt``'s own steps on those values; no run folder is written or read.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from bench_pipeline.artifacts import AVAILABLE, MISSING, ArtifactDir, JsonFile, artifact_file, resolve_artifact_dir
from bench_pipeline.attempt_metrics import RunContext
from bench_pipeline.attempt_metrics.assemble import attempt_row, sources_from_files
from bench_pipeline.run_reader import RawRow

from ..run_builder import row

NAN = float("nan")
#: The five token fields of an attempt row (reference 3.5), in output order.
TOKENS = ("input_tokens", "output_tokens", "total_tokens", "cached_input_tokens", "reasoning_tokens")
#: An image attachment (reference 3.3 step 1).
IMG = [{"type": "image", "path": "shot.png"}]
#: A run folder that cannot exist (os.devnull is not a folder), so nothing is read from disk.
NO_RUN_FOLDER = Path(os.devnull) / "run-1"
#: Arbitrary JSON shaped like history messages and episode events (a hypothesis strategy).
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30)
    | st.sampled_from(["tool_call", "tool_result", "assistant", "image", "tap", "quick_action", "bridge_media",
                       "screenshot observation", '{"ok": false, "data": "x", "width": 1}', '{"is_error": 1}']),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["type", "usage", "duration_ms", "tool_name", "tool_input", "tool_call_id", "content",
                         "is_error", "attachments", "input_tokens", "prompt_tokens", "needs_replan", "list",
                         "action", "events", "extra", "first_token_time_ms", "ok", "data"]), children, max_size=6),
    max_leaves=25,
)


# --- history messages and episode events ----------------------------------------------------

def model(duration=100, usage="default", kind="assistant", **extra) -> dict:
    """A model message; ``usage`` None leaves it out (not a model call, 3.3)."""
    m = {"type": kind, "content": "..."}
    if usage is not None:
        m["usage"] = {"input_tokens": 10, "output_tokens": 2} if usage == "default" else usage
    if duration is not None:
        m["duration_ms"] = duration
    m.update(extra)
    return m


def call(name, tool_input=None, call_id=None, **extra) -> dict:
    m = {"type": "tool_call", "tool_name": name}
    if tool_input is not None:
        m["tool_input"] = tool_input
    if call_id is not None:
        m["tool_call_id"] = call_id
    m.update(extra)
    return m


def result(name, content="{\"ok\": true}", call_id=None, **extra) -> dict:
    m = {"type": "tool_result", "content": content}
    if name is not None:
        m["tool_name"] = name
    if call_id is not None:
        m["tool_call_id"] = call_id
    m.update(extra)
    return m


def call_with_input(name, tool_input) -> dict:
    """A tool call whose ``tool_input`` is exactly ``tool_input`` ("absent": no such key)."""
    return call(name) if tool_input == "absent" else {"type": "tool_call", "tool_name": name, "tool_input": tool_input}


def error_pair(name, tool_input=None, call_id="e") -> list[dict]:
    """A tool call and its error result (3.5 tool_errors, R16)."""
    return [call(name, tool_input, call_id), result(name, "boom", call_id, is_error=True)]


def event(name, duration="absent", tool_input="absent", kind="tool_result", **extra) -> dict:
    e = {"type": kind, "tool_name": name}
    if duration != "absent":
        e["duration_ms"] = duration
    if tool_input != "absent":
        e["tool_input"] = tool_input
    e.update(extra)
    return e


#: Episode events of which exactly two count as tool errors (3.5: tool_result events with
#: ``is_error`` true): the others are a success, an ``ok: false`` content (not parsed again),
#: errors on events of other types and an ``is_error`` that is 1, not true.
TOOL_ERROR_EVENTS = [
    event("tap", 1, {}, is_error=True),
    event("tap", 1, {}, is_error=False),
    event("tap", 1, {}, content='{"ok": false}'),
    event("tap", 1, {}, kind="model_response", is_error=True),
    event("tap", 1, {}, kind="tool_call", is_error=True),
    {"type": "error", "is_error": True, "message": "x"},
    event("swipe", 1, {}, is_error=1),
]


# --- one attempt row from values ------------------------------------------------------------

def derive(history=None, episode=None, status="failed", task_id="t", suite_tasks=None, **fields) -> dict:
    """The attempt row of ``run_builder.row(task_id, status, **fields)`` with these artifacts
    (None: the file is missing)."""
    return derive_data(row(task_id, status=status, **fields), history=history, episode=episode,
                       suite_tasks=suite_tasks)


def derive_data(data: dict, *, history=None, episode=None, suite_tasks=None, line: int = 1) -> dict:
    """The attempt row of the results object ``data`` (as stage 1 parsed it) with these
    artifacts (None: the file is missing), in run "run-1" whose suite tasks are ``suite_tasks``:
    ``derive_attempt``'s own assembly (``attempt_row``) on files given as values, nothing read
    from disk (the run folder cannot exist, so the folder checks find no symlink)."""
    attempt = data.get("attempt")
    raw = RawRow(line, data["task_id"], 1 if attempt is None else attempt, data)
    ctx = RunContext("run-1", NO_RUN_FOLDER, str(NO_RUN_FOLDER), suite_tasks or {})
    folder = resolve_artifact_dir(ctx.run_dir, ctx.real_run_dir, data.get("artifact_dir"), raw.task_id, raw.attempt)
    files = [_file(folder, "history.json", history), _file(folder, "episode.json", episode),
             _file(folder, "trace.json", None)]
    return attempt_row(raw, ctx, folder, sources_from_files(*files))


def _file(folder: ArtifactDir, name: str, value: Any) -> JsonFile:
    """The artifact as ``artifacts.read_json_file`` returns it: available with ``value``, or
    missing (None), or not looked for when the folder was refused."""
    relative = artifact_file(folder, name)
    if relative is None:
        return JsonFile(MISSING, reason=f"artifact folder refused: {folder.refused_reason}")
    if value is None:
        return JsonFile(MISSING, reason="file not found", path=relative)
    return JsonFile(AVAILABLE, value, path=relative)
