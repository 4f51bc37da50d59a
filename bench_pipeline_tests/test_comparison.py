"""Paired run comparison (comparison.md): every section worked out by hand on sides built
from attempt rows in memory, McNemar against scipy, the edge cases and the gate; through
run folders, the sides read from output folders and the files run_stages writes with a
baseline."""

from __future__ import annotations

import json
import math
import re

from dataclasses import replace

import pytest
from scipy.stats import binomtest

from bench_pipeline.comparison import GATE_EXIT_CODES, GATE_REASONS, WARNINGS, Z_POWER80, check_max_drop, compare, mcnemar_p, paired_statistics, release_gate
from bench_pipeline.comparison_sides import ComparisonInputError, Side, make_side, side_from_output, side_from_processed
from bench_pipeline.identity import run_identity
from bench_pipeline.pipeline import run_stages
from bench_pipeline.stats import Z_95

from .run_builder import make_run, row
from .support.attempt_rows import attempt, in_file_order

Z_SUM = Z_95 + Z_POWER80
BINARY_KEYS = ["n", "both_pass", "baseline_only", "candidate_only", "both_fail", "baseline_rate", "candidate_rate",
               "delta", "se", "ci95", "mde80", "mcnemar_p", "verdict"]
MEAN_KEYS = ["n", "baseline_mean", "candidate_mean", "delta", "se", "ci95", "mde80", "verdict"]

# The reference's k=2 example (3.7: A Pass/Fail, B Fail/Pass, C Pass/Pass, D Pass/Ineligible),
# with quality scores and resources added so that every section has numbers:
# (task, attempt, status, quality_score, {resource: value}).
BASELINE = [
    ("A", 1, "passed", 1.0, {"task_wall_ms": 1000, "total_tokens": 100, "cost_usd": 0.5}),
    ("A", 2, "failed", 0.5, {"task_wall_ms": 1000, "total_tokens": 100}),
    ("B", 1, "failed", 0.25, {"task_wall_ms": 2000, "total_tokens": 200}),
    ("B", 2, "passed", 1.0, {"task_wall_ms": 2000, "total_tokens": 200}),
    ("C", 1, "passed", 1.0, {"task_wall_ms": 1000, "total_tokens": 300}),
    ("C", 2, "passed", 1.0, {"task_wall_ms": 3000, "total_tokens": 300}),
    ("D", 1, "passed", 1.0, {"task_wall_ms": 4000, "total_tokens": 400}),
    ("D", 2, "skipped", None, {"task_wall_ms": 500, "total_tokens": 9999}),  # ineligible: in no population
]
# The candidate, by hand: A and D lose their first attempt, B gains it; E is new.
CANDIDATE = [
    ("A", 1, "failed", 0.5, {"task_wall_ms": 1500, "total_tokens": 90, "cost_usd": 0.25}),
    ("A", 2, "passed", 1.0, {"task_wall_ms": 1500, "total_tokens": 90}),
    ("B", 1, "passed", 1.0, {"task_wall_ms": 2600, "total_tokens": 170}),
    ("B", 2, "passed", 1.0, {"task_wall_ms": 2400, "total_tokens": 170}),
    ("C", 1, "passed", 1.0, {"task_wall_ms": 2500, "total_tokens": 290}),
    ("C", 2, "failed", 0.0, {"task_wall_ms": 2500, "total_tokens": 290}),
    ("D", 1, "failed", 0.0, {"task_wall_ms": 4500, "total_tokens": 370}),
    ("D", 2, "passed", 1.0, {"task_wall_ms": 4500, "total_tokens": 370}),
    ("E", 1, "passed", 1.0, {"task_wall_ms": 100, "total_tokens": 10}),
    ("E", 2, "passed", 1.0, {"task_wall_ms": 100, "total_tokens": 10}),
]
#: The example as results.jsonl rows, for the run folders.
BASELINE_ROWS = [row(t, a, s, quality_score=q, metrics=m) for t, a, s, q, m in BASELINE]
CANDIDATE_ROWS = [row(t, a, s, quality_score=q, metrics=m) for t, a, s, q, m in CANDIDATE]
K2 = {"status": "completed", "metrics_k": 2}


def example_side(attempts: list[tuple], run_id: str) -> Side:
    """A side of the example from its attempt rows in memory, as the processed run gives it
    (suite "suite-a", metrics_k 2)."""
    rows = in_file_order(attempt(t, a, s, quality_score=q, **m) for t, a, s, q, m in attempts)
    return make_side(rows, run_id=run_id, suite="suite-a", metrics_k=2)


@pytest.fixture()
def processed(tmp_path):
    """The example's two run folders, each processed into its output folder by run_stages."""
    runs = tmp_path / "runs"
    base = make_run(runs, BASELINE_ROWS, run_id="base", manifest=K2, suite={"name": "suite-a", "tasks": []})
    cand = make_run(runs, CANDIDATE_ROWS, run_id="cand", manifest=K2, suite={"name": "suite-a", "tasks": []})
    return tmp_path, run_stages(base, tmp_path / "out" / "base"), run_stages(cand, tmp_path / "out" / "cand")


def approx(value):
    return pytest.approx(value, rel=1e-12, abs=1e-15)


