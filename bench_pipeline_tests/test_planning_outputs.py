"""Planning in the documents (planning.md): repeats.json's variance split, comparison.json's
tasks needed (both forms) and the repeated form's runs per side, by hand through the product,
and ``--detect`` through the command line, its bad values refused (exit 2)."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import pytest

from bench_pipeline import cli
from bench_pipeline.comparison import compare
from bench_pipeline.planning import RUNS, TARGETS, ZP, tasks_needed
from bench_pipeline.repeats import compare_sets, per_run_values, pooled_values, repeats

from .fixtures_planning import DIFFERS_BASELINE, DIFFERS_CANDIDATE, THREE, run
from .run_builder import make_run, row


def approx(value):
    return pytest.approx(value, rel=1e-12, abs=1e-15)


def test_per_run_values_are_what_the_pooled_values_average():
    values = per_run_values(THREE, "task_success", 1)
    assert values == {"a": [1.0, 1.0, 1.0], "b": [0.0, 0.0, 0.0], "c": [1.0, 0.5, 0.5], "d": [1.0, 1.0, 1.0]}
    pooled = pooled_values(THREE, "task_success", 1)
    assert pooled == {t: Fraction(sum(v), len(v)) for t, v in values.items()}  # exact means (stats.exact_mean)
    assert pooled["c"] == Fraction(2, 3) and float(pooled["c"]) == math.fsum([1.0, 0.5, 0.5]) / 3
    assert per_run_values(THREE, "first_attempt", 1)["c"] == [1.0, 0.0, 1.0]


def test_repeats_json_planning_of_three_runs_with_one_flaky_task_by_hand():
    doc = repeats(THREE)
    assert list(doc)[-1] == "planning" and list(doc["planning"]) == ["first_attempt", "task_success"]
    fa = doc["planning"]["first_attempt"]
    assert list(fa) == ["within_task_var", "between_task_var", "icc", "mde80_by_runs", "runs_needed", "n"]
    # s_i^2: c (1, 0, 1): mean 2/3, (1/9 + 4/9 + 1/9) / 2 = 1/3; the others 0: within = (1/3) / 4 = 1/12.
    # x = 1, 0, 2/3, 1: S^2 = (1/9 + 4/9 + 0 + 1/9) / 3 = 2/9; between = 2/9 - (1/12)(1/3) = 7/36;
    # icc = 7/36 / (7/36 + 3/36) = 0.7
    assert fa["within_task_var"] == approx(1 / 12) and fa["between_task_var"] == approx(7 / 36)
    assert fa["icc"] == approx(0.7) and fa["n"] == 4
    # mde80(R) = zp * sqrt(2 (1/12) / (4 R)) = zp / sqrt(24 R); R = 1: 0.5719
    assert [e["runs_per_side"] for e in fa["mde80_by_runs"]] == list(RUNS)
    assert [e["mde80"] for e in fa["mde80_by_runs"]] == [approx(ZP / math.sqrt(24 * r)) for r in RUNS]
    # runs(d) = ceil(zp^2 / (24 d^2)), zp^2 = 7.84888: 817.59 -> 818, 130.81 -> 131, 32.70 -> 33
    assert fa["runs_needed"] == [{"change": 0.02, "runs_per_side": 818}, {"change": 0.05, "runs_per_side": 131},
                                 {"change": 0.10, "runs_per_side": 33}]

    ts = doc["planning"]["task_success"]
    # c's per-run task success 1, 1/2, 1/2: mean 2/3, s^2 = (1/9 + 1/36 + 1/36) / 2 = 1/12;
    # within = (1/12) / 4 = 1/48. The pooled values are those of first attempt: S^2 = 2/9;
    # between = 2/9 - (1/48)(1/3) = 32/144 - 1/144 = 31/144; icc = 31 / (31 + 3) = 31/34
    assert ts["within_task_var"] == approx(1 / 48) and ts["between_task_var"] == approx(31 / 144)
    assert ts["icc"] == approx(31 / 34)
    assert ts["mde80_by_runs"][0] == {"runs_per_side": 1, "mde80": approx(ZP / math.sqrt(96))}
    # runs(d) = ceil(zp^2 / (96 d^2)): 204.40 -> 205, 32.70 -> 33, 8.18 -> 9
    assert [e["runs_per_side"] for e in ts["runs_needed"]] == [205, 33, 9]


def test_repeats_json_planning_of_one_run_is_null():
    split = repeats(THREE[:1])["planning"]["first_attempt"]
    assert split == {"within_task_var": None, "between_task_var": None, "icc": None,
                     "mde80_by_runs": [{"runs_per_side": r, "mde80": None} for r in RUNS],
                     "runs_needed": [{"change": d, "runs_per_side": None} for d in TARGETS], "n": 4}


def test_repeated_comparison_where_the_change_differs_by_task_needs_tasks_not_runs():
    result = compare_sets(DIFFERS_BASELINE, DIFFERS_CANDIDATE)
    fa = result["first_attempt"]
    assert list(fa) == ["n", "baseline_mean", "candidate_mean", "delta", "se", "ci95", "mde80", "verdict", "planning"]
    assert fa["delta"] == 0 and fa["verdict"] == "no_significant_change"
    plan = fa["planning"]
    assert list(plan) == ["tasks_needed", "within_task_var", "change_var", "runs_needed"]
    # wb: b alone varies, s^2 = 1/2, over 4 tasks 1/8; wc the same. d_i = -1, 0, 1, 0, delta 0:
    # s_d^2 = 2/3; change_var = 2/3 - (1/8)(1/2) - (1/8)(1/2) = 13/24
    assert plan["within_task_var"] == {"baseline": approx(1 / 8), "candidate": approx(1 / 8)}
    assert plan["change_var"] == approx(13 / 24)
    # L = 4 (d / zp)^2 <= 4 / 7.85 = 0.51 < 13/24 for every d <= 1: no number of runs gets there;
    # delta = 0: no observed entry
    assert plan["runs_needed"] == [{"change": d, "runs_per_side": None} for d in TARGETS]
    # se = sqrt((2/3) / 4): T = ceil(4 zp^2 / 6 / d^2) = 13082, 2094, 524
    assert fa["mde80"] == approx(ZP * math.sqrt(1 / 6))
    assert plan["tasks_needed"] == [{"change": 0.02, "tasks": 13082}, {"change": 0.05, "tasks": 2094},
                                    {"change": 0.10, "tasks": 524}]
    # the other sections carry no planning, and the rest of the document is unchanged
    assert all("planning" not in result[name] for name in ("pass_at_k", "pass_pow_k", "quality"))
    assert all("planning" not in s for s in result["resources"].values())


def test_repeated_comparison_with_an_observed_change_and_targets_given():
    baseline = [run("b1", {"t1": [True], "t2": [True], "t3": [True], "t4": [False], "t5": [True], "t6": [False]}),
                run("b2", {"t1": [True], "t2": [True], "t3": [False], "t4": [False], "t5": [True], "t6": [False]})]
    candidate = [run("c1", {"t1": [True], "t2": [False], "t3": [False], "t4": [False], "t5": [True], "t6": [False]}),
                 run("c2", {"t1": [True], "t2": [False], "t3": [False], "t4": [False], "t5": [False], "t6": [False]})]
    plan = compare_sets(baseline, candidate, targets=(0.5,))["first_attempt"]["planning"]
    # planning.md section 3 by hand (test_planning's six tasks): wb = wc = 1/12, change_var = 1/12,
    # delta = -1/3; d = 0.5: R = ceil((1/6) / (1.5 / zp^2 - 1/12)) = 2; |delta|: 104
    assert plan["runs_needed"] == [{"change": 0.5, "runs_per_side": 2},
                                   {"change": approx(1 / 3), "runs_per_side": 104, "observed": True}]
    assert plan["tasks_needed"] == [{"change": 0.5, "tasks": 6}]  # ceil(zp^2 / (6 * 0.25)) = ceil(5.23)


def test_single_comparison_tasks_needed_and_targets():
    b, c = DIFFERS_BASELINE[0].side, DIFFERS_CANDIDATE[0].side
    result = compare(b, c)
    # first attempt b = 1 1 0 1, c = 0 1 1 1: d = -1, 0, 1, 0; se = sqrt((2/3) / 4), as above
    fa = result["first_attempt"]
    assert list(fa)[-2:] == ["verdict", "planning"] and list(fa["planning"]) == ["tasks_needed"]
    assert fa["planning"]["tasks_needed"] == [{"change": 0.02, "tasks": 13082}, {"change": 0.05, "tasks": 2094},
                                              {"change": 0.10, "tasks": 524}]
    assert result["task_success"]["planning"] == {"tasks_needed": tasks_needed(4, result["task_success"]["mde80"])}
    given = compare(b, c, targets=(0.25, 0.01))["first_attempt"]["planning"]["tasks_needed"]
    # in the order given; 4 zp^2 / 6 / d^2: 0.25 -> 83.72 -> 84; 0.01 -> 52325.86 -> 52326
    assert given == [{"change": 0.25, "tasks": 84}, {"change": 0.01, "tasks": 52326}]
    assert list(result) == ["schema_version", "baseline", "candidate", "k", "warnings", "tasks", "first_attempt",
                            "pass_at_k", "pass_pow_k", "task_success", "quality", "resources", "regressions",
                            "improvements", "gate"]


# --- the command line --------------------------------------------------------------------------------

MANIFEST = {"status": "completed", "metrics_k": 1, "model": {"name": "m", "provider": "p"},
            "code": {"git_sha": "abc1234", "dirty": False}}


def run_folders(root, per_run, *, prefix="r", model="m"):
    """One run folder per {task: status}; each row names its run's episode (no two runs are
    byte-identical)."""
    manifest = {**MANIFEST, "model": {"name": model, "provider": "p"}}
    return [make_run(root, [row(t, 1, s, episode_id=f"{prefix}{i}-{t}") for t, s in outcomes.items()],
                     run_id=f"{prefix}{i}", manifest={**manifest, "started_at": f"2026-11-0{i}T00:00:00Z"})
            for i, outcomes in enumerate(per_run, start=1)]


FLAKY_C = [{"a": "passed", "b": "failed", "c": "passed", "d": "passed"},
           {"a": "passed", "b": "failed", "c": "failed", "d": "passed"},
           {"a": "passed", "b": "failed", "c": "passed", "d": "passed"}]


def test_repeats_command_plans_for_the_changes_given(tmp_path, capsys):
    folders = run_folders(tmp_path / "runs", FLAKY_C)
    out = tmp_path / "out"
    code = cli.main(["repeats", *map(str, folders), "--detect", "0.05", "--detect", "0.25", "--output-dir", str(out)])
    assert code == 0
    fa = json.loads((out / "repeats.json").read_text())["planning"]["first_attempt"]
    # within = 1/12 on 4 tasks (the flaky task c): ceil(zp^2 / (24 d^2)) = 131 for 0.05, 6 for 0.25
    assert fa["runs_needed"] == [{"change": 0.05, "runs_per_side": 131}, {"change": 0.25, "runs_per_side": 6}]
    md = (out / "repeats.md").read_text()
    assert "Runs per side needed to detect 5 pp: 131; 25 pp: 6." in md



def test_a_change_near_0_is_planned_for_not_a_crash(tmp_path, capsys):
    folders = run_folders(tmp_path / "runs", FLAKY_C)
    out = tmp_path / "out"
    assert cli.main(["repeats", *map(str, folders), "--detect", "1e-160", "--output-dir", str(out)]) == 0
    fa = json.loads((out / "repeats.json").read_text())["planning"]["first_attempt"]
    assert fa["runs_needed"] == [{"change": 1e-160, "runs_per_side": None}]
    assert "Runs per side needed to detect 1e-158 pp: more than can be counted." in (out / "repeats.md").read_text()
    code = cli.main(["compare", str(folders[0]), str(folders[1]), "--detect", "1e-160", "--output-dir", str(tmp_path / "c")])
    result = json.loads((tmp_path / "c" / "comparison.json").read_text())
    assert code == {"pass": 0, "fail": 1, "inconclusive": 3}[result["gate"]["result"]]

def test_both_forms_of_compare_plan_for_the_changes_given(tmp_path, capsys):
    base = run_folders(tmp_path / "b", FLAKY_C[:2], prefix="b")
    cand = run_folders(tmp_path / "c", [{"a": "failed", "b": "passed", "c": "passed", "d": "passed"},
                                        {"a": "failed", "b": "failed", "c": "passed", "d": "failed"}],
                       prefix="c", model="n")
    out = tmp_path / "one"
    assert cli.main(["compare", str(base[0]), str(cand[0]), "--detect", "0.1", "--output-dir", str(out)]) == 0
    single = json.loads((out / "comparison.json").read_text())
    fa = single["first_attempt"]
    assert fa["planning"] == {"tasks_needed": tasks_needed(fa["n"], fa["mde80"], [0.1])}
    assert fa["planning"]["tasks_needed"][0]["tasks"] is not None
    # the candidate's own comparison.json (beside its reports) plans for the same changes
    own = json.loads((out / "candidate" / "comparison.json").read_text())
    assert own["first_attempt"]["planning"] == fa["planning"]
    # a result that is not significant: comparison.md says it in words, summary.md and report.html in one sentence
    tasks = f"{fa['planning']['tasks_needed'][0]['tasks']:,}"
    assert fa["verdict"] == "no_significant_change"
    assert f"Tasks like these would detect 10 pp with {tasks} (`tasks_needed`" in (out / "comparison.md").read_text()
    sentence = f"first attempt would need about {tasks} paired tasks to detect 10 pp (it has {fa['n']})"
    assert sentence in (out / "candidate" / "summary.md").read_text()
    assert sentence in (out / "candidate" / "report.html").read_text()
    assert "What would have detected a change" not in (out / "candidate" / "summary.md").read_text()

    sets = tmp_path / "sets"
    args = ["compare", *(f"--baseline={f}" for f in base), *(f"--candidate={f}" for f in cand)]
    assert cli.main([*args, "--detect", "0.5", "--output-dir", str(sets)]) == 0
    plan = json.loads((sets / "comparison.json").read_text())["first_attempt"]["planning"]
    assert [e["change"] for e in plan["tasks_needed"]] == [0.5]
    assert [e["change"] for e in plan["runs_needed"]][0] == 0.5 and plan["runs_needed"][-1]["observed"] is True


@pytest.mark.parametrize("value", ["abc", "0", "-0.05", "5", "1.5", "nan", "inf", ""])
def test_a_bad_detect_is_refused_before_anything_is_processed(tmp_path, capsys, value):
    folders = run_folders(tmp_path / "runs", FLAKY_C[:2])
    commands = {
        "repeats": ["repeats", *map(str, folders)],
        "compare": ["compare", str(folders[0]), str(folders[1])],
        "sets": ["compare", f"--baseline={folders[0]}", f"--candidate={folders[1]}"],
    }
    for name, command in commands.items():
        capsys.readouterr()
        out = tmp_path / name
        assert cli.main([*command, "--detect", "0.05", f"--detect={value}", "--output-dir", str(out)]) == 2, name
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: --detect ") and repr(value) in err[0], (name, err)
        assert not out.exists(), name
