"""Tests of results.jsonl rows in the runner's layout (bench_pipeline/generator/runner_rows.py),
in memory: the runner's keys, its artifact paths as the pipeline maps them, and the earlier
judgement of a re-judged run."""

from __future__ import annotations

import random
from datetime import datetime, timezone

import orjson
import pytest

from bench_pipeline.artifacts import normalize_relative
from bench_pipeline.generator.attempts import build_attempt
from bench_pipeline.generator.edge_cases import artifact_dir_value, legacy_row
from bench_pipeline.generator.files import flat_folder
from bench_pipeline.generator.records import RunDraw, Task
from bench_pipeline.generator.runner_rows import (
    REJUDGED_ROWS,
    RUNNER_ROW_KEYS,
    RunnerRows,
    earlier_judgement,
    flipped_row,
    is_rejudged,
    judge_error_row,
    runner_folder,
)
from bench_pipeline.layouts import map_artifact_dir, row_view
from bench_pipeline_tests.support.reference_tables import GENERATED_ROW_KEYS

RUN_ID = "2026-11-28T10-00-00Z-abcdef"
STARTED = datetime(2026, 11, 28, 10, 0, 0, tzinfo=timezone.utc)
TASK = Task(id="send_sms_ana", category="messaging", prompt="Send it.",
            rubric_spec=[{"id": "r1", "requirement": "sent"}, {"id": "r2", "requirement": "to Ana"}],
            expected_answer=None, expected_memory_ids=[], env_checks=["sms_sent"], skill="messaging",
            timeout_s=180, pass_probability=0.8)
ROWS = RunnerRows(RUN_ID, 3, "/Users/alice/bench")


def draw() -> RunDraw:
    return RunDraw(index=0, run_id=RUN_ID, seed=1, started=STARTED, status="completed", model="agent-model-large",
                   device=("emulator-pixel", "android-15"), active_skills=["messaging"], judge_enabled=True,
                   judge_model="judge-model", with_cost=True, edges=frozenset())


def flat_row(seed: int = 6, attempt: int = 2, edges: frozenset[str] = frozenset()) -> dict:
    return build_attempt(random.Random(seed), draw(), TASK, attempt, STARTED, 12, edges).row


def test_runner_folders() -> None:
    assert runner_folder("t", 1, 3) == "tasks/t/attempt_1"
    assert runner_folder("t", 3, 3) == "tasks/t/attempt_3"
    assert runner_folder("t", 1, 1) == "tasks/t"


def test_a_runner_row_has_the_runner_keys_and_every_other_field_in_metrics() -> None:
    flat = flat_row()
    row = ROWS.row(flat, TASK)
    assert tuple(sorted(row)) == tuple(sorted(RUNNER_ROW_KEYS))
    assert (row["suite"], row["run_id"]) == ("android-core", RUN_ID)
    assert row["description_for_judge"].startswith("The user asked: Send it.")
    assert row["rubric_spec"] == [{"id": "r1", "check": "sent"}, {"id": "r2", "check": "to Ana"}]
    for key in set(GENERATED_ROW_KEYS) - set(RUNNER_ROW_KEYS):
        assert key in row["metrics"], key
    for key, value in flat["metrics"].items():
        assert row["metrics"][key] == value
    # The pipeline's reading of the runner's row gives the flat row's fields back.
    view = row_view(row)
    for key in ("success", "agent_eligible", "failure_class", "first_failure_stage", "quality_score", "episode_id",
                "active_skills", "expected_answer_match", "pre_screenshot_file", "recovery_succeeded"):
        assert view[key] == flat[key], key
    assert [r["requirement"] for r in view["rubric_spec"]] == ["sent", "to Ana"]
    assert [o["id"] for o in view["trace_observations"]] == [o["id"] for o in flat["trace_observations"]]
    assert [o["passed"] for o in view["trace_observations"]] == [o["passed"] for o in flat["trace_observations"]]
    assert all(set(o) == {"id", "description", "passed", "reason"} for o in view["trace_observations"])
    assert all(set(a) == {"path", "expected", "actual", "passed"} for a in row["metrics"]["environment_state_assertions"])
    assert [a["path"] for a in row["metrics"]["environment_state_assertions"]] == [
        a["id"] for a in flat["environment_state_assertions"]]


def test_hard_assertion_failures_keep_their_label_in_both_layouts() -> None:
    failures = [{"id": "no_forbidden_action", "requirement": "r", "actual": "a", "label": "No forbidden action"}]
    flat = {**flat_row(), "hard_assertion_failures": failures}
    assert ROWS.row(flat, TASK)["hard_assertion_failures"] == failures


def test_a_runner_line_has_its_keys_sorted() -> None:
    line = ROWS.line(flat_row(), TASK)
    row = orjson.loads(line)
    assert list(row) == sorted(row) and list(row["metrics"]) == sorted(row["metrics"])
    assert line == orjson.dumps(row, option=orjson.OPT_SORT_KEYS)


