"""Every worked example of metrics-reference.txt, run through a real run folder on disk.

Each test builds the example's run folder, runs the whole pipeline (process_run), and
asserts the reference's own numbers.
"""

from __future__ import annotations

import pytest

from bench_pipeline.pipeline import process_run

from .run_builder import make_run, row
from .support.reference_tables import OUTCOME_TABLE


def _attempt(processed, task_id: str, attempt: int = 1) -> dict:
    return next(a for a in processed.attempts if a["task_id"] == task_id and a["attempt"] == attempt)


def _model(duration: float, **usage) -> dict:
    return {"type": "assistant", "content": "...", "usage": usage or {"input_tokens": 10, "output_tokens": 2}, "duration_ms": duration}


def test_3_3_model_calls_and_visual_inference(tmp_path):
    """3.3: calls of 900, 1,400 and 700 ms; only the second follows a screenshot."""
    history = [
        {"type": "user", "content": "Open settings"},
        _model(900),
        {"type": "tool_call", "tool_name": "screenshot", "tool_call_id": "s1", "tool_input": {}},
        {"type": "tool_result", "tool_name": "screenshot", "tool_call_id": "s1", "content": "screenshot observation: home screen"},
        _model(1400),
        _model(700),
    ]
    run = make_run(tmp_path, [row("t1")], artifacts={"tasks/t1": {"history.json": history}})
    a = _attempt(process_run(run), "t1")
    assert (a["llm_calls"], a["llm_time_ms"]) == (3, 3000)
    assert (a["vision_llm_calls"], a["vision_llm_time_ms"]) == (1, 1400)
    assert a["provenance"]["llm_calls"] == "derived"


def test_3_4_device_execution_time(tmp_path):
    """3.4: a 200 ms tap, 800 ms text entry and 400 ms failed swipe contribute 1,400 ms;
    a 300 ms screenshot and an 11 ms bridge_contacts query contribute nothing."""
    episode = {
        "episode_id": "ep-1",
        "events": [
            {"type": "tool_result", "tool_name": "tap", "tool_input": {"x": 1, "y": 2}, "duration_ms": 200},
            {"type": "tool_result", "tool_name": "enter_text", "tool_input": {"text": "wifi"}, "duration_ms": 800},
            {"type": "tool_result", "tool_name": "swipe", "tool_input": {"dir": "up"}, "duration_ms": 400, "is_error": True},
            {"type": "tool_result", "tool_name": "screenshot", "tool_input": {}, "duration_ms": 300},
            {"type": "tool_result", "tool_name": "bridge_contacts", "tool_input": {"action": "query"}, "duration_ms": 11},
        ],
    }
    run = make_run(tmp_path, [row("t1", status="failed")], artifacts={"tasks/t1": {"episode.json": episode}})
    a = _attempt(process_run(run), "t1")
    assert a["device_execution_ms"] == 1400
    assert a["provenance"]["device_execution_ms"] == "derived"
    # The failed swipe is the first episode error, an allowlisted device error (3.5, R16, R18).
    assert a["failure_event_ref"] == "episode:2"
    assert a["first_failure_stage"] == "device_execution"
    assert a["tool_errors"] == 1


def test_3_6_quality_and_rubric_pass_rate(tmp_path):
    """3.6: three yes verdicts out of four yield quality 0.75 and rubric pass rate 0.75,
    but the task fails."""
    rubric = [{"id": f"r{i}", "verdict": v, "reason": ""} for i, v in enumerate(["yes", "yes", "yes", "no"])]
    r = row("t1", status="failed", quality_score=0.75, rubric_pass_count=3, rubric_total=4, rubric=rubric, category="nav")
    processed = process_run(make_run(tmp_path, [r]))
    a = _attempt(processed, "t1")
    assert a["quality_score"] == 0.75
    assert a["rubric_pass_count"] / a["rubric_total"] == 0.75
    assert a["success"] is False
    assert processed.metrics["category"]["nav"]["rubric_pass_rate"] == 0.75
    assert processed.metrics["capability"]["pass_at_1"]["value"] == 0


def test_3_7_fixed_k_example(tmp_path):
    """3.7, k=2: pass_at_1=3/4, pass_at_k=3/3, pass_pow_k=1/3, coverage 3/4, attempt success 5/7."""
    rows = [
        row("A", 1, "passed"), row("A", 2, "failed"),
        row("B", 1, "failed"), row("B", 2, "passed"),
        row("C", 1, "passed"), row("C", 2, "passed"),
        row("D", 1, "passed"), row("D", 2, "skipped"),
    ]
    m = process_run(make_run(tmp_path, rows, manifest={"status": "completed", "metrics_k": 2})).metrics
    cap, cov = m["capability"], m["coverage"]
    assert (cap["pass_at_1"]["successes"], cap["pass_at_1"]["eligible_tasks"]) == (3, 4)
    assert cap["pass_at_1"]["value"] == 3 / 4
    assert (cap["pass_at_k"]["successes"], cap["pass_at_k"]["eligible_tasks"]) == (3, 3)
    assert cap["pass_at_k"]["value"] == 1
    assert (cap["pass_pow_k"]["successes"], cap["pass_pow_k"]["eligible_tasks"]) == (1, 3)
    assert cap["pass_pow_k"]["value"] == 1 / 3
    assert cov["pass_at_k"] == cov["pass_pow_k"] == 3 / 4
    assert cov["pass_at_1"] == 1
    asr = cap["attempt_success_rate"]
    assert (asr["successes"], asr["eligible_attempts"], asr["total_attempts"]) == (5, 7, 8)
    assert asr["value"] == 5 / 7
    assert asr["coverage"] == 7 / 8
    assert cov["invalid_attempts"] == 1
    for metric in ("pass_at_1", "pass_at_k", "pass_pow_k"):
        assert cap[metric]["total_tasks"] == 4


