"""Stage 4 edge cases: run aggregates in metrics.json (metrics-reference.txt 2, 3.7, 3.8;
outputs.md; readings R19, R24, R25, R29, R35, R37, R38).

The aggregates are computed from attempt rows in memory (``support.attempt_rows``: the rows
as stage 2 makes them, a recorded value it makes unavailable given as None). A few cases go
through a run folder, where the point is the whole path: an empty results.jsonl, the
document's identity, values derived from artifacts, and every population of one duplicated
attempt at once (data_quality included).
"""

from __future__ import annotations

import itertools
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_pipeline.attempt_metrics.evidence import observations
from bench_pipeline.capability import distributions, unbiased_estimators
from bench_pipeline.pipeline import run_stages
from bench_pipeline.stats import distribution, is_number

from .run_builder import make_run, row
from .support.attempt_rows import attempt, metrics_of, unknown

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
    return run_stages(make_run(tmp_path, rows, **kw)).processed.metrics


# --- empty run (3.7, 3.8, R25) ---------------------------------------------------------------

def _assert_empty_run(m: dict) -> None:
    """Every aggregate of a run without attempts: zero counts, null values, every class and
    stage listed."""
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
    json.dumps(m, allow_nan=False)


def test_empty_run():
    _assert_empty_run(metrics_of([]))


@pytest.mark.parametrize("content", [b"", b"\n", b"\n  \n\t\n"])
def test_empty_results_file_is_an_empty_run(tmp_path, content):
    """Through a run folder: a results.jsonl without a row (blank lines only) is a run
    without attempts, with nothing to report in data_quality."""
    run = make_run(tmp_path, [])
    (run / "results.jsonl").write_bytes(content)
    processed = run_stages(run).processed
    assert processed.attempts == [] and processed.tasks == []
    m = processed.metrics
    _assert_empty_run(m)
    dq = m["data_quality"]
    assert (dq["bad_rows"], dq["duplicate_rows"], dq["unsafe_artifact_dirs"]) == ([], [], [])


def test_metrics_document_identity(tmp_path):
    m = _metrics(tmp_path, [row("a")], run_id="r-7", suite={"name": "android-core", "tasks": []})
    assert m["schema_version"] == 1
    assert isinstance(m["formula_version"], str) and m["formula_version"]
    assert (m["run_id"], m["suite"]) == ("r-7", "android-core")
    assert isinstance(m["generated_at"], str)


def test_all_ineligible_run():
    m = metrics_of([attempt("a", status="skipped"), attempt("b", status="judge_error")])
    cap = m["capability"]
    assert cap["pass_at_1"]["value"] is None and cap["pass_at_1"]["total_tasks"] == 2
    assert cap["attempt_success_rate"]["value"] is None
    assert cap["attempt_success_rate"]["coverage"] == 0
    assert m["coverage"]["pass_at_1"] == 0
    assert (m["coverage"]["agent_eligible_attempts"], m["coverage"]["invalid_attempts"]) == (0, 2)
    assert m["diagnostics"]["failure_stage_coverage"] is None


# --- attempt_success_rate and coverage (3.7, 3.8, R19, R29) ------------------------------

def test_attempt_success_rate_counts_every_eligible_row():
    rows = [
        attempt("A", 1, "passed"), attempt("A", 2, "failed"), attempt("A", 3, "passed"),  # beyond k included
        unknown("B", 1),                                                                    # eligible, not success
        attempt("C", 1, "skipped"),                                                         # ineligible
        attempt("D", 1, "passed", agent_eligible=False),                                    # explicit exclusion
        attempt("A", 1, "passed"),                                                          # duplicate: still a row
    ]
    m = metrics_of(rows, 1)
    asr = m["capability"]["attempt_success_rate"]
    assert (asr["successes"], asr["eligible_attempts"], asr["total_attempts"]) == (3, 5, 7)
    assert asr["value"] == pytest.approx(3 / 5)
    assert asr["coverage"] == pytest.approx(5 / 7)
    cov = m["coverage"]
    assert (cov["attempts"], cov["agent_eligible_attempts"], cov["invalid_attempts"], cov["unique_tasks"]) == (7, 5, 2, 4)
    assert cov["metrics_k"] == 1
    assert m["aggregate"]["tasks"] == 7


def test_pass_metric_shape_and_wilson():
    rows = [attempt("a"), attempt("b"), attempt("c", status="failed")]
    p1 = metrics_of(rows)["capability"]["pass_at_1"]
    assert set(p1) == {"value", "successes", "eligible_tasks", "total_tasks", "ci95"}
    assert p1["value"] == pytest.approx(2 / 3)
    assert 0 < p1["ci95"]["lower"] < 2 / 3 < p1["ci95"]["upper"] < 1


