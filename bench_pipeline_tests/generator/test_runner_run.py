"""Tests of a run folder's top-level files in the runner's layout
(bench_pipeline/generator/runner_run.py): the suite source, the runner's manifest, its own
end-of-run files, and which files each run state gets."""

from __future__ import annotations

import collections
import hashlib
from datetime import datetime, timezone
from pathlib import Path

import orjson
import pytest

from bench_pipeline.generator.files import build_manifest
from bench_pipeline.generator.records import RunDraw, Task
from bench_pipeline.generator.runner_run import runner_manifest, runner_outputs, runner_suite, write_runner_run
from bench_pipeline.layouts import manifest_view, suite_view

STARTED = datetime(2026, 11, 28, 10, 0, 0, tzinfo=timezone.utc)
FINISHED = datetime(2026, 11, 28, 10, 30, 5, tzinfo=timezone.utc)
SUITE = [Task(id="t1", category="qa", prompt="p", rubric_spec=[{"id": "r1", "requirement": "ok"}], expected_answer="B",
              expected_memory_ids=["m1"], env_checks=[], skill=None, timeout_s=120, pass_probability=0.5),
         Task(id="t2", category="web", prompt="q", rubric_spec=[], expected_answer=None, expected_memory_ids=[],
              env_checks=[], skill="web", timeout_s=300, pass_probability=0.5)]
STATUSES = collections.Counter({"passed": 3, "failed": 1})
RUNNER_KEYS = {"run_id", "started_at", "finished_at", "git_sha", "git_dirty", "agent_model", "agent_url",
               "judge_config", "judge_prompt_version", "target_platform", "environment_url", "mock_environment",
               "suite_path", "suite_sha256", "suite_snapshot_path", "selected_task_ids", "planned_task_attempts",
               "active_skills", "metrics_k", "metrics_schema_version", "totals"}


def draw(status: str = "completed", edges: frozenset[str] = frozenset(), judge: bool = True, index: int = 3) -> RunDraw:
    return RunDraw(index=index, run_id="2026-11-28T10-00-00Z-abcdef", seed=0x1234567, started=STARTED, status=status,
                   model="agent-model-small", device=("emulator-pixel", "android-15"), active_skills=["web"],
                   judge_enabled=judge, judge_model="judge-model", with_cost=False, edges=edges)


def test_the_suite_source_reads_as_the_flat_suite() -> None:
    suite = runner_suite(SUITE, 2)
    assert suite["name"] == "android-core"
    assert suite["tasks"][0] == {
        "id": "t1", "category": "qa", "prompt": "p", "description_for_judge": suite["tasks"][0]["description_for_judge"],
        "rubric": [{"id": "r1", "check": "ok"}], "expected_answer": "B", "expected_recalled_memory_ids": ["m1"],
        "hard_assertions": {"must_complete_within_sec": 120}, "repeats": 2}
    viewed = suite_view(suite)["tasks"]
    for task, view in zip(SUITE, viewed):
        flat = task.suite_entry()
        assert {k: view[k] for k in ("id", "category", "prompt", "expected_answer", "expected_memory_ids",
                                     "timeout_s")} == {k: v for k, v in flat.items() if k != "rubric_spec"}
        assert [{"id": r["id"], "requirement": r["requirement"]} for r in view["rubric_spec"]] == flat["rubric_spec"]


def test_the_runner_manifest_reads_as_the_flat_one() -> None:
    run = draw()
    manifest = runner_manifest(run, SUITE, 2, FINISHED, "ab" * 32, "/Users/alice/bench", STATUSES)
    assert set(manifest) == RUNNER_KEYS
    assert manifest["planned_task_attempts"] == [{"task_id": "t1", "attempt": 1}, {"task_id": "t1", "attempt": 2},
                                                 {"task_id": "t2", "attempt": 1}, {"task_id": "t2", "attempt": 2}]
    assert manifest["totals"] == {"attempts": 4, "failed": 1, "passed": 3}
    assert manifest["suite_path"] == "suites/android-core.json"
    assert manifest["judge_config"] == {"provider": "example", "model": "judge-model",
                                        "base_url": "http://127.0.0.1:8800/v1"}
    flat = build_manifest(run, SUITE, 2, FINISHED)
    view = manifest_view(manifest)
    assert "status" not in view and "schema_version" not in view
    for key in ("run_id", "started_at", "finished_at", "active_skills", "metrics_k", "planned", "code", "judge"):
        assert view[key] == flat[key], key
    assert view["model"] == {"name": flat["model"]["name"]}
    assert view["platform"] == {"device": None, "os": flat["platform"]["os"]}
    assert view["suite"] == {"name": "android-core", "version": "ab" * 32}


def test_manifest_edge_cases_and_states() -> None:
    edged = runner_manifest(draw(edges=frozenset({"metrics_k_absent", "manifest_extra_keys"}), judge=False),
                            SUITE, 2, FINISHED, "0" * 64, "/opt/bench", STATUSES)
    assert "metrics_k" not in edged and edged["runner"] == {"host": "bench-03", "version": "2.4.1"}
    assert edged["judge_config"] is None and manifest_view(edged)["judge"] == {"enabled": False, "model": None}
    running = runner_manifest(draw("running"), SUITE, 2, FINISHED, "0" * 64, "/opt/bench", STATUSES)
    assert running["finished_at"] is None and "status" not in running
    aborted = runner_manifest(draw("aborted"), SUITE, 2, FINISHED, "0" * 64, "/opt/bench", STATUSES)
    assert aborted["abort_reason"] == "device went offline" and "status" not in aborted


def test_the_runner_outputs() -> None:
    metrics, summary = runner_outputs(draw(), STATUSES)
    assert orjson.loads(metrics) == {"run_id": "2026-11-28T10-00-00Z-abcdef", "attempts": 4, "passed": 3,
                                     "pass_rate": 0.75, "statuses": {"failed": 1, "passed": 3}}
    assert summary.decode().startswith("# Benchmark run 2026-11-28T10-00-00Z-abcdef\n")
    assert "Passed: 3 (75.0%)" in summary.decode()
    assert b"pass_rate" in runner_outputs(draw(), collections.Counter())[0]


@pytest.mark.parametrize(("status", "index", "files"), [
    ("completed", 3, ["manifest.json", "metrics.json", "results.jsonl", "suite.json", "summary.md"]),
    ("aborted", 3, ["manifest.json", "metrics.json", "results.jsonl", "suite.json", "summary.md"]),
    ("completed", 5, ["manifest.json", "metrics.json", "results.jsonl", "results.rejudged.jsonl", "suite.json",
                      "summary.md"]),
    ("running", 5, ["manifest.json", "results.jsonl", "suite.json"]),
])
def test_the_files_of_each_run_state(tmp_path: Path, status: str, index: int, files: list[str]) -> None:
    lines = [b'{"task_id":"t1","attempt":1}', b"oops"]
    write_runner_run(tmp_path, draw(status, index=index), SUITE, 2, FINISHED, lines, STATUSES, "/opt/bench")
    assert sorted(p.name for p in tmp_path.iterdir()) == files
    final = "results.rejudged.jsonl" if "results.rejudged.jsonl" in files else "results.jsonl"
    assert (tmp_path / final).read_bytes() == b'{"task_id":"t1","attempt":1}\noops\n'
    manifest = orjson.loads((tmp_path / "manifest.json").read_bytes())
    assert manifest["suite_sha256"] == hashlib.sha256((tmp_path / "suite.json").read_bytes()).hexdigest()
