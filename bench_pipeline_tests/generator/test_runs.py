"""Tests of `generate_runs` (bench_pipeline/generator/runs.py): the run folders it writes.

The checks read the written files back, independently of the generator's internals, so they
also guard the run-directory.md layout the pipeline relies on.
"""

from __future__ import annotations

import collections
import json
import ntpath
import posixpath
import re
from pathlib import Path

import pytest

from bench_pipeline.attempt_metrics import derive_episode, derive_history, is_device_action
from bench_pipeline.attempt_metrics.assemble import measured_values
from bench_pipeline.generator import generate_runs
from bench_pipeline.generator.outcomes import OUTCOMES
from bench_pipeline.vocabulary import FAILURE_CLASSES, FAILURE_STAGES, ROW_METRICS_KEYS, STATUSES
from bench_pipeline_tests.support.reference_tables import GENERATED_ROW_KEYS

#: Fields every clean attempt's history.json gives (episode.json may replace some).
DERIVED_FROM_FILES = ("llm_calls", "llm_time_ms", "input_tokens", "tool_calls", "device_actions",
                      "screenshots_taken", "tool_errors")
RUN_ID = re.compile(r"^2026-\d\d-\d\dT\d\d-\d\d-\d\dZ-[0-9a-f]{6}$")
ROW_KEYS = set(GENERATED_ROW_KEYS)
# (status, failure_class, raw success, agent_eligible) of the generator's outcome kinds, which
# test_outcomes.py proves to be the reference's outcome table.
OUTCOME_TABLE = {outcome[:4] for outcome in OUTCOMES.values()}
NUMERIC_METRICS = {"task_wall_ms", "wall_ms", "setup_ms", "screenshot_capture_ms", "cost_usd", "llm_calls",
                   "tool_calls", "input_tokens", "output_tokens", "total_tokens"}
EDGE_CASES = [
    "legacy_row", "non_json_line", "row_without_task_id", "duplicate_row", "missing_planned_attempt",
    "unsafe_artifact_dir", "null_artifact_dir", "broken_history", "history_object", "missing_episode",
    "episode_not_object", "blank_line", "unknown_keys", "bool_in_numeric", "null_category", "missing_trace",
    "invalid_trace", "script_response", "metrics_k_absent", "running_run",
]


# ----------------------------------------------------------------------------- helpers

def load(path: Path) -> object:
    """Parsed JSON, or the string "<invalid>" when the file is not valid JSON."""
    try:
        return json.loads(path.read_bytes())
    except ValueError:
        return "<invalid>"


def result_lines(run: Path) -> list[bytes]:
    return run.joinpath("results.jsonl").read_bytes().split(b"\n")[:-1]


def rows_of(run: Path) -> list[dict]:
    """The results.jsonl lines that are JSON objects with a string task_id."""
    rows = []
    for line in result_lines(run):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("task_id"), str):
            rows.append(value)
    return rows


def unsafe(artifact_dir: str) -> bool:
    """R5: absolute (POSIX, backslash or drive) or leaving the run folder after normalising."""
    path = artifact_dir.replace("\\", "/")
    if path.startswith("/") or ntpath.splitdrive(artifact_dir)[0]:
        return True
    return posixpath.normpath(path).split("/")[0] == ".."


