"""Stage 4 edge cases: run aggregates in metrics.json (metrics-reference.txt 2, 3.7, 3.8;
outputs.md; readings R19, R24, R25, R29, R35, R37, R38).

Rows without artifact folders keep their recorded numbers and labels, so every value
below is set directly in results.jsonl.
"""

from __future__ import annotations

import json

import pytest

from bench_pipeline.pipeline import process_run

from .run_builder import make_run, row

CLASSES = ("agent", "environment", "evaluation", "skipped", "unknown")
STAGES = ("setup", "perception", "planning", "action_selection", "device_execution",
          "state_verification", "recovery", "final_response", "evaluation", "unknown")
EFFICIENCY = ("task_wall_ms", "setup_ms", "llm_time_ms", "llm_calls", "vision_llm_calls",
              "vision_llm_time_ms", "time_to_first_token_ms", "device_execution_ms",
              "screenshot_capture_ms", "tool_calls", "device_actions", "screenshots_taken",
              "input_tokens", "output_tokens", "total_tokens", "cached_input_tokens",
              "reasoning_tokens", "cost_usd")
RELIABILITY = ("tool_errors", "replan_count", "retry_count")
EMPTY_DIST = {"count": 0, "sum": None, "mean": None, "p50": None, "p90": None, "p95": None}


def _metrics(tmp_path, rows, **kw) -> dict:
    return process_run(make_run(tmp_path, rows, **kw)).metrics


def unknown(task_id: str, attempt: int = 1, **fields) -> dict:
    """An eligible attempt whose success is unknown (R19)."""
    return row(task_id, attempt, "judge_error", agent_eligible=True, failure_class="unknown", **fields)


# --- empty run (3.7, 3.8, R25) ---------------------------------------------------------------

@pytest.mark.parametrize("content", [b"", b"\n", b"\n  \n\t\n"])
def test_empty_run(tmp_path, content):
    run = make_run(tmp_path, [])
    (run / "results.jsonl").write_bytes(content)
    m = process_run(run).metrics
    cap = m["capability"]
    for name in ("pass_at_1", "pass_at_k", "pass_pow_k"):
        assert cap[name] == {"value": None, "successes": 0, "eligible_tasks": 0, "total_tasks": 0,
                             "ci95": {"lower": None, "upper": None}}
    assert cap["attempt_success_rate"] == {"value": None, "successes": 0, "eligible_attempts": 0, "total_attempts": 0,
                                           "ci95": {"lower": None, "upper": None}, "coverage": 0}
    assert cap["oracle_best_score_at_k"] == {"value": None, "count": 0, "eligible_tasks": 0}
    assert cap["first_success_attempt"] == {"mean": None, "p50": None, "count": 0}
    assert m["coverage"] == {"pass_at_1": 0, "pass_at_k": 0, "pass_pow_k": 0, "unique_tasks": 0, "attempts": 0,
                             "metrics_k": None, "agent_eligible_attempts": 0, "invalid_attempts": 0,
                             "planned_attempts": None, "missing_attempts": None}
    assert m["failures"] == {"class": {c: 0 for c in CLASSES}, "stage": {s: 0 for s in STAGES}}
    assert m["diagnostics"] == {"failure_stage_coverage": None}
    assert m["category"] == {}
    assert m["observations"] == {}
    assert m["efficiency"] == {f: EMPTY_DIST for f in EFFICIENCY}
    assert m["reliability"] == {f: EMPTY_DIST for f in RELIABILITY}
    assert m["cost_to_first_success"] == {f: {"count": 0, "mean": None, "p50": None}
                                          for f in ("task_wall_ms", "total_tokens", "cost_usd")}
    assert m["aggregate"] == {"tasks": 0, "per_task": {}}
    dq = m["data_quality"]
    assert (dq["bad_rows"], dq["duplicate_rows"], dq["unsafe_artifact_dirs"]) == ([], [], [])
    json.dumps(m, allow_nan=False)


def test_metrics_document_identity(tmp_path):
    m = _metrics(tmp_path, [row("a")], run_id="r-7", suite={"name": "android-core", "tasks": []})
    assert m["schema_version"] == 1
    assert isinstance(m["formula_version"], str) and m["formula_version"]
    assert (m["run_id"], m["suite"]) == ("r-7", "android-core")
    assert isinstance(m["generated_at"], str)