def test_the_reference_example_against_a_hand_written_candidate():
    c = compare(example_side(BASELINE, "base"), example_side(CANDIDATE, "cand"))
    assert list(c) == ["schema_version", "baseline", "candidate", "k", "warnings", "tasks", "first_attempt",
                       "pass_at_k", "pass_pow_k", "task_success", "quality", "resources", "regressions",
                       "improvements", "gate"]
    assert c["baseline"] == {"run_id": "base", "suite": "suite-a", "metrics_k": 2}
    assert c["candidate"] == {"run_id": "cand", "suite": "suite-a", "metrics_k": 2}
    assert c["k"] == 2 and c["warnings"] == []
    assert c["tasks"] == {"paired": 4, "only_baseline": [], "only_candidate": ["E"]}

    # first_attempt, E1 of both = A, B, C, D: b = 1, 0, 1, 1; c = 0, 1, 1, 0.
    # d = -1, +1, 0, -1: delta = -1/4; sum (d - delta)^2 = 0.5625 + 1.5625 + 0.0625 + 0.5625 = 2.75,
    # se = sqrt(2.75 / 3 / 4) = sqrt(11/48). Discordant: A, D (baseline only), B (candidate only):
    # m = 3, p = min(1, 2 * (C(3,0) + C(3,1)) / 8) = 1.
    fa = c["first_attempt"]
    assert list(fa) == [*BINARY_KEYS, "planning"]  # the gate sections end with planning (planning.md)
    assert (fa["n"], fa["both_pass"], fa["baseline_only"], fa["candidate_only"], fa["both_fail"]) == (4, 1, 2, 1, 0)
    assert (fa["baseline_rate"], fa["candidate_rate"], fa["delta"]) == (0.75, 0.5, -0.25)
    se = math.sqrt(11 / 48)
    assert fa["se"] == approx(se)
    assert fa["ci95"] == {"lower": approx(-0.25 - Z_95 * se), "upper": approx(-0.25 + Z_95 * se)}
    assert fa["ci95"]["lower"] == pytest.approx(-1.18826, abs=1e-5)  # not clamped to -1
    assert fa["mde80"] == approx(Z_SUM * se) and fa["mde80"] == pytest.approx(1.34116, abs=1e-5)
    assert fa["mcnemar_p"] == 1.0 and fa["verdict"] == "no_significant_change"
    # planning.md section 1: T = ceil(4 * (mde80 / d)^2) = ceil(4 * Z_SUM^2 * (11/48) / d^2)
    #   = 17987.02, 2877.92, 719.48 for 2, 5, 10 points
    assert fa["planning"] == {"tasks_needed": [{"change": 0.02, "tasks": 17988}, {"change": 0.05, "tasks": 2878},
                                               {"change": 0.10, "tasks": 720}]}

    # pass_at_k, Ek of both = A, B, C (D's attempt 2 is ineligible in the baseline). Every
    # task has a success in 1..2 in both runs: all concordant, delta 0, se 0, p 1.
    pk = c["pass_at_k"]
    assert (pk["n"], pk["both_pass"], pk["baseline_only"], pk["candidate_only"], pk["both_fail"]) == (3, 3, 0, 0, 0)
    assert (pk["baseline_rate"], pk["candidate_rate"], pk["delta"], pk["se"]) == (1.0, 1.0, 0.0, 0.0)
    assert pk["ci95"] == {"lower": 0.0, "upper": 0.0} and pk["mde80"] == 0.0
    assert pk["mcnemar_p"] == 1.0 and pk["verdict"] == "no_significant_change"

    # pass_pow_k over A, B, C: b = 0, 0, 1; c = 0, 1, 0. d = 0, +1, -1: delta 0,
    # se = sqrt(2 / 2 / 3) = sqrt(1/3); m = 2, p = min(1, 2 * 3 / 4) = 1.
    pp = c["pass_pow_k"]
    assert (pp["n"], pp["both_pass"], pp["baseline_only"], pp["candidate_only"], pp["both_fail"]) == (3, 0, 1, 1, 1)
    assert pp["baseline_rate"] == approx(1 / 3) and pp["candidate_rate"] == approx(1 / 3) and pp["delta"] == 0.0
    assert pp["se"] == approx(math.sqrt(1 / 3))
    assert pp["ci95"] == {"lower": approx(-Z_95 * math.sqrt(1 / 3)), "upper": approx(Z_95 * math.sqrt(1 / 3))}
    assert pp["mcnemar_p"] == 1.0 and pp["verdict"] == "no_significant_change"

    # task_success over A, B, C, D (every eligible attempt; D's ineligible attempt 2 left out):
    # b = 1/2, 1/2, 1, 1; c = 1/2, 1, 1/2, 1/2. d = 0, +1/2, -1/2, -1/2: delta = -1/8;
    # sum (d - delta)^2 = 0.015625 + 0.390625 + 0.140625 + 0.140625 = 0.6875, se = sqrt(0.6875 / 12).
    ts = c["task_success"]
    assert list(ts) == [*MEAN_KEYS, "planning"]
    assert (ts["n"], ts["baseline_mean"], ts["candidate_mean"], ts["delta"]) == (4, 0.75, 0.625, -0.125)
    se = math.sqrt(0.6875 / 12)
    assert ts["se"] == approx(se) and ts["mde80"] == approx(Z_SUM * se)
    assert ts["ci95"] == {"lower": approx(-0.125 - Z_95 * se), "upper": approx(-0.125 + Z_95 * se)}
    assert ts["verdict"] == "no_significant_change"
    # T = ceil(4 * Z_SUM^2 * (0.6875 / 12) / d^2) = 4496.75, 719.48, 179.87
    assert [e["tasks"] for e in ts["planning"]["tasks_needed"]] == [4497, 720, 180]

    # quality: per-task means of eligible scores. b = 0.75, 0.625, 1, 1; c = 0.75, 1, 0.5, 0.5.
    # d = 0, +0.375, -0.5, -0.5: delta = -0.15625; deviations 0.15625, 0.53125, -0.34375, -0.34375,
    # squares sum 0.54296875, se = sqrt(0.54296875 / 12).
    q = c["quality"]
    assert (q["n"], q["baseline_mean"], q["candidate_mean"], q["delta"]) == (4, 0.84375, 0.6875, -0.15625)
    assert q["se"] == approx(math.sqrt(0.54296875 / 12)) and q["verdict"] == "no_significant_change"

    # resources.task_wall_ms: b = 1000, 2000, 2000, 4000 (D's ineligible 500 ms left out);
    # c = 1500, 2500, 2500, 4500: every task 500 ms slower, se 0, interval [500, 500] > 0:
    # more time is a regression.
    wall = c["resources"]["task_wall_ms"]
    assert list(c["resources"]) == ["task_wall_ms", "total_tokens", "cost_usd"]
    assert (wall["n"], wall["baseline_mean"], wall["candidate_mean"], wall["delta"], wall["se"]) == (4, 2250, 2750, 500, 0)
    assert wall["ci95"] == {"lower": 500, "upper": 500} and wall["verdict"] == "regression"
    # total_tokens: b = 100, 200, 300, 400; c = 90, 170, 290, 370: d = -10, -30, -10, -30,
    # delta -20, se = sqrt(400 / 12); the interval [-31.3, -8.7] is below 0: fewer tokens, an improvement.
    tokens = c["resources"]["total_tokens"]
    se = math.sqrt(400 / 12)
    assert (tokens["n"], tokens["delta"]) == (4, -20) and tokens["se"] == approx(se)
    assert tokens["ci95"]["upper"] == approx(-20 + Z_95 * se) and tokens["ci95"]["upper"] < 0
    assert tokens["verdict"] == "improvement"
    # cost_usd: only task A has a cost in both runs: n = 1, a delta but no se, interval or verdict.
    cost = c["resources"]["cost_usd"]
    assert (cost["n"], cost["baseline_mean"], cost["candidate_mean"], cost["delta"]) == (1, 0.5, 0.25, -0.25)
    assert cost["se"] is None and cost["ci95"] == {"lower": None, "upper": None} and cost["mde80"] is None
    assert cost["verdict"] is None

    assert c["regressions"] == ["A", "D"] and c["improvements"] == ["B"]
    assert c["gate"] == {"result": "pass", "max_drop": None, "reasons": []}


