"""Repeated runs (repeats.py, repeated-runs.md): hand cases with every number worked out,
systems, and the repeated comparison against the positional one."""

from __future__ import annotations

import math
import random

import pytest

from bench_pipeline.comparison import compare
from bench_pipeline.comparison_sides import make_side
from bench_pipeline.identity import RunIdentity
from bench_pipeline.setup import run_setup
from bench_pipeline.repeats import (
    REPEATS_WARNINGS,
    SET_WARNINGS,
    RepeatRun,
    between_runs,
    compare_sets,
    flip,
    group_systems,
    pooled_section,
    repeats,
    system_of,
)
from bench_pipeline.reports.repeated import render_set_comparison_md
from bench_pipeline.stats import Z_95


def approx(value):
    return pytest.approx(value, rel=1e-12, abs=1e-15)


def run(run_id, outcomes, *, k=1, model="m", sha="s1", suite="suite", started=None, pass_at_1=None,
        quality=None, cost=None, setup=None):
    """A RepeatRun from {task: [True / False / None (ineligible), ...]} by attempt number;
    quality and cost per task (every attempt) when given; ``setup``: the manifest's judge,
    platform, active_skills and suite version (comparison.md "The measurement setup")."""
    rows, line = [], 0
    for task, results in outcomes.items():
        for attempt, outcome in enumerate(results, start=1):
            line += 1
            rows.append({"task_id": task, "attempt": attempt, "line": line, "success": outcome is True,
                         "agent_eligible": outcome is not None,
                         "quality_score": (quality or {}).get(task), "task_wall_ms": None, "total_tokens": None,
                         "cost_usd": (cost or {}).get(task)})
    identity = RunIdentity(suite=suite, model_name=model, git_sha=sha, started_at=started, setup=run_setup(setup))
    side = make_side(rows, run_id=run_id, suite=suite, metrics_k=k, identity=identity)
    return RepeatRun(side, pass_at_1)


# One system, three runs, k = 1. Task b flips once (pass, fail, pass); d is only in run 1.
THREE = [
    run("r1", {"a": [True], "b": [True], "c": [False], "d": [True]}, started="2026-11-01T00:00:00Z",
        pass_at_1=3 / 4, quality={"a": 0.5}, cost={"a": 0.2}),
    run("r2", {"a": [True], "b": [False], "c": [False]}, started="2026-11-02T00:00:00Z", pass_at_1=1 / 3,
        quality={"a": 1.0}),
    run("r3", {"a": [True], "b": [True], "c": [False]}, started=None, pass_at_1=2 / 3),
]


