"""Hand-built report inputs: a realistic k=3 run, its k=1 variant and a large generated run.

``main_run()`` is an 8-task, k=3 run (24 planned attempts) with passes, Agent failures, a timeout
with evidence (recovery attempted) and one without, ineligible skipped / environment /
evaluation rows, nulls in many numeric fields, a duplicate row, a bad row, a missing planned
attempt, an unsafe artifact_dir and injected HTML in run strings. Its capability, coverage,
failures and data_quality blocks are written out by hand (the arithmetic below); the other
sections (distributions, per-task aggregates, categories, uncertainty, estimators, cost to
first success) are computed by the package's own stage functions (``fill_metrics``): these
fixtures feed tests of what the reports show, and each formula has tests of its own
(test_stats, test_task_groups, test_capability, test_reference_examples).

Hand calculation for main_run (k=3, 8 observed tasks, 24 attempt rows):
  E1 = 6 tasks (recall_contact and toggle_wifi have an ineligible attempt 1); 4 pass -> 4/6.
  Ek = 5 tasks (also read_notification: attempt 3 missing); any success 4/5; all success 1/5.
  attempt success: 12 successes / 20 eligible rows (duplicate included) of 24 rows.
  Wilson bounds (reference 3.8, z = 1.959963984540054): d = 1 + z^2/n,
  center = (p + z^2/(2n)) / d, margin = z * sqrt(p(1-p)/n + z^2/(4n^2)) / d:
    4/6 -> [0.29999, 0.90323]; 4/5 -> [0.37553, 0.96378]; 1/5 -> [0.03622, 0.62447];
    12/20 -> [0.38658, 0.78119].
  oracle: best quality within attempts 1..3 of the 5 Ek tasks: 1, 1, 0.75, 1, 1 -> 4.75 / 5 = 0.95.
  first success: attempts 1, 1, 2, 1, 1 over the 5 tasks that succeed in their eligible prefix
  (send_sms never does; recall_contact and toggle_wifi start ineligible) -> mean 6/5 = 1.2, p50 1.
"""

from __future__ import annotations

import copy
import hashlib
import math
import random
import zlib
from typing import Any

from bench_pipeline.capability import attempt_sections, diagnostics, failures, task_sections
from bench_pipeline.task_groups import group_tasks
from bench_pipeline.vocabulary import FAILURE_STAGES

RUN_ID = "2026-11-28T10-00-00Z-a1b2c3"
XSS_FINAL_RESPONSE = "<script>window.__xss = 1; alert(1)</script>Search done."
XSS_ERROR = '<img src=x onerror="window.__xss = 2">chat request failed'
XSS_REASON = "</script><script>window.__xss = 3</script>"
XSS_ARG = "<svg onload=\"window.__xss = 4\">"

NUMERIC_FIELDS = (
    "task_wall_ms", "setup_ms", "screenshot_capture_ms", "time_to_first_token_ms", "llm_calls",
    "llm_time_ms", "vision_llm_calls", "vision_llm_time_ms", "device_actions", "device_execution_ms",
    "tool_calls", "screenshots_taken", "tool_errors", "replan_count", "retry_count", "input_tokens",
    "output_tokens", "total_tokens", "cached_input_tokens", "reasoning_tokens", "cost_usd",
)
PROVENANCE_FIELDS = ("llm_calls", "llm_time_ms", "vision_llm_calls", "vision_llm_time_ms",
                     "device_actions", "device_execution_ms", "tool_calls", "screenshots_taken",
                     "tool_errors", "replan_count", "time_to_first_token_ms", "input_tokens",
                     "output_tokens", "total_tokens", "cached_input_tokens", "reasoning_tokens",
                     "first_failure_stage", "failure_event_ref")

SUITE_TASKS = {
    "open_settings": ("navigation", ["Wi-Fi settings page is visible"]),
    "set_alarm": ("clock", ["An alarm exists for 06:30", "The alarm repeats on weekdays"]),
    "send_sms": ("messaging", ["Message addressed to Alex", "Body mentions the 7 pm dinner",
                               "Message was sent, not drafted", "Final answer confirms sending"]),
    "create_event": ("calendar", ["Event titled 'Dentist'", "Event on Tuesday 10:00"]),
    "recall_contact": ("memory", ["Answer names Dana's new number"]),
    "toggle_wifi": ("settings & privacy", ["Wi-Fi is turned off"]),
    "web_search": ("browser", ["Answer states the opening hours", "Cites the museum website"]),
    "read_notification": ("notifications", ["Answer quotes the latest notification"]),
}