def folder_of(row: dict) -> str | None:
    """The row's artifact folder relative to the run (R4), or None when refused."""
    value = row.get("artifact_dir")
    if isinstance(value, str):
        return None if unsafe(value) else value
    attempt = row.get("attempt") or 1
    return f"tasks/{row['task_id']}" if attempt == 1 else f"tasks/{row['task_id']}/attempt-{attempt}"


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def scan_edge_cases(runs: list[Path]) -> collections.Counter:
    """Count every edge case visible in the files of `runs`."""
    found: collections.Counter = collections.Counter()
    for run in runs:
        manifest = load(run / "manifest.json")
        found["running_run"] += manifest["status"] == "running"
        found["metrics_k_absent"] += "metrics_k" not in manifest
        suite_categories = {t["id"]: t["category"] for t in load(run / "suite.json")["tasks"]}
        seen: collections.Counter = collections.Counter()
        for line in result_lines(run):
            if not line.strip():
                found["blank_line"] += 1
                continue
            try:
                row = json.loads(line)
            except ValueError:
                row = None
            if not isinstance(row, dict):
                found["non_json_line"] += 1
                continue
            if "task_id" not in row:
                found["row_without_task_id"] += 1
                continue
            seen[(row["task_id"], row.get("attempt") or 1)] += 1
            if "attempt" not in row and "wall_ms" in row and "agent_eligible" not in row and row["success"] is None:
                found["legacy_row"] += 1
                continue
            found["unknown_keys"] += bool(set(row) - ROW_KEYS - {"rejudged_at"})
            found["bool_in_numeric"] += any(row["metrics"].get(k) is True for k in NUMERIC_METRICS)
            if row["category"] is None and suite_categories[row["task_id"]] is not None:
                found["null_category"] += 1
            if row["artifact_dir"] is None:
                found["null_artifact_dir"] += 1
            elif unsafe(row["artifact_dir"]):
                found["unsafe_artifact_dir"] += 1
                continue
            folder = run / folder_of(row)
            history = load(folder / "history.json")
            found["broken_history"] += not isinstance(history, list) and not (
                isinstance(history, dict) and isinstance(history.get("messages"), list))
            found["history_object"] += isinstance(history, dict) and "messages" in history
            if row["episode_id"] or (row["metrics"].get("episode_error") or "").endswith("not found"):
                found["missing_episode"] += not (folder / "episode.json").exists()
            if (folder / "episode.json").exists():
                found["episode_not_object"] += not isinstance(load(folder / "episode.json"), dict)
            if not (folder / "trace.json").exists():
                found["missing_trace"] += 1
            else:
                trace = load(folder / "trace.json")
                found["invalid_trace"] += not isinstance(trace, dict)
                if isinstance(trace, dict):
                    found["script_response"] += "<script>alert(1)</script>" in (trace["final_response"] or "")
        found["duplicate_row"] += sum(1 for count in seen.values() if count > 1)
        if manifest["status"] == "completed":
            planned = {(p["task_id"], n) for p in manifest["planned"] for n in range(1, p["attempts"] + 1)}
            found["missing_planned_attempt"] += len(planned - set(seen))
    return found


# ----------------------------------------------------------------------------- independent derivation

def _json_object(text: object) -> dict:
    if not isinstance(text, str):
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _is_device(name: str, tool_input: object) -> bool:
    """The metric's reference 3.4 rule on a tool input as written (a JSON string or an object)."""
    return is_device_action(name, _json_object(tool_input) if isinstance(tool_input, str) else tool_input)


# ----------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def edge_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return generate_runs(tmp_path_factory.mktemp("edge"), runs=50, seed=11)


@pytest.fixture(scope="module")
def clean_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return generate_runs(tmp_path_factory.mktemp("clean"), runs=6, seed=5, tasks=18, repeats=3,
                         history_messages=40, edge_cases=False)


# ----------------------------------------------------------------------------- determinism and API

def test_same_seed_gives_identical_bytes(tmp_path: Path) -> None:
    first = generate_runs(tmp_path / "a", runs=12, seed=3, tasks=5, repeats=2, history_messages=12)
    second = generate_runs(tmp_path / "b", runs=12, seed=3, tasks=5, repeats=2, history_messages=12)
    assert [p.name for p in first] == [p.name for p in second]
    a, b = snapshot(tmp_path / "a"), snapshot(tmp_path / "b")
    assert len(a) > 12 * 5 * 2 * 3
    assert a == b


def test_different_seed_gives_different_runs(tmp_path: Path) -> None:
    one = generate_runs(tmp_path / "a", runs=2, seed=1, tasks=3, repeats=2, history_messages=10)
    two = generate_runs(tmp_path / "b", runs=2, seed=2, tasks=3, repeats=2, history_messages=10)
    assert {p.name for p in one}.isdisjoint(p.name for p in two)
    assert one[0].joinpath("results.jsonl").read_bytes() != two[0].joinpath("results.jsonl").read_bytes()