def _without_evidence(side: Side) -> tuple:
    """A side's content without its evidence folders (built rows have none)."""
    return side.run_id, side.suite, side.metrics_k, {
        task: {n: {k: v for k, v in r.items() if k != "evidence_dir"} for n, r in by_attempt.items()}
        for task, by_attempt in side.tasks.items()}


def test_a_side_from_the_output_folder_equals_the_side_from_the_processed_run(processed):
    root, _, result = processed
    from_files = side_from_output(root / "out" / "cand")
    from_run = side_from_processed(result.processed)
    assert from_files == from_run  # run folder aside (links only)
    assert from_files.metrics_k == 2 and sorted(from_files.tasks) == ["A", "B", "C", "D", "E"]
    assert from_files.tasks["D"][2]["agent_eligible"] is True
    assert side_from_output(root / "out" / "base").tasks["D"][2]["agent_eligible"] is False
    assert from_run.run_dir == root / "runs" / "cand"
    # the sides the in-memory tests build are these, the evidence folders aside (links only)
    assert _without_evidence(from_files) == _without_evidence(example_side(CANDIDATE, "cand"))
    assert _without_evidence(side_from_output(root / "out" / "base")) == _without_evidence(example_side(BASELINE, "base"))


def test_a_bad_baseline_folder_is_refused_with_its_reason(processed):
    root, _, _ = processed
    with pytest.raises(ComparisonInputError, match="metrics.json: cannot be read"):
        side_from_output(root / "nowhere")
    broken = root / "broken"
    broken.mkdir()
    (broken / "metrics.json").write_text("{not json")
    with pytest.raises(ComparisonInputError, match="metrics.json: not JSON"):
        side_from_output(broken)
    (broken / "metrics.json").write_text(json.dumps({"run_id": "x", "suite": None, "coverage": {"metrics_k": 2}}))
    with pytest.raises(ComparisonInputError, match="attempts.jsonl: cannot be read"):
        side_from_output(broken)
    (broken / "attempts.jsonl").write_text('{"task_id": "a", "attempt": 1, "line": 1}\n[1]\n')
    with pytest.raises(ComparisonInputError, match="line 2 is not an attempt record"):
        side_from_output(broken)
    (broken / "metrics.json").write_text(json.dumps({"run_id": "x", "coverage": {"metrics_k": 0}}))
    with pytest.raises(ComparisonInputError, match="metrics_k"):
        side_from_output(broken)


# --- McNemar -----------------------------------------------------------------------------------

@pytest.mark.parametrize("b", [0, 1, 2, 3, 5, 8, 13, 21, 40])
@pytest.mark.parametrize("c", [0, 1, 2, 4, 7, 12, 25, 39])
def test_mcnemar_p_equals_scipys_exact_binomial_test(b, c):
    expected = 1.0 if b + c == 0 else binomtest(b, b + c, 0.5, alternative="two-sided").pvalue
    assert mcnemar_p(b, c) == pytest.approx(expected, rel=1e-12, abs=1e-300)
    assert mcnemar_p(b, c) == mcnemar_p(c, b)


def test_mcnemar_p_at_sizes_beyond_the_float_range_of_2_to_the_m():
    """2^m overflows a float beyond m = 1023; the exact integer sum does not."""
    expected = binomtest(480, 1100, 0.5).pvalue
    assert mcnemar_p(480, 620) == pytest.approx(expected, rel=1e-9)
    assert 0 < mcnemar_p(480, 620) < 1e-4
    assert mcnemar_p(700, 700) == 1.0
    assert mcnemar_p(0, 5000) == 0.0  # 2 / 2^5000 is below the smallest float
    with pytest.raises(ValueError):
        mcnemar_p(-1, 2)


# --- edge cases on hand-made sides -------------------------------------------------------------

def side(outcomes: dict[str, list], *, run_id="r", suite="s", k=2):
    """A side from {task: [True / False / None (ineligible), ...]} by attempt number."""
    status = {True: "passed", False: "failed", None: "skipped"}
    rows = [attempt(task, n, status[outcome]) for task, results in outcomes.items()
            for n, outcome in enumerate(results, start=1)]
    return make_side(in_file_order(rows), run_id=run_id, suite=suite, metrics_k=k)


