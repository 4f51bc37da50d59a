"""Safe artifact reading (run-directory.md "Layout", "Attempt artifacts"; R3, R4, R5, R43).

Where an attempt's artifacts are, which folders are refused, and which files count as
unavailable. Observed through the pipeline: a derived field (from history.json or
episode.json) versus the row's recorded value with provenance ``recorded``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
import threading

import pytest

from bench_pipeline.artifacts import MAX_DEPTH, TooDeep, loads_exact, loads_json, read_json_file
from bench_pipeline.pipeline import run_stages

from .run_builder import make_run, row, write_json

#: One model call, one device tool call with its result: derived llm_calls/tool_calls = 1.
HISTORY = [
    {"type": "user", "content": "go"},
    {"type": "assistant", "content": "...", "usage": {"input_tokens": 10, "output_tokens": 2}, "duration_ms": 100},
    {"type": "tool_call", "tool_name": "tap", "tool_input": {"x": 1}, "tool_call_id": "c1"},
    {"type": "tool_result", "tool_name": "tap", "tool_call_id": "c1", "content": "{\"ok\": true}"},
]
#: What the row records, different from every derived value.
RECORDED = {"llm_calls": 9, "llm_time_ms": 999, "tool_calls": 8, "device_actions": 7, "input_tokens": 555,
            "device_execution_ms": 4321, "replan_count": 6, "time_to_first_token_ms": 77}
EPISODE = {"episode_id": "ep", "events": [
    {"type": "tool_result", "tool_name": "tap", "tool_input": {}, "duration_ms": 50, "needs_replan": False},
]}


def _attempt(processed, task_id: str = "t", attempt: int = 1) -> dict:
    return next(a for a in processed.attempts if a["task_id"] == task_id and a["attempt"] == attempt)


def _history_used(a: dict) -> bool:
    if a["llm_calls"] == 1 and a["tool_calls"] == 1 and a["provenance"]["llm_calls"] == "derived":
        return True
    assert (a["llm_calls"], a["tool_calls"], a["device_actions"]) == (9, 8, 7)
    assert a["provenance"]["llm_calls"] == "recorded"
    assert a["provenance"]["tool_calls"] == "recorded"
    return False


def _episode_used(a: dict) -> bool:
    if a["device_execution_ms"] == 50 and a["provenance"]["device_execution_ms"] == "derived":
        assert a["replan_count"] == 0
        return True
    assert (a["device_execution_ms"], a["replan_count"], a["time_to_first_token_ms"]) == (4321, 6, 77)
    assert a["provenance"]["device_execution_ms"] == "recorded"
    return False


def _unsafe(processed) -> list[dict]:
    """R33 entry shape {"line", "task_id", "attempt", "artifact_dir"} (extra keys tolerated)."""
    keys = ("line", "task_id", "attempt", "artifact_dir")
    entries = processed.metrics["data_quality"]["unsafe_artifact_dirs"]
    for e in entries:
        assert set(keys) <= set(e), e
    return [{k: e[k] for k in keys} for e in entries]


# --- R4: conventional folders -------------------------------------------------------------

@pytest.mark.parametrize("artifact_dir", ["absent", None])
def test_conventional_folder_attempt_one(tmp_path, artifact_dir):
    r = row("t", status="failed", metrics=RECORDED)
    if artifact_dir != "absent":
        r["artifact_dir"] = artifact_dir
    p = run_stages(make_run(tmp_path, [r], artifacts={"tasks/t": {"history.json": HISTORY}})).processed
    a = _attempt(p)
    assert _history_used(a)
    assert a["artifact_dir"] is None  # outputs.md: as recorded, null when absent
    assert _unsafe(p) == []


def test_conventional_folder_for_later_attempts(tmp_path):
    rows = [row("t", 1, "failed", metrics=RECORDED), row("t", 2, "failed", metrics=RECORDED),
            row("t", 3, "failed", metrics=RECORDED)]
    artifacts = {"tasks/t": {"history.json": HISTORY}, "tasks/t/attempt-2": {"history.json": HISTORY}}
    p = run_stages(make_run(tmp_path, rows, artifacts=artifacts)).processed
    assert _history_used(_attempt(p, "t", 1))
    assert _history_used(_attempt(p, "t", 2))
    # Attempt 3 has no tasks/t/attempt-3 folder; it must not borrow attempt 1's files.
    assert not _history_used(_attempt(p, "t", 3))


def test_recorded_artifact_dir_is_authoritative(tmp_path):
    other = [HISTORY[1], HISTORY[1], HISTORY[1]]  # 3 model calls, no tool calls
    r = row("t", status="failed", artifact_dir="elsewhere/t", metrics=RECORDED)
    artifacts = {"elsewhere/t": {"history.json": HISTORY}, "tasks/t": {"history.json": other}}
    a = _attempt(run_stages(make_run(tmp_path, [r], artifacts=artifacts)).processed)
    assert _history_used(a)
    assert a["artifact_dir"] == "elsewhere/t"


def test_recorded_artifact_dir_without_files_does_not_fall_back_to_convention(tmp_path):
    r = row("t", status="failed", artifact_dir="elsewhere/t", metrics=RECORDED)
    a = _attempt(run_stages(make_run(tmp_path, [r], artifacts={"tasks/t": {"history.json": HISTORY}})).processed)
    assert not _history_used(a)


@pytest.mark.parametrize("artifact_dir", ["tasks/x/../t", "tasks/./t", "tasks//t", "tasks/t/", "tasks\\t", "tasks\\x\\..\\t"])
def test_safe_relative_paths_are_followed(tmp_path, artifact_dir):
    r = row("t", status="failed", artifact_dir=artifact_dir, metrics=RECORDED)
    p = run_stages(make_run(tmp_path, [r], artifacts={"tasks/t": {"history.json": HISTORY}})).processed
    assert _history_used(_attempt(p))
    assert _unsafe(p) == []


@pytest.mark.parametrize("artifact_dir", ["", "."])
def test_empty_artifact_dir_is_the_run_folder(tmp_path, artifact_dir):
    r = row("t", status="failed", artifact_dir=artifact_dir, metrics=RECORDED)
    run = make_run(tmp_path, [r], artifacts={"tasks/t": {"history.json": [HISTORY[1]] * 4}})
    write_json(run / "history.json", HISTORY)
    p = run_stages(run).processed
    assert _history_used(_attempt(p))
    assert _unsafe(p) == []


# --- R5: refused folders ----------------------------------------------------------------

def _outside_with_history(tmp_path):
    outside = tmp_path / "outside"
    write_json(outside / "history.json", HISTORY)
    write_json(outside / "episode.json", EPISODE)
    return outside


@pytest.mark.parametrize(
    "artifact_dir",
    ["tasks/../../outside", "..", "../outside", "..\\outside", "tasks\\..\\..\\outside",
     "\\outside", "C:x", "C:\\x", "c:x", "C:/x", "/tmp"],
)
def test_unsafe_artifact_dirs_are_refused_and_reported(tmp_path, artifact_dir):
    _outside_with_history(tmp_path)
    r = row("t", status="failed", artifact_dir=artifact_dir, metrics=RECORDED)
    run = make_run(tmp_path, [r])
    # Make each refused path resolvable if it were followed, so following it would show.
    for name in ("C:x", "c:x", "C:\\x", "\\outside"):
        write_json(run / name / "history.json", HISTORY)
    write_json(run / "C:" / "x" / "history.json", HISTORY)
    p = run_stages(run).processed
    a = _attempt(p)
    assert not _history_used(a)
    assert not _episode_used(a)
    assert _unsafe(p) == [{"line": 1, "task_id": "t", "attempt": 1, "artifact_dir": artifact_dir}]


@pytest.mark.parametrize("recorded", [
    "/Users/alice/bench/runs/run-1/tasks/t",         # the runner's machine: after the run's name
    "/home/ci/work/renamed-run/tasks/t",             # the run folder renamed since: from `tasks` on
    "runs/run-1/tasks/t",                            # relative to the runner's working directory
    "C:\\bench\\runs\\run-1\\tasks\\t",               # a Windows runner
    "tasks/t",                                       # the flat layout, as it is
])
def test_the_runners_own_artifact_dir_is_mapped_into_the_run(tmp_path, recorded):
    run = make_run(tmp_path, [row("t", status="failed", artifact_dir=recorded, metrics=RECORDED)],
                   artifacts={"tasks/t": {"history.json": HISTORY}})
    p = run_stages(run).processed
    a = _attempt(p)
    assert _history_used(a)
    assert a["evidence"]["dir"] == "tasks/t"
    assert a["artifact_dir"] == recorded  # the row's text, as recorded
    assert _unsafe(p) == []


def test_the_absolute_path_of_this_very_run_folder_is_read_from_inside_it(tmp_path):
    r = row("t", status="failed", metrics=RECORDED)
    run = make_run(tmp_path, [r], artifacts={"tasks/t": {"history.json": HISTORY}})
    r["artifact_dir"] = str(run / "tasks" / "t")
    (run / "results.jsonl").write_text(json.dumps(r) + "\n", encoding="utf-8")
    p = run_stages(run).processed
    assert _history_used(_attempt(p))
    assert _unsafe(p) == []


@pytest.mark.parametrize("recorded", [
    "/Users/alice/bench/runs/run-1/../../outside",   # escapes after the run's name
    "/Users/alice/bench/runs/run-1/tasks/../../../outside",
    "/srv/outside",                                  # absolute, with nothing to map
    "runs/run-1/../../outside",
])
def test_a_mapped_artifact_dir_that_still_escapes_is_refused(tmp_path, recorded):
    _outside_with_history(tmp_path)
    run = make_run(tmp_path, [row("t", status="failed", artifact_dir=recorded, metrics=RECORDED)])
    p = run_stages(run).processed
    assert not _history_used(_attempt(p))
    assert _unsafe(p) == [{"line": 1, "task_id": "t", "attempt": 1, "artifact_dir": recorded}]


def test_a_mapped_artifact_dir_through_a_symlink_leaving_the_run_is_refused(tmp_path):
    outside = _outside_with_history(tmp_path)
    recorded = "/Users/alice/bench/runs/run-1/tasks/t"
    run = make_run(tmp_path, [row("t", status="failed", artifact_dir=recorded, metrics=RECORDED)])
    (run / "tasks").mkdir()
    os.symlink(outside, run / "tasks" / "t")
    p = run_stages(run).processed
    assert not _history_used(_attempt(p))
    assert _unsafe(p) == [{"line": 1, "task_id": "t", "attempt": 1, "artifact_dir": recorded}]


def test_without_artifact_dir_the_runners_attempt_folders_come_first(tmp_path):
    rows = [row("t", 1, "failed", artifact_dir=None, metrics=RECORDED),
            row("t", 2, "failed", artifact_dir=None, metrics=RECORDED),
            row("u", 1, "failed", metrics=RECORDED),
            row("v", 2, "failed", metrics=RECORDED)]
    run = make_run(tmp_path, rows, artifacts={
        "tasks/t/attempt_1": {"history.json": HISTORY}, "tasks/t/attempt_2": {"history.json": HISTORY},
        "tasks/t": {"history.json": []},  # attempt_1 wins over the flat folder of attempt 1
        "tasks/u": {"history.json": HISTORY},  # no attempt_1 folder: the flat convention
        "tasks/v/attempt-2": {"history.json": HISTORY}})
    p = run_stages(run).processed
    assert [_attempt(p, t, n)["evidence"]["dir"] for t, n in (("t", 1), ("t", 2), ("u", 1), ("v", 2))] == [
        "tasks/t/attempt_1", "tasks/t/attempt_2", "tasks/u", "tasks/v/attempt-2"]
    assert all(_history_used(a) for a in p.attempts)


def test_unsafe_dir_reported_with_its_line_and_attempt(tmp_path):
    rows = [row("a"), row("t", 2, "failed", artifact_dir="../x", metrics=RECORDED)]
    p = run_stages(make_run(tmp_path, rows)).processed
    assert _unsafe(p) == [{"line": 2, "task_id": "t", "attempt": 2, "artifact_dir": "../x"}]


@pytest.mark.parametrize("explicit", [True, False])
def test_symlinked_folder_leaving_the_run_is_refused(tmp_path, explicit):
    outside = _outside_with_history(tmp_path)
    r = row("t", status="failed", metrics=RECORDED)
    if explicit:
        r["artifact_dir"] = "tasks/t"
    run = make_run(tmp_path, [r])
    (run / "tasks").mkdir()
    os.symlink(outside, run / "tasks" / "t")
    p = run_stages(run).processed
    a = _attempt(p)
    assert not _history_used(a)
    assert not _episode_used(a)
    if explicit:
        assert _unsafe(p) == [{"line": 1, "task_id": "t", "attempt": 1, "artifact_dir": "tasks/t"}]


def test_symlinked_parent_folder_leaving_the_run_is_refused(tmp_path):
    outside = tmp_path / "outside"
    write_json(outside / "t" / "history.json", HISTORY)
    run = make_run(tmp_path, [row("t", status="failed", artifact_dir="tasks/t", metrics=RECORDED)])
    os.symlink(outside, run / "tasks")
    assert not _history_used(_attempt(run_stages(run).processed))


def test_symlinked_folder_inside_the_run_is_followed(tmp_path):
    run = make_run(tmp_path, [row("t", status="failed", metrics=RECORDED)], artifacts={"shared/t": {"history.json": HISTORY}})
    (run / "tasks").mkdir()
    os.symlink(run / "shared" / "t", run / "tasks" / "t")
    assert _history_used(_attempt(run_stages(run).processed))


def test_symlinked_file_leaving_the_run_is_unavailable(tmp_path):
    outside = _outside_with_history(tmp_path)
    run = make_run(tmp_path, [row("t", status="failed", metrics=RECORDED)], artifacts={"tasks/t": {"episode.json": EPISODE}})
    os.symlink(outside / "history.json", run / "tasks" / "t" / "history.json")
    a = _attempt(run_stages(run).processed)
    assert not _history_used(a)
    # Availability is per file: the regular episode.json beside it is still read.
    assert _episode_used(a)


def test_symlinked_file_inside_the_run_is_read(tmp_path):
    run = make_run(tmp_path, [row("t", status="failed", metrics=RECORDED)], artifacts={"shared": {"h.json": HISTORY}})
    (run / "tasks" / "t").mkdir(parents=True)
    os.symlink(run / "shared" / "h.json", run / "tasks" / "t" / "history.json")
    assert _history_used(_attempt(run_stages(run).processed))


def test_dangling_symlink_is_unavailable(tmp_path):
    run = make_run(tmp_path, [row("t", status="failed", metrics=RECORDED)])
    (run / "tasks" / "t").mkdir(parents=True)
    os.symlink(run / "nowhere.json", run / "tasks" / "t" / "history.json")
    assert not _history_used(_attempt(run_stages(run).processed))


def test_fifo_named_history_json_is_unavailable_and_does_not_hang(tmp_path):
    run = make_run(tmp_path, [row("t", status="failed", metrics=RECORDED)], artifacts={"tasks/t": {"episode.json": EPISODE}})
    fifo = run / "tasks" / "t" / "history.json"
    os.mkfifo(fifo)
    result: dict = {}

    def work():
        try:
            result["processed"] = run_stages(run).processed
        except BaseException as exc:  # pragma: no cover - reported below
            result["error"] = exc

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(timeout=5)
    if thread.is_alive():
        # Release the blocked reader (open for writing, then close: the reader sees EOF).
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        thread.join(timeout=5)
        pytest.fail("the stages blocked on a FIFO named history.json")
    assert "error" not in result, result.get("error")
    a = _attempt(result["processed"])
    assert not _history_used(a)
    assert _episode_used(a)


def test_directory_named_history_json_is_unavailable(tmp_path):
    run = make_run(tmp_path, [row("t", status="failed", metrics=RECORDED)], artifacts={"tasks/t": {"episode.json": EPISODE}})
    (run / "tasks" / "t" / "history.json").mkdir()
    a = _attempt(run_stages(run).processed)
    assert not _history_used(a)
    assert _episode_used(a)


def test_directory_named_episode_json_is_unavailable(tmp_path):
    run = make_run(tmp_path, [row("t", status="failed", metrics=RECORDED)], artifacts={"tasks/t": {"history.json": HISTORY}})
    (run / "tasks" / "t" / "episode.json").mkdir()
    a = _attempt(run_stages(run).processed)
    assert _history_used(a)
    assert not _episode_used(a)


# --- R3: unavailable content ------------------------------------------------------------

@pytest.fixture(scope="module")
def content_runs(tmp_path_factory):
    """{table: {case index: attempt}}: one run folder per table, one task per file content."""
    cache: dict[str, dict[int, dict]] = {}

    def get(table: str, contents: list, make_files) -> dict[int, dict]:
        if table not in cache:
            rows = [row(f"c{i}", status="failed", metrics=RECORDED) for i in range(len(contents))]
            artifacts = {f"tasks/c{i}": make_files(c) for i, c in enumerate(contents)}
            processed = run_stages(make_run(tmp_path_factory.mktemp(table), rows, artifacts=artifacts)).processed
            cache[table] = {int(a["task_id"][1:]): a for a in processed.attempts}
        return cache[table]

    return get


BAD_HISTORY = [
        b"",
        b"   \n",
        b"not json",
        b'[{"type": "assistant", "usage": {}',
        b'[{"type": "user", "content": "\xff\xfe"}]',
        b"\xef\xbb\xbf\xff",
        b"{}",
        b'{"foo": []}',
        b'{"messages": {}}',
        b'{"messages": "x"}',
        b'{"messages": null}',
        b'"a string"',
        b"42",
        b"null",
        b"true",
]


@pytest.mark.parametrize(("i", "content"), list(enumerate(BAD_HISTORY)))
def test_unavailable_history_falls_back_to_recorded(content_runs, i, content):
    a = content_runs("history", BAD_HISTORY, lambda c: {"history.json": c, "episode.json": EPISODE})[i]
    assert not _history_used(a)
    assert _episode_used(a)


def test_history_as_messages_object_is_accepted(tmp_path):
    run = make_run(tmp_path, [row("t", status="failed", metrics=RECORDED)],
                   artifacts={"tasks/t": {"history.json": {"messages": HISTORY, "other": 1}}})
    assert _history_used(_attempt(run_stages(run).processed))


BAD_EPISODE = [b"[]", b"[1, 2]", b'"x"', b"null", b"not json", b"", b'{"events": []']


@pytest.mark.parametrize(("i", "content"), list(enumerate(BAD_EPISODE)))
def test_unavailable_episode_falls_back_to_recorded(content_runs, i, content):
    a = content_runs("episode", BAD_EPISODE, lambda c: {"history.json": HISTORY, "episode.json": c})[i]
    assert _history_used(a)
    assert not _episode_used(a)


def test_history_missing_episode_present_is_judged_per_file(tmp_path):
    run = make_run(tmp_path, [row("t", status="failed", metrics=RECORDED)], artifacts={"tasks/t": {"episode.json": EPISODE}})
    a = _attempt(run_stages(run).processed)
    assert not _history_used(a)
    assert _episode_used(a)


# --- R43: NUL bytes ------------------------------------------------------------------------

def test_nul_in_artifact_dir_means_no_artifacts(tmp_path):
    r = row("t", status="failed", artifact_dir="tasks/t\x00", metrics=RECORDED)
    p = run_stages(make_run(tmp_path, [r], artifacts={"tasks/t": {"history.json": HISTORY, "episode.json": EPISODE}})).processed
    a = _attempt(p)
    assert not _history_used(a)
    assert not _episode_used(a)
    assert p.metrics["coverage"]["attempts"] == 1


def test_nul_in_task_id_means_no_artifacts(tmp_path):
    r = row("t\x00", status="failed", metrics=RECORDED)
    p = run_stages(make_run(tmp_path, [r], artifacts={"tasks/t": {"history.json": HISTORY}})).processed
    a = _attempt(p, "t\x00")
    assert not _history_used(a)
    assert not _episode_used(a)


def test_nul_in_task_id_means_no_artifacts_even_with_a_usable_artifact_dir(tmp_path):
    """R43 names the row, not the folder: its recorded folder is not read either, and its
    recorded values stand (R3)."""
    r = row("a\x00b", status="passed", artifact_dir="tasks/x", metrics=RECORDED)
    p = run_stages(make_run(tmp_path, [r], artifacts={"tasks/x": {"history.json": HISTORY, "episode.json": EPISODE}})).processed
    a = _attempt(p, "a\x00b")
    assert not _history_used(a) and not _episode_used(a)
    assert [u["reason"] for u in p.metrics["data_quality"]["unsafe_artifact_dirs"]] == ["the task_id contains a NUL byte"]


# --- file statuses (trace_artifact.status vocabulary) ----------------------------------

def test_read_json_file_statuses(tmp_path):
    run = make_run(tmp_path, [row("t")], artifacts={"tasks/t": {"trace.json": {"final_response": "", "tool_calls": []},
                                                                "bad.json": b"{oops"}})
    real = os.path.realpath(run)
    ok = read_json_file(run, real, "tasks/t/trace.json")
    assert ok.status == "available" and ok.value == {"final_response": "", "tool_calls": []}
    assert read_json_file(run, real, "tasks/t/missing.json").status == "missing"
    assert read_json_file(run, real, "tasks/t/bad.json").status == "invalid"
    (run / "tasks" / "t" / "dir.json").mkdir()
    assert read_json_file(run, real, "tasks/t/dir.json").status == "unreadable"
    os.mkfifo(run / "tasks" / "t" / "fifo.json")
    assert read_json_file(run, real, "tasks/t/fifo.json").status == "unreadable"


def test_symlink_to_sibling_folder_with_run_name_prefix_is_refused(tmp_path):
    """A sibling 'run-1x' shares the run folder's name as a string prefix but is outside."""
    sibling = tmp_path / "run-1x"
    write_json(sibling / "history.json", HISTORY)
    run = make_run(tmp_path, [row("t", status="failed", artifact_dir="tasks/t", metrics=RECORDED)])
    (run / "tasks").mkdir()
    os.symlink(sibling, run / "tasks" / "t")
    assert not _history_used(_attempt(run_stages(run).processed))


