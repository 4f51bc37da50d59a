"""Every worked example of metrics-reference.txt, each an explicit test asserting the
reference's own numbers.

The attempt examples (3.3, 3.4, 3.6, the outcome table) derive the attempt row in memory
(``support.attempt_inputs``: stage 2 on the artifacts as values); the run examples (3.6's
category, 3.7, 3.8) compute the run aggregates from attempt rows in memory
(``support.attempt_rows``). The 3.7 fixed-k example also goes through a run folder and the
whole pipeline (run_stages), where the point is that the path gives the same numbers.
"""

from __future__ import annotations

import pytest

from bench_pipeline.attempt_metrics import outcome
from bench_pipeline.pipeline import run_stages

from .run_builder import make_run, row
from .support.attempt_inputs import derive
from .support.attempt_rows import attempt, metrics_of
from .support.reference_tables import OUTCOME_TABLE


def _model(duration: float, **usage) -> dict:
    return {"type": "assistant", "content": "...", "usage": usage or {"input_tokens": 10, "output_tokens": 2}, "duration_ms": duration}


def test_3_3_model_calls_and_visual_inference():
    """3.3: calls of 900, 1,400 and 700 ms; only the second follows a screenshot."""
    history = [
        {"type": "user", "content": "Open settings"},
        _model(900),
        {"type": "tool_call", "tool_name": "screenshot", "tool_call_id": "s1", "tool_input": {}},
        {"type": "tool_result", "tool_name": "screenshot", "tool_call_id": "s1", "content": "screenshot observation: home screen"},
        _model(1400),
        _model(700),
    ]
    a = derive(history, status="passed", task_id="t1")
    assert (a["llm_calls"], a["llm_time_ms"]) == (3, 3000)
    assert (a["vision_llm_calls"], a["vision_llm_time_ms"]) == (1, 1400)
    assert a["provenance"]["llm_calls"] == "derived"


def test_3_4_device_execution_time():
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
    a = derive(episode=episode, status="failed", task_id="t1")
    assert a["device_execution_ms"] == 1400
    assert a["provenance"]["device_execution_ms"] == "derived"
    # The failed swipe is the first episode error, an allowlisted device error (3.5, R16, R18).
    assert a["failure_event_ref"] == "episode:2"
    assert a["first_failure_stage"] == "device_execution"
    assert a["tool_errors"] == 1


def test_3_6_quality_and_rubric_pass_rate():
    """3.6: three yes verdicts out of four yield quality 0.75 and rubric pass rate 0.75,
    but the task fails."""
    rubric = [{"id": f"r{i}", "verdict": v, "reason": ""} for i, v in enumerate(["yes", "yes", "yes", "no"])]
    a = derive(status="failed", task_id="t1", quality_score=0.75, rubric_pass_count=3, rubric_total=4,
               rubric=rubric, category="nav")
    assert a["quality_score"] == 0.75
    assert a["rubric_pass_count"] / a["rubric_total"] == 0.75
    assert a["success"] is False
    m = metrics_of([a])
    assert m["category"]["nav"]["rubric_pass_rate"] == 0.75
    assert m["capability"]["pass_at_1"]["value"] == 0


# 3.7's fixed-k example, k=2: A Pass/Fail, B Fail/Pass, C Pass/Pass, D Pass/Ineligible.
FIXED_K_EXAMPLE = [("A", 1, "passed"), ("A", 2, "failed"), ("B", 1, "failed"), ("B", 2, "passed"),
                   ("C", 1, "passed"), ("C", 2, "passed"), ("D", 1, "passed"), ("D", 2, "skipped")]


def _assert_fixed_k_example(m: dict) -> None:
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


def test_3_7_fixed_k_example():
    """3.7, k=2: pass_at_1=3/4, pass_at_k=3/3, pass_pow_k=1/3, coverage 3/4, attempt success 5/7."""
    _assert_fixed_k_example(metrics_of([attempt(t, n, s) for t, n, s in FIXED_K_EXAMPLE], 2))