def test_all_ineligible_run(tmp_path):
    m = _metrics(tmp_path, [row("a", status="skipped"), row("b", status="judge_error")])
    cap = m["capability"]
    assert cap["pass_at_1"]["value"] is None and cap["pass_at_1"]["total_tasks"] == 2
    assert cap["attempt_success_rate"]["value"] is None
    assert cap["attempt_success_rate"]["coverage"] == 0
    assert m["coverage"]["pass_at_1"] == 0
    assert (m["coverage"]["agent_eligible_attempts"], m["coverage"]["invalid_attempts"]) == (0, 2)
    assert m["diagnostics"]["failure_stage_coverage"] is None


# --- attempt_success_rate and coverage (3.7, 3.8, R19, R29) ------------------------------

def test_attempt_success_rate_counts_every_eligible_row(tmp_path):
    rows = [
        row("A", 1, "passed"), row("A", 2, "failed"), row("A", 3, "passed"),     # beyond k included
        unknown("B", 1),                                                          # eligible, not success
        row("C", 1, "skipped"),                                                   # ineligible
        row("D", 1, "passed", agent_eligible=False),                              # explicit exclusion
        row("A", 1, "passed"),                                                    # duplicate: still a row
    ]
    m = _metrics(tmp_path, rows, manifest={"status": "completed", "metrics_k": 1})
    asr = m["capability"]["attempt_success_rate"]
    assert (asr["successes"], asr["eligible_attempts"], asr["total_attempts"]) == (3, 5, 7)
    assert asr["value"] == pytest.approx(3 / 5)
    assert asr["coverage"] == pytest.approx(5 / 7)
    cov = m["coverage"]
    assert (cov["attempts"], cov["agent_eligible_attempts"], cov["invalid_attempts"], cov["unique_tasks"]) == (7, 5, 2, 4)
    assert cov["metrics_k"] == 1
    assert m["aggregate"]["tasks"] == 7


def test_pass_metric_shape_and_wilson(tmp_path):
    rows = [row("a"), row("b"), row("c", status="failed")]
    p1 = _metrics(tmp_path, rows)["capability"]["pass_at_1"]
    assert set(p1) == {"value", "successes", "eligible_tasks", "total_tasks", "ci95"}
    assert p1["value"] == pytest.approx(2 / 3)
    assert 0 < p1["ci95"]["lower"] < 2 / 3 < p1["ci95"]["upper"] < 1


def test_all_success_interval_clipped_to_one(tmp_path):
    ci = _metrics(tmp_path, [row("a"), row("b")])["capability"]["pass_at_1"]["ci95"]
    assert ci["upper"] <= 1 and ci["upper"] == pytest.approx(1)
    ci0 = _metrics(tmp_path / "z", [row("a", status="failed")])["capability"]["pass_at_1"]["ci95"]
    assert ci0["lower"] == 0


# --- failures (2, 3.8, R19, R29, R35) ------------------------------------------------------

def test_failure_class_counts_all_classified_rows(tmp_path):
    rows = [
        row("a", status="failed", failure_class="agent"),
        row("b", status="timeout", failure_class="agent"),
        row("c", status="failed", failure_class="environment", agent_eligible=False),
        row("d", status="judge_error"),                                     # evaluation, ineligible
        row("e", status="skipped"),                                         # skipped, ineligible
        row("f", status="failed", failure_class="unknown", success=None, agent_eligible=False),
        row("g", status="passed"),                                          # null class: not counted
        row("h", status="failed", failure_class="network"),                # unlisted: own key
        row("a", status="failed", failure_class="agent"),                   # duplicate counts too
    ]
    cls = _metrics(tmp_path, rows)["failures"]["class"]
    assert cls == {"agent": 3, "environment": 1, "evaluation": 1, "skipped": 1, "unknown": 1, "network": 1}