def test_no_paired_task_gives_nulls_zero_counts_and_a_warning():
    c = compare(side({"a": [True, True]}), side({"b": [False, False]}))
    assert c["tasks"] == {"paired": 0, "only_baseline": ["a"], "only_candidate": ["b"]}
    assert c["warnings"] == ["no_paired_tasks"]
    no_plan = {"planning": {"tasks_needed": [{"change": d, "tasks": None} for d in (0.02, 0.05, 0.10)]}}
    for name in ("first_attempt", "pass_at_k", "pass_pow_k"):
        assert c[name] == {"n": 0, "both_pass": 0, "baseline_only": 0, "candidate_only": 0, "both_fail": 0,
                           "baseline_rate": None, "candidate_rate": None, "delta": None, "se": None,
                           "ci95": {"lower": None, "upper": None}, "mde80": None, "mcnemar_p": None, "verdict": None,
                           **(no_plan if name == "first_attempt" else {})}
    for name, section in (("task_success", c["task_success"]), ("quality", c["quality"]),
                          *(("resource", s) for s in c["resources"].values())):
        assert section == {"n": 0, "baseline_mean": None, "candidate_mean": None, "delta": None, "se": None,
                           "ci95": {"lower": None, "upper": None}, "mde80": None, "verdict": None,
                           **(no_plan if name == "task_success" else {})}
    assert c["regressions"] == c["improvements"] == []
    # disjoint task sets: nothing paired, so the gate cannot decide (comparison.md)
    assert c["gate"] == {"result": "inconclusive", "max_drop": None,
                         "reasons": ["first_attempt_no_evidence", "task_success_no_evidence"]}


def test_one_paired_task_has_a_delta_and_a_test_but_no_interval():
    c = compare(side({"a": [True, True]}), side({"a": [False, True]}), max_drop=0.05)
    fa = c["first_attempt"]
    assert (fa["n"], fa["baseline_only"], fa["delta"]) == (1, 1, -1.0)
    assert fa["se"] is None and fa["ci95"] == {"lower": None, "upper": None} and fa["mde80"] is None
    assert fa["mcnemar_p"] == 1.0 and fa["verdict"] == "no_significant_change"  # 2 * C(1,0) / 2 = 1
    ts = c["task_success"]
    assert (ts["n"], ts["delta"], ts["verdict"]) == (1, -0.5, None)
    # with a margin, a section without an interval cannot show it: inconclusive, not a pass
    assert c["gate"] == {"result": "inconclusive", "max_drop": 0.05,
                         "reasons": ["first_attempt_no_interval", "task_success_no_interval"]}
    # without a margin there is nothing to show: no significant regression, a pass
    assert compare(side({"a": [True, True]}), side({"a": [False, True]}))["gate"]["result"] == "pass"
    assert c["regressions"] == ["a"]


def test_all_concordant_tasks():
    outcomes = {"a": [True, True], "b": [False, False], "c": [True, False]}
    c = compare(side(outcomes), side(outcomes))
    for name in ("first_attempt", "pass_at_k", "pass_pow_k"):
        s = c[name]
        assert s["baseline_only"] == s["candidate_only"] == 0 and s["n"] == 3
        assert (s["delta"], s["se"], s["mde80"], s["mcnemar_p"], s["verdict"]) == (0, 0, 0, 1.0, "no_significant_change")
    assert c["first_attempt"]["both_pass"] == 2 and c["pass_pow_k"]["both_pass"] == 1
    assert c["task_success"]["ci95"] == {"lower": 0, "upper": 0}
    assert c["task_success"]["verdict"] == "no_significant_change"


def test_unpaired_tasks_enter_no_paired_statistic():
    baseline = side({"a": [True, True], "b": [True, True], "z1": [False, False]})
    candidate = side({"a": [True, True], "b": [True, True], "y1": [True, True], "x1": [True, True]})
    c = compare(baseline, candidate)
    assert c["tasks"] == {"paired": 2, "only_baseline": ["z1"], "only_candidate": ["x1", "y1"]}
    assert c["first_attempt"]["n"] == c["task_success"]["n"] == 2
    assert c["first_attempt"]["baseline_rate"] == 1.0  # z1's failure is not in it


def test_the_later_line_wins_in_a_side():
    """R29: a duplicated task/attempt keeps the later line, exactly as task_groups does."""
    rows = [attempt("a", 1, "passed", line=3), attempt("a", 1, "failed", line=1)]
    s = make_side(rows, run_id="r", suite=None, metrics_k=1)
    assert s.tasks["a"][1]["success"] is True and s.tasks["a"][1]["line"] == 3


def test_pass_at_k_uses_the_smaller_k_and_none_without_one():
    baseline = side({"a": [True, False, False]}, k=3)
    candidate = side({"a": [False, True]}, k=2)
    c = compare(baseline, candidate)
    assert c["k"] == 2 and c["warnings"] == ["metrics_k_differs"]
    assert c["pass_at_k"]["n"] == 1 and c["pass_at_k"]["delta"] == 0.0
    assert c["pass_pow_k"]["n"] == 1 and c["pass_pow_k"]["both_fail"] == 1
    c = compare(side({"a": [True]}, k=None), side({"a": [True]}, k=1))
    assert c["k"] is None and c["warnings"] == ["metrics_k_differs"]
    assert c["pass_at_k"]["n"] == c["pass_pow_k"]["n"] == 0 and c["first_attempt"]["n"] == 1


def test_warnings_in_their_order():
    setup = {"suite": {"name": "one", "version": "7"}, "judge": {"enabled": True, "model": "judge-a"},
             "platform": {"device": "pixel-8", "os": "android-15"}, "active_skills": ["calendar"]}
    other = {"suite": {"name": "two", "version": "8"}, "judge": {"enabled": True, "model": "judge-b"},
             "platform": {"device": "emulator", "os": "android-15"}, "active_skills": ["calendar", "web"]}
    c = compare(setup_side({"a": [True]}, setup, suite="one", k=1), setup_side({"b": [True]}, other, suite="two", k=2))
    assert c["warnings"] == list(WARNINGS) == [
        "suite_differs", "suite_version_differs", "metrics_k_differs", "judge_differs", "platform_differs",
        "skills_differs", "no_paired_tasks"]
    # a suite unknown on one side is not a difference
    assert compare(side({"a": [True]}, suite=None), side({"a": [True]}, suite="two"))["warnings"] == []