def test_three_runs_of_one_system_by_hand():
    doc = repeats(THREE)
    assert list(doc) == ["schema_version", "system", "warnings", "k", "runs", "tasks", "pooled", "between_runs",
                         "stability", "planning"]
    assert doc["system"] == {"suite": "suite", "model": "m", "git_sha": "s1"} and doc["warnings"] == [] and doc["k"] == 1
    # started_at ascending, null last
    assert doc["runs"] == [{"run_id": "r1", "started_at": "2026-11-01T00:00:00Z", "pass_at_1": 0.75},
                           {"run_id": "r2", "started_at": "2026-11-02T00:00:00Z", "pass_at_1": 1 / 3},
                           {"run_id": "r3", "started_at": None, "pass_at_1": 2 / 3}]
    assert doc["tasks"] == {"observed": 4, "in_every_run": 3}

    # first_attempt pooled per task: a 1, b 2/3, c 0, d 1 (its one run). mean = (1 + 2/3 + 0 + 1) / 4 = 2/3;
    # sum (x - 2/3)^2 = 1/9 + 0 + 4/9 + 1/9 = 6/9; se = sqrt(6/9 / 3 / 4) = sqrt(1/18).
    fa = doc["pooled"]["first_attempt"]
    se = math.sqrt(1 / 18)
    assert fa["n"] == 4 and fa["mean"] == approx(2 / 3) and fa["se"] == approx(se)
    assert fa["ci95"] == {"lower": approx(2 / 3 - Z_95 * se), "upper": 1.0}  # 2/3 + 0.46 clamped to 1
    # task_success is the same here (one attempt per task); pass@k with k = 1 too
    assert doc["pooled"]["task_success"]["mean"] == approx(2 / 3)
    assert doc["pooled"]["pass_at_k"]["mean"] == approx(2 / 3) and doc["pooled"]["pass_pow_k"]["n"] == 4
    # quality: only task a has scores (0.5, 1.0): pooled 0.75, n = 1: no se, no interval
    assert doc["pooled"]["quality"] == {"n": 1, "mean": 0.75, "se": None, "ci95": {"lower": None, "upper": None}}
    # cost: only a in r1; tokens: none at all: n = 0, every number null
    assert doc["pooled"]["resources"]["cost_usd"]["mean"] == 0.2
    assert doc["pooled"]["resources"]["total_tokens"] == {"n": 0, "mean": None, "se": None,
                                                          "ci95": {"lower": None, "upper": None}}

    # between runs: pass_at_1 = 3/4, 1/3, 2/3: mean 7/12; deviations 1/6, -1/4, 1/12;
    # squares 1/36 + 1/16 + 1/144 = 14/144; sd = sqrt(14/144 / 2) = sqrt(7)/12
    br = doc["between_runs"]
    sd = math.sqrt(7) / 12
    assert br["runs"] == 3 and br["pass_at_1_mean"] == approx(7 / 12) and br["pass_at_1_sd"] == approx(sd)
    assert br["noise_floor95"] == approx(Z_95 * math.sqrt(2) * sd)

    # stability over every eligible attempt: a 3/3 stable pass, b 2/3 flaky (flip 2*2*1/(3*2) = 2/3),
    # c 0/3 stable fail, d one attempt: not classified. flip_rate = (0 + 2/3 + 0) / 3 = 2/9.
    st = doc["stability"]
    assert (st["tasks_classified"], st["stable_pass"], st["stable_fail"], st["flaky"]) == (3, 1, 1, 1)
    assert st["flip_rate"] == approx(2 / 9)
    assert st["flaky_tasks"] == [{"task_id": "b", "attempts": 3, "successes": 2, "flip": approx(2 / 3)}]


def test_pass_at_k_with_metrics_k_differing_between_runs():
    """k = min metrics_k = 2. Task t: run 1 (k 2) attempts pass, fail -> pass@2 1, pass^2 0;
    run 2 (k 3) fail, fail, pass -> attempts 1..2: pass@2 0, pass^2 0. Pooled 1/2 and 0."""
    runs = [run("r1", {"t": [True, False]}, k=2), run("r2", {"t": [False, False, True]}, k=3)]
    doc = repeats(runs)
    assert doc["k"] == 2 and doc["warnings"] == ["metrics_k_differs"]
    assert doc["pooled"]["pass_at_k"]["mean"] == 0.5 and doc["pooled"]["pass_pow_k"]["mean"] == 0.0
    # task success: run 1 1/2, run 2 1/3 -> pooled 5/12
    assert doc["pooled"]["task_success"]["mean"] == approx(5 / 12)
    # stability over all 5 eligible attempts, 2 successes: flip = 2*2*3/(5*4) = 0.6
    assert doc["stability"]["flaky_tasks"] == [{"task_id": "t", "attempts": 5, "successes": 2, "flip": approx(0.6)}]
    unknown_k = repeats([run("r1", {"t": [True]}, k=None), run("r2", {"t": [True]}, k=2)])
    assert unknown_k["k"] is None and unknown_k["pooled"]["pass_at_k"]["n"] == 0


