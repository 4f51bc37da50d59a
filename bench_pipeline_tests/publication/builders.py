"""Shared builders of the publication tests: a suite definition, a manifest, attempt records
and plans made from them (in memory)."""

from __future__ import annotations

from pathlib import Path

from bench_pipeline.publication.plan import RunPlan, plan_run
from bench_pipeline.publication.settings import LangfuseSettings, PublishOptions
from bench_pipeline.publication.state import Publication

SUITE_DEF = {
    "name": "android-core",
    "version": "7",
    "tasks": [
        {"id": "open_settings", "category": "navigation", "prompt": "Open the Wi-Fi settings.",
         "rubric_spec": [{"id": "r1", "requirement": "Wi-Fi page visible"}], "expected_answer": None,
         "expected_memory_ids": [], "timeout_s": 300},
        {"id": "pick_option", "category": "quiz", "prompt": "Which? A or B", "rubric_spec": [],
         "expected_answer": "B"},
    ],
}
MANIFEST = {
    "schema_version": 1, "run_id": "run-7", "status": "completed",
    "started_at": "2026-11-28T10:00:00Z", "finished_at": "2026-11-28T11:02:13Z",
    "code": {"git_sha": "4f2c9e1", "dirty": False}, "suite": {"name": "android-core", "version": "7"},
    "model": {"provider": "example", "name": "m", "max_tokens": 4096, "api_key": "sk-should-not-leak"},
    "judge": {"enabled": True, "model": "j", "auth_token": "tok-should-not-leak"},
    "platform": {"device": "emulator"}, "active_skills": ["calendar"], "repeats": 2, "metrics_k": 2,
    "planned": [{"task_id": "open_settings", "attempts": 2}, {"task_id": "pick_option", "attempts": 2}],
    "langfuse_secret_key": "sk-lf-should-not-leak",
}


def attempt(task_id="open_settings", n=1, **over):
    rec = {
        "run_id": "run-7", "task_id": task_id, "attempt": n, "line": n, "category": "navigation",
        "artifact_dir": f"tasks/{task_id}", "status": "failed", "success_raw": False, "success": False,
        "agent_eligible_raw": None, "agent_eligible": True, "failure_class": "agent",
        "first_failure_stage": "device_execution", "failure_event_ref": "history:4", "quality_score": 0.0,
        "rubric_pass_count": 3, "rubric_total": 4, "task_wall_ms": 1200, "setup_ms": 30.5,
        "screenshot_capture_ms": None, "time_to_first_token_ms": None, "llm_calls": 3, "llm_time_ms": 3000,
        "vision_llm_calls": 0, "vision_llm_time_ms": None, "device_actions": 2, "device_execution_ms": 0,
        "tool_calls": 4, "screenshots_taken": 1, "tool_errors": 1, "replan_count": None, "retry_count": None,
        "input_tokens": 100, "output_tokens": 20, "total_tokens": 120, "cached_input_tokens": None,
        "reasoning_tokens": None, "cost_usd": None, "recovery_attempted": False, "recovery_succeeded": None,
        "provenance": {},
        "evidence": {
            "dir": f"tasks/{task_id}", "trace_artifact": {"status": "available", "path": f"tasks/{task_id}/trace.json"},
            "final_response": "done", "tool_calls": [{"name": "tap", "arguments": {"x": 1, "y": 2}}],
            "episode_id": "ep-1", "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
            "expected_answer_match": None, "expected_recalled_memory_match": True,
            "started_at": "2026-11-28T10:00:00Z", "finished_at": "2026-11-28T10:01:00.123456Z",
        },
    }
    for key, value in over.items():
        if key == "evidence":
            rec["evidence"].update(value)
        else:
            rec[key] = value
    return rec


def plan(attempts=None, manifest=MANIFEST, metrics=None) -> RunPlan:
    return plan_run(run_id="run-7", metrics=metrics or {"suite": "android-core"},
                    attempts=attempts or [attempt()], manifest=manifest, suite_def=SUITE_DEF)


def body_of(p: RunPlan, item_id: str) -> dict:
    item = next(a.item for a in p.attempts if a.item_id == item_id)
    return {k: item[k] for k in ("input", "expectedOutput", "metadata")}


def run_plan(run_id, started, suite_def=SUITE_DEF, attempts=None) -> RunPlan:
    manifest = {**MANIFEST, "run_id": run_id, "started_at": started}
    return plan_run(run_id=run_id, metrics={"suite": "android-core"}, attempts=attempts or [attempt()],
                    manifest=manifest, suite_def=suite_def)


ITEM = "android-core:open_settings:1"


def publication(p: RunPlan | None = None, progress=None, **options) -> Publication:
    """A publication's state for ``p`` (no record on disk: a fresh one; no HTTP client)."""
    settings = LangfuseSettings("http://lf.example", "pk-lf-1", "sk-lf-1")
    return Publication(p or plan(), settings, PublishOptions(**options), Path("/nonexistent/out"), progress)


class Progress:
    """A progress output that keeps what it is told: (done, total) and announcements."""

    def __init__(self):
        self.seen: list[tuple[int, int]] = []
        self.notes: list[str] = []

    def __call__(self, done, total):
        self.seen.append((done, total))

    def announce(self, text):
        self.notes.append(text)