def setup_side(outcomes, manifest, **kw):
    """``side`` measured with what ``manifest`` records (comparison.md "The measurement setup")."""
    return replace(side(outcomes, **kw), identity=run_identity(manifest))


def setup_warnings(baseline: dict, candidate: dict) -> list[str]:
    return compare(setup_side({"a": [True]}, baseline), setup_side({"a": [True]}, candidate))["warnings"]


def test_each_part_of_the_setup_differs_only_when_known_in_both_and_unequal():
    judge = {"judge": {"enabled": True, "model": "judge-a"}}
    assert setup_warnings(judge, {"judge": {"enabled": False, "model": "judge-a"}}) == ["judge_differs"]  # enabled
    assert setup_warnings(judge, {"judge": {"enabled": True, "model": "judge-b"}}) == ["judge_differs"]  # model
    assert setup_warnings(judge, {"judge": {"enabled": True}}) == []  # the model unknown in one run
    assert setup_warnings(judge, {"judge": {"enabled": "yes", "model": 3}}) == []  # not of their types: unknown
    platform = {"platform": {"device": "pixel-8", "os": "android-15"}}
    assert setup_warnings(platform, {"platform": {"device": "emulator", "os": "android-15"}}) == ["platform_differs"]
    assert setup_warnings(platform, {"platform": {"device": "pixel-8", "os": "android-14"}}) == ["platform_differs"]
    assert setup_warnings(platform, {"platform": {"os": "android-15"}}) == []
    skills = {"active_skills": ["web", "calendar"]}
    assert setup_warnings(skills, {"active_skills": ["calendar", "web", "calendar"]}) == []  # a set: order, repeats
    assert setup_warnings(skills, {"active_skills": ["calendar"]}) == ["skills_differs"]
    assert setup_warnings(skills, {"active_skills": []}) == ["skills_differs"]  # none active is known
    assert setup_warnings(skills, {"active_skills": ["web", 3]}) == []  # not a list of strings: unknown
    version = {"suite": {"name": "s", "version": 7}}
    assert setup_warnings(version, {"suite": {"name": "s", "version": "7"}}) == []  # compared as text
    assert setup_warnings(version, {"suite": {"name": "s", "version": "7.1"}}) == ["suite_version_differs"]
    assert setup_warnings(version, {"suite": {"name": "s", "version": True}}) == []  # a Boolean is no version
    assert setup_warnings(version, {}) == []


def test_the_runners_manifest_gives_the_setup_through_its_equivalents():
    """run-directory.md: judge_config (null: judge off), target_platform as the os, suite_sha256
    as the suite version."""
    runner = {"judge_config": {"provider": "p", "model": "judge-a", "base_url": "u"}, "target_platform": "android",
              "suite_sha256": "ab" * 32}
    assert setup_warnings(runner, {"judge": {"enabled": True, "model": "judge-a"}, "platform": {"os": "android"},
                                   "suite": {"version": "ab" * 32}}) == []
    assert setup_warnings(runner, {**runner, "judge_config": None}) == ["judge_differs"]  # on against off
    assert setup_warnings(runner, {**runner, "target_platform": "ios"}) == ["platform_differs"]
    assert setup_warnings(runner, {**runner, "suite_sha256": "cd" * 32}) == ["suite_version_differs"]


def test_a_significant_first_attempt_regression_fails_the_gate():
    """Ten tasks pass attempt 1 in the baseline and fail it in the candidate: McNemar
    p = 2 / 2^10 < 0.05 with delta < 0; task success drops by 1/2 on every task (se 0)."""
    tasks = [f"t{i}" for i in range(10)]
    c = compare(side({t: [True, True] for t in tasks}), side({t: [False, True] for t in tasks}))
    fa = c["first_attempt"]
    assert fa["mcnemar_p"] == 2 / 1024 and fa["verdict"] == "regression"
    assert c["task_success"]["verdict"] == "regression"  # ci95 = [-0.5, -0.5]
    assert c["gate"] == {"result": "fail", "max_drop": None, "reasons": ["first_attempt_regression", "task_success_regression"]}
    assert c["regressions"] == sorted(tasks)
    back = compare(side({t: [False, True] for t in tasks}), side({t: [True, True] for t in tasks}))
    assert back["first_attempt"]["verdict"] == "improvement" and back["gate"]["result"] == "pass"
    assert back["improvements"] == sorted(tasks)


def test_the_gate_with_and_without_a_margin():
    """Twenty tasks, one lost on attempt 1 and none gained: no significant change
    (p = 1), so the gate passes without a margin; the interval's lower bound is
    -0.05 - z * sqrt(0.95 * 0.05 ... ) and a margin above it passes, below it fails."""
    tasks = [f"t{i:02d}" for i in range(20)]
    baseline = side({t: [True] for t in tasks}, k=1)
    candidate = side({t: [t != "t00"] for t in tasks}, k=1)
    plain = compare(baseline, candidate)
    fa = plain["first_attempt"]
    assert (fa["delta"], fa["mcnemar_p"], fa["verdict"]) == (-0.05, 1.0, "no_significant_change")
    # d: one -1, nineteen 0: sum (d - delta)^2 = 0.95^2 + 19 * 0.05^2 = 0.95, se = sqrt(0.95 / 19 / 20)
    se = math.sqrt(0.95 / 19 / 20)
    assert fa["se"] == approx(se) and fa["ci95"]["lower"] == approx(-0.05 - Z_95 * se)
    lower = fa["ci95"]["lower"]  # about -0.148
    assert plain["gate"] == {"result": "pass", "max_drop": None, "reasons": []}
    wide = compare(baseline, candidate, max_drop=0.2)
    assert wide["gate"] == {"result": "pass", "max_drop": 0.2, "reasons": []}
    narrow = compare(baseline, candidate, max_drop=0.1)
    assert -0.2 < lower < -0.1
    # a margin not shown to hold is not a regression: the data cannot decide
    assert narrow["gate"] == {"result": "inconclusive", "max_drop": 0.1,
                              "reasons": ["first_attempt_below_margin", "task_success_below_margin"]}
    assert list(GATE_REASONS) == ["first_attempt_no_evidence", "first_attempt_regression",
                                  "first_attempt_no_interval", "first_attempt_below_margin",
                                  "task_success_no_evidence", "task_success_regression",
                                  "task_success_no_interval", "task_success_below_margin"]