def test_3_7_fixed_k_example_through_a_run_folder(tmp_path):
    """The same example as a run folder through the whole pipeline: the same numbers."""
    rows = [row(t, n, s) for t, n, s in FIXED_K_EXAMPLE]
    _assert_fixed_k_example(run_stages(make_run(tmp_path, rows, manifest={"status": "completed", "metrics_k": 2})).processed.metrics)


def test_3_7_first_success_example():
    """3.7: eligible Fail/Pass taking 2,000 and 3,000 ms give first-success attempt 2 and
    5,000 ms; missing tokens on attempt 2 drop the token value only; Fail/Ineligible/Pass
    contributes to neither first-success metric."""
    rows = [
        attempt("X", 1, "failed", task_wall_ms=2000, total_tokens=100),
        attempt("X", 2, "passed", task_wall_ms=3000),
        attempt("Y", 1, "failed", task_wall_ms=1000, total_tokens=10),
        attempt("Y", 2, "skipped", task_wall_ms=1000, total_tokens=10),
        attempt("Y", 3, "passed", task_wall_ms=1000, total_tokens=10),
    ]
    m = metrics_of(rows, 2)
    assert m["capability"]["first_success_attempt"] == {"mean": 2, "p50": 2, "count": 1}
    cfs = m["cost_to_first_success"]
    assert cfs["task_wall_ms"] == {"count": 1, "mean": 5000, "p50": 5000}
    assert cfs["total_tokens"] == {"count": 0, "mean": None, "p50": None}
    assert cfs["cost_usd"]["count"] == 0


def test_3_8_percentiles_example():
    """3.8: for 100, 200 and 900 ms, p50 is 200 ms and p90 is 760 ms."""
    rows = [attempt(f"t{i}", task_wall_ms=ms) for i, ms in enumerate([900, 100, 200])]
    dist = metrics_of(rows)["efficiency"]["task_wall_ms"]
    assert dist["count"] == 3 and dist["sum"] == 1200 and dist["mean"] == 400
    assert dist["p50"] == 200
    assert dist["p90"] == pytest.approx(760)
    assert dist["p95"] == pytest.approx(830)


def test_3_8_single_sample_percentiles():
    """3.8: a single sample makes all percentiles equal to it."""
    dist = metrics_of([attempt("t", task_wall_ms=321)])["efficiency"]["task_wall_ms"]
    assert dist["p50"] == dist["p90"] == dist["p95"] == 321


def test_3_8_wilson_bounds():
    """3.8: Wilson 95% bounds of pass_at_1 with 3 of 4, the reference's worked values."""
    rows = [attempt("a"), attempt("b"), attempt("c"), attempt("d", status="failed")]
    ci = metrics_of(rows)["capability"]["pass_at_1"]["ci95"]
    assert ci["lower"] == pytest.approx(0.300641, abs=1e-6)
    assert ci["upper"] == pytest.approx(0.954412, abs=1e-6)


@pytest.mark.parametrize(("status", "failure_class", "raw_success", "eligible"), OUTCOME_TABLE)
def test_outcome_table_rows(status, failure_class, raw_success, eligible):
    """Each example of the reference's outcome table keeps its eligibility; the legacy
    derivation fills a non-Boolean success from status (passed true, failed/timeout false)."""
    r = {"task_id": "t", "attempt": 1, "status": status, "failure_class": failure_class,
         "success": raw_success, "agent_eligible": eligible}
    a = outcome(r)
    assert a["success_raw"] is raw_success
    assert a["agent_eligible"] is eligible and a["agent_eligible_raw"] is eligible
    expected = raw_success if raw_success is not None else {"failed": False, "timeout": False}.get(status)
    assert a["success"] is expected


def test_status_skipped_is_not_added_to_class_skipped():
    """Reference 2: status=skipped and failure_class=skipped are one attempt on two axes."""
    rows = [attempt("a", status="skipped"), attempt("b", status="skipped"),
            attempt("c", status="failed", failure_class="skipped", agent_eligible=False)]
    m = metrics_of(rows)
    assert m["failures"]["class"]["skipped"] == 3
    assert m["failures"]["stage"] == {s: 0 for s in m["failures"]["stage"]}