MANIFEST: dict[str, Any] = {
    "schema_version": 1,
    "run_id": RUN_ID,
    "status": "completed",
    "started_at": "2026-11-28T10:00:00Z",
    "finished_at": "2026-11-28T11:02:13Z",
    "code": {"git_sha": "4f2c9e1", "dirty": False},
    "suite": {"name": "android-core", "version": "7"},
    "model": {"provider": "example", "name": "agent-model-large"},
    "judge": {"enabled": True, "model": "judge-model"},
    "platform": {"device": "emulator-pixel", "os": "android-15"},
    "active_skills": ["calendar", "contacts"],
    "repeats": 3,
    "metrics_k": 3,
    "planned": [{"task_id": t, "attempts": 3} for t in SUITE_TASKS],
}


# ----------------------------------------------------------------------------------------------
# attempt records
# ----------------------------------------------------------------------------------------------


def numbers(wall: float | None, setup: float | None, llm_calls: int | None, tools: int | None,
            device: int | None, tokens: int | None, **override: Any) -> dict[str, Any]:
    """Plausible per-attempt numbers from a few hand-chosen ones (None propagates)."""
    n: dict[str, Any] = dict.fromkeys(NUMERIC_FIELDS)
    n.update(task_wall_ms=wall, setup_ms=setup, llm_calls=llm_calls, tool_calls=tools,
             device_actions=device, total_tokens=tokens)
    if wall is not None:
        n["screenshot_capture_ms"] = 640 + (int(wall) % 7) * 37
    if llm_calls is not None:
        n["llm_time_ms"] = llm_calls * 910 + (int(wall or 0) % 400)
        n["vision_llm_calls"] = max(1, llm_calls // 3)
        n["vision_llm_time_ms"] = n["vision_llm_calls"] * 1180
        n["time_to_first_token_ms"] = 480 + llm_calls * 35
    if device is not None:
        n["device_execution_ms"] = device * 640 + 212
        n["screenshots_taken"] = max(0, (tools or 0) - device)
    if tokens is not None:
        n["output_tokens"] = tokens // 18
        n["input_tokens"] = tokens - n["output_tokens"]
        n["cached_input_tokens"] = (n["input_tokens"] // 2048) * 1024
        n["reasoning_tokens"] = n["output_tokens"] // 4
    if tools is not None:
        n["tool_errors"] = 0
        n["replan_count"] = 0
    n.update(override)
    return n


def record(task_id: str, attempt: int, line: int, status: str, *, success: bool | None,
           eligible: bool, cls: str | None = None, stage: str | None = None, quality: float | None,
           rubric: tuple[int | None, int | None], nums: dict[str, Any], final_response: str | None = "",
           tool_calls: list[dict[str, Any]] | None = None, trace_status: str = "available",
           errors: dict[str, str] | None = None, hard_failures: list[dict[str, Any]] | None = None,
           verdicts: list[tuple[str, str]] | None = None, event_ref: str | None = None,
           artifact_dir: str | None = "", evidence_dir: str | None = "", recorded: bool = False,
           recovery: tuple[bool | None, bool | None] = (False, None), observations: list[dict] | None = None,
           episode: bool = True) -> dict[str, Any]:
    """One attempt record as in docs/design.md (outputs.md attempt fields + provenance + evidence)."""
    conventional = f"tasks/{task_id}" if attempt == 1 else f"tasks/{task_id}/attempt-{attempt}"
    category, requirements = SUITE_TASKS[task_id]
    spec = [{"id": f"r{i}", "requirement": req} for i, req in enumerate(requirements, start=1)]
    folder = conventional if evidence_dir == "" else evidence_dir
    rubric_items = None
    if verdicts is not None:
        rubric_items = [{"id": f"r{i}", "verdict": verdict, "reason": reason}
                        for i, (verdict, reason) in enumerate(verdicts, start=1)]
    minute = 0 + line * 2
    rec: dict[str, Any] = {
        "run_id": RUN_ID, "task_id": task_id, "attempt": attempt, "line": line, "category": category,
        "artifact_dir": conventional if artifact_dir == "" else artifact_dir,
        "status": status, "success_raw": success, "success": success,
        "agent_eligible_raw": eligible, "agent_eligible": eligible,
        "failure_class": cls, "first_failure_stage": stage, "failure_event_ref": event_ref,
        "quality_score": quality, "rubric_pass_count": rubric[0], "rubric_total": rubric[1],
        **nums,
        "recovery_attempted": recovery[0], "recovery_succeeded": recovery[1],
        # {id: passed in this row}, as the stages' attempt rows carry it (ids are unique here)
        "observations": {o["id"]: o["passed"] is True for o in observations or []},
        "provenance": {f: ("recorded" if recorded else "derived") for f in PROVENANCE_FIELDS},
        "evidence": {
            "dir": folder,
            "trace_artifact": {"status": trace_status,
                               "path": f"{folder}/trace.json" if folder and trace_status != "missing" else None},
            "final_response": final_response,
            "tool_calls": tool_calls,
            "episode_id": f"ep-{zlib.crc32(f'{task_id}#{attempt}'.encode()):08x}" if episode else None,
            "trace_id": hashlib.md5(f"{task_id}#{attempt}".encode()).hexdigest() if episode else None,
            "hard_assertions": {"timeout": status != "timeout", "required_tools": status == "passed" or None},
            "hard_assertion_failures": hard_failures or [],
            "rubric": rubric_items,
            "rubric_spec": spec,
            "environment_state_assertions": None,
            "trace_observations": observations,
            "expected_answer_match": None,
            "expected_recalled_memory_match": None,
            "memory_recall_evidence_source": None,
            "errors": errors or {},
            "started_at": f"2026-11-28T10:{minute:02d}:05Z",
            "finished_at": f"2026-11-28T10:{minute + 1:02d}:41Z" if nums.get("task_wall_ms") else None,
        },
    }
    return rec


def calls(*names_args: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool-call evidence list from (name, arguments) pairs."""
    return [{"name": name, "arguments": args} for name, args in names_args]


SETTINGS_CALLS = calls(("screenshot", {}), ("open_app", {"app": "Settings"}),
                       ("tap", {"x": 540, "y": 612}), ("screenshot", {}))
YES = ("yes", "Visible in the final screenshot.")


def _attempts() -> list[dict[str, Any]]:
    """The 24 attempt rows of main_run (results.jsonl lines 1-24; line 25 is a bad row)."""
    r = record
    rows = [
        r("open_settings", 1, 1, "passed", success=True, eligible=True, quality=1.0, rubric=(1, 1),
          nums=numbers(21_480, 4_210, 5, 4, 2, 18_930), final_response="The Wi-Fi settings page is open.",
          tool_calls=SETTINGS_CALLS, verdicts=[YES]),
        r("open_settings", 2, 2, "passed", success=True, eligible=True, quality=1.0, rubric=(1, 1),
          nums=numbers(19_902, 3_988, 4, 4, 2, 16_211, time_to_first_token_ms=None),
          final_response="Wi-Fi settings are now showing.", tool_calls=SETTINGS_CALLS, verdicts=[YES]),
        r("open_settings", 3, 3, "passed", success=True, eligible=True, quality=1.0, rubric=(1, 1),
          nums=numbers(23_015, 4_402, 5, 5, 3, 19_874, tool_errors=1),
          final_response="Opened Settings > Network > Wi-Fi.",
          tool_calls=SETTINGS_CALLS + calls(("tap", {"x": 540, "y": 700})), verdicts=[YES]),
        r("set_alarm", 1, 4, "passed", success=True, eligible=True, quality=1.0, rubric=(2, 2),
          nums=numbers(48_770, 5_120, 9, 11, 7, 41_306, replan_count=1),
          final_response="Alarm set for 06:30 on weekdays.",
          tool_calls=calls(("open_app", {"app": "Clock"}), ("tap", {"x": 980, "y": 2100}),
                           ("enter_text", {"text": "0630"}), ("tap", {"x": 300, "y": 1500})),
          verdicts=[YES, ("yes", "Repeat shows Mon-Fri.")]),
        r("set_alarm", 2, 5, "failed", success=False, eligible=True, cls="agent", stage="action_selection",
          event_ref="history:14", quality=0.5, rubric=(1, 2),
          nums=numbers(61_304, 5_034, 11, 14, 9, 52_118, tool_errors=2, replan_count=None),
          final_response="I set an alarm for 06:30.",
          tool_calls=calls(("open_app", {"app": "Clock"}), ("tap", {"x": 980, "y": 2100}),
                           ("enter_text", {"text": "0630"}), ("tap", {"x": 120, "y": 1500})),
          verdicts=[YES, ("no", "The alarm is set for Saturday and Sunday only.")]),
        r("set_alarm", 3, 6, "passed", success=True, eligible=True, quality=1.0, rubric=(2, 2),
          nums=numbers(44_120, 4_876, 8, 10, 6, 38_002),
          final_response="Done: weekday alarm at 06:30.",
          tool_calls=calls(("open_app", {"app": "Clock"}), ("enter_text", {"text": "0630"})),
          verdicts=[YES, ("yes", "Repeat shows Mon-Fri.")]),
        r("send_sms", 1, 7, "failed", success=False, eligible=True, cls="agent", stage="final_response",
          event_ref=None, quality=0.75, rubric=(3, 4),
          nums=numbers(72_450, 6_310, 12, 16, 10, 66_870),
          final_response="I drafted the message to Alex about dinner at 7 pm.",
          tool_calls=calls(("open_app", {"app": "Messages"}), ("enter_text", {"text": "Dinner at 7 pm?"})),
          verdicts=[YES, YES, YES, ("no", "The answer says the message was drafted, not sent.")]),
        r("send_sms", 2, 8, "failed", success=False, eligible=True, cls="agent", stage="device_execution",
          event_ref="episode:9", quality=0.0, rubric=(0, 4),
          nums=numbers(88_905, 6_122, 14, 19, 12, 80_455, tool_errors=3, replan_count=2),
          final_response="The send button did not respond.",
          tool_calls=calls(("open_app", {"app": "Messages"}), ("tap", {"x": 1010, "y": 2250})),
          hard_failures=[{"id": "required_tools", "requirement": "send_message must be called",
                          "actual": {"called": ["open_app", "tap", "enter_text"]}}],
          errors={"agent_error": "tap failed: element not found (id=send_button)"}),
        r("send_sms", 3, 9, "failed", success=False, eligible=True, cls="agent", stage="unknown",
          quality=0.25, rubric=(1, 4),
          nums=numbers(95_210, 6_480, 15, 21, 13, 91_772, cached_input_tokens=None),
          final_response="Message sent to Alexa.",
          tool_calls=calls(("open_app", {"app": "Messages"}), ("enter_text", {"text": "Dinner at 7 pm?"})),
          verdicts=[("no", "Recipient is Alexa, not Alex."), YES, ("no", "No sent bubble."),
                    ("no", "Confirms sending to the wrong contact.")]),
        r("create_event", 1, 10, "timeout", success=False, eligible=True, cls="agent", stage="unknown",
          event_ref="history:31", quality=0.0, rubric=(0, 2),
          nums=numbers(300_000, 7_015, 22, 30, 24, 142_330, tool_errors=4, replan_count=3),
          final_response=None, tool_calls=None, trace_status="invalid", recovery=(True, False),
          errors={"error": "Agent timed out after 300 s", "agent_error": "TimeoutError: chat request exceeded 300 s"}),
        r("create_event", 2, 11, "passed", success=True, eligible=True, quality=1.0, rubric=(2, 2),
          nums=numbers(118_230, 6_890, 13, 17, 11, 74_112),
          final_response="Created 'Dentist' on Tuesday at 10:00.",
          tool_calls=calls(("open_app", {"app": "Calendar"}), ("tap", {"x": 900, "y": 2200}),
                           ("enter_text", {"text": "Dentist"})),
          verdicts=[YES, YES]),
        r("create_event", 3, 12, "passed", success=True, eligible=True, quality=1.0, rubric=(2, 2),
          nums=numbers(102_774, 6_650, 12, 15, 10, 70_410, time_to_first_token_ms=None),
          final_response="The Dentist event is on Tuesday 10:00.",
          tool_calls=calls(("open_app", {"app": "Calendar"}), ("enter_text", {"text": "Dentist"})),
          verdicts=[YES, YES]),
        # timeout without evidence that execution started: unknown outcome, ineligible
        r("recall_contact", 1, 13, "timeout", success=None, eligible=False, cls="unknown", stage="unknown",
          quality=None, rubric=(None, None), nums=numbers(None, 12_840, None, None, None, None),
          final_response=None, tool_calls=None, trace_status="missing", recovery=(True, True), episode=False,
          recorded=True, errors={"error": "Agent did not answer before the readiness timeout"}),
        r("recall_contact", 2, 14, "passed", success=True, eligible=True, quality=1.0, rubric=(1, 1),
          nums=numbers(33_480, 5_533, 6, 5, 0, 27_654, device_execution_ms=0, screenshots_taken=0),
          final_response="Dana's new number is +1 555 0100.",
          tool_calls=calls(("recall_memory", {"query": "Dana phone number"})), verdicts=[YES]),
        r("recall_contact", 3, 15, "judge_error", success=None, eligible=False, cls="evaluation",
          stage="evaluation", quality=None, rubric=(None, 1),
          nums=numbers(29_870, 5_610, 5, 4, 0, 25_101, device_execution_ms=0),
          final_response="Dana's number is +1 555 0100.",
          tool_calls=calls(("recall_memory", {"query": "Dana"})),
          errors={"judge_error": "judge request failed: HTTP 503"}),
        r("toggle_wifi", 1, 16, "skipped", success=None, eligible=False, cls="skipped", stage="setup",
          quality=None, rubric=(None, None), nums=numbers(None, 2_311, None, None, None, None),
          final_response=None, tool_calls=None, trace_status="missing", episode=False, recorded=True,
          errors={"error": "Agent not ready: health check returned 502"}),
        r("toggle_wifi", 2, 17, "failed", success=False, eligible=False, cls="environment", stage="setup",
          quality=None, rubric=(None, None), nums=numbers(None, 9_406, None, None, None, None),
          final_response=None, tool_calls=None, trace_status="missing", episode=False, recorded=True,
          hard_failures=[{"id": "setup_wifi_on", "requirement": "Wi-Fi is on before the task",
                          "actual": False}],
          errors={"error": "setup assertion failed: setup_wifi_on"}),
        r("toggle_wifi", 3, 18, "passed", success=True, eligible=True, quality=1.0, rubric=(1, 1),
          nums=numbers(15_660, 3_020, 3, 3, 1, 12_905, reasoning_tokens=None),
          final_response="Wi-Fi is off.", tool_calls=calls(("quick_action", {"action": "wifi", "value": False})),
          verdicts=[YES]),
        r("web_search", 1, 19, "passed", success=True, eligible=True, quality=1.0, rubric=(2, 2),
          nums=numbers(57_300, 4_950, 7, 9, 5, 48_220),
          final_response="The museum is open 10:00-18:00 (source: museum website).",
          tool_calls=calls(("open_url", {"url": "https://museum.example/hours"})),
          verdicts=[YES, YES], observations=[{"id": "used_browser", "passed": True}]),
        # chat error with execution evidence: eligible, unknown class, success false
        r("web_search", 2, 20, "failed", success=False, eligible=True, cls="unknown", stage="unknown",
          quality=0.0, rubric=(0, 2), nums=numbers(12_050, 5_002, 2, 2, 1, 9_870, llm_time_ms=None),
          final_response="", tool_calls=calls(("open_url", {"url": "https://museum.example/"})),
          errors={"agent_error": XSS_ERROR}, observations=[{"id": "used_browser", "passed": True}]),
        # prompt injection from a web page ends up in the final response
        r("web_search", 3, 21, "failed", success=False, eligible=True, cls="agent", stage="final_response",
          quality=0.5, rubric=(1, 2), nums=numbers(64_410, 5_207, 8, 10, 6, 55_930),
          final_response=XSS_FINAL_RESPONSE,
          tool_calls=calls(("open_url", {"url": "https://museum.example/hours"}),
                           ("enter_text", {"text": XSS_ARG})),
          verdicts=[YES, ("no", XSS_REASON)], observations=[{"id": "used_browser", "passed": False}]),
        r("read_notification", 1, 22, "passed", success=True, eligible=True, quality=1.0, rubric=(1, 1),
          nums=numbers(26_800, 3_730, 4, 3, 1, 20_334, cost_usd=None),
          final_response="Latest notification: 'Your parcel arrives today'.",
          tool_calls=calls(("bridge_notification", {"action": "list"})), verdicts=[YES]),
        # unsafe artifact_dir: refused, evidence unavailable, values recorded
        r("read_notification", 2, 23, "passed", success=True, eligible=True, quality=1.0, rubric=(1, 1),
          nums=numbers(24_150, 3_655, 4, 3, 1, None, time_to_first_token_ms=None),
          artifact_dir="tasks/../../outside/read_notification", evidence_dir=None, recorded=True,
          final_response=None, tool_calls=None, trace_status="missing", episode=False, verdicts=[YES]),
        # duplicate of web_search attempt 2 (line 20): the later line wins in task grouping
        r("web_search", 2, 24, "failed", success=False, eligible=True, cls="unknown", stage="unknown",
          quality=0.0, rubric=(0, 2), nums=numbers(13_330, 5_115, 2, 2, 1, 10_402),
          final_response="", tool_calls=calls(("open_url", {"url": "https://museum.example/"})),
          errors={"agent_error": "chat request failed: connection reset"},
          observations=[{"id": "used_browser", "passed": True}]),
    ]
    return rows


def capability_and_coverage(attempts: list[dict[str, Any]], k: int, planned: int | None,
                            missing: int | None) -> dict[str, Any]:
    """capability, coverage, failures, diagnostics and cost_to_first_success of the records,
    by the package's own stage functions."""
    part = task_sections(attempts, group_tasks(attempts, k), metrics_k=k, planned_attempts=planned,
                         missing_attempts=missing)
    return {"capability": part["capability"], "coverage": part["coverage"], "failures": failures(attempts),
            "diagnostics": diagnostics(attempts), "cost_to_first_success": part["cost_to_first_success"]}


def fill_metrics(metrics: dict[str, Any], attempts: list[dict[str, Any]]) -> dict[str, Any]:
    """Add efficiency, reliability, category, observations, aggregate, uncertainty and
    estimators, by the package's own stage functions (k: the metrics' coverage.metrics_k)."""
    k = (metrics.get("coverage") or {}).get("metrics_k")
    task_part = task_sections(attempts, group_tasks(attempts, k), metrics_k=k, planned_attempts=None,
                              missing_attempts=None)
    attempt_part = attempt_sections(attempts)
    for name in ("efficiency", "reliability", "category", "observations"):
        metrics[name] = attempt_part[name]
    metrics["aggregate"] = task_part["aggregate"]
    metrics["uncertainty"] = attempt_part["uncertainty"]
    metrics["estimators"] = task_part["estimators"]
    return metrics


def _main_metrics(attempts: list[dict[str, Any]]) -> dict[str, Any]:
    """metrics.json of main_run; capability/coverage/failures/data_quality written by hand."""
    metrics: dict[str, Any] = {
        "schema_version": 1,
        "formula_version": "2026.11.1",
        "run_id": RUN_ID,
        "suite": "android-core",
        "generated_at": "2026-11-28T11:05:40Z",
        "capability": {
            "pass_at_1": {"value": 4 / 6, "successes": 4, "eligible_tasks": 6, "total_tasks": 8,
                          "ci95": {"lower": 0.299993315138392, "upper": 0.9032285888942195}},
            "pass_at_k": {"value": 0.8, "successes": 4, "eligible_tasks": 5, "total_tasks": 8,
                          "ci95": {"lower": 0.37553462976252533, "upper": 0.9637758913675698}},
            "pass_pow_k": {"value": 0.2, "successes": 1, "eligible_tasks": 5, "total_tasks": 8,
                           "ci95": {"lower": 0.03622410863243014, "upper": 0.6244653702374747}},
            "attempt_success_rate": {"value": 0.6, "successes": 12, "eligible_attempts": 20,
                                     "total_attempts": 24, "coverage": 20 / 24,
                                     "ci95": {"lower": 0.3865815007622531, "upper": 0.781193467627183}},
            "oracle_best_score_at_k": {"value": 0.95, "count": 5, "eligible_tasks": 5},
            "first_success_attempt": {"mean": 1.2, "p50": 1.0, "count": 5},
        },
        "coverage": {"pass_at_1": 0.75, "pass_at_k": 0.625, "pass_pow_k": 0.625, "unique_tasks": 8,
                     "attempts": 24, "metrics_k": 3, "agent_eligible_attempts": 20, "invalid_attempts": 4,
                     "planned_attempts": 24, "missing_attempts": 1},
        "failures": {
            "class": {"agent": 6, "environment": 1, "evaluation": 1, "skipped": 1, "unknown": 3},
            "stage": {"setup": 0, "perception": 0, "planning": 0, "action_selection": 1, "device_execution": 1,
                      "state_verification": 0, "recovery": 0, "final_response": 2, "evaluation": 0, "unknown": 4},
        },
        "diagnostics": {"failure_stage_coverage": 0.5},
        "data_quality": {
            "bad_rows": [{"line": 25, "reason": "task_id is not a string"}],
            "duplicate_rows": [{"task_id": "web_search", "attempt": 2, "lines": [20, 24]}],
            "missing_attempts": [{"task_id": "read_notification", "attempt": 3}],
            "unsafe_artifact_dirs": [{"line": 23, "task_id": "read_notification", "attempt": 2,
                                      "artifact_dir": "tasks/../../outside/read_notification"}],
            "invalid_artifacts": [{"line": 10, "task_id": "create_event", "attempt": 1,
                                   "file": "tasks/create_event/trace.json", "status": "invalid",
                                   "reason": "not valid JSON (unexpected end of data: line 1 column 5 (char 4))"}],
            "run_files": [{"file": "suite.json", "status": "invalid", "reason": "tasks is not a list <b>of</b> objects"}],
        },
    }
    derived = capability_and_coverage(attempts, 3, 24, 1)
    metrics["cost_to_first_success"] = derived["cost_to_first_success"]
    return fill_metrics(metrics, attempts)


def main_run() -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any], str]:
    """(metrics, attempts, manifest, run_id) of the hand-built k=3 run; fresh copies each call."""
    attempts = _attempts()
    return _main_metrics(attempts), attempts, copy.deepcopy(MANIFEST), RUN_ID


def k1_run() -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any], str]:
    """The same tasks with only attempt 1 (repeats 1, k=1)."""
    attempts = [a for a in _attempts() if a["attempt"] == 1]
    manifest = copy.deepcopy(MANIFEST)
    manifest.update(repeats=1, metrics_k=1, run_id=RUN_ID + "-k1",
                    planned=[{"task_id": t, "attempts": 1} for t in SUITE_TASKS])
    metrics: dict[str, Any] = {"schema_version": 1, "formula_version": "2026.11.1", "run_id": RUN_ID + "-k1",
                               "suite": "android-core", "generated_at": "2026-11-28T11:05:40Z"}
    metrics.update(capability_and_coverage(attempts, 1, len(SUITE_TASKS), 0))
    metrics["data_quality"] = {"bad_rows": [], "duplicate_rows": [], "missing_attempts": [], "unsafe_artifact_dirs": []}
    return fill_metrics(metrics, attempts), attempts, manifest, RUN_ID + "-k1"