# --- the three-result gate on values in memory (comparison.md "Verdicts and the release gate") ---

def _section(n=10, verdict="no_significant_change", lower=-0.02):
    return {"n": n, "verdict": verdict, "ci95": {"lower": lower, "upper": None if lower is None else lower + 0.1}}


EMPTY = {"n": 0, "verdict": None, "ci95": {"lower": None, "upper": None}}


@pytest.mark.parametrize("first_attempt, task_success, max_drop, result, reasons", [
    # nothing paired (an empty candidate, disjoint task sets): never a pass, margin or not
    (EMPTY, EMPTY, None, "inconclusive", ["first_attempt_no_evidence", "task_success_no_evidence"]),
    (EMPTY, EMPTY, 0.05, "inconclusive", ["first_attempt_no_evidence", "task_success_no_evidence"]),
    # no eligible first attempt, task success measured
    (EMPTY, _section(), None, "inconclusive", ["first_attempt_no_evidence"]),
    # a regression fails, even beside a section without evidence; first_attempt's reason first
    (_section(verdict="regression", lower=-0.5), _section(), None, "fail", ["first_attempt_regression"]),
    (EMPTY, _section(verdict="regression", lower=-0.5), 0.05, "fail",
     ["first_attempt_no_evidence", "task_success_regression"]),
    # the first reason that holds: a regression below the margin is a regression only
    (_section(verdict="regression", lower=-0.5), _section(verdict="regression", lower=-0.5), 0.05, "fail",
     ["first_attempt_regression", "task_success_regression"]),
    # one paired task: no interval; without a margin nothing to show, with one inconclusive
    (_section(n=1, lower=None), _section(n=1, lower=None), None, "pass", []),
    (_section(n=1, lower=None), _section(n=1, lower=None), 0.05, "inconclusive",
     ["first_attempt_no_interval", "task_success_no_interval"]),
    # a margin that holds (lower bound exactly at -X holds), and one not shown
    (_section(lower=-0.05), _section(lower=-0.01), 0.05, "pass", []),
    (_section(lower=-0.08), _section(lower=-0.01), 0.05, "inconclusive", ["first_attempt_below_margin"]),
    (_section(lower=-0.01), _section(lower=-0.08), 0.05, "inconclusive", ["task_success_below_margin"]),
    # no significant change without a margin: a pass (no regression found), never "safe"
    (_section(lower=-0.3), _section(lower=-0.3), None, "pass", []),
])
def test_the_three_result_gate(first_attempt, task_success, max_drop, result, reasons):
    gate = release_gate(first_attempt, task_success, max_drop)
    assert gate == {"result": result, "max_drop": max_drop, "reasons": reasons}
    assert set(reasons) <= set(GATE_REASONS)
    assert GATE_EXIT_CODES[gate["result"]] == {"pass": 0, "fail": 1, "inconclusive": 3}[result]


def test_the_gate_on_compared_sides():
    """compare's gate on sides in memory: disjoint task sets, a regression, a margin."""
    tasks = [f"t{i:02d}" for i in range(20)]
    disjoint = compare(side({"a": [True]}, k=1), side({"b": [True]}, k=1), max_drop=0.05)
    assert disjoint["gate"] == {"result": "inconclusive", "max_drop": 0.05,
                                "reasons": ["first_attempt_no_evidence", "task_success_no_evidence"]}
    regression = compare(side({t: [True] for t in tasks}, k=1), side({t: [False] for t in tasks}, k=1), max_drop=0.05)
    assert regression["gate"] == {"result": "fail", "max_drop": 0.05,
                                  "reasons": ["first_attempt_regression", "task_success_regression"]}
    # every first attempt ineligible in the candidate: first attempt has no evidence, task success has
    ineligible = compare(side({t: [True, True] for t in tasks}), side({t: [None, True] for t in tasks}))
    assert ineligible["first_attempt"]["n"] == 0 and ineligible["task_success"]["n"] == 20
    assert ineligible["gate"] == {"result": "inconclusive", "max_drop": None, "reasons": ["first_attempt_no_evidence"]}