def test_noise_floor_needs_two_runs_and_one_run_with_repeats_has_stability():
    assert between_runs([0.5]) == {"runs": 1, "pass_at_1_mean": 0.5, "pass_at_1_sd": None, "noise_floor95": None}
    two = between_runs([0.5, 0.7, None])  # the null run is not counted
    assert two["runs"] == 2 and two["pass_at_1_sd"] == approx(math.sqrt(0.02))
    assert two["noise_floor95"] == approx(Z_95 * math.sqrt(2) * math.sqrt(0.02))
    assert between_runs([])["pass_at_1_mean"] is None
    one = repeats([run("r1", {"a": [True, False, True], "b": [True, True, True]}, k=3, pass_at_1=1.0)])
    assert one["stability"]["flip_rate"] == approx((2 / 3 + 0) / 2)
    assert one["between_runs"]["noise_floor95"] is None
    assert flip(2, 1) == 1.0 and flip(4, 0) == 0.0


ON_PIXEL = {"judge": {"enabled": True, "model": "judge-a"}, "platform": {"device": "pixel-8", "os": "android-15"},
            "active_skills": ["calendar", "web"], "suite": {"version": 7}}
ON_EMULATOR = {**ON_PIXEL, "platform": {"device": "emulator", "os": "android-15"}}
UNJUDGED = {**ON_PIXEL, "judge": {"enabled": False}}


def test_warnings_in_their_order():
    other = {"judge": {"enabled": True, "model": "judge-b"}, "platform": {"device": "pixel-8", "os": "android-14"},
             "active_skills": ["calendar"], "suite": {"version": "8"}}
    doc = repeats([run("r1", {"a": [True]}, suite="x", model="m1", sha="s1", k=1, setup=ON_PIXEL),
                   run("r2", {"a": [True]}, suite="y", model="m2", sha="s2", k=2, setup=other)])
    assert doc["warnings"] == list(REPEATS_WARNINGS) == [
        "suite_differs", "model_differs", "code_differs", "suite_version_differs", "judge_differs", "platform_differs",
        "skills_differs", "metrics_k_differs"]
    # any two runs: the third run differs from the first only in its skills, a set ("7" equals 7)
    three = [run("r1", {"a": [True]}, setup=ON_PIXEL), run("r2", {"a": [True]}, setup=ON_PIXEL),
             run("r3", {"a": [True]}, setup={**ON_PIXEL, "active_skills": ["web"], "suite": {"version": "7"}})]
    assert repeats(three)["warnings"] == ["skills_differs"]
    # unknown values are not differences
    assert repeats([run("r1", {"a": [True]}, model=None), run("r2", {"a": [True]})])["warnings"] == []


def test_pooled_section_edges():
    assert pooled_section([], clamp=True) == {"n": 0, "mean": None, "se": None, "ci95": {"lower": None, "upper": None}}
    assert pooled_section([0.4], clamp=True)["se"] is None
    unclamped = pooled_section([-5.0, 5.0], clamp=False)
    assert unclamped["mean"] == 0.0 and unclamped["ci95"]["lower"] == approx(-Z_95 * 5.0)


# --- systems -----------------------------------------------------------------------------------

def test_runs_group_into_systems_and_an_unknown_part_makes_a_system_of_its_own():
    runs = [run("r1", {"a": [True]}, model="large"), run("r2", {"a": [True]}, model="large"),
            run("r3", {"a": [True]}, model="small"), run("r4", {"a": [True]}, model=None),
            run("r5", {"a": [True]}, model=None), run("r6", {"a": [True]}, model="large", sha=None)]
    groups = group_systems(runs)
    assert [[r.run_id for r in g] for g in groups.values()] == [["r1", "r2"], ["r3"], ["r4"], ["r5"], ["r6"]]
    lone = system_of(runs[3])
    assert (lone.suite, lone.model, lone.git_sha, lone.alone) == ("suite", None, "s1", "r4")
    assert system_of(runs[0]).alone is None