def test_all_success_interval_clipped_to_one():
    ci = metrics_of([attempt("a"), attempt("b")])["capability"]["pass_at_1"]["ci95"]
    assert ci["upper"] <= 1 and ci["upper"] == pytest.approx(1)
    ci0 = metrics_of([attempt("a", status="failed")])["capability"]["pass_at_1"]["ci95"]
    assert ci0["lower"] == 0


# --- failures (2, 3.8, R19, R29, R35) ------------------------------------------------------

def test_failure_class_counts_all_classified_rows():
    rows = [
        attempt("a", status="failed", failure_class="agent"),
        attempt("b", status="timeout", failure_class="agent"),
        attempt("c", status="failed", failure_class="environment", agent_eligible=False),
        attempt("d", status="judge_error"),                                   # evaluation, ineligible
        attempt("e", status="skipped"),                                       # skipped, ineligible
        attempt("f", status="failed", failure_class="unknown", success=None, agent_eligible=False),
        attempt("g", status="passed"),                                        # null class: not counted
        attempt("h", status="failed", failure_class="network"),              # unlisted: own key
        attempt("a", status="failed", failure_class="agent"),                 # duplicate counts too
    ]
    cls = metrics_of(rows)["failures"]["class"]
    assert cls == {"agent": 3, "environment": 1, "evaluation": 1, "skipped": 1, "unknown": 1, "network": 1}


def test_failure_stage_counts_eligible_failures_only():
    rows = [
        attempt("a", status="failed", first_failure_stage="device_execution"),
        attempt("b", status="failed", first_failure_stage="unknown"),
        attempt("c", status="failed", first_failure_stage="warp"),            # unlisted: own key
        attempt("d", status="timeout", first_failure_stage="setup"),
        attempt("e", status="failed", first_failure_stage="planning", agent_eligible=False, failure_class="environment"),
        unknown("f", first_failure_stage="perception"),                       # success unknown: not a failure
        attempt("g", status="passed"),                                        # recorded "recovery": success clears it
        attempt("h", status="skipped", first_failure_stage="setup"),
        attempt("a", status="failed", first_failure_stage="device_execution"),  # duplicate counts too
    ]
    m = metrics_of(rows)
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


def test_failure_stage_coverage_null_stage_is_not_recognized():
    rows = [attempt("a", status="failed", first_failure_stage=None),
            attempt("b", status="failed", first_failure_stage="final_response")]
    m = metrics_of(rows)
    assert m["diagnostics"]["failure_stage_coverage"] == 0.5
    assert m["failures"]["stage"]["final_response"] == 1


def test_failure_stage_coverage_null_without_eligible_failures():
    rows = [attempt("a"), unknown("b", first_failure_stage="planning"),
            attempt("c", status="failed", agent_eligible=False, first_failure_stage="setup")]
    m = metrics_of(rows)
    assert m["diagnostics"]["failure_stage_coverage"] is None
    assert m["failures"]["stage"] == {s: 0 for s in STAGES}


def test_failures_list_every_class_and_stage_with_zeros():
    m = metrics_of([attempt("a")])
    assert m["failures"]["class"] == {c: 0 for c in CLASSES}
    assert m["failures"]["stage"] == {s: 0 for s in STAGES}


# --- category (3.8, R24, R29, R37) ------------------------------------------------------------

def test_category_rates():
    rows = [
        attempt("a", status="passed", category="nav", rubric_pass_count=3, rubric_total=4),
        attempt("b", status="failed", category="nav", rubric_pass_count=1, rubric_total=2),
        attempt("c", status="skipped", category="nav", rubric_pass_count=None, rubric_total=4),
        attempt("d", status="passed", category="nav", agent_eligible=False,
                rubric_pass_count=2, rubric_total=None),                 # recorded total true: unavailable
        attempt("e", status="passed", category="fromsuite",              # the suite task's category (R24)
                rubric_pass_count=0, rubric_total=0),
        attempt("f", status="failed"),                                   # no category anywhere
        attempt("g", status="failed", category=None),
    ]
    cat = metrics_of(rows)["category"]
    assert set(cat) == {"nav", "fromsuite"}
    assert cat["nav"]["attempts"] == 4
    assert cat["nav"]["pass_rate"] == 0.5                                # status=passed incl. ineligible
    assert cat["nav"]["rubric_pass_rate"] == pytest.approx(4 / 6)
    assert cat["fromsuite"] == {"pass_rate": 1.0, "rubric_pass_rate": None, "attempts": 1}