def test_an_empty_candidate_on_disk_is_inconclusive_and_not_drawn_as_a_pass(tmp_path):
    """A candidate whose results.jsonl is empty, processed against a baseline of ten tasks:
    nothing paired, so the gate is inconclusive with both no_evidence reasons, and
    report.html, summary.md and comparison.md say so without a pass's colour or words."""
    runs = tmp_path / "runs"
    manifest = {"status": "completed", "metrics_k": 1}
    base = make_run(runs, [row(f"t{i}") for i in range(10)], run_id="base", manifest=manifest)
    cand = make_run(runs, [], run_id="cand", manifest=manifest)
    (cand / "results.jsonl").write_text("", encoding="utf-8")
    run_stages(base, tmp_path / "out" / "base")
    for max_drop in (None, 0.05):
        out = tmp_path / "out" / f"cand-{max_drop}"
        result = run_stages(cand, out, baseline=side_from_output(tmp_path / "out" / "base"), max_drop=max_drop)
        assert result.comparison["gate"] == {"result": "inconclusive", "max_drop": max_drop,
                                             "reasons": ["first_attempt_no_evidence", "task_success_no_evidence"]}
        page = (out / "report.html").read_text()
        assert '<p class="gate inconclusive" id="gate-statement" data-gate="inconclusive">' in page
        assert '<span class="gate-badge inconclusive">gate inconclusive</span>' in page
        assert 'class="gate pass"' not in page and "gate-badge pass" not in page
        assert "Release gate: inconclusive" in page and "has no paired task" in page
        # the inline style draws it neither green (a pass) nor red (a fail)
        style = page[page.index("<style"):page.index("</style>")]
        rules = {sel: re.search(re.escape(sel) + r" \{([^}]*)\}", style).group(1)
                 for sel in (".gate.pass", ".gate.fail", ".gate.inconclusive", ".gate-badge.pass",
                             ".gate-badge.inconclusive")}
        assert "background: #fff8c5" in rules[".gate.inconclusive"]
        assert rules[".gate.inconclusive"] not in (rules[".gate.pass"], rules[".gate.fail"])
        assert rules[".gate-badge.inconclusive"] != rules[".gate-badge.pass"]
        for name in ("summary.md", "comparison.md"):
            md = (out / name).read_text()
            assert "**Release gate: inconclusive**: the data cannot decide" in md, name
            assert "Reasons: `first_attempt_no_evidence`, `task_success_no_evidence`." in md, name
            assert "a drop of any size could have gone unseen" in md and "Release gate: pass" not in md, name


@pytest.mark.parametrize("bad", [-0.01, 1.5, float("nan"), float("inf"), True, "0.1"])
def test_a_margin_outside_zero_to_one_is_refused(bad):
    with pytest.raises(ValueError):
        check_max_drop(bad)
    with pytest.raises(ValueError):
        compare(side({"a": [True]}), side({"a": [True]}), max_drop=bad)


def test_paired_statistics_by_formula():
    stats = paired_statistics([0.2, 0.4, 0.9], [0.5, 0.4, 1.0])
    # d = 0.3, 0, 0.1: delta = 0.4/3; se = sqrt(((0.3-d)^2 + d^2 + (0.1-d)^2) / 2 / 3)
    delta = 0.4 / 3
    se = math.sqrt(((0.3 - delta) ** 2 + delta ** 2 + (0.1 - delta) ** 2) / 2 / 3)
    assert stats["delta"] == approx(delta) and stats["se"] == approx(se)
    assert stats["baseline_mean"] == approx(0.5) and stats["candidate_mean"] == approx(0.6333333333333333)
    assert stats["mde80"] == approx((1.959963984540054 + 0.8416212335729143) * se)
    assert paired_statistics([], [])["delta"] is None


# --- the composition with a baseline (pipeline.run_stages) ---------------------------------------

def test_run_stages_with_a_baseline_writes_the_comparison_and_both_reports_show_it(processed):
    root, _, plain = processed
    out = root / "out" / "with-baseline"
    result = run_stages(root / "runs" / "cand", out, baseline=side_from_output(root / "out" / "base"))
    # the same comparison as comparing the two output folders by hand
    assert result.comparison == compare(side_from_output(root / "out" / "base"), side_from_processed(plain.processed))
    assert list(result.written) == ["metrics.json", "attempts.jsonl", "summary.md", "report.html",
                                    "comparison.json", "comparison.md"]
    assert json.loads((out / "comparison.json").read_text()) == result.comparison
    # the run's own files do not change with a baseline (generated_at aside)
    for name in ("attempts.jsonl",):
        assert (out / name).read_bytes() == (root / "out" / "cand" / name).read_bytes()
    assert {**json.loads((out / "metrics.json").read_text()), "generated_at": None} == {
        **json.loads((root / "out" / "cand" / "metrics.json").read_text()), "generated_at": None}
    md = (out / "comparison.md").read_text()
    assert md.startswith("# Compared with `base`: candidate `cand`")
    assert md.index("**Release gate: pass**") < md.index("## Verdicts") < md.index("## Paired sections")
    assert "- First attempt (pass@1): **no significant change**" in md
    assert "- Task wall time: **regression**" in md and "- Total tokens: **improvement**" in md
    assert ("| First attempt (pass@1) | 4 of 4 | 75.0% | 50.0% | -25.0 pp | [-118.8 pp, +68.8 pp] | 134.1 pp | 1.000 | "
            "no significant change |") in md
    assert "| Task success (task-weighted) | 4 of 4 | 75.0% | 62.5% | -12.5 pp |" in md
    assert "not the attempt-weighted attempt success rate" in md
    # regressed and improved tasks link to attempt 1's evidence folder in both runs (the
    # baseline's run folder found beside the candidate's, named by its run id)
    assert "| `A` | [`tasks/A`](<../../runs/base/tasks/A/>) | [`tasks/A`](<../../runs/cand/tasks/A/>) |" in md
    assert "| `D` | [`tasks/D`](<../../runs/base/tasks/D/>) | [`tasks/D`](<../../runs/cand/tasks/D/>) |" in md
    assert "| `B` | [`tasks/B`](<../../runs/base/tasks/B/>) | [`tasks/B`](<../../runs/cand/tasks/B/>) |" in md
    assert "- Only in the candidate (1): `E`" in md and "- Only in the baseline (0)." in md
    summary = (out / "summary.md").read_text()
    assert "## Compared with `base`" in summary and "### Verdicts" in summary
    assert summary.index("## Compared with") < summary.index("## What was excluded and why")
    page = (out / "report.html").read_text()
    assert 'id="comparison"' in page and "Compared with <code>base</code>" in page
    assert page.count('<svg class="dci"') == 1 and 'class="zero"' in page
    # without a baseline: no comparison, no comparison files, no section
    assert plain.comparison is None and "comparison.json" not in plain.written
    assert not (root / "out" / "cand" / "comparison.json").exists()
    assert "Compared with" not in (root / "out" / "cand" / "summary.md").read_text()