def test_symlinked_file_to_sibling_with_run_name_prefix_is_unavailable(tmp_path):
    sibling = tmp_path / "run-1x"
    write_json(sibling / "history.json", HISTORY)
    run = make_run(tmp_path, [row("t", status="failed", metrics=RECORDED)])
    (run / "tasks" / "t").mkdir(parents=True)
    os.symlink(sibling / "history.json", run / "tasks" / "t" / "history.json")
    assert not _history_used(_attempt(run_stages(run).processed))


def test_artifact_folder_path_through_a_regular_file(tmp_path):
    run = make_run(tmp_path, [row("t", status="failed", artifact_dir="tasks/t", metrics=RECORDED)])
    (run / "tasks").write_text("not a folder", encoding="utf-8")
    assert not _history_used(_attempt(run_stages(run).processed))


def test_deeply_nested_history_is_not_fatal(tmp_path):
    deep = ("[" * 100000 + "]" * 100000).encode()
    run = make_run(tmp_path, [row("t", status="failed", metrics=RECORDED)], artifacts={"tasks/t": {"history.json": deep}})
    a = _attempt(run_stages(run).processed)
    # Either unavailable (recorded) or an array with no message objects (derived, no calls).
    assert (a["llm_calls"], a["tool_calls"]) in {(9, 8), (None, 0)}