def test_unknown_keys_a_dropped_task_id_and_legacy_rows() -> None:
    extra = flat_row(edges=frozenset({"extra_keys"}))
    row = ROWS.row({**extra, "rejudged_at": "x"}, TASK)
    assert tuple(sorted(row)) == tuple(sorted(RUNNER_ROW_KEYS))
    assert row["metrics"]["runner_host"] == "bench-03" and row["metrics"]["rejudged_at"] == "x"
    dropped = ROWS.row({k: v for k, v in extra.items() if k != "task_id"}, TASK)
    assert "task_id" not in dropped and dropped["artifact_dir"] == row["artifact_dir"]
    legacy = legacy_row(flat_row(attempt=1))
    assert ROWS.row(legacy, TASK) == legacy


@pytest.mark.parametrize("repeats", [1, 3])
def test_runner_paths_map_back_to_the_runner_folder(repeats: int) -> None:
    rows = RunnerRows(RUN_ID, repeats, "/home/ci/bench-runner")
    seen = set()
    for n in range(60):
        task_id, attempt = f"task_{n}", 1 + n % repeats
        recorded = rows.artifact_dir(flat_folder(task_id, attempt), task_id, attempt)
        assert recorded == rows.artifact_dir(flat_folder(task_id, attempt), task_id, attempt)  # deterministic
        seen.add(recorded.split(RUN_ID)[0] if RUN_ID in recorded else recorded.split("/runs/")[0])
        mapped = normalize_relative(map_artifact_dir(recorded, RUN_ID))
        assert mapped.relative == runner_folder(task_id, attempt, repeats), recorded
    assert seen == {"/home/ci/bench-runner/runs/", "runs/", "/mnt/archive/bench/runs/", "C:\\Users\\alice\\bench\\runs\\"}


def test_null_and_unsafe_artifact_dirs_stay_so_with_the_same_reason() -> None:
    assert ROWS.artifact_dir(None, "t1", 2) is None
    rng = random.Random(0)
    unsafe = {artifact_dir_value(rng, flat_folder("t1", 2), TASK, frozenset({"unsafe_artifact_dir"}))
              for _ in range(40)}
    assert len(unsafe) == 4
    for value in unsafe:
        assert ROWS.artifact_dir(value, "t1", 2) == value
        flat = normalize_relative(value)
        runner = normalize_relative(map_artifact_dir(value, RUN_ID))
        assert flat.refused and runner.refused and flat.refused_reason == runner.refused_reason, value


def judged_lines() -> list[bytes]:
    lines = [b"not json", b""]
    for seed in range(40):
        lines.append(ROWS.line(flat_row(seed=seed), TASK))
    return lines


def test_the_earlier_judgement_differs_on_a_few_judged_rows_only() -> None:
    lines = judged_lines()
    earlier = earlier_judgement(lines, 5)
    assert earlier == earlier_judgement(lines, 5) and len(earlier) == len(lines)
    changed = [n for n, (a, b) in enumerate(zip(lines, earlier)) if a != b]
    assert len(changed) == REJUDGED_ROWS and earlier[:2] == lines[:2]
    rows = [(orjson.loads(lines[n]), orjson.loads(earlier[n])) for n in changed]
    assert rows[0][1]["status"] == "judge_error" and rows[0][1]["metrics"]["success"] is None
    for now, before in rows[1:]:
        assert before["status"] != now["status"] and before["metrics"]["success"] is not now["metrics"]["success"]
        assert before["rubric"] != now["rubric"] and before["metrics"]["quality_score"] != now["metrics"]["quality_score"]
        assert (before["task_id"], before["attempt"], before["artifact_dir"]) == (
            now["task_id"], now["attempt"], now["artifact_dir"])
    assert earlier_judgement([b"x", b"{}"], 5) == [b"x", b"{}"]


def test_flipped_and_judge_error_rows() -> None:
    row = {"status": "passed", "rubric": [{"id": "r1", "verdict": "yes"}, {"id": "r2", "verdict": "yes"}],
           "rubric_pass_count": 2, "rubric_total": 2, "metrics": {"success": True, "quality_score": 1.0}}
    failed = flipped_row(row)
    assert (failed["status"], failed["rubric_pass_count"], failed["metrics"]["quality_score"]) == ("failed", 1, 0.5)
    assert failed["metrics"]["success"] is False and failed["rubric"][1]["verdict"] == "no"
    assert flipped_row(failed)["status"] == "passed" and flipped_row(failed)["metrics"]["success"] is True
    error = judge_error_row(row)
    assert (error["status"], error["rubric"], error["metrics"]["agent_eligible"]) == ("judge_error", [], False)


def test_every_fourth_run_is_rejudged_but_a_running_one() -> None:
    assert [i for i in range(10) if is_rejudged(i, "completed")] == [1, 5, 9]
    assert is_rejudged(1, "aborted") and not is_rejudged(1, "running")