def test_another_judge_or_device_is_another_system():
    """repeated-runs.md "Systems": the same agent on another device or judged by another judge
    is another system; unknown setup fields compare as null (equal to each other); skills and
    the suite version are not part of the setup key (they are warnings)."""
    runs = [run("p1", {"a": [True]}, setup=ON_PIXEL), run("e1", {"a": [True]}, setup=ON_EMULATOR),
            run("p2", {"a": [False]}, setup={**ON_PIXEL, "active_skills": ["web"]}),
            run("u1", {"a": [True]}, setup=UNJUDGED), run("n1", {"a": [True]}), run("n2", {"a": [True]})]
    groups = group_systems(runs)
    assert [[r.run_id for r in g] for g in groups.values()] == [["p1", "p2"], ["e1"], ["u1"], ["n1", "n2"]]
    pixel, emulator, unjudged, unknown = groups
    assert pixel.setup == (True, "judge-a", "pixel-8", "android-15") and emulator.setup[2] == "emulator"
    assert unjudged.setup == (False, None, "pixel-8", "android-15") and unknown.setup == (None, None, None, None)
    assert (pixel.model, pixel.git_sha, pixel.alone) == (emulator.model, emulator.git_sha, None)  # same agent
    assert pixel.setup_text == "judge judge-a, pixel-8 / android-15"
    assert unjudged.setup_text == "no judge, pixel-8 / android-15"
    assert unknown.setup_text is None  # nothing recorded: nothing to show
    assert repeats(groups[pixel])["warnings"] == ["skills_differs"]  # pooled, but the skills differ


# --- comparing sets of runs --------------------------------------------------------------------

def _random_run(run_id, rng, tasks=15, k=3):
    outcomes = {f"t{i:02d}": [rng.choice([True, True, False, None]) for _ in range(rng.randint(1, 4))]
                for i in range(tasks) if rng.random() > 0.1}
    quality = {t: rng.random() for t in outcomes if rng.random() > 0.3}
    return run(run_id, outcomes, k=k, quality=quality, cost={t: rng.random() for t in outcomes})


@pytest.mark.parametrize("seed", range(5))
def test_one_run_per_side_equals_the_positional_comparison(seed):
    rng = random.Random(seed)
    b, c = _random_run("b", rng), _random_run("c", rng)
    repeated, positional = compare_sets([b], [c]), compare(b.side, c.side)
    assert repeated["schema_version"] == 2 and repeated["mode"] == "repeated"
    assert repeated["baseline"] == {"runs": ["b"], "suite": "suite", "metrics_k": 3}
    assert repeated["tasks"] == positional["tasks"] and repeated["k"] == positional["k"]
    for name in ("first_attempt", "pass_at_k", "pass_pow_k", "task_success", "quality"):
        r, p = repeated[name], positional[name]
        mean_keys = ("baseline_mean", "candidate_mean") if name in ("task_success", "quality") else (
            "baseline_rate", "candidate_rate")
        assert (r["n"], r["baseline_mean"], r["candidate_mean"]) == (p["n"], p[mean_keys[0]], p[mean_keys[1]]), name
        assert (r["delta"], r["se"], r["ci95"], r["mde80"]) == (p["delta"], p["se"], p["ci95"], p["mde80"]), name
        assert list(r) == ["n", "baseline_mean", "candidate_mean", "delta", "se", "ci95", "mde80", "verdict",
                           *(["planning"] if name in ("first_attempt", "task_success") else [])]
    for field in ("task_wall_ms", "total_tokens", "cost_usd"):
        assert repeated["resources"][field] == positional["resources"][field]
    assert repeated["regressions"] == positional["regressions"] and repeated["improvements"] == positional["improvements"]


