"""Records to validated frames and back: raw results, attempts and task groups keep their
values exactly (large integers next to nulls, JSON columns, line order)."""

from __future__ import annotations

import json

import pandas as pd

from bench_pipeline.frames import (
    attempts_frame,
    attempts_from_frame,
    raw_results_frame,
    raw_run_from_frame,
    tasks_frame,
    tasks_from_frame,
)
from bench_pipeline.pipeline import run_stages
from bench_pipeline.run_reader import RawRow, RawRun

from .run_builder import make_run, row, write_json

TASK = {
    "task_id": "t1", "category": "nav", "attempts": 3, "max_attempt": 2 ** 63 - 1, "eligible_attempts": 2,
    "passed": 1, "failed": 1, "pass_rate": 0.5, "best_quality": 1.0, "avg_quality": None, "avg_wall_ms": 1200.5,
    "first_attempt_passed": True, "in_e1": True, "attempt1_success": True, "in_ek": False, "any_success_k": False,
    "all_success_k": False, "best_quality_k": None, "first_success_attempt": 1,
    "cost_to_first_success_task_wall_ms": 1200.0, "cost_to_first_success_total_tokens": None,
    "cost_to_first_success_cost_usd": None,
}


def raw_run(rows: list[RawRow], bad_rows: list[dict]) -> RawRun:
    return RawRun(run_id="r", run_dir=".", manifest={}, suite_def={}, suite=None, rows=rows, metrics_k=None,
                  planned=None, bad_rows=bad_rows)


def test_raw_results_frame_holds_rows_and_bad_lines_in_line_order():
    run = raw_run([RawRow(3, "b", 2, {"status": "failed", "n": 2 ** 53 + 1}), RawRow(1, "a", 1, {"status": 7})],
                  [{"line": 2, "reason": "not JSON"}])
    frame = raw_results_frame(run)
    assert frame["line"].tolist() == [1, 2, 3]
    assert frame["task_id"].tolist()[0::2] == ["a", "b"] and frame["task_id"].isna().tolist() == [False, True, False]
    assert frame["status"].tolist()[2] == "failed" and frame["status"].isna().tolist()[:2] == [True, True]  # 7: no status
    assert frame["bad_reason"].tolist()[1] == "not JSON"
    assert json.loads(frame["row_json"].tolist()[2]) == {"status": "failed", "n": 2 ** 53 + 1}


def test_raw_run_from_frame_rebuilds_the_rows_with_the_run_files(tmp_path):
    write_json(tmp_path / "r" / "manifest.json", {"status": "completed"})
    write_json(tmp_path / "r" / "suite.json", {"name": "s", "tasks": []})
    rows = [RawRow(1, "a", 1, {"status": "passed"}), RawRow(3, "a", 2, {"status": "failed"})]
    back = raw_run_from_frame(tmp_path / "r", raw_results_frame(raw_run(rows, [{"line": 2, "reason": "bad"}])))
    assert back.rows == rows and back.bad_rows == [{"line": 2, "reason": "bad"}]
    assert (back.run_id, back.manifest, back.suite) == ("r", {"status": "completed"}, "s")


def test_task_groups_come_back_as_plain_values():
    frame = tasks_frame([TASK, {**TASK, "task_id": "t2", "max_attempt": 1, "pass_rate": None, "in_e1": False}])
    assert str(frame["max_attempt"].dtype) == "Int64" and isinstance(frame, pd.DataFrame)
    back = tasks_from_frame(frame)
    assert back[0] == TASK
    assert (back[1]["max_attempt"], back[1]["pass_rate"], back[1]["in_e1"]) == (1, None, False)
    assert type(back[0]["attempts"]) is int and type(back[0]["first_attempt_passed"]) is bool


def test_frames_keep_large_integers_next_to_nulls_exact(tmp_path):
    """A column of integers and nulls must not pass through float64: 2**53 + 1 and
    2**63 - 1 come back exactly from the Dagster frames (attempt numbers, recorded counts)."""
    big = 2 ** 53 + 1
    run = make_run(tmp_path, [
        row("a", 1, metrics={"llm_calls": big, "retry_count": 2 ** 63 - 1}),
        row("a", 2 ** 63 - 1, metrics={}),
        "not json",
    ])
    processed = run_stages(run).processed
    frame = raw_results_frame(processed.raw)
    assert frame["attempt"].tolist()[:2] == [1, 2 ** 63 - 1] and frame["attempt"].isna().tolist()[2]
    back = attempts_from_frame(attempts_frame(processed.attempts))
    assert back == processed.attempts
    assert back[0]["llm_calls"] == big and back[0]["retry_count"] == 2 ** 63 - 1 and back[1]["llm_calls"] is None
    tasks = tasks_from_frame(tasks_frame(processed.tasks))
    assert tasks == processed.tasks and tasks[0]["max_attempt"] == 2 ** 63 - 1