def test_socket_named_history_json_is_unavailable():
    import shutil
    import socket
    import tempfile

    short = Path(tempfile.mkdtemp(prefix="s", dir="/tmp"))  # a unix socket path must be short
    try:
        run = make_run(short, [row("t", status="failed", metrics=RECORDED)], artifacts={"tasks/t": {"episode.json": EPISODE}})
        path = run / "tasks" / "t" / "history.json"
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(path))
            a = _attempt(run_stages(run).processed)
        finally:
            sock.close()
    finally:
        shutil.rmtree(short, ignore_errors=True)
    assert not _history_used(a)
    assert _episode_used(a)


def test_character_device_named_history_json_is_unreadable(tmp_path):
    import stat

    run = make_run(tmp_path, [row("t", status="failed", metrics=RECORDED)])
    (run / "tasks" / "t").mkdir(parents=True)
    try:
        os.mknod(run / "tasks" / "t" / "history.json", stat.S_IFCHR | 0o600, os.makedev(1, 3))  # /dev/null
    except (PermissionError, OSError):  # no CAP_MKNOD: the system's own device node
        os.symlink("/dev/null", run / "tasks" / "t" / "history.json")
    assert read_json_file(run, os.path.realpath(run), "tasks/t/history.json").status == "unreadable"
    assert not _history_used(_attempt(run_stages(run).processed))


