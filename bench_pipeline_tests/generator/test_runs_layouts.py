"""Tests of `generate_runs(..., layout="runner")` (bench_pipeline/generator/runs.py with
runner_rows, runner_files and runner_run): the run folders the runner's layout writes, read
back from the files, and the pipeline's numbers for both layouts of one seed."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from bench_pipeline.artifacts import resolve_artifact_dir
from bench_pipeline.cli import main as cli_main
from bench_pipeline.generator import generate_runs
from bench_pipeline.generator.runner_rows import RUNNER_ROW_KEYS
from bench_pipeline.pipeline import run_stages

from ..support.layout_compare import comparable

#: Arguments of the two-layout comparisons: (seed, edge cases, runs, tasks, repeats).
SAME_DATA_CASES = [(2, True, 12, 5, 3), (8, True, 12, 4, 2), (21, True, 6, 6, 1), (2, False, 6, 5, 3),
                   (13, False, 5, 4, 1), (4, True, 52, 2, 2)]
RUNNER_FOLDER = re.compile(r"^tasks/[a-z0-9_]+(/attempt_\d+)?$")


def load(path: Path) -> object:
    return json.loads(path.read_bytes())


def rows_of(path: Path) -> list[dict]:
    """The results file's lines that are JSON objects."""
    rows = []
    for line in path.read_bytes().split(b"\n"):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            rows.append(value)
    return rows


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def runner_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return generate_runs(tmp_path_factory.mktemp("runner"), runs=12, seed=2, tasks=6, repeats=3,
                         history_messages=14, layout="runner")


def test_same_seed_gives_identical_bytes_and_the_flat_run_ids(tmp_path: Path) -> None:
    one = generate_runs(tmp_path / "a", runs=6, seed=3, tasks=4, repeats=2, history_messages=10, layout="runner")
    two = generate_runs(tmp_path / "b", runs=6, seed=3, tasks=4, repeats=2, history_messages=10, layout="runner")
    flat = generate_runs(tmp_path / "c", runs=6, seed=3, tasks=4, repeats=2, history_messages=10)
    assert snapshot(tmp_path / "a") == snapshot(tmp_path / "b")
    assert [p.name for p in one] == [p.name for p in two] == [p.name for p in flat]


def test_an_unknown_layout_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="layout"):
        generate_runs(tmp_path, runs=1, seed=1, layout="nested")


