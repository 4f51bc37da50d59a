"""A run folder exactly as the benchmark runner writes it (run-directory.md "The runner's
layout"), built by hand from the specification, gives the numbers the same run gives in the
flat layout: through the stages on disk, metrics.json and attempts.jsonl."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from bench_pipeline.layouts import RUNNER_METRICS_FIELDS, RUNNER_ROW_KEYS
from bench_pipeline.pipeline import run_stages
from bench_pipeline.vocabulary import ROW_METRICS_KEYS

RUN_ID = "2026-09-21_063528"
ELSEWHERE = f"/Users/alice/bench/runs/{RUN_ID}"  # the runner's machine

#: Two model calls, the first carrying an image (R10: itself visual), one device call.
HISTORY = [
    {"type": "user", "content": "go"},
    {"type": "assistant", "content": "look", "usage": {"input_tokens": 100, "output_tokens": 10}, "duration_ms": 700,
     "attachments": [{"kind": "image", "path": "pre.jpg"}]},
    {"type": "tool_call", "tool_name": "tap", "tool_input": {"x": 1, "y": 2}, "tool_call_id": "c1",
     "usage": {"input_tokens": 50, "output_tokens": 5}, "duration_ms": 300},
    {"type": "tool_result", "tool_name": "tap", "tool_call_id": "c1", "content": "{\"ok\": true}", "is_error": False},
]
TRACE = {"tool_calls": [{"step": 1, "tool": "tap", "input": {"x": 1, "y": 2}, "has_screenshot": False}],
         "final_response": "Done.", "total_tool_calls": 1}
EPISODE = {"episode_id": "ep-1", "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "events": [
    {"type": "tool_result", "tool_name": "tap", "tool_input": {"x": 1, "y": 2}, "is_error": False,
     "duration_ms": 212.5, "needs_replan": False}]}


def _metrics(**outcome) -> dict:
    """A runner row's ``metrics``: every recorded number and error text, then the outcome."""
    recorded = dict.fromkeys(ROW_METRICS_KEYS)
    recorded.update(task_wall_ms=41000, setup_ms=900, screenshot_capture_ms=120, llm_calls=2, llm_time_ms=1000,
                    vision_llm_calls=1, vision_llm_time_ms=700, tool_calls=1, device_actions=1,
                    screenshots_taken=0, tool_errors=0, input_tokens=150, output_tokens=15, total_tokens=165)
    fields = dict.fromkeys(RUNNER_METRICS_FIELDS)
    fields.update(active_skills=[], trace_observations=[], environment_state_assertions=[],
                  recovery_attempted=False, pre_screenshot_file=True, post_screenshot_file=True)
    fields.update(outcome)
    return {**recorded, **fields}


def _row(task: str, attempt: int, status: str, artifact_dir: str | None, **outcome) -> dict:
    """A results.jsonl row with every key of the runner's TaskResult, keys sorted as it writes them."""
    row = {
        "task_id": task, "attempt": attempt, "category": "navigation", "status": status, "suite": "android-core",
        "run_id": RUN_ID, "artifact_dir": artifact_dir,
        "rubric": [{"id": "r1", "verdict": "yes" if status == "passed" else "no", "reason": "seen"}],
        "rubric_spec": [{"id": "r1", "check": "Wi-Fi settings page is visible"}],
        "rubric_pass_count": 1 if status == "passed" else 0, "rubric_total": 1,
        "hard_assertions": {"completed_in_time": True}, "hard_assertion_failures": [],
        "started_at": "2026-09-21T06:36:00Z", "finished_at": "2026-09-21T06:36:41Z",
        "description_for_judge": "Open the Wi-Fi settings.", "metrics": _metrics(**outcome),
    }
    assert tuple(row) == RUNNER_ROW_KEYS
    return dict(sorted(row.items()))


def runner_rows() -> list[dict]:
    passed = dict(success=True, agent_eligible=True, quality_score=0.8, episode_id="ep-1",
                  trace_observations=[{"id": "no_loop", "description": "d", "passed": True, "reason": "r"}])
    agent_failure = dict(success=False, agent_eligible=True, failure_class="agent", quality_score=0.2,
                         first_failure_stage="planning")
    return [
        _row("t_pass", 1, "passed", f"{ELSEWHERE}/tasks/t_pass", **passed),
        _row("t_fail", 1, "failed", f"runs/{RUN_ID}/tasks/t_fail", **agent_failure),
        # a setup failure the runner marked ineligible
        _row("t_setup", 1, "failed", f"{ELSEWHERE}/tasks/t_setup", success=False, agent_eligible=False,
             failure_class="environment", first_failure_stage="setup"),
        _row("t_rep", 1, "passed", f"{ELSEWHERE}/tasks/t_rep/attempt_1", **passed),
        _row("t_rep", 2, "failed", None, **agent_failure),  # no artifact_dir: attempt_2 found by convention
        _row("t_esc", 1, "failed", f"{ELSEWHERE}/../../etc", **agent_failure),  # escapes after mapping
    ]