# --- the fast path of read_json_file and the per-run folder cache -------------------------

def test_read_json_file_reasons_match_the_careful_path(tmp_path):
    run = make_run(tmp_path, [row("t")], artifacts={"tasks/t": {"empty.json": b"  \n", "bad.json": b"{oops",
                                                                "latin.json": b'"\xe9"'}})
    real = os.path.realpath(run)
    assert read_json_file(run, real, "tasks/t/empty.json").reason == "empty file"
    assert read_json_file(run, real, "tasks/t/bad.json").reason.startswith("not valid JSON")
    assert read_json_file(run, real, "tasks/t/latin.json").reason == "not UTF-8"
    assert read_json_file(run, real, "tasks/t/missing.json").reason == "file not found"
    os.symlink(run / "tasks" / "t" / "nowhere.json", run / "tasks" / "t" / "dangling.json")
    assert read_json_file(run, real, "tasks/t/dangling.json").reason == "dangling symlink"
    (run / "tasks" / "t" / "dir.json").mkdir()
    assert read_json_file(run, real, "tasks/t/dir.json").reason == "not a regular file"


def test_read_all_reads_past_a_stale_size(tmp_path):
    """A file that grew after its size was taken is still read to its end."""
    from bench_pipeline.artifacts import _read_all

    path = tmp_path / "grown.json"
    path.write_bytes(b'{"a": "' + b"x" * 3_000_000 + b'"}')
    fd = os.open(path, os.O_RDONLY)
    try:
        assert _read_all(fd, 10) == path.read_bytes()
    finally:
        os.close(fd)