def test_the_command_line_writes_the_runner_layout(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert cli_main(["generate", str(tmp_path), "--runs", "2", "--seed", "4", "--tasks", "2", "--repeats", "2",
                     "--history-messages", "6", "--layout", "runner"]) == 0
    folders = [Path(line) for line in capsys.readouterr().out.split()]
    assert len(folders) == 2 and all((f / "summary.md").is_file() and (f / "tasks/open_wifi_settings/attempt_2").is_dir()
                                     for f in folders)
    assert "status" not in load(folders[0] / "manifest.json")


def test_rows_have_exactly_the_runner_keys_sorted(runner_runs: list[Path]) -> None:
    checked = 0
    for run in runner_runs:
        for line in (run / "results.jsonl").read_bytes().split(b"\n"):
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if not isinstance(row, dict) or "task_id" not in row:
                continue
            assert list(row) == sorted(row)
            if "metrics" not in row:
                assert "attempt" not in row and "success" in row  # a legacy row keeps its top-level fields
                continue
            assert set(row) == set(RUNNER_ROW_KEYS)
            assert list(row["metrics"]) == sorted(row["metrics"])
            assert {"success", "agent_eligible", "failure_class", "quality_score", "episode_id",
                    "trace_observations", "pre_screenshot_file"} <= set(row["metrics"])
            assert all(set(r) == {"id", "check"} for r in row["rubric_spec"])
            assert all("label" in f for f in row["hard_assertion_failures"])
            checked += 1
    assert checked > 12 * 6 * 3 * 0.9


def test_artifact_dirs_are_the_runners_own_and_lead_to_attempt_folders(runner_runs: list[Path]) -> None:
    shapes: set[str] = set()
    for run in runner_runs:
        real = os.path.realpath(run)
        folders = {str(p.parent.relative_to(run)) for p in run.glob("tasks/**/history.json")}
        assert folders and all(RUNNER_FOLDER.match(f) and "/attempt_" in f for f in folders)
        for row in rows_of(run / "results.jsonl"):
            if not isinstance(row.get("task_id"), str):
                continue
            recorded = row.get("artifact_dir")
            folder = resolve_artifact_dir(run, real, recorded, row["task_id"], row.get("attempt") or 1)
            if isinstance(recorded, str) and folder.refused:
                continue  # the unsafe edge case
            assert folder.relative == f"tasks/{row['task_id']}/attempt_{row.get('attempt') or 1}", recorded
            assert (run / folder.relative / "history.json").is_file()
            if isinstance(recorded, str):
                shapes.add("relative" if recorded.startswith("runs/") else "windows" if recorded.startswith("C:\\")
                           else "renamed" if f"/{run.name}-copy/" in recorded else "absolute")
                assert not recorded.startswith("tasks/")
            else:
                shapes.add("null")
    assert shapes == {"absolute", "relative", "renamed", "windows", "null"}


def test_histories_write_images_with_kind_some_on_model_messages(runner_runs: list[Path]) -> None:
    kinds: set[str] = set()
    on_model_messages = 0
    for path in runner_runs[0].glob("tasks/**/history.json"):
        try:
            messages = load(path)
        except ValueError:
            continue
        for message in messages if isinstance(messages, list) else messages.get("messages", []):
            for attachment in message.get("attachments", []):
                kinds |= set(attachment)
                on_model_messages += "usage" in message
    assert kinds == {"kind", "path"} and on_model_messages > 0


def test_the_manifest_suite_and_end_of_run_files(runner_runs: list[Path]) -> None:
    for run in runner_runs:
        manifest, suite = load(run / "manifest.json"), load(run / "suite.json")
        assert "status" not in manifest and "schema_version" not in manifest
        assert manifest["run_id"] == run.name and manifest["suite_path"] == "suites/android-core.json"
        assert len(manifest["planned_task_attempts"]) == 6 * 3
        assert {t["id"] for t in suite["tasks"]} == set(manifest["selected_task_ids"])
        assert all({"rubric", "expected_recalled_memory_ids", "hard_assertions", "repeats"} <= set(t)
                   for t in suite["tasks"])
        finished = manifest["finished_at"] is not None
        assert (run / "metrics.json").is_file() == (run / "summary.md").is_file() == finished


def test_every_fourth_run_is_rejudged(runner_runs: list[Path]) -> None:
    rejudged = [n for n, run in enumerate(runner_runs) if (run / "results.rejudged.jsonl").exists()]
    assert rejudged == [n for n in (1, 5, 9) if load(runner_runs[n] / "manifest.json")["finished_at"] is not None]
    run = runner_runs[rejudged[0]]
    earlier = (run / "results.jsonl").read_bytes().split(b"\n")
    final = (run / "results.rejudged.jsonl").read_bytes().split(b"\n")
    assert len(earlier) == len(final)
    assert 1 <= sum(a != b for a, b in zip(earlier, final)) <= 3
    assert run_stages(run).processed.metrics["results_file"] == "results.rejudged.jsonl"


def test_the_earlier_judgement_gives_other_numbers(runner_runs: list[Path], tmp_path: Path) -> None:
    run = next(r for r in runner_runs if (r / "results.rejudged.jsonl").exists())
    copy = tmp_path / run.name
    shutil.copytree(run, copy)
    (copy / "results.rejudged.jsonl").unlink()
    before = run_stages(copy).processed.metrics
    after = run_stages(run).processed.metrics
    assert before["results_file"] == "results.jsonl"
    assert before["capability"]["attempt_success_rate"] != after["capability"]["attempt_success_rate"]


@pytest.mark.parametrize(("seed", "edge_cases", "runs", "tasks", "repeats"), SAME_DATA_CASES)
def test_both_layouts_of_a_seed_give_the_same_metrics(tmp_path: Path, seed: int, edge_cases: bool, runs: int,
                                                      tasks: int, repeats: int) -> None:
    kwargs = {"runs": runs, "seed": seed, "tasks": tasks, "repeats": repeats, "history_messages": 12,
              "edge_cases": edge_cases}
    flat = generate_runs(tmp_path / "flat", **kwargs)
    runner = generate_runs(tmp_path / "runner", **kwargs, layout="runner")
    findings: dict[str, int] = {}
    for flat_run, runner_run in zip(flat, runner, strict=True):
        expected = run_stages(flat_run).processed.metrics
        got = run_stages(runner_run).processed.metrics
        assert comparable(got) == comparable(expected), runner_run.name
        for kind, entries in expected["data_quality"].items():
            findings[kind] = findings.get(kind, 0) + len(entries)
    # With edge cases the comparison covers the data problems too (without, there are none).
    assert (sum(findings.values()) > 0) == edge_cases, findings
    if runs >= 50:  # every run state the flat generator makes, and every kind of finding
        states = {load(run / "manifest.json")["status"] for run in flat}
        assert states == {"completed", "running", "aborted"}
        assert all(findings[kind] for kind in ("bad_rows", "duplicate_rows", "missing_attempts",
                                               "unsafe_artifact_dirs", "invalid_artifacts")), findings
