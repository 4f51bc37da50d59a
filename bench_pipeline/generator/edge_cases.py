"""The legacy and broken inputs a run can carry (``edge_cases=True`` only): how often each
hits, which run or attempt it hits, and what it does to a row, a results.jsonl or a folder
path. What an edge case does to the artifact files is in `files.attempt_files`."""

from __future__ import annotations

import random
from typing import Callable

import orjson

from .records import Task

# Per-attempt rates of the row/artifact edge cases.
ROW_EDGE_RATES = {
    "legacy_row": 0.04,            # attempt-1 passed/agent-failed rows only
    "missing_task_id": 0.01,       # an extra copy of the row without task_id
    "duplicate_row": 0.01,         # an extra, later copy of the row (re-judged)
    "missing_row": 0.01,           # the planned attempt has no line in results.jsonl
    "unsafe_artifact_dir": 0.01,   # absolute or escaping artifact_dir
    "null_artifact_dir": 0.02,     # null artifact_dir: the conventional folder applies
    "broken_history": 0.015,       # truncated or wrong-shape history.json
    "history_object": 0.03,        # history.json as {"messages": [...]}
    "missing_episode": 0.02,
    "episode_not_object": 0.01,
    "extra_keys": 0.05,            # unknown keys in the row and its metrics
    "bool_number": 0.015,          # true/false in a numeric metrics field
    "null_category": 0.03,
    "missing_trace": 0.015,
    "invalid_trace": 0.015,
    "script_response": 0.01,       # final response containing <script>alert(1)</script>
}
# Run-level edge cases: run i is hit when i % period == a seed-drawn offset, so every case
# appears at least once in any `period` consecutive runs.
RUN_EDGE_PERIODS = {
    "metrics_k_absent": 6, "non_json_line": 7, "blank_line": 5, "manifest_extra_keys": 9,
    "running": 25, "aborted": 50,
}
# The metrics an old runner wrote at the top level of its row.
LEGACY_KEYS = ["setup_ms", "llm_calls", "tool_calls", "input_tokens", "output_tokens", "total_tokens",
               "tool_errors", "error"]


def run_edges(index: int, runs: int, offsets: dict[str, int], edge_cases: bool) -> frozenset[str]:
    """The run-level edge cases of run ``index`` of ``runs``.

    At least 90% of runs stay completed: "running" needs >= 10 runs, "aborted" >= 50 and
    never comes with "running".
    """
    edges = set()
    if edge_cases:
        edges = {name for name, period in RUN_EDGE_PERIODS.items() if index % period == offsets[name]}
    if runs < 10:
        edges.discard("running")
    if runs < 50 or "running" in edges:
        edges.discard("aborted")
    return frozenset(edges)


def draw_row_edges(rng: random.Random) -> frozenset[str]:
    """The row/artifact edge cases that hit one attempt."""
    return frozenset(name for name, rate in ROW_EDGE_RATES.items() if rng.random() < rate)


def add_row_lines(row: dict, edges: frozenset[str], lines: list[bytes], later: list[bytes],
                  encode: Callable[[dict], bytes] = orjson.dumps) -> None:
    """Append the row's line(s): dropped, copied without task_id, or duplicated at the end.
    ``encode`` makes a (flat) row's line: the runner's layout passes its own."""
    if "missing_row" in edges:
        return
    lines.append(encode(row))
    if "missing_task_id" in edges:
        lines.append(encode({k: v for k, v in row.items() if k != "task_id"}))
    if "duplicate_row" in edges:
        later.append(encode({**row, "rejudged_at": row.get("finished_at")}))


def add_line_edges(rng: random.Random, edges: frozenset[str], lines: list[bytes]) -> None:
    """Insert the run's non-JSON and blank lines at seed-drawn positions."""
    if "non_json_line" in edges:
        bad = rng.choice([b'{"task_id": "open_wifi_settings", "attempt": 2, "status": "pas',
                          b"Traceback (most recent call last):", b"[1, 2, 3]"])
        lines.insert(rng.randrange(len(lines) + 1), bad)
    if "blank_line" in edges:
        lines.insert(rng.randrange(len(lines) + 1), rng.choice([b"", b"   "]))


def artifact_dir_value(rng: random.Random, folder: str, task: Task, edges: frozenset[str]) -> str | None:
    """The row's artifact_dir: the real folder, null, or an unsafe path (edge cases)."""
    if "unsafe_artifact_dir" in edges:
        return rng.choice([f"/var/tmp/bench/{task.id}", f"../other-run/{folder}",
                           f"tasks/../../{task.id}", f"C:\\bench\\{task.id}"])
    if "null_artifact_dir" in edges:
        return None
    return folder


def legacy_row(row: dict) -> dict:
    """Rewrite a row the way an old runner wrote it: no attempt, eligibility or metrics object."""
    metrics = row["metrics"]
    legacy = {key: row[key] for key in ("task_id", "category", "status", "failure_class", "quality_score",
                                        "rubric_pass_count", "rubric_total", "started_at", "finished_at")}
    legacy["success"] = None
    legacy["wall_ms"] = metrics["task_wall_ms"]
    for key in LEGACY_KEYS:
        legacy[key] = metrics[key]
    return legacy