def test_failure_stage_counts_eligible_failures_only(tmp_path):
    rows = [
        row("a", status="failed", first_failure_stage="device_execution"),
        row("b", status="failed", first_failure_stage="unknown"),
        row("c", status="failed", first_failure_stage="warp"),              # unlisted: own key
        row("d", status="timeout", first_failure_stage="setup"),
        row("e", status="failed", first_failure_stage="planning", agent_eligible=False, failure_class="environment"),
        unknown("f", first_failure_stage="perception"),                     # success unknown: not a failure
        row("g", status="passed", first_failure_stage="recovery"),          # success clears the stage
        row("h", status="skipped", first_failure_stage="setup"),
        row("a", status="failed", first_failure_stage="device_execution"),  # duplicate counts too
    ]
    m = _metrics(tmp_path, rows)
    stage = m["failures"]["stage"]
    assert set(STAGES) <= set(stage)
    assert stage["device_execution"] == 2
    assert stage["setup"] == 1
    assert stage["warp"] == 1
    assert stage["unknown"] == 1
    for s in ("perception", "planning", "action_selection", "state_verification", "recovery",
              "final_response", "evaluation"):
        assert stage[s] == 0, s
    # Recognized (listed, not unknown): a, a-dup, d -> 3 of 5 eligible failures.
    assert m["diagnostics"]["failure_stage_coverage"] == pytest.approx(3 / 5)


def test_failure_stage_coverage_null_stage_is_not_recognized(tmp_path):
    rows = [row("a", status="failed", first_failure_stage=None), row("b", status="failed", first_failure_stage="final_response")]
    m = _metrics(tmp_path, rows)
    assert m["diagnostics"]["failure_stage_coverage"] == 0.5
    assert m["failures"]["stage"]["final_response"] == 1


def test_failure_stage_coverage_null_without_eligible_failures(tmp_path):
    rows = [row("a"), unknown("b", first_failure_stage="planning"),
            row("c", status="failed", agent_eligible=False, first_failure_stage="setup")]
    m = _metrics(tmp_path, rows)
    assert m["diagnostics"]["failure_stage_coverage"] is None
    assert m["failures"]["stage"] == {s: 0 for s in STAGES}


def test_failures_list_every_class_and_stage_with_zeros(tmp_path):
    m = _metrics(tmp_path, [row("a")])
    assert m["failures"]["class"] == {c: 0 for c in CLASSES}
    assert m["failures"]["stage"] == {s: 0 for s in STAGES}


# --- category (3.8, R24, R29, R37) ------------------------------------------------------------

def test_category_rates(tmp_path):
    suite = {"name": "s", "tasks": [{"id": "e", "category": "fromsuite"}, {"id": "f"}]}
    rows = [
        row("a", status="passed", category="nav", rubric_pass_count=3, rubric_total=4),
        row("b", status="failed", category="nav", rubric_pass_count=1, rubric_total=2),
        row("c", status="skipped", category="nav", rubric_pass_count=None, rubric_total=4),
        row("d", status="passed", category="nav", agent_eligible=False, rubric_pass_count=2, rubric_total=True),
        row("e", status="passed", category=None, rubric_pass_count=0, rubric_total=0),
        row("f", status="failed"),                                       # no category anywhere
        row("g", status="failed", category=None),
    ]
    cat = _metrics(tmp_path, rows, suite=suite)["category"]
    assert set(cat) == {"nav", "fromsuite"}
    assert cat["nav"]["attempts"] == 4
    assert cat["nav"]["pass_rate"] == 0.5                                # status=passed incl. ineligible
    assert cat["nav"]["rubric_pass_rate"] == pytest.approx(4 / 6)
    assert cat["fromsuite"] == {"pass_rate": 1.0, "rubric_pass_rate": None, "attempts": 1}


def test_category_rubric_needs_both_numbers(tmp_path):
    rows = [row("a", category="c", rubric_pass_count=2, rubric_total=None),
            row("b", category="c", rubric_pass_count=None, rubric_total=None)]
    cat = _metrics(tmp_path, rows)["category"]["c"]
    assert cat["rubric_pass_rate"] is None
    assert (cat["pass_rate"], cat["attempts"]) == (1.0, 2)


def test_category_rubric_is_weighted_not_mean_of_ratios(tmp_path):
    rows = [row("a", category="c", rubric_pass_count=1, rubric_total=1),
            row("b", status="failed", category="c", rubric_pass_count=0, rubric_total=9)]
    cat = _metrics(tmp_path, rows)["category"]["c"]
    assert cat["rubric_pass_rate"] == pytest.approx(1 / 10)