def test_run_stages_compares_without_an_output_folder_too(processed):
    root, _, _ = processed
    with_files = run_stages(root / "runs" / "cand", root / "again", baseline=side_from_output(root / "out" / "base"), max_drop=0.1)
    without = run_stages(root / "runs" / "cand", baseline=side_from_output(root / "out" / "base"), max_drop=0.1)
    assert without.written == {} and without.comparison == with_files.comparison
    assert without.comparison["gate"] == {"result": "inconclusive", "max_drop": 0.1,
                                          "reasons": ["first_attempt_below_margin", "task_success_below_margin"]}
    assert run_stages(root / "runs" / "cand").comparison is None


def test_run_stages_links_the_baseline_run_folder_it_is_given(processed):
    """A baseline whose run folder is not beside the candidate's: linked when given, named
    without a link when not."""
    root, _, _ = processed
    elsewhere = make_run(root / "elsewhere", BASELINE_ROWS, run_id="other-base", manifest=K2)
    run_stages(elsewhere, root / "out" / "other-base")
    unlinked = run_stages(root / "runs" / "cand", root / "u", baseline=side_from_output(root / "out" / "other-base"))
    md = (root / "u" / "comparison.md").read_text()
    assert "| `A` | `tasks/A` | [`tasks/A`](<../runs/cand/tasks/A/>) |" in md and unlinked.comparison["regressions"] == ["A", "D"]
    run_stages(root / "runs" / "cand", root / "l", baseline=side_from_output(root / "out" / "other-base"), baseline_run_dir=elsewhere)
    md = (root / "l" / "comparison.md").read_text()
    assert "| `A` | [`tasks/A`](<../elsewhere/other-base/tasks/A/>) | [`tasks/A`](<../runs/cand/tasks/A/>) |" in md


def test_run_stages_checks_the_margin_before_any_work(processed):
    root, _, _ = processed
    with pytest.raises(ValueError, match="max_drop"):
        run_stages(root / "runs" / "cand", root / "never", baseline=side_from_output(root / "out" / "base"), max_drop=2)
    assert not (root / "never").exists()


def test_run_stages_names_both_runs_models_from_their_run_folders(tmp_path):
    """The baseline's identity comes from its run folder (found beside the candidate's), the
    candidate's from its own manifest; comparison.md names both and says they differ."""
    runs = tmp_path / "runs"
    for run_id, model, sha in (("base", "large", "aaa1111"), ("cand", "small", "bbb2222")):
        make_run(runs, BASELINE_ROWS, run_id=run_id, suite={"name": "suite-a", "version": "3", "tasks": []},
                 manifest={**K2, "model": {"name": model, "provider": "acme"}, "code": {"git_sha": sha, "dirty": False}})
    run_stages(runs / "base", tmp_path / "out" / "base")
    result = run_stages(runs / "cand", tmp_path / "out" / "cand", baseline=side_from_output(tmp_path / "out" / "base"))
    md = (tmp_path / "out" / "cand" / "comparison.md").read_text()
    assert "| Model (differs) | `large (acme)` | `small (acme)` |" in md
    assert "| Code version (differs) | `aaa1111 (clean)` | `bbb2222 (clean)` |" in md
    assert "| Suite | `suite-a version 3` | `suite-a version 3` |" in md
    assert "this compares two models, not two builds of one agent" in md
    assert result.comparison["baseline"] == {"run_id": "base", "suite": "suite-a", "metrics_k": 2}  # json unchanged
    elsewhere = run_stages(runs / "cand", tmp_path / "u", baseline=side_from_output(tmp_path / "out" / "base"),
                           baseline_run_dir=tmp_path / "nowhere")
    assert elsewhere.comparison == result.comparison
    assert "Unknown: the baseline's model, the baseline's code version" in (tmp_path / "u" / "comparison.md").read_text()


def test_success_rates_that_cancel_give_a_delta_of_exactly_0():
    """Task success a 1/2 -> 1/3, b 1/2 -> 2/3 (an ineligible attempt is enough to give tasks
    different denominators): the per-task values are exact fractions, so delta is exactly 0
    (floats alone: -5.6e-17), the interval is symmetric, and comparison.md's planning names no
    "observed change of -0.0 pp" needing some 10^32 tasks."""
    from bench_pipeline.reports.planning_text import comparison_planning

    c = compare(side({"a": [True, False], "b": [True, False], "c": [True, True]}),
                side({"a": [True, False, False], "b": [True, True, False], "c": [True, True]}))
    ts = c["task_success"]
    assert (ts["n"], ts["baseline_mean"], ts["candidate_mean"], ts["delta"]) == (3, 2 / 3, 2 / 3, 0.0)
    assert ts["ci95"]["lower"] == -ts["ci95"]["upper"]
    assert ts["se"] == pytest.approx(math.sqrt((1 / 36 + 1 / 36) / 2 / 3), rel=1e-15)
    planning = comparison_planning(c)
    assert "observed change of" not in json.dumps(planning) and "0.0 pp" not in json.dumps(planning)
    assert "546" in planning["sentence"]  # the planned changes are still there


def test_paired_statistics_of_exact_values_are_rounded_once():
    from fractions import Fraction

    thirds = paired_statistics([Fraction(1, 2), Fraction(1, 2)], [Fraction(1, 3), Fraction(2, 3)])
    assert thirds["delta"] == 0.0 and thirds["baseline_mean"] == 0.5 and thirds["candidate_mean"] == 0.5
    # 0/1 values give what the float computation gives, bit for bit
    b, c = [1, 0, 1, 1, 0, 1, 0], [0, 0, 1, 1, 1, 1, 0]
    exact, floats = paired_statistics(b, c), paired_statistics([float(v) for v in b], [float(v) for v in c])
    assert exact == floats
    # a mix with floats is computed in floats
    mixed = paired_statistics([Fraction(1, 2), 0.25], [0.5, 0.25])
    assert mixed["delta"] == 0.0 and mixed["baseline_mean"] == 0.375