def test_category_rubric_needs_both_numbers():
    rows = [attempt("a", category="c", rubric_pass_count=2, rubric_total=None),
            attempt("b", category="c", rubric_pass_count=None, rubric_total=None)]
    cat = metrics_of(rows)["category"]["c"]
    assert cat["rubric_pass_rate"] is None
    assert (cat["pass_rate"], cat["attempts"]) == (1.0, 2)


def test_category_rubric_is_weighted_not_mean_of_ratios():
    rows = [attempt("a", category="c", rubric_pass_count=1, rubric_total=1),
            attempt("b", status="failed", category="c", rubric_pass_count=0, rubric_total=9)]
    cat = metrics_of(rows)["category"]["c"]
    assert cat["rubric_pass_rate"] == pytest.approx(1 / 10)


def test_category_counts_duplicate_rows():
    rows = [attempt("a", status="failed", category="c"), attempt("a", status="passed", category="c")]
    cat = metrics_of(rows)["category"]["c"]
    assert (cat["attempts"], cat["pass_rate"]) == (2, 0.5)


# --- observations (3.8, R38, R29) -----------------------------------------------------------

def test_observations():
    """Each row's observations as stage 2 reads its trace_observations (evidence.observations)."""
    def traced(task_id: str, status: str = "passed", entries: object = None) -> dict:
        return attempt(task_id, status=status, observations=observations(entries))

    rows = [
        traced("a", entries=[{"id": "o1", "passed": False}, {"id": "o1", "passed": True},
                             {"id": "o2", "passed": 1}, {"id": 5, "passed": True},
                             {"passed": True}, "junk", None]),
        traced("b", "failed", [{"id": "o1", "passed": False}, {"id": "o2", "passed": "true"}]),
        traced("c", "skipped", [{"id": "o1", "passed": True}]),
        traced("d"),
        traced("e", entries="bad"),
        traced("f", entries=[{"id": "o3"}]),
        traced("a", entries=[{"id": "o1", "passed": True}]),       # duplicate row counts
    ]
    obs = metrics_of(rows)["observations"]
    assert set(obs) == {"o1", "o2", "o3"}
    assert obs["o1"] == {"pass_rate": 0.75, "passed_tasks": 3, "observed_tasks": 4}
    assert obs["o2"] == {"pass_rate": 0.0, "passed_tasks": 0, "observed_tasks": 2}
    assert obs["o3"] == {"pass_rate": 0.0, "passed_tasks": 0, "observed_tasks": 1}


# --- efficiency and reliability distributions (3.8, R29) -----------------------------------

def test_efficiency_uses_eligible_rows_setup_uses_all():
    rows = [
        attempt("a", task_wall_ms=100, setup_ms=10, tool_calls=None,    # recorded true: unavailable
                tool_errors=2, cost_usd=0),
        attempt("b", status="failed", task_wall_ms=300, setup_ms=20, tool_errors=0, replan_count=1),
        attempt("c", status="skipped", task_wall_ms=5000, setup_ms=30, tool_errors=5, replan_count=9),
        unknown("d", task_wall_ms=200, setup_ms=None),
        attempt("e", status="passed", agent_eligible=False, task_wall_ms=7000, setup_ms=40),
    ]
    m = metrics_of(rows)
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


def test_distributions_use_duplicate_rows():
    rows = [attempt("a", task_wall_ms=100), attempt("a", task_wall_ms=300)]
    eff = metrics_of(rows)["efficiency"]["task_wall_ms"]
    assert (eff["count"], eff["sum"], eff["mean"]) == (2, 400, 200)


def test_distribution_of_derived_values(tmp_path):
    """Through a run folder: values derived from history.json reach the distributions
    beside recorded ones."""
    history = [{"type": "assistant", "usage": {"input_tokens": 5, "output_tokens": 1}, "duration_ms": 40}]
    rows = [row("a"), row("b", status="failed", metrics={"llm_calls": 3, "llm_time_ms": 60})]
    m = _metrics(tmp_path, rows, artifacts={"tasks/a": {"history.json": history}})
    eff = m["efficiency"]
    assert (eff["llm_calls"]["count"], eff["llm_calls"]["sum"]) == (2, 4)
    assert (eff["llm_time_ms"]["count"], eff["llm_time_ms"]["sum"]) == (2, 100)
    assert (eff["input_tokens"]["count"], eff["input_tokens"]["sum"]) == (1, 5)