def test_category_counts_duplicate_rows(tmp_path):
    rows = [row("a", status="failed", category="c"), row("a", status="passed", category="c")]
    cat = _metrics(tmp_path, rows)["category"]["c"]
    assert (cat["attempts"], cat["pass_rate"]) == (2, 0.5)


# --- observations (3.8, R38, R29) -----------------------------------------------------------

def test_observations(tmp_path):
    rows = [
        row("a", trace_observations=[{"id": "o1", "passed": False}, {"id": "o1", "passed": True},
                                     {"id": "o2", "passed": 1}, {"id": 5, "passed": True},
                                     {"passed": True}, "junk", None]),
        row("b", status="failed", trace_observations=[{"id": "o1", "passed": False}, {"id": "o2", "passed": "true"}]),
        row("c", status="skipped", trace_observations=[{"id": "o1", "passed": True}]),
        row("d"),
        row("e", trace_observations="bad"),
        row("f", trace_observations=[{"id": "o3"}]),
        row("a", trace_observations=[{"id": "o1", "passed": True}]),       # duplicate row counts
    ]
    obs = _metrics(tmp_path, rows)["observations"]
    assert set(obs) == {"o1", "o2", "o3"}
    assert obs["o1"] == {"pass_rate": 0.75, "passed_tasks": 3, "observed_tasks": 4}
    assert obs["o2"] == {"pass_rate": 0.0, "passed_tasks": 0, "observed_tasks": 2}
    assert obs["o3"] == {"pass_rate": 0.0, "passed_tasks": 0, "observed_tasks": 1}


# --- efficiency and reliability distributions (3.8, R29) -----------------------------------

def test_efficiency_uses_eligible_rows_setup_uses_all(tmp_path):
    rows = [
        row("a", metrics={"task_wall_ms": 100, "setup_ms": 10, "tool_calls": True, "tool_errors": 2, "cost_usd": 0}),
        row("b", status="failed", metrics={"task_wall_ms": 300, "setup_ms": 20, "tool_errors": 0, "replan_count": 1}),
        row("c", status="skipped", metrics={"task_wall_ms": 5000, "setup_ms": 30, "tool_errors": 5, "replan_count": 9}),
        unknown("d", metrics={"task_wall_ms": 200, "setup_ms": None}),
        row("e", status="passed", agent_eligible=False, metrics={"task_wall_ms": 7000, "setup_ms": 40}),
    ]
    m = _metrics(tmp_path, rows)
    eff, rel = m["efficiency"], m["reliability"]
    assert set(eff) == set(EFFICIENCY)
    assert set(rel) == set(RELIABILITY)
    assert eff["task_wall_ms"] == {"count": 3, "sum": 600, "mean": 200, "p50": 200,
                                   "p90": pytest.approx(280), "p95": pytest.approx(290)}
    assert eff["setup_ms"]["count"] == 4
    assert eff["setup_ms"]["sum"] == 100
    assert eff["tool_calls"] == EMPTY_DIST
    assert eff["cost_usd"] == {"count": 1, "sum": 0, "mean": 0, "p50": 0, "p90": 0, "p95": 0}
    assert (rel["tool_errors"]["count"], rel["tool_errors"]["sum"]) == (2, 2)
    assert (rel["replan_count"]["count"], rel["replan_count"]["sum"]) == (1, 1)
    assert rel["retry_count"] == EMPTY_DIST


def test_distributions_use_duplicate_rows(tmp_path):
    rows = [row("a", metrics={"task_wall_ms": 100}), row("a", metrics={"task_wall_ms": 300})]
    eff = _metrics(tmp_path, rows)["efficiency"]["task_wall_ms"]
    assert (eff["count"], eff["sum"], eff["mean"]) == (2, 400, 200)


def test_distribution_of_derived_values(tmp_path):
    history = [{"type": "assistant", "usage": {"input_tokens": 5, "output_tokens": 1}, "duration_ms": 40}]
    rows = [row("a"), row("b", status="failed", metrics={"llm_calls": 3, "llm_time_ms": 60})]
    m = _metrics(tmp_path, rows, artifacts={"tasks/a": {"history.json": history}})
    eff = m["efficiency"]
    assert (eff["llm_calls"]["count"], eff["llm_calls"]["sum"]) == (2, 4)
    assert (eff["llm_time_ms"]["count"], eff["llm_time_ms"]["sum"]) == (2, 100)
    assert (eff["input_tokens"]["count"], eff["input_tokens"]["sum"]) == (1, 5)


