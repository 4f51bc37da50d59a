"""Tests of the edge cases (bench_pipeline/generator/edge_cases.py): which run or attempt each
hits, and that each writes what it says, on values in memory."""

from __future__ import annotations

import random

import orjson

from bench_pipeline.generator.edge_cases import (
    ROW_EDGE_RATES,
    RUN_EDGE_PERIODS,
    add_line_edges,
    add_row_lines,
    artifact_dir_value,
    draw_row_edges,
    legacy_row,
    run_edges,
)
from bench_pipeline.generator.records import Task

ZERO_OFFSETS = dict.fromkeys(RUN_EDGE_PERIODS, 0)
TASK = Task(id="t1", category="qa", prompt="p", rubric_spec=[], expected_answer=None, expected_memory_ids=[],
            env_checks=[], skill=None, timeout_s=120, pass_probability=0.5)


class FixedRandom(random.Random):
    """A generator whose random() is always `value` (choices and ranges stay seeded)."""

    def __init__(self, value: float) -> None:
        super().__init__(0)
        self.value = value

    def random(self) -> float:
        return self.value


def test_without_edge_cases_no_run_is_hit() -> None:
    assert run_edges(0, 100, ZERO_OFFSETS, False) == frozenset()


def test_run_cases_hit_at_their_offset_and_running_excludes_aborted() -> None:
    assert run_edges(0, 100, ZERO_OFFSETS, True) == {
        "metrics_k_absent", "non_json_line", "blank_line", "manifest_extra_keys", "running"}
    assert run_edges(50, 100, {**ZERO_OFFSETS, "running": 1}, True) == {"blank_line", "aborted"}
    assert run_edges(1, 100, ZERO_OFFSETS, True) == frozenset()


def test_few_runs_are_never_running_or_aborted() -> None:
    assert "running" not in run_edges(0, 9, ZERO_OFFSETS, True)
    assert "running" in run_edges(0, 10, ZERO_OFFSETS, True)
    assert "aborted" not in run_edges(0, 49, {**ZERO_OFFSETS, "running": 1}, True)


def test_row_edges_are_drawn_against_their_rates() -> None:
    assert draw_row_edges(FixedRandom(0.0)) == frozenset(ROW_EDGE_RATES)
    assert draw_row_edges(FixedRandom(0.011)) == {
        "legacy_row", "null_artifact_dir", "broken_history", "history_object", "missing_episode",
        "extra_keys", "bool_number", "null_category", "missing_trace", "invalid_trace"}
    assert draw_row_edges(FixedRandom(0.5)) == frozenset()
    assert draw_row_edges(random.Random(2)) == draw_row_edges(random.Random(2))


def test_a_row_is_written_once_without_edge_cases() -> None:
    lines: list[bytes] = []
    later: list[bytes] = []
    add_row_lines({"task_id": "t1", "attempt": 1}, frozenset(), lines, later)
    assert lines == [b'{"task_id":"t1","attempt":1}'] and later == []


def test_a_missing_row_writes_no_line() -> None:
    lines: list[bytes] = []
    later: list[bytes] = []
    add_row_lines({"task_id": "t1"}, frozenset({"missing_row", "duplicate_row"}), lines, later)
    assert lines == [] and later == []


def test_missing_task_id_adds_a_copy_without_it_and_a_duplicate_comes_last() -> None:
    lines: list[bytes] = []
    later: list[bytes] = []
    row = {"task_id": "t1", "attempt": 2, "finished_at": "2026-11-28T10:00:05Z"}
    add_row_lines(row, frozenset({"missing_task_id", "duplicate_row"}), lines, later)
    assert [orjson.loads(line) for line in lines] == [row, {"attempt": 2, "finished_at": "2026-11-28T10:00:05Z"}]
    assert [orjson.loads(line) for line in later] == [{**row, "rejudged_at": "2026-11-28T10:00:05Z"}]


def test_line_edges_insert_one_bad_line_and_one_blank_line() -> None:
    lines = [b"{}", b"{}", b"{}"]
    add_line_edges(random.Random(1), frozenset({"non_json_line", "blank_line"}), lines)
    assert len(lines) == 5
    blank = [line for line in lines if not line.strip()]
    bad = [line for line in lines if line.strip() and line != b"{}"]
    assert len(blank) == 1 and blank[0] in (b"", b"   ")
    assert len(bad) == 1 and bad[0] in (b"Traceback (most recent call last):", b"[1, 2, 3]",
                                        b'{"task_id": "open_wifi_settings", "attempt": 2, "status": "pas')


def test_no_line_edges_leave_the_lines_alone() -> None:
    lines = [b"{}"]
    add_line_edges(random.Random(1), frozenset({"running"}), lines)
    assert lines == [b"{}"]


def test_artifact_dir_is_the_folder_null_or_unsafe() -> None:
    rng = random.Random(0)
    assert artifact_dir_value(rng, "tasks/t1/attempt-2", TASK, frozenset()) == "tasks/t1/attempt-2"
    assert artifact_dir_value(rng, "tasks/t1", TASK, frozenset({"null_artifact_dir"})) is None
    unsafe = {artifact_dir_value(rng, "tasks/t1", TASK, frozenset({"unsafe_artifact_dir"})) for _ in range(40)}
    assert unsafe == {"/var/tmp/bench/t1", "../other-run/tasks/t1", "tasks/../../t1", "C:\\bench\\t1"}


def test_a_legacy_row_has_top_level_metrics_and_no_attempt() -> None:
    metrics = {"task_wall_ms": 900, "setup_ms": 40, "llm_calls": 3, "tool_calls": 2, "input_tokens": 100,
               "output_tokens": 20, "total_tokens": 120, "tool_errors": 0, "error": None, "cost_usd": 0.1}
    row = {"task_id": "t1", "attempt": 1, "category": "qa", "status": "passed", "success": True,
           "agent_eligible": True, "failure_class": None, "quality_score": 1.0, "rubric_pass_count": 1,
           "rubric_total": 1, "started_at": "a", "finished_at": "b", "metrics": metrics}
    assert legacy_row(row) == {
        "task_id": "t1", "category": "qa", "status": "passed", "failure_class": None, "quality_score": 1.0,
        "rubric_pass_count": 1, "rubric_total": 1, "started_at": "a", "finished_at": "b", "success": None,
        "wall_ms": 900, "setup_ms": 40, "llm_calls": 3, "tool_calls": 2, "input_tokens": 100,
        "output_tokens": 20, "total_tokens": 120, "tool_errors": 0, "error": None,
    }