# --- R29 all populations together ---------------------------------------------------------

def test_duplicates_row_level_versus_task_level(tmp_path):
    """Through a run folder: one duplicated attempt in every population at once, the
    row-level ones, the task-level ones and data_quality's list of duplicates."""
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
    """Through a run folder: a stage derived from history.json's error is counted."""
    history = [{"type": "tool_call", "tool_name": "tap", "tool_input": {"x": 1}, "tool_call_id": "c"},
               {"type": "tool_result", "tool_name": "tap", "tool_call_id": "c", "content": "x", "is_error": True}]
    rows = [row("a", status="failed", first_failure_stage=None), row("b", status="failed", first_failure_stage=None)]
    m = _metrics(tmp_path, rows, artifacts={"tasks/a": {"history.json": history}})
    assert m["failures"]["stage"]["device_execution"] == 1
    assert m["diagnostics"]["failure_stage_coverage"] == 0.5


def test_distributions_of_any_field_selection_match_field_by_field():
    """The one-pass column read gives each field's own distribution, setup_ms over every
    row and the others over eligible rows (3.8), for no, one or several fields."""
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


# --- uncertainty grouped by task and unbiased estimators (comparison.md, last section) -------

def test_uncertainty_of_the_reference_example_by_hand():
    """3.7's k=2 example: eligible x = A 1,0; B 0,1; C 1,1; D 1 (D's attempt 2 ineligible).
    N = 7, p = 5/7; per-task sums of x - p: -3/7, -3/7, 4/7, 2/7, squares 38/49, so
    se_clustered = sqrt(38/49) / 7 = sqrt(38) / 49; se_simple = sqrt(10/343);
    design effect = (38/2401) / (10/343) = 0.542857..."""
    rows = [
        attempt("A", 1, "passed"), attempt("A", 2, "failed"),
        attempt("B", 1, "failed"), attempt("B", 2, "passed"),
        attempt("C", 1, "passed"), attempt("C", 2, "passed"),
        attempt("D", 1, "passed"), attempt("D", 2, "skipped"),
    ]
    u = metrics_of(rows, 2)["uncertainty"]["attempt_success_rate"]
    assert list(u) == ["value", "tasks", "attempts", "se_simple", "se_clustered", "ci95", "design_effect"]
    assert (u["value"], u["tasks"], u["attempts"]) == (5 / 7, 4, 7)
    assert u["se_clustered"] == pytest.approx(math.sqrt(38) / 49, rel=1e-15)
    assert u["se_simple"] == pytest.approx(math.sqrt(10 / 343), rel=1e-15)
    assert u["design_effect"] == pytest.approx(38 * 343 / (2401 * 10), rel=1e-15)
    z = 1.959963984540054
    assert u["ci95"] == {"lower": pytest.approx(5 / 7 - z * math.sqrt(38) / 49, rel=1e-15),
                         "upper": pytest.approx(5 / 7 + z * math.sqrt(38) / 49, rel=1e-15)}


def test_uncertainty_counts_duplicate_rows_and_clusters_by_task():
    """Over capability.attempt_success_rate's population: eligible rows, a duplicate
    included (R29); a task whose repeats agree widens the interval (design effect > 1).
    x = a 1,1,1; b 0,0; c 1,0: N = 7, p = 4/7, se_simple = sqrt(4/7 * 3/7 / 7) = sqrt(12/343);
    per-task sums of x - p: 9/7, -8/7, -1/7, squares 146/49, se_clustered = sqrt(146) / 49;
    design effect = (146/2401) / (12/343) = 146/84."""
    rows = [attempt("a", 1), attempt("a", 2), attempt("a", 2), attempt("b", 1, "failed"), attempt("b", 2, "failed"),
            attempt("c", 1), attempt("c", 2, "failed"), attempt("d", 1, "skipped")]
    m = metrics_of(rows, 2)
    u = m["uncertainty"]["attempt_success_rate"]
    assert u["attempts"] == m["capability"]["attempt_success_rate"]["eligible_attempts"] == 7
    assert u["value"] == m["capability"]["attempt_success_rate"]["value"] == 4 / 7
    assert u["tasks"] == 3  # d has no eligible row
    assert u["se_simple"] == pytest.approx(math.sqrt(12 / 343), rel=1e-14)
    assert u["se_clustered"] == pytest.approx(math.sqrt(146) / 49, rel=1e-14)
    assert u["design_effect"] == pytest.approx(146 / 84, rel=1e-13) and u["design_effect"] > 1