def test_two_sets_pooled_by_hand_with_the_gate():
    """Baseline: two runs, tasks a, b, c. Candidate: two runs, tasks a, b, d.
    first_attempt pooled: baseline a 1, b 1/2, c 1; candidate a 0 (0, 0), b 1 (1, 1), d 1.
    Paired a, b: d_i = -1, +1/2: delta -1/4; se = sqrt(((-3/4)^2 + (3/4)^2) / 1 / 2) = 3/4."""
    base = [run("b1", {"a": [True], "b": [True], "c": [True]}), run("b2", {"a": [True], "b": [False], "c": [True]})]
    cand = [run("c1", {"a": [False], "b": [True], "d": [True]}, model="m2"),
            run("c2", {"a": [False], "b": [True], "d": [True]}, model="m2")]
    result = compare_sets(base, cand)
    assert result["tasks"] == {"paired": 2, "only_baseline": ["c"], "only_candidate": ["d"]}
    fa = result["first_attempt"]
    assert (fa["n"], fa["baseline_mean"], fa["candidate_mean"], fa["delta"]) == (2, 0.75, 0.5, -0.25)
    assert fa["se"] == approx(0.75) and fa["ci95"]["lower"] == approx(-0.25 - Z_95 * 0.75)
    assert fa["verdict"] == "no_significant_change"
    assert result["regressions"] == ["a"] and result["improvements"] == []  # b's baseline pooled value is 1/2
    assert result["warnings"] == [] and result["gate"] == {"result": "pass", "max_drop": None, "reasons": []}
    with_margin = compare_sets(base, cand, max_drop=0.1)
    assert with_margin["gate"] == {"result": "inconclusive", "max_drop": 0.1,
                                   "reasons": ["first_attempt_below_margin", "task_success_below_margin"]}


def test_set_warnings_in_their_order_and_a_regression_fails_the_gate():
    tasks = [f"t{i}" for i in range(10)]
    base = [run("b1", {t: [True] for t in tasks}, suite="x", k=1), run("b2", {t: [True] for t in tasks}, sha="s2", k=1)]
    cand = [run("c1", {t: [False] for t in tasks}, k=2, model="m2"), run("c2", {t: [False] for t in tasks}, k=2)]
    result = compare_sets(base, cand)
    assert result["warnings"] == ["suite_differs", "metrics_k_differs", "baseline_systems_differ",
                                  "candidate_systems_differ"]
    # the setup's warnings (any two runs of either side) take comparison.md's places
    judged = [run("b1", {t: [True] for t in tasks}, setup=ON_PIXEL), run("b2", {t: [True] for t in tasks}, setup=ON_PIXEL)]
    other = [run("c1", {t: [True] for t in tasks}, k=2, setup={**ON_EMULATOR, "suite": {"version": 8}}),
             run("c2", {t: [True] for t in tasks}, k=2, model="m2", setup={**UNJUDGED, "active_skills": []})]
    assert compare_sets(judged, other)["warnings"] == [
        "suite_version_differs", "metrics_k_differs", "judge_differs", "platform_differs", "skills_differs",
        "candidate_systems_differ"]
    assert SET_WARNINGS == ("suite_differs", "suite_version_differs", "metrics_k_differs", "judge_differs",
                            "platform_differs", "skills_differs", "baseline_systems_differ",
                            "candidate_systems_differ", "no_paired_tasks")
    assert result["first_attempt"]["verdict"] == "regression"  # every task 1 -> 0: se 0, interval [-1, -1]
    assert result["gate"] == {"result": "fail", "max_drop": None,
                              "reasons": ["first_attempt_regression", "task_success_regression"]}
    none = compare_sets([run("b", {"a": [True]})], [run("c", {"z": [True]})])
    assert none["warnings"] == ["no_paired_tasks"] and none["first_attempt"]["n"] == 0
    # disjoint task sets: the same gate function as the single form, inconclusive
    assert none["gate"] == {"result": "inconclusive", "max_drop": None,
                            "reasons": ["first_attempt_no_evidence", "task_success_no_evidence"]}
    assert list(SET_WARNINGS)[-1] == "no_paired_tasks"
    with pytest.raises(ValueError):
        compare_sets([], cand)


def test_a_slug_keeps_ascii_letters_digits_dots_and_underscores_and_one_dash_for_each_other_run():
    from bench_pipeline.system_folders import suite_slug

    def readable(name):
        return suite_slug(name).rsplit("-", 1)[0]

    assert readable("é–model--x.") == "model-x"  # non-ASCII letters and dashes: one "-"; the ends stripped
    assert readable(" a . b ") == "a-.-b"
    assert readable("\u0661\u0662") == "unknown"  # digits, but not ASCII ones: nothing left
    assert readable("Suite_v2.1") == "Suite_v2.1"
    assert readable("x" * 50) == "x" * 40