def test_run_ids_are_seeded_and_increasing(tmp_path: Path) -> None:
    runs = generate_runs(tmp_path, runs=6, seed=9, tasks=2, repeats=1, edge_cases=False)
    assert [p.parent for p in runs] == [tmp_path] * 6
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in runs]
    assert runs[0].name.startswith("2026-11-28T10-00-00Z-")
    assert all(RUN_ID.match(p.name) for p in runs)
    times = [p.name[:20] for p in runs]
    assert times == sorted(set(times))
    for run in runs:
        manifest = load(run / "manifest.json")
        assert manifest["run_id"] == run.name
        assert manifest["started_at"] == f"{run.name[:13]}:{run.name[14:16]}:{run.name[17:19]}Z"


def test_existing_run_folder_is_not_overwritten(tmp_path: Path) -> None:
    generate_runs(tmp_path, runs=1, seed=4, tasks=1, repeats=1)
    with pytest.raises(FileExistsError):
        generate_runs(tmp_path, runs=1, seed=4, tasks=1, repeats=1)


@pytest.mark.parametrize("kwargs", [{"runs": -1}, {"tasks": 0}, {"repeats": 0}, {"history_messages": 3}])
def test_invalid_arguments_are_refused(tmp_path: Path, kwargs: dict) -> None:
    args = {"runs": 1, "seed": 1, **kwargs}
    with pytest.raises(ValueError):
        generate_runs(tmp_path, **args)


def test_progress_reports_each_run(tmp_path: Path) -> None:
    messages: list[str] = []
    runs = generate_runs(tmp_path, runs=3, seed=2, tasks=2, repeats=1, progress=messages.append)
    assert len(messages) == 3
    assert [m.split(":")[0] for m in messages] == [p.name for p in runs]


# ----------------------------------------------------------------------------- clean layout

def test_clean_manifest_and_suite(clean_runs: list[Path]) -> None:
    for run in clean_runs:
        manifest = load(run / "manifest.json")
        suite = load(run / "suite.json")
        assert manifest["status"] == "completed"
        assert manifest["repeats"] == 3 and manifest["metrics_k"] == 3
        assert manifest["suite"] == {"name": "android-core", "version": "7"}
        assert {"code", "model", "judge", "platform", "active_skills", "finished_at"} <= set(manifest)
        assert suite["name"] == "android-core"
        assert [p["task_id"] for p in manifest["planned"]] == [t["id"] for t in suite["tasks"]]
        assert all(p["attempts"] == 3 for p in manifest["planned"])
        assert len(suite["tasks"]) == 18 and suite["tasks"][-1]["id"].endswith("_2")
        for task in suite["tasks"]:
            assert set(task) == {"id", "category", "prompt", "rubric_spec", "expected_answer",
                                 "expected_memory_ids", "timeout_s"}


def test_clean_rows_match_the_plan_and_folders(clean_runs: list[Path]) -> None:
    for run in clean_runs:
        manifest = load(run / "manifest.json")
        lines = result_lines(run)
        rows = [json.loads(line) for line in lines]
        assert all(set(row) == ROW_KEYS for row in rows)
        keys = [(r["task_id"], r["attempt"]) for r in rows]
        planned = [(p["task_id"], n) for p in manifest["planned"] for n in range(1, p["attempts"] + 1)]
        assert keys == planned
        for row in rows:
            expected = f"tasks/{row['task_id']}" + ("" if row["attempt"] == 1 else f"/attempt-{row['attempt']}")
            assert row["artifact_dir"] == expected
            folder = run / expected
            assert isinstance(load(folder / "history.json"), list)
            trace = load(folder / "trace.json")
            assert set(trace) == {"final_response", "tool_calls"}
            executed = row["metrics"]["llm_calls"] is not None
            assert (folder / "episode.json").exists() == executed
            if executed and row["episode_id"] is not None:
                assert load(folder / "episode.json")["episode_id"] == row["episode_id"]
            assert (folder / "pre.png").exists() == row["pre_screenshot_file"]
            assert (folder / "post.png").exists() == row["post_screenshot_file"]
            assert "<script>" not in (trace["final_response"] or "")


def test_clean_mode_has_no_edge_cases(clean_runs: list[Path]) -> None:
    found = scan_edge_cases(clean_runs)
    assert {name: found[name] for name in EDGE_CASES if found[name]} == {}


