"""Tests of a run folder's files (bench_pipeline/generator/files.py): an attempt folder's
artifacts with each artifact edge case doing what it says, and manifest.json, in memory."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import orjson
import pytest

from bench_pipeline.generator.files import attempt_files, build_manifest, iso, write_files
from bench_pipeline.generator.records import Evaluation, History, RunDraw, Task, ToolStep
from bench_pipeline.generator.world import PNG_BYTES

MESSAGES = [{"type": "system", "content": "s"}, {"type": "user", "content": "u"},
            {"type": "tool_call", "tool_name": "tap", "tool_input": {"x": 1, "y": 2}},
            {"type": "tool_result", "tool_name": "tap", "content": '{"ok": true}', "is_error": False}]
HISTORY = History(MESSAGES, [], [ToolStep("tap", {"x": 1, "y": 2}, True, 10.0, result_index=3)], [], "Done.")
EPISODE = {"episode_id": "ep-1", "events": []}
TIMING = {"pre_ok": True, "post_ok": False}
JUDGED = Evaluation(1.0, 1, 1, judge_file={"model": "judge-model", "verdicts": [], "error": None},
                    env_file={"checks": []})
STARTED = datetime(2026, 11, 28, 10, 0, 0, tzinfo=timezone.utc)
FINISHED = datetime(2026, 11, 28, 10, 30, 5, tzinfo=timezone.utc)
SUITE = [Task(id="t1", category="qa", prompt="p", rubric_spec=[], expected_answer="B", expected_memory_ids=[],
              env_checks=[], skill=None, timeout_s=120, pass_probability=0.5)]


def files(edges: set[str], episode: dict | None = EPISODE, ev: Evaluation = JUDGED) -> dict[str, bytes]:
    return attempt_files(HISTORY, episode, ev, TIMING, frozenset(edges))


def draw(status: str = "completed", edges: frozenset[str] = frozenset(), git_sha: str | None = None,
         index: int = 0) -> RunDraw:
    return RunDraw(index=index, run_id="2026-11-28T10-00-00Z-abcdef", seed=0x1234567, started=STARTED,
                   status=status, model="agent-model-small", device=("emulator-pixel", "android-15"),
                   active_skills=["web", "memory"], judge_enabled=False, judge_model="judge-model",
                   with_cost=False, edges=edges, git_sha=git_sha)


def test_a_clean_attempt_folder() -> None:
    written = files(set())
    assert sorted(written) == ["environment_state.json", "episode.json", "history.json", "judge.json",
                               "pre.png", "trace.json"]
    assert orjson.loads(written["history.json"]) == MESSAGES
    assert orjson.loads(written["trace.json"]) == {
        "final_response": "Done.", "tool_calls": [{"name": "tap", "arguments": {"x": 1, "y": 2}}]}
    assert orjson.loads(written["episode.json"]) == EPISODE
    assert written["pre.png"] == PNG_BYTES


def test_without_judge_state_or_episode_those_files_are_absent() -> None:
    assert sorted(files(set(), episode=None, ev=Evaluation(None, None, None))) == [
        "history.json", "pre.png", "trace.json"]


def test_history_as_an_object() -> None:
    assert orjson.loads(files({"history_object"})["history.json"]) == {"messages": MESSAGES}


def test_a_broken_history_is_cut_in_half() -> None:
    whole = orjson.dumps(MESSAGES)
    assert files({"broken_history"})["history.json"] == whole[: len(whole) // 2]
    empty = attempt_files(History([], [], [], [], None), None, JUDGED, TIMING, frozenset({"broken_history"}))
    assert empty["history.json"] == b'{"msgs": []}'


def test_trace_missing_or_invalid() -> None:
    assert "trace.json" not in files({"missing_trace"})
    assert files({"invalid_trace"})["trace.json"] == b'{"final_response": "Done'


def test_episode_missing_or_not_an_object() -> None:
    assert "episode.json" not in files({"missing_episode"})
    assert files({"episode_not_object"})["episode.json"] == b"[]"


def test_a_manifest_of_a_completed_run() -> None:
    assert build_manifest(draw(index=3), SUITE, 2, FINISHED) == {
        "schema_version": 1,
        "run_id": "2026-11-28T10-00-00Z-abcdef",
        "status": "completed",
        "started_at": "2026-11-28T10:00:00Z",
        "finished_at": "2026-11-28T10:30:05Z",
        "code": {"git_sha": "1234567", "dirty": True},
        "suite": {"name": "android-core", "version": "7"},
        "model": {"provider": "example", "name": "agent-model-small"},
        "judge": {"enabled": False, "model": None},
        "platform": {"device": "emulator-pixel", "os": "android-15"},
        "active_skills": ["web", "memory"],
        "repeats": 2,
        "metrics_k": 2,
        "planned": [{"task_id": "t1", "attempts": 2}],
    }


def test_a_system_run_has_its_clean_git_sha() -> None:
    assert build_manifest(draw(git_sha="0abc123", index=3), SUITE, 2, FINISHED)["code"] == {
        "git_sha": "0abc123", "dirty": False}


def test_manifest_edge_cases() -> None:
    manifest = build_manifest(draw(edges=frozenset({"metrics_k_absent", "manifest_extra_keys"})), SUITE, 2, FINISHED)
    assert "metrics_k" not in manifest
    assert manifest["runner"] == {"host": "bench-03", "version": "2.4.1"}
    running = build_manifest(draw(status="running"), SUITE, 2, FINISHED)
    assert running["finished_at"] is None and "abort_reason" not in running
    assert build_manifest(draw(status="aborted"), SUITE, 2, FINISHED)["abort_reason"] == "device went offline"


def test_iso_is_utc_with_z() -> None:
    assert iso(FINISHED) == "2026-11-28T10:30:05Z"


def test_write_files_writes_an_attempt_folder(tmp_path: Path) -> None:
    made: set[str] = set()
    write_files(tmp_path, "tasks/t1/attempt-2", {"a.json": b"{}", "b.png": b"x"}, made)
    assert made == {"tasks/t1/attempt-2"}
    assert (tmp_path / "tasks/t1/attempt-2/a.json").read_bytes() == b"{}"
    assert (tmp_path / "tasks/t1/attempt-2/b.png").read_bytes() == b"x"


def test_write_files_creates_a_folder_once(tmp_path: Path) -> None:
    made = {"tasks/t1"}
    with pytest.raises(FileNotFoundError):
        write_files(tmp_path, "tasks/t1", {"a.json": b"{}"}, made)