def test_slugs_are_readable_safe_and_distinct():
    from bench_pipeline.repeats import System
    from bench_pipeline.system_folders import suite_slug, system_slug, system_slugs

    slug = system_slug(System("android-core", "agent/model large", "4f2c9e1"))
    assert slug.startswith("android-core--agent-model-large--4f2c9e1-") and len(slug.rsplit("-", 1)[1]) == 8
    assert system_slug(System("a b", "m", "s")) != system_slug(System("a/b", "m", "s"))  # alike, not the same
    lone = system_slug(System("s", None, "x", alone="run-7"))
    assert lone.startswith("s--unknown--x--run-7-")
    assert suite_slug("../etc") .startswith("etc-") and "/" not in suite_slug("a/../b")
    assert suite_slug(None).startswith("unknown-")
    for s in (suite_slug("..."), system_slug(System("..", "..", ".."))):
        assert s not in (".", "..") and "/" not in s and not s.startswith(".")
    # the setup is part of a folder's name where it tells two systems apart, and only there
    judged = System("s", "m", "x", setup=(True, "judge-a", "pixel-8", "android-15"))
    unjudged = System("s", "m", "x", setup=(False, None, "pixel-8", "android-15"))
    other = System("s", "m2", "x", setup=(True, "judge-a", "pixel-8", "android-15"))
    slugs = system_slugs({s: system_slug(s) for s in (judged, unjudged, other)})
    assert slugs[judged].startswith("s--m--x--judge-a--pixel-8.android-15-")
    assert slugs[unjudged].startswith("s--m--x--no-judge--pixel-8.android-15-") and slugs[unjudged] != slugs[judged]
    assert slugs[other] == system_slug(other) == system_slug(System("s", "m2", "x"))  # measured one way: as before
    assert system_slugs({judged: system_slug(judged)}) == {judged: system_slug(System("s", "m", "x"))}
    # any key names a system; the folder with setup is made only where it is needed
    made = []
    assert system_slugs({"a": "base-1", "b": "base-1", "c": "base-2"},
                        lambda key: made.append(key) or f"full-{key}") == {"a": "full-a", "b": "full-b", "c": "base-2"}
    assert made == ["a", "b"]


def test_changes_that_cancel_give_a_delta_of_exactly_0_and_no_observed_change_to_plan_for():
    """Baseline two runs, candidate three: first attempt pooled a 1/2 -> 1/3 and b 1/2 -> 2/3.
    The changes -1/6 and +1/6 cancel: delta is exactly 0 (in floats 1/3 - 1/2 + 2/3 - 1/2 is
    -5.6e-17), and planning lists no "observed change" (planning.md: only for a delta other
    than 0), in comparison.json as in the words."""
    base = [run("b1", {"a": [True], "b": [True]}), run("b2", {"a": [False], "b": [False]})]
    cand = [run("c1", {"a": [True], "b": [True]}), run("c2", {"a": [False], "b": [True]}),
            run("c3", {"a": [False], "b": [False]})]
    assert (1 / 3 - 1 / 2) + (2 / 3 - 1 / 2) != 0  # what floats alone would give
    fa = compare_sets(base, cand)["first_attempt"]
    assert (fa["n"], fa["baseline_mean"], fa["candidate_mean"], fa["delta"]) == (2, 0.5, 0.5, 0.0)
    assert fa["ci95"]["lower"] == -fa["ci95"]["upper"]
    assert not [e for e in fa["planning"]["runs_needed"] if e.get("observed")]
    result = compare_sets(base, cand)
    words = render_set_comparison_md(result, compare_sets(base[:1], cand[:1]), base, cand)
    assert "observed change of" not in words and "-0.0 pp" not in words and "+0.0 pp" not in words