MANIFEST = {
    "run_id": RUN_ID, "started_at": "2026-09-21T06:35:28Z", "finished_at": "2026-09-21T06:40:00Z",
    "git_sha": "4f2c9e1", "git_dirty": False, "agent_model": "agent-model-large", "judge_config": None,
    "target_platform": "android-15", "suite_path": "suites/android-core.json", "suite_sha256": "9f86d08",
    "suite_snapshot_path": "suite.json", "active_skills": [], "metrics_k": 1,
    "planned_task_attempts": [{"task_id": t, "attempt": n} for t, n in
                              (("t_pass", 1), ("t_fail", 1), ("t_setup", 1), ("t_rep", 1), ("t_rep", 2),
                               ("t_esc", 1), ("t_lost", 1))],
    "totals": {"tasks": 6}, "selected_task_ids": [], "agent_url": "http://agent", "environment_url": "http://env",
    "mock_environment": False, "judge_prompt_version": "v3", "metrics_schema_version": 2,
}
SUITE = {"tasks": [{"id": t, "category": "navigation", "prompt": "Open the Wi-Fi settings.",
                    "description_for_judge": "d", "rubric": [{"id": "r1", "check": "Wi-Fi settings page is visible"}],
                    "expected_answer": None, "expected_recalled_memory_ids": [],
                    "hard_assertions": {"must_complete_within_sec": 120}, "repeats": 1}
                   for t in ("t_pass", "t_fail", "t_setup", "t_rep", "t_esc", "t_lost")]}

FOLDERS = ("tasks/t_pass", "tasks/t_fail", "tasks/t_setup", "tasks/t_rep/attempt_1", "tasks/t_rep/attempt_2",
           "tasks/t_esc")


def _write(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, sort_keys=True), encoding="utf-8")