# --- R29 all populations together ---------------------------------------------------------

def test_duplicates_row_level_versus_task_level(tmp_path):
    rows = [
        row("t", 1, "failed", category="c", first_failure_stage="planning",
            trace_observations=[{"id": "o1", "passed": True}], metrics={"task_wall_ms": 100, "tool_errors": 1}),
        row("t", 1, "passed", category="c", trace_observations=[{"id": "o1", "passed": False}],
            metrics={"task_wall_ms": 300, "tool_errors": 0}),
    ]
    m = _metrics(tmp_path, rows, manifest={"status": "completed", "metrics_k": 1})
    # Row-level populations use both lines.
    assert (m["coverage"]["attempts"], m["coverage"]["agent_eligible_attempts"], m["coverage"]["invalid_attempts"]) == (2, 2, 0)
    asr = m["capability"]["attempt_success_rate"]
    assert (asr["successes"], asr["eligible_attempts"], asr["total_attempts"]) == (1, 2, 2)
    assert m["efficiency"]["task_wall_ms"]["count"] == 2
    assert m["reliability"]["tool_errors"]["sum"] == 1
    assert m["failures"]["class"]["agent"] == 1
    assert m["failures"]["stage"]["planning"] == 1
    assert m["diagnostics"]["failure_stage_coverage"] == 1.0
    assert m["category"]["c"] == {"pass_rate": 0.5, "rubric_pass_rate": None, "attempts": 2}
    assert m["observations"]["o1"] == {"pass_rate": 0.5, "passed_tasks": 1, "observed_tasks": 2}
    assert m["aggregate"]["tasks"] == 2
    # Task-level populations use the later line.
    assert m["coverage"]["unique_tasks"] == 1
    assert m["capability"]["pass_at_1"]["successes"] == 1
    assert m["capability"]["pass_pow_k"]["value"] == 1.0
    assert m["capability"]["first_success_attempt"]["count"] == 1
    assert m["cost_to_first_success"]["task_wall_ms"]["mean"] == 300
    assert m["aggregate"]["per_task"]["t"]["attempts"] == 1
    assert m["data_quality"]["duplicate_rows"] == [{"task_id": "t", "attempt": 1, "lines": [1, 2]}]


def test_stage_from_artifact_evidence_is_counted(tmp_path):
    history = [{"type": "tool_call", "tool_name": "tap", "tool_input": {"x": 1}, "tool_call_id": "c"},
               {"type": "tool_result", "tool_name": "tap", "tool_call_id": "c", "content": "x", "is_error": True}]
    rows = [row("a", status="failed", first_failure_stage=None), row("b", status="failed", first_failure_stage=None)]
    m = _metrics(tmp_path, rows, artifacts={"tasks/a": {"history.json": history}})
    assert m["failures"]["stage"]["device_execution"] == 1
    assert m["diagnostics"]["failure_stage_coverage"] == 0.5


def test_distributions_of_any_field_selection_match_field_by_field():
    """The one-pass column read gives each field's own distribution, setup_ms over every
    row and the others over eligible rows (3.8), for no, one or several fields."""
    from bench_pipeline.capability import distributions
    from bench_pipeline.stats import distribution, is_number

    rows = [
        {"agent_eligible": True, "setup_ms": 5, "task_wall_ms": 10, "llm_calls": None},
        {"agent_eligible": False, "setup_ms": 7, "task_wall_ms": 99, "llm_calls": 3},
        {"agent_eligible": True, "setup_ms": None, "task_wall_ms": 2.5, "llm_calls": True},
    ]
    for fields in [(), ("setup_ms",), ("task_wall_ms",), ("setup_ms", "task_wall_ms", "llm_calls")]:
        expected = {f: distribution(v for r in rows if (f == "setup_ms" or r["agent_eligible"])
                                    if is_number(v := r[f])) for f in fields}
        assert distributions(rows, fields) == expected
    assert distributions(rows, ("setup_ms",))["setup_ms"]["count"] == 2
    assert distributions(rows, ("task_wall_ms",))["task_wall_ms"]["sum"] == 12.5