# ----------------------------------------------------------------------------------------------
# large generated run (size and load time)
# ----------------------------------------------------------------------------------------------

WORDS = ("the", "settings", "page", "shows", "alarm", "message", "sent", "calendar", "event", "opened",
         "search", "result", "contact", "number", "notification", "wifi", "toggle", "screen", "button",
         "confirmed", "today", "tomorrow", "after", "tapping", "scrolling", "found", "list")


def large_run(n_attempts: int = 10_000, k: int = 3, seed: int = 7) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any], str]:
    """A generated run of exactly ``n_attempts`` rows (ceil(n/k) tasks x k attempts, the last task possibly cut short)."""
    rng = random.Random(seed)
    names = list(SUITE_TASKS)
    attempts: list[dict[str, Any]] = []
    n_tasks = max(1, math.ceil(n_attempts / k))
    line = 0
    for t in range(n_tasks):
        base = names[t % len(names)]
        task_id = f"{base}_{t:05d}"
        difficulty = rng.random()
        for n in range(1, k + 1):
            if len(attempts) >= n_attempts:
                break
            line += 1
            roll = rng.random()
            wall = int(rng.lognormvariate(10.6, 0.6))
            tools = max(1, int(rng.gammavariate(3, 4)))
            device = rng.randint(0, tools)
            tokens = int(wall * rng.uniform(0.6, 1.1))
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 90)))
            tool_list = calls(*[(rng.choice(("tap", "enter_text", "screenshot", "open_app", "swipe")),
                                 {"x": rng.randint(0, 1080), "y": rng.randint(0, 2400)}) for _ in range(min(tools, 12))])
            common = dict(nums=numbers(wall, rng.randint(2000, 9000), max(1, tools // 2), tools, device, tokens),
                          final_response=text.capitalize() + ".", tool_calls=tool_list)
            if roll < 0.62 - 0.4 * difficulty:
                rec = record(base, 1, line, "passed", success=True, eligible=True, quality=1.0, rubric=(2, 2),
                             verdicts=[YES, YES], **common)
            elif roll < 0.88:
                rec = record(base, 1, line, "failed", success=False, eligible=True, cls="agent",
                             stage=rng.choice(FAILURE_STAGES[1:8] + ("unknown", "unknown")), quality=0.5, rubric=(1, 2),
                             verdicts=[YES, ("no", text[:120])], **common)
            elif roll < 0.93:
                rec = record(base, 1, line, "timeout", success=False, eligible=True, cls="agent", stage="unknown",
                             quality=0.0, rubric=(0, 2), recovery=(True, rng.random() < 0.5),
                             errors={"error": "Agent timed out after 300 s"}, **common)
            elif roll < 0.96:
                rec = record(base, 1, line, "skipped", success=None, eligible=False, cls="skipped", stage="setup",
                             quality=None, rubric=(None, None), nums=numbers(None, 2500, None, None, None, None),
                             final_response=None, tool_calls=None, trace_status="missing", episode=False,
                             errors={"error": "Agent not ready"})
            elif roll < 0.98:
                rec = record(base, 1, line, "judge_error", success=None, eligible=False, cls="evaluation",
                             stage="evaluation", quality=None, rubric=(None, 2), errors={"judge_error": "HTTP 503"}, **common)
            else:
                rec = record(base, 1, line, "failed", success=False, eligible=False, cls="environment",
                             stage="setup", quality=None, rubric=(None, None),
                             nums=numbers(None, 8000, None, None, None, None), final_response=None,
                             tool_calls=None, trace_status="missing", episode=False,
                             errors={"error": "setup assertion failed"})
            rec["task_id"], rec["attempt"] = task_id, n
            folder = f"tasks/{task_id}" if n == 1 else f"tasks/{task_id}/attempt-{n}"
            rec["artifact_dir"] = rec["evidence"]["dir"] = folder
            if rec["evidence"]["trace_artifact"]["path"]:
                rec["evidence"]["trace_artifact"]["path"] = f"{folder}/trace.json"
            attempts.append(rec)
    manifest = copy.deepcopy(MANIFEST)
    manifest.update(run_id="large-run", repeats=k, metrics_k=k,
                    planned=[{"task_id": f"{names[t % len(names)]}_{t:05d}", "attempts": k} for t in range(n_tasks)])
    metrics: dict[str, Any] = {"schema_version": 1, "formula_version": "2026.11.1", "run_id": "large-run",
                               "suite": "android-core", "generated_at": "2026-11-28T11:05:40Z"}
    metrics.update(capability_and_coverage(attempts, k, n_tasks * k, n_tasks * k - len(attempts)))
    metrics["data_quality"] = {"bad_rows": [], "duplicate_rows": [], "missing_attempts": [], "unsafe_artifact_dirs": []}
    return fill_metrics(metrics, attempts), attempts, manifest, "large-run"


# ----------------------------------------------------------------------------------------------
# a comparison with a baseline (comparison.md), with hostile names
# ----------------------------------------------------------------------------------------------

XSS_TASK = '<img src=x onerror="window.__xss = 5">|task'
XSS_RUN = "base-<script>window.__xss = 6</script>"


def compared_run(baseline_dir: Any = None, candidate_dir: Any = None):
    """A Comparison of two small hand-made runs: 12 paired tasks whose attempt 1 all pass in
    the baseline; in the candidate 8 of them fail it, the one with a hostile id first (a
    significant regression, McNemar p = 2 / 2^8), and each run has a task the other lacks.
    Suites differ, so a warning shows. ``*_dir``: the runs' folders, for links."""
    from pathlib import Path

    from bench_pipeline.comparison import comparison_of
    from bench_pipeline.comparison_sides import make_side

    def rows(plan: dict[str, list[bool | None]], wall: float) -> list[dict[str, Any]]:
        out, line = [], 0
        for task, outcomes in plan.items():
            for n, ok in enumerate(outcomes, start=1):
                line += 1
                out.append({"task_id": task, "attempt": n, "line": line, "success": ok is True,
                            "agent_eligible": ok is not None, "quality_score": 1.0 if ok else 0.0,
                            "task_wall_ms": wall + 10 * line, "total_tokens": 1000 + line, "cost_usd": None,
                            "evidence": {"dir": f"tasks/{task}/attempt-{n}"}})
        return out

    tasks = [XSS_TASK] + [f"task_{i:02d}" for i in range(11)]
    base_plan = {t: [True, True] for t in tasks} | {"only_in_baseline": [True, False]}
    cand_plan = {t: ([False, True] if i < 8 else [True, True]) for i, t in enumerate(tasks)} | {"only_in_candidate": [True, None]}
    baseline = make_side(rows(base_plan, 2000), run_id=XSS_RUN, suite="android-core", metrics_k=2,
                         run_dir=Path(baseline_dir) if baseline_dir else None)
    candidate = make_side(rows(cand_plan, 2600), run_id=RUN_ID, suite="android-core-<b>v2</b>", metrics_k=2,
                          run_dir=Path(candidate_dir) if candidate_dir else None)
    return comparison_of(baseline, candidate, max_drop=0.05)