def write_runner_run(root: Path, rows: list[dict], rejudged: list[dict] | None = None) -> Path:
    run = root / RUN_ID
    for folder in FOLDERS:
        _write(run / folder / "history.json", HISTORY)
        _write(run / folder / "trace.json", TRACE)
        _write(run / folder / "episode.json", EPISODE)
    _write(run / "suite.json", SUITE)
    _write(run / "manifest.json", MANIFEST)
    (run / "results.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows), encoding="utf-8")
    if rejudged is not None:
        (run / "results.rejudged.jsonl").write_text(
            "".join(json.dumps(r, sort_keys=True) + "\n" for r in rejudged), encoding="utf-8")
    _write(run / "metrics.json", {"runner": "its own numbers"})
    return run


def flat_twin(rows: list[dict]) -> list[dict]:
    """The same rows in the flat layout: outcome fields at the top level, artifact_dir relative."""
    flat = []
    for row in copy.deepcopy(rows):
        for key in RUNNER_METRICS_FIELDS:
            row[key] = row["metrics"].pop(key)
        if row["artifact_dir"] is not None:
            row["artifact_dir"] = "tasks/" + row["artifact_dir"].split("/tasks/", 1)[1] if "/tasks/" in row[
                "artifact_dir"] else "../../etc"
        row["rubric_spec"] = [{"id": "r1", "requirement": "Wi-Fi settings page is visible"}]
        flat.append(row)
    return flat


def write_flat_run(root: Path, rows: list[dict]) -> Path:
    run = root / RUN_ID
    for folder in FOLDERS:
        _write(run / folder / "history.json", HISTORY)
        _write(run / folder / "trace.json", {"final_response": "Done.", "tool_calls": [
            {"name": "tap", "arguments": {"x": 1, "y": 2}}]})
        _write(run / folder / "episode.json", EPISODE)
    _write(run / "suite.json", {"name": "android-core", "version": "9f86d08", "tasks": [
        {"id": t["id"], "category": "navigation", "prompt": t["prompt"],
         "rubric_spec": [{"id": "r1", "requirement": "Wi-Fi settings page is visible"}],
         "expected_answer": None, "expected_memory_ids": [], "timeout_s": 120} for t in SUITE["tasks"]]})
    _write(run / "manifest.json", {
        "status": "completed", "run_id": RUN_ID, "started_at": MANIFEST["started_at"],
        "code": {"git_sha": "4f2c9e1", "dirty": False}, "model": {"name": "agent-model-large"},
        "judge": {"enabled": False, "model": None}, "platform": {"device": None, "os": "android-15"},
        "active_skills": [], "metrics_k": 1,
        "planned": [{"task_id": t, "attempts": n} for t, n in
                    (("t_pass", 1), ("t_fail", 1), ("t_setup", 1), ("t_rep", 2), ("t_esc", 1), ("t_lost", 1))]})
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return run


def _outputs(run: Path, out: Path) -> tuple[dict, list[dict]]:
    result = run_stages(run, out, keep_evidence=True)
    metrics = json.loads((out / "metrics.json").read_bytes())
    attempts = [json.loads(line) for line in (out / "attempts.jsonl").read_bytes().splitlines()]
    for entry in metrics["data_quality"]["unsafe_artifact_dirs"]:
        entry.pop("artifact_dir")  # the raw text, as recorded: differs between the layouts by construction
    return {k: v for k, v in metrics.items() if k not in ("generated_at", "results_file")}, attempts, result


def _without_artifact_dir(attempts: list[dict]) -> list[dict]:
    """Attempt lines but the raw ``artifact_dir`` text (also in an unsafe folder's finding)."""
    out = []
    for a in copy.deepcopy(attempts):
        a.pop("artifact_dir")
        if a["evidence"]["findings"]["unsafe_dir"] is not None:
            a["evidence"]["findings"]["unsafe_dir"].pop("artifact_dir")
        out.append(a)
    return out


def test_the_runners_run_gives_the_flat_runs_numbers(tmp_path):
    rows = runner_rows()
    runner_metrics, runner_attempts, result = _outputs(write_runner_run(tmp_path / "runner", rows), tmp_path / "o1")
    flat_metrics, flat_attempts, _ = _outputs(write_flat_run(tmp_path / "flat", flat_twin(rows)), tmp_path / "o2")
    assert runner_metrics == flat_metrics
    assert _without_artifact_dir(runner_attempts) == _without_artifact_dir(flat_attempts)
    # and the numbers themselves: the ineligible setup failure is out of every denominator
    pass1 = runner_metrics["capability"]["pass_at_1"]
    assert (pass1["successes"], pass1["eligible_tasks"], pass1["total_tasks"]) == (2, 4, 5)
    by_key = {(a["task_id"], a["attempt"]): a for a in runner_attempts}
    setup = by_key[("t_setup", 1)]
    assert (setup["agent_eligible_raw"], setup["agent_eligible"], setup["failure_class"],
            setup["first_failure_stage"]) == (False, False, "environment", "setup")
    assert by_key[("t_pass", 1)]["quality_score"] == 0.8
    assert runner_metrics["failures"]["class"]["environment"] == 1
    assert runner_metrics["coverage"]["planned_attempts"] == 7 and runner_metrics["coverage"]["missing_attempts"] == 1
    assert runner_metrics["observations"]["no_loop"]["passed_tasks"] == 2
    # evidence read from the mapped folders, attempt_2 found without artifact_dir
    assert {k: by_key[k]["provenance"]["llm_calls"] for k in by_key} == {
        ("t_pass", 1): "derived", ("t_fail", 1): "derived", ("t_setup", 1): "derived", ("t_rep", 1): "derived",
        ("t_rep", 2): "derived", ("t_esc", 1): "recorded"}  # t_esc's folder refused: the recorded values
    assert by_key[("t_rep", 2)]["vision_llm_calls"] == 1 and by_key[("t_rep", 2)]["vision_llm_time_ms"] == 700
    assert by_key[("t_pass", 1)]["artifact_dir"] == f"{ELSEWHERE}/tasks/t_pass"  # the raw text, as recorded
    unsafe = result.processed.metrics["data_quality"]["unsafe_artifact_dirs"]
    assert [(u["task_id"], u["artifact_dir"]) for u in unsafe] == [("t_esc", f"{ELSEWHERE}/../../etc")]
    # the trace's calls and the episode link
    evidence = result.processed.attempts[0]["evidence"]
    assert evidence["tool_calls"] == [{"name": "tap", "arguments": {"x": 1, "y": 2}}]
    assert (evidence["episode_id"], evidence["trace_id"]) == ("ep-1", "4bf92f3577b34da6a3ce929d0e0e4736")
    assert evidence["rubric_spec"] == [{"id": "r1", "requirement": "Wi-Fi settings page is visible"}]


def test_the_three_task_run_of_the_issue_reads_one_of_two(tmp_path):
    """A passed task, an agent failure and an ineligible setup failure: pass@1 is 1/2, not 1/3."""
    rows = runner_rows()[:3]
    metrics, _, _ = _outputs(write_runner_run(tmp_path, rows), tmp_path / "out")
    pass1 = metrics["capability"]["pass_at_1"]
    assert (pass1["value"], pass1["successes"], pass1["eligible_tasks"], pass1["total_tasks"]) == (0.5, 1, 2, 3)


def test_a_rejudged_copy_is_the_runs_results_and_the_outputs_say_so(tmp_path):
    rows = runner_rows()
    rejudged = copy.deepcopy(rows)
    flipped = rejudged[1]  # t_fail: the judge now says it passed
    flipped.update(status="passed", rubric_pass_count=1)
    flipped["metrics"].update(success=True, quality_score=0.9, failure_class=None, first_failure_stage=None)
    run = write_runner_run(tmp_path / "runs", rows, rejudged)
    result = run_stages(run, tmp_path / "out")
    written = json.loads((tmp_path / "out" / "metrics.json").read_bytes())
    assert written["results_file"] == "results.rejudged.jsonl"
    assert written["capability"]["pass_at_1"]["successes"] == 3
    assert "results.rejudged.jsonl" in (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    flipped_attempt = next(a for a in result.processed.attempts if a["task_id"] == "t_fail")
    assert (flipped_attempt["success"], flipped_attempt["quality_score"]) == (True, 0.9)
    (run / "results.rejudged.jsonl").unlink()
    again = json.loads(json.dumps(run_stages(run).processed.metrics))
    assert again["results_file"] == "results.jsonl" and again["capability"]["pass_at_1"]["successes"] == 2