def test_clustered_equals_simple_with_one_attempt_per_task():
    outcomes = ["passed", "failed", "passed", "passed", "timeout", "passed", "failed"]
    m = metrics_of([attempt(f"t{i}", 1, s) for i, s in enumerate(outcomes)])
    u = m["uncertainty"]["attempt_success_rate"]
    assert u["se_clustered"] == u["se_simple"] == pytest.approx(math.sqrt(4 / 7 * 3 / 7 / 7), rel=1e-15)
    assert u["design_effect"] == 1.0


def test_uncertainty_without_eligible_rows_and_at_the_edges():
    empty = metrics_of([attempt("a", 1, "skipped")])["uncertainty"]["attempt_success_rate"]
    assert empty == {"value": None, "tasks": 0, "attempts": 0, "se_simple": None, "se_clustered": None,
                     "ci95": {"lower": None, "upper": None}, "design_effect": None}
    allpass = metrics_of([attempt("a", 1), attempt("a", 2), attempt("b", 1)])["uncertainty"]["attempt_success_rate"]
    assert (allpass["value"], allpass["se_simple"], allpass["se_clustered"]) == (1.0, 0.0, 0.0)
    assert allpass["ci95"] == {"lower": 1.0, "upper": 1.0} and allpass["design_effect"] is None


def _enumerated(attempts: list[bool], k: int) -> tuple[float, float]:
    """(pass@k, pass^k) of one task by their definition, not the closed form under test: the
    share of its k-subsets with a success / with all successes (Chen et al. 2021, Yao et al. 2024)."""
    subsets = list(itertools.combinations(attempts, k))
    return sum(any(s) for s in subsets) / len(subsets), sum(all(s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_estimators_equal_an_enumeration_of_every_k_subset(k):
    """Tasks with n_i >= k eligible attempts (an ineligible attempt is not one of them);
    each estimate is the mean over those tasks of the share of k-subsets (Chen et al. 2021,
    Yao et al. 2024). metrics_k comes from the manifest."""
    plan = {"a": ["passed", "failed", "passed", "failed", "passed"],
            "b": ["failed", "failed", "passed"],
            "c": ["passed", "skipped", "passed"],  # two eligible attempts
            "d": ["failed"],
            "e": ["passed", "passed", "passed", "passed"]}
    rows = [attempt(t, n, s) for t, statuses in plan.items() for n, s in enumerate(statuses, start=1)]
    est = metrics_of(rows, k)["estimators"]
    eligible = {t: [s == "passed" for s in statuses if s != "skipped"] for t, statuses in plan.items()}
    shares = [_enumerated(v, k) for v in eligible.values() if len(v) >= k]
    assert est["pass_at_k_unbiased"] == {"value": pytest.approx(sum(a for a, _ in shares) / len(shares), rel=1e-15),
                                         "tasks": len(shares), "k": k}
    assert est["pass_pow_k_unbiased"] == {"value": pytest.approx(sum(p for _, p in shares) / len(shares), rel=1e-15),
                                          "tasks": len(shares), "k": k}
    assert len(shares) == {1: 5, 2: 4, 3: 3}[k]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.booleans(), min_size=1, max_size=7), min_size=1, max_size=6), st.integers(1, 5))
def test_the_estimator_formulas_equal_enumeration_on_random_tasks(tasks, k):
    rows = [{"eligible_attempts": len(t), "passed": sum(t)} for t in tasks]
    est = unbiased_estimators(rows, k)
    shares = [_enumerated(t, k) for t in tasks if len(t) >= k]
    if not shares:
        assert est["pass_at_k_unbiased"] == {"value": None, "tasks": 0, "k": k}
        return
    assert est["pass_at_k_unbiased"]["value"] == pytest.approx(sum(a for a, _ in shares) / len(shares), rel=1e-12)
    assert est["pass_pow_k_unbiased"]["value"] == pytest.approx(sum(p for _, p in shares) / len(shares), rel=1e-12)


def test_estimators_keep_the_later_duplicate_and_need_a_k():
    # a#2 appears twice: the later (passed) line wins, so a has c = 2 of n = 2
    rows = [attempt("a", 1), attempt("a", 2, "failed"), attempt("a", 2)]
    est = metrics_of(rows, 2)["estimators"]
    assert est["pass_pow_k_unbiased"] == {"value": 1.0, "tasks": 1, "k": 2}
    assert unbiased_estimators([{"eligible_attempts": 3, "passed": 1}], None) == {
        "pass_at_k_unbiased": {"value": None, "tasks": 0, "k": None},
        "pass_pow_k_unbiased": {"value": None, "tasks": 0, "k": None},
    }