def test_recorded_metrics_equal_what_the_artifacts_give(clean_runs: list[Path]) -> None:
    checked = 0
    for run in clean_runs:
        for row in rows_of(run):
            folder = run / row["artifact_dir"]
            episode_path = folder / "episode.json"
            episode = load(episode_path) if episode_path.exists() else None
            # The pipeline's own formulas and precedence (reference 3.3-3.5, R3, R34) on the
            # attempt's files: every field they derive equals the value the runner recorded.
            history = derive_history(load(folder / "history.json"))
            values, provenance = measured_values(row, history, derive_episode(episode) if episode else None)
            derived = {key: values[key] for key, source in provenance.items()
                       if source == "derived" and key in row["metrics"]}
            assert set(DERIVED_FROM_FILES) <= set(derived), sorted(derived)
            assert derived == {key: row["metrics"][key] for key in derived}, (run.name, row["task_id"], row["attempt"])
            checked += 1
    assert checked == 6 * 18 * 3


def test_failure_reference_points_at_the_first_error(clean_runs: list[Path]) -> None:
    pointed = 0
    for run in clean_runs:
        for row in rows_of(run):
            ref = row["metrics"]["failure_event_ref"]
            if row["success"] is True:
                assert ref is None and row["first_failure_stage"] is None
                continue
            if ref is None:
                continue
            source, index = ref.split(":")
            events = load(run / row["artifact_dir"] / f"{source}.json")
            events = events["events"] if source == "episode" else events
            event = events[int(index)]
            assert event["type"] == "tool_result"
            if row["first_failure_stage"] not in ("setup", "evaluation"):
                # R23: an episode result without its input takes the last preceding one of its tool.
                tool_input = next((e["tool_input"] for e in events[int(index)::-1]
                                   if e.get("tool_name") == event["tool_name"] and "tool_input" in e), {})
                device = _is_device(event["tool_name"], tool_input)
                assert row["first_failure_stage"] == ("device_execution" if device else "unknown")
            pointed += 1
    assert pointed > 0


def test_outcomes_follow_the_reference_table(edge_runs: list[Path]) -> None:
    seen = collections.Counter()
    for run in edge_runs:
        for row in rows_of(run):
            if "attempt" not in row:
                continue  # legacy row
            key = (row["status"], row["failure_class"], row["success"], row["agent_eligible"])
            assert key in OUTCOME_TABLE
            seen[key] += 1
            quality = row["quality_score"]
            if not row["agent_eligible"]:
                assert quality is None
            elif row["success"]:
                assert quality == 1.0
            elif row["rubric"] and row["rubric_pass_count"] < row["rubric_total"]:
                assert quality == row["rubric_pass_count"] / row["rubric_total"] < 1
            else:
                assert quality == 0.0
    assert set(seen) == OUTCOME_TABLE
    total = sum(seen.values())
    assert seen[("passed", None, True, True)] / total > 0.4
    assert seen[("judge_error", "evaluation", None, False)] / total < 0.1


# ----------------------------------------------------------------------------- edge cases

def test_rows_speak_the_pipeline_vocabulary(edge_runs: list[Path]) -> None:
    """Every status, class and stage a row records is one the pipeline lists, and every
    metrics key it lists is written (unknown keys come only from the extra_keys edge case)."""
    for run in edge_runs:
        for row in rows_of(run):
            if "attempt" not in row:
                continue  # legacy row
            assert row["status"] in STATUSES
            assert row["failure_class"] in (*FAILURE_CLASSES, None)
            assert row["first_failure_stage"] in (*FAILURE_STAGES, None)
            assert set(ROW_METRICS_KEYS) <= set(row["metrics"])


def test_every_edge_case_appears_in_50_runs(edge_runs: list[Path]) -> None:
    found = scan_edge_cases(edge_runs)
    assert {name: found[name] for name in EDGE_CASES if not found[name]} == {}
    rows = sum(len(result_lines(run)) for run in edge_runs)
    row_level = [n for n in EDGE_CASES if n not in ("metrics_k_absent", "running_run", "blank_line", "non_json_line")]
    assert all(found[name] < rows * 0.1 for name in row_level), found


def test_most_runs_are_completed(edge_runs: list[Path]) -> None:
    statuses = collections.Counter(load(run / "manifest.json")["status"] for run in edge_runs)
    assert statuses["running"] >= 1
    assert statuses["completed"] >= 45