def test_3_7_first_success_example(tmp_path):
    """3.7: eligible Fail/Pass taking 2,000 and 3,000 ms give first-success attempt 2 and
    5,000 ms; missing tokens on attempt 2 drop the token value only; Fail/Ineligible/Pass
    contributes to neither first-success metric."""
    rows = [
        row("X", 1, "failed", metrics={"task_wall_ms": 2000, "total_tokens": 100}),
        row("X", 2, "passed", metrics={"task_wall_ms": 3000}),
        row("Y", 1, "failed", metrics={"task_wall_ms": 1000, "total_tokens": 10}),
        row("Y", 2, "skipped", metrics={"task_wall_ms": 1000, "total_tokens": 10}),
        row("Y", 3, "passed", metrics={"task_wall_ms": 1000, "total_tokens": 10}),
    ]
    m = process_run(make_run(tmp_path, rows, manifest={"status": "completed", "metrics_k": 2})).metrics
    assert m["capability"]["first_success_attempt"] == {"mean": 2, "p50": 2, "count": 1}
    cfs = m["cost_to_first_success"]
    assert cfs["task_wall_ms"] == {"count": 1, "mean": 5000, "p50": 5000}
    assert cfs["total_tokens"] == {"count": 0, "mean": None, "p50": None}
    assert cfs["cost_usd"]["count"] == 0


def test_3_8_percentiles_example(tmp_path):
    """3.8: for 100, 200 and 900 ms, p50 is 200 ms and p90 is 760 ms."""
    rows = [row(f"t{i}", metrics={"task_wall_ms": ms}) for i, ms in enumerate([900, 100, 200])]
    dist = process_run(make_run(tmp_path, rows)).metrics["efficiency"]["task_wall_ms"]
    assert dist["count"] == 3 and dist["sum"] == 1200 and dist["mean"] == 400
    assert dist["p50"] == 200
    assert dist["p90"] == pytest.approx(760)
    assert dist["p95"] == pytest.approx(830)


def test_3_8_single_sample_percentiles(tmp_path):
    """3.8: a single sample makes all percentiles equal to it."""
    dist = process_run(make_run(tmp_path, [row("t", metrics={"task_wall_ms": 321})])).metrics["efficiency"]["task_wall_ms"]
    assert dist["p50"] == dist["p90"] == dist["p95"] == 321


def test_3_8_wilson_bounds(tmp_path):
    """3.8: Wilson 95% bounds of pass_at_1 with 3 of 4, the reference's worked values."""
    rows = [row("a"), row("b"), row("c"), row("d", status="failed")]
    ci = process_run(make_run(tmp_path, rows)).metrics["capability"]["pass_at_1"]["ci95"]
    assert ci["lower"] == pytest.approx(0.300641, abs=1e-6)
    assert ci["upper"] == pytest.approx(0.954412, abs=1e-6)


@pytest.mark.parametrize(("status", "failure_class", "raw_success", "eligible"), OUTCOME_TABLE)
def test_outcome_table_rows(tmp_path, status, failure_class, raw_success, eligible):
    """Each example of the reference's outcome table keeps its eligibility; the legacy
    derivation fills a non-Boolean success from status (passed true, failed/timeout false)."""
    r = {"task_id": "t", "attempt": 1, "status": status, "failure_class": failure_class,
         "success": raw_success, "agent_eligible": eligible}
    a = _attempt(process_run(make_run(tmp_path, [r])), "t")
    assert a["success_raw"] is raw_success
    assert a["agent_eligible"] is eligible and a["agent_eligible_raw"] is eligible
    expected = raw_success if raw_success is not None else {"failed": False, "timeout": False}.get(status)
    assert a["success"] is expected


def test_status_skipped_is_not_added_to_class_skipped(tmp_path):
    """Reference 2: status=skipped and failure_class=skipped are one attempt on two axes."""
    rows = [row("a", status="skipped"), row("b", status="skipped"), row("c", status="failed", failure_class="skipped", agent_eligible=False)]
    m = process_run(make_run(tmp_path, rows)).metrics
    assert m["failures"]["class"]["skipped"] == 3
    assert m["failures"]["stage"] == {s: 0 for s in m["failures"]["stage"]}