def test_folder_cache_does_not_hide_a_symlink_below_a_checked_parent(tmp_path):
    """Plain parents are remembered per run; a symlinked attempt folder below one is still refused."""
    from bench_pipeline.artifacts import resolve_artifact_dir

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    run = make_run(tmp_path, [row("t")])
    (run / "tasks" / "t" / "attempt-2").mkdir(parents=True)
    os.symlink(outside, run / "tasks" / "t" / "attempt-3")
    real, checked = os.path.realpath(run), {}
    assert resolve_artifact_dir(run, real, None, "t", 2, checked).relative == "tasks/t/attempt-2"
    assert os.path.join(real, "tasks", "t") in checked
    refused = resolve_artifact_dir(run, real, None, "t", 3, checked)
    assert refused.refused and "symlink" in refused.refused_reason
    inside = run / "tasks" / "u"
    os.symlink(run / "tasks" / "t", inside)  # a symlink that stays inside is followed
    assert resolve_artifact_dir(run, real, "tasks/u/attempt-2", "u", 1, checked).relative == "tasks/u/attempt-2"


def test_a_lone_surrogate_escape_is_not_json_text():
    """orjson refuses "\\ud800" and the standard library reads it as a string that no UTF-8
    writer can write again: both parsers refuse it (a bad row, an invalid file), a pair that
    makes one character is read."""
    for data in (b'{"error": "\\ud800"}', b'{"\\udfff": 1}', b'[["x", {"a": "\\ud83d"}]]'):
        with pytest.raises(ValueError, match="lone surrogate"):
            loads_json(data)
        with pytest.raises(ValueError, match="lone surrogate"):
            loads_exact(data)
    assert loads_json(b'{"e": "\\ud83d\\ude00", "n": NaN}')["e"] == "\U0001f600"