def test_safe_artifact_dirs_resolve_to_folders(edge_runs: list[Path]) -> None:
    checked = 0
    for run in edge_runs:
        for row in rows_of(run):
            folder = folder_of(row)
            if folder is None:
                continue
            assert (run / folder).is_dir(), (run.name, row["task_id"], row.get("attempt"))
            assert (run / folder / "history.json").is_file()
            checked += 1
    assert checked > 1500


def test_artifacts_exercise_history_and_episode_variants(edge_runs: list[Path]) -> None:
    usage_keys: set[str] = set()
    tools: set[str] = set()
    results: collections.Counter = collections.Counter()
    events: collections.Counter = collections.Counter()
    for run in edge_runs[:10]:
        for history_path in run.glob("tasks/**/history.json"):
            history = load(history_path)
            if not isinstance(history, list):
                continue
            for message in history:
                usage_keys |= set(message.get("usage") or {})
                results["image"] += bool(message.get("attachments"))
                if message["type"] == "tool_call":
                    tools.add(message["tool_name"])
                    tool_input = message["tool_input"]
                    results["string_input"] += isinstance(tool_input, str)
                    if isinstance(tool_input, dict):
                        results["contacts_query"] += message["tool_name"] == "bridge_contacts" and \
                            tool_input.get("action", "").lower() == "query"
                        results["quick_list"] += tool_input.get("list") is True
                if message["type"] == "tool_result":
                    content = message["content"]
                    results["is_error"] += message["is_error"]
                    results["ok_false"] += _json_object(content).get("ok") is False and not message["is_error"]
                    results["shot_json"] += _json_object(content).get("width") == 1080
                    results["shot_text"] += "screenshot observation" in content
        for episode_path in run.glob("tasks/**/episode.json"):
            episode = load(episode_path)
            if not isinstance(episode, dict):
                continue
            ttft = episode["extra"].get("first_token_time_ms")
            events["ttft_zero"] += ttft == 0
            events["ttft_absent"] += ttft is None
            for event in episode["events"]:
                if event["type"] == "tool_result":
                    duration = event.get("duration_ms")
                    events["no_input"] += "tool_input" not in event
                    events["negative"] += duration is not None and duration < 0
                    events["no_duration"] += duration is None
                    events["float"] += isinstance(duration, float)
                    events["replan"] += event.get("needs_replan") is True
    assert {"input_tokens", "output_tokens", "prompt_tokens", "completion_tokens", "cached_tokens",
            "cached_input_tokens", "total_tokens", "reasoning_tokens"} <= usage_keys
    assert {"tap", "swipe", "enter_text", "open_app", "screenshot", "search", "recall_memory",
            "bridge_contacts", "quick_action"} <= tools
    assert {k for k, v in results.items() if v == 0} == set()
    assert {k for k, v in events.items() if v == 0} == set()


def test_legacy_rows_carry_top_level_metrics(edge_runs: list[Path]) -> None:
    legacy = [row for run in edge_runs for row in rows_of(run) if "attempt" not in row]
    assert legacy
    for row in legacy:
        assert "metrics" not in row and "agent_eligible" not in row and "artifact_dir" not in row
        assert row["success"] is None and row["status"] in ("passed", "failed")
        assert "wall_ms" in row and "setup_ms" in row


def test_systems_make_runs_that_repeat_one_model_and_git_sha(tmp_path: Path) -> None:
    folders = generate_runs(tmp_path / "s", runs=5, seed=3, tasks=3, repeats=2, history_messages=6, systems=2)
    builds = [(m["model"]["name"], m["code"]["git_sha"], m["code"]["dirty"])
              for m in (json.loads((f / "manifest.json").read_text()) for f in folders)]
    assert builds[0] == builds[2] == builds[4] and builds[1] == builds[3] and builds[0] != builds[1]
    assert all(dirty is False for _, _, dirty in builds)
    again = generate_runs(tmp_path / "t", runs=5, seed=3, tasks=3, repeats=2, history_messages=6, systems=2)
    assert [(f / "manifest.json").read_bytes() for f in again] == [(f / "manifest.json").read_bytes() for f in folders]