def test_a_run_whose_rows_and_manifest_hold_lone_surrogates_is_processed(tmp_path):
    rows = [row("t", metrics={"error": "\ud800"}), row("u")]
    run = make_run(tmp_path, rows, manifest={"started_at": "\ud800", "status": "completed"})
    result = run_stages(run, tmp_path / "out")
    assert [a["task_id"] for a in result.processed.attempts] == ["u"]
    assert [b["line"] for b in result.processed.metrics["data_quality"]["bad_rows"]] == [1]
    assert (tmp_path / "out" / "report.html").stat().st_size > 0


def nested(levels: int, inner: bytes = b"1") -> bytes:
    """JSON text of ``levels`` arrays inside one another around ``inner``."""
    return b"[" * levels + inner + b"]" * levels


def test_json_nested_deeper_than_the_writer_writes_is_not_read():
    """Arrays and objects 254 deep are read, by both parsers (orjson, and the standard library
    it falls back to for a NaN); 255 deep are refused, as is JSON deeper than either parser
    reads at all (1,025 and 100,000 levels): whatever is read can be written again."""
    assert MAX_DEPTH == 254
    expected = 1
    for _ in range(254):
        expected = [expected]
    assert loads_json(nested(254)) == loads_exact(nested(254)) == expected
    assert loads_json(b'{"a": ' + nested(253, b"NaN") + b"}")["a"][0] is not None
    for data in (nested(255), b'{"a": ' + nested(254) + b"}", b'{"a": ' + nested(254, b"NaN") + b"}",
                 b'[{"b": ' + nested(253, b'{"c": 1}') + b"}]", nested(1025), nested(100_000)):
        with pytest.raises(TooDeep, match="nested deeper than 254 levels"):
            loads_json(data)
    with pytest.raises(TooDeep):
        loads_exact(nested(255))


def test_an_artifact_nested_too_deeply_is_invalid_saying_why(tmp_path):
    (tmp_path / "deep.json").write_bytes(b'{"messages": ' + nested(254) + b"}")
    read = read_json_file(tmp_path, None, "deep.json")
    assert (read.status, read.value) == ("invalid", None)
    assert read.reason.startswith("JSON nested deeper than 254 levels")


def test_an_artifact_starting_with_a_byte_order_mark_is_read(tmp_path):
    (tmp_path / "history.json").write_bytes(b'\xef\xbb\xbf[{"type": "user", "content": "hi"}]')
    read = read_json_file(tmp_path, None, "history.json")
    assert (read.status, read.value) == ("available", [{"type": "user", "content": "hi"}])
    assert loads_exact(b'\xef\xbb\xbf{"n": 1}') == {"n": 1}
