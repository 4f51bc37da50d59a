"""The release decision in words (reports.compared): every sentence true of the numbers beside
it. Sides are built in memory; comparison.md is rendered from them as run_stages does."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from bench_pipeline.comparison import Comparison, compare
from bench_pipeline.comparison_sides import make_side
from bench_pipeline.comparison_left_out import left_out
from bench_pipeline.identity import RunIdentity
from bench_pipeline.reports import render_comparison_md
from bench_pipeline.reports.compared import agreement_bound, comparison_view, identity_notes
from bench_pipeline.reports.change_format import NO_VARIATION, no_variation
from bench_pipeline.reports.gate_words import gate_statement
from bench_pipeline.setup import run_setup


def side(outcomes: dict[str, list], *, quality: dict[str, list] | None = None, run_id="r", k=2,
         identity: RunIdentity | None = None):
    """{task: [True / False / None (ineligible) / "missing", ...]} by attempt number; quality
    scores per task and attempt when given."""
    rows, line = [], 0
    for task, results in outcomes.items():
        for attempt, outcome in enumerate(results, start=1):
            if outcome == "missing":
                continue
            line += 1
            q = (quality or {}).get(task, [None] * len(results))[attempt - 1]
            rows.append({"task_id": task, "attempt": attempt, "line": line,
                         "success": outcome is True, "agent_eligible": outcome is not None,
                         "quality_score": q, "task_wall_ms": None, "total_tokens": None, "cost_usd": None})
    return make_side(rows, run_id=run_id, suite="s", metrics_k=k, identity=identity)


def view(baseline, candidate, max_drop=None):
    return comparison_view(Comparison(compare(baseline, candidate, max_drop), baseline, candidate))


def rows_by_name(v):
    return {r["name"]: r for r in v["rows"]}


# --- a significant verdict is never followed by "says little" --------------------------------

def test_a_significant_quality_regression_is_not_called_inconclusive():
    """Twelve tasks whose quality drops by about a quarter, with spread: the interval excludes
    zero, the verdict is a regression, and the reading says so without the MDE sentence."""
    drops = [0.5, 0.1, 0.4, 0.0, 0.3, 0.2, 0.6, 0.1, 0.3, 0.2, 0.4, 0.1]
    tasks = [f"t{i:02d}" for i in range(12)]
    b = side({t: [True] for t in tasks}, quality={t: [1.0] for t in tasks}, k=1)
    c = side({t: [True] for t in tasks}, quality={t: [1.0 - d] for t, d in zip(tasks, drops)}, k=1)
    v = view(b, c)
    q = rows_by_name(v)["quality"]
    assert q["verdict"] == "regression"
    assert "excludes zero on the worse side" in q["reading"] and "a regression" in q["reading"]
    assert "says little" not in q["reading"] and "smallest true change" not in q["reading"]


def test_only_a_result_that_is_not_significant_gets_the_mde_sentence():
    tasks = [f"t{i:02d}" for i in range(10)]
    lost = side({t: [True, True] for t in tasks}), side({t: [t != "t00", True] for t in tasks})
    r = rows_by_name(view(*lost))["first_attempt"]
    assert r["verdict"] == "no_significant_change"
    assert re.search(r"The smallest true change this comparison detects with 80% power is \d+\.\d pp: a true change "
                     r"smaller than that could easily go unseen", r["reading"])
    significant = side({t: [True, True] for t in tasks}), side({t: [False, True] for t in tasks})
    for r in view(*significant)["rows"]:
        if r["verdict"] in ("regression", "improvement"):
            assert "says little" not in r["reading"] and "could easily go unseen" not in r["reading"], r["name"]


# --- a section without variation never shows a bare zero interval or MDE -----------------------

def test_identical_outcomes_show_no_variation_instead_of_a_zero_interval():
    """pass@k over three tasks that succeed in both runs: comparison.json keeps se 0 and the
    interval [0, 0] (comparison.md), the words and table say there is no variation."""
    b = side({"a": [True, True], "b": [False, True], "c": [True, False]})
    c = side({"a": [True, True], "b": [True, True], "c": [True, True]})
    result = compare(b, c)
    assert result["pass_at_k"]["se"] == 0.0 and result["pass_at_k"]["ci95"] == {"lower": 0.0, "upper": 0.0}
    r = rows_by_name(view(b, c))["pass_at_k"]
    assert r["no_variation"] and r["interval"] == NO_VARIATION and r["mde"] == NO_VARIATION
    assert "no variation to estimate an interval or a detectable change from" in r["reading"]
    assert "3 identical outcomes are not certainty" in r["reading"]
    assert "could still be as high as 63.2%" in r["reading"]  # 1 - 0.05^(1/3)
    assert agreement_bound(3) == pytest.approx(1 - 0.05 ** (1 / 3))
    md = render_comparison_md(Comparison(result, b, c))
    assert "[0.0 pp, 0.0 pp]" not in md and "| 0.0 pp | 1.000 |" not in md
    assert "| pass@k (k=2) | 3 of 3 | 100.0% | 100.0% | 0.0 pp | n/a (no variation) | n/a (no variation) | 1.000 |" in md


def test_every_task_changing_the_same_way_is_no_variation_too():
    """Ten tasks each lose half their task success: se 0, the interval [-0.5, -0.5] makes the
    verdict a regression by comparison.md's rule, and the words say what it rests on."""
    tasks = [f"t{i}" for i in range(10)]
    b, c = side({t: [True, True] for t in tasks}), side({t: [False, True] for t in tasks})
    r = rows_by_name(view(b, c))["task_success"]
    assert r["verdict"] == "regression" and r["interval"] == NO_VARIATION
    assert "Every one of the 10 paired tasks changed by exactly -50.0 pp" in r["reading"]
    assert "it rests on 10 tasks without spread" in r["reading"]
    fa = rows_by_name(view(b, c))["first_attempt"]
    assert fa["verdict"] == "regression" and fa["interval"] == NO_VARIATION
    assert "the verdict rests on the test alone" in fa["reading"]
    assert no_variation({"n": 1, "se": None}) is False and no_variation({"n": 2, "se": 0.0}) is True


# --- the gate without a margin always states the undetectable regression size -----------------

def test_a_pass_without_a_margin_says_how_large_a_regression_could_go_unseen():
    tasks = [f"t{i}" for i in range(9)]
    b = side({t: [True, True] for t in tasks})
    c = side({t: [t not in ("t0", "t1"), True] if t != "t2" else [False, False] for t in tasks})
    result = compare(b, c)
    assert result["gate"]["result"] == "pass"
    fa_mde, ts_mde = result["first_attempt"]["mde80"], result["task_success"]["mde80"]
    text = gate_statement(result)
    assert text.startswith("pass: no significant regression of first attempt or task success was found, "
                           "which is not evidence that there is none")
    assert f"a true drop in first attempt smaller than {fa_mde * 100:.1f} pp (9 paired tasks) could have gone unseen" in text
    assert f"a true drop in task success smaller than {ts_mde * 100:.1f} pp (9 paired tasks) could have gone unseen" in text
    assert "--max-drop X" in text
    short = gate_statement(result, short=True)
    assert "\n" not in short and f"{fa_mde * 100:.1f} pp" in short and "--max-drop" in short
    md = render_comparison_md(Comparison(result, b, c))
    assert md.count("could have gone unseen") == 2 and "**Release gate: pass**: no significant regression" in md


def test_a_pass_without_a_margin_on_too_few_or_identical_tasks_says_so():
    one = compare(side({"a": [True]}, k=1), side({"a": [True]}, k=1))
    assert "first attempt has 1 paired task, too few to estimate any drop, so any drop could have gone unseen" in \
        gate_statement(one)
    same = compare(side({"a": [True], "b": [False]}, k=1), side({"a": [True], "b": [False]}, k=1))
    assert ("first attempt shows no variation among its 2 paired tasks, so the size of a drop that could go unseen "
            "cannot be estimated") in gate_statement(same)
    none = compare(side({"a": [True]}, k=1), side({"b": [True]}, k=1))
    assert none["gate"]["result"] == "inconclusive"  # no paired task: never a pass
    assert gate_statement(none).startswith("inconclusive: the data cannot decide")
    assert "first attempt has no paired task" in gate_statement(none)
    assert "a drop of any size could have gone unseen" in gate_statement(none)


def test_a_pass_with_a_margin_and_a_fail_are_stated_as_such():
    tasks = [f"t{i:02d}" for i in range(20)]
    b = side({t: [True] for t in tasks}, k=1)
    c = side({t: [t != "t00"] for t in tasks}, k=1)
    assert gate_statement(compare(b, c, 0.2)) == (
        "pass: neither first attempt nor task success is a significant regression, and both 95% intervals stay "
        "above -20.0 pp, the allowed drop: the candidate is shown to be at most 20.0 pp worse on both.")
    below = compare(b, c, 0.1)
    mde = below["first_attempt"]["mde80"]
    assert gate_statement(below).startswith("inconclusive: the data cannot decide, so this is neither a pass nor a fail: "
                                            "the first attempt's 95% interval [-14.8 pp, +4.8 pp] (20 paired tasks) reaches "
                                            "below -10.0 pp, the allowed drop: a drop of up to 14.8 pp is not ruled out")
    assert f"a true drop smaller than {mde * 100:.1f} pp could go unseen" in gate_statement(below)
    assert "task success's 95% interval [-14.8 pp, +4.8 pp]" in gate_statement(below)
    one = compare(side({"a": [True]}, k=1), side({"a": [True]}, k=1), 0.05)
    assert one["gate"]["reasons"] == ["first_attempt_no_interval", "task_success_no_interval"]
    assert ("first attempt has no 95% interval (1 paired task: at least two are needed to estimate one), so the "
            "allowed drop of 5.0 pp cannot be shown to hold") in gate_statement(one)
    assert gate_statement(one).startswith("inconclusive: ")
    flat = compare(side({"a": [True], "b": [False]}, k=1), side({"a": [True], "b": [False]}, k=1), 0.05)
    assert flat["first_attempt"]["ci95"] == {"lower": 0.0, "upper": 0.0}  # above -0.05, but without variation
    assert "is shown to be" not in gate_statement(flat)
    assert "first attempt shows no variation among its 2 paired tasks" in gate_statement(flat)


# --- what is compared --------------------------------------------------------------------------

LARGE = RunIdentity(suite="s", suite_version="7", model_name="large", model_provider="acme", git_sha="abc1234",
                    dirty=False, started_at="2026-11-01T00:00:00Z")


def test_the_comparison_names_models_code_and_suite_versions_and_what_differs():
    small = RunIdentity(suite="s", suite_version="8", model_name="small", model_provider="acme", git_sha="def5678",
                        dirty=True)
    v = view(side({"a": [True]}, identity=LARGE), side({"a": [True]}, identity=small))
    rows = {r["label"]: r for r in v["identity"]}
    assert (rows["Model"]["baseline"], rows["Model"]["candidate"], rows["Model"]["differs"]) == (
        "large (acme)", "small (acme)", True)
    assert rows["Code version"]["candidate"] == "def5678 (dirty: uncommitted changes)" and rows["Code version"]["differs"]
    assert rows["Suite"]["baseline"] == "s version 7" and rows["Suite"]["differs"]
    notes = v["identity_notes"]
    assert notes[0] == ("The runs use different models (large (acme) and small (acme)): this compares two models, "
                        "not two builds of one agent.")
    assert "The suite versions differ (7 and 8): a task with the same id may not be the same task." in notes
    assert "The candidate's code had uncommitted changes: its git sha does not say exactly what ran." in notes
    md = render_comparison_md(Comparison(compare(side({"a": [True]}), side({"a": [True]})),
                                         side({"a": [True]}, identity=LARGE), side({"a": [True]}, identity=small)))
    assert "| Model (differs) | `large (acme)` | `small (acme)` |" in md
    assert md.index("## What is compared") < md.index("## Verdicts")


def test_one_model_two_builds_and_one_system_and_unknowns():
    build = RunIdentity(suite="s", model_name="large", model_provider="acme", git_sha="fff0000", dirty=False)
    assert identity_notes(LARGE, build)[0] == ("The code versions differ (abc1234 (clean) and fff0000 (clean)): this "
                                               "compares two builds of the agent on one model.")
    assert identity_notes(LARGE, LARGE) == [
        "Same model, code version and suite version: two runs of one system, so the differences below are run-to-run "
        "variation plus whatever the manifests do not record."]
    unknown = identity_notes(LARGE, RunIdentity(suite="s"))
    assert unknown == ["Unknown: the candidate's model, the candidate's code version (not recorded in manifest.json, "
                       "or the run folder was not found), so what differs between the runs is not fully known."]


def test_the_top_names_each_runs_setup_and_states_every_difference_in_words():
    """comparison.md "The measurement setup": judge, platform and active skills beside model
    and code; a difference in any of them is said in words (and flagged) at the top, and two
    runs of one agent on different setups are not called two runs of one system."""
    pixel = run_setup({"judge": {"enabled": True, "model": "judge-a"}, "active_skills": ["calendar", "web"],
                       "platform": {"device": "pixel-8", "os": "android-15"}, "suite": {"version": 7}})
    emulator = run_setup({"judge": {"enabled": False}, "active_skills": ["web", "memory"],
                          "platform": {"device": "emulator", "os": "android-15"}, "suite": {"version": "7"}})
    b, c = replace(LARGE, setup=pixel), replace(LARGE, setup=emulator)
    result = compare(side({"a": [True]}, identity=b), side({"a": [True]}, identity=c))
    assert result["warnings"] == ["judge_differs", "platform_differs", "skills_differs"]  # 7 and "7" are equal
    v = comparison_view(Comparison(result, side({"a": [True]}, identity=b), side({"a": [True]}, identity=c)))
    rows = {r["label"]: (r["baseline"], r["candidate"], r["differs"]) for r in v["identity"]}
    assert rows["Judge"] == ("judge judge-a", "no judge", True)
    assert rows["Platform"] == ("pixel-8 / android-15", "emulator / android-15", True)
    assert rows["Active skills"] == ("calendar, web", "memory, web", True)
    assert rows["Suite"] == ("s version 7", "s version 7", False) and rows["Model"][2] is False
    assert v["identity_notes"] == [
        "The judges differ (judge judge-a for the baseline, no judge for the candidate): a comparison across judges "
        "mixes the change of judge with the agent's, since a task may pass or fail because it was judged differently.",
        "The platforms differ (pixel-8 / android-15 for the baseline, emulator / android-15 for the candidate): a "
        "comparison across devices or OS versions mixes that change with the agent's.",
        "The active skills differ (only the baseline's: calendar; only the candidate's: memory): the agent could use "
        "different skills, so part of any change may be the skills'."]
    assert [w["code"] for w in v["warnings"]] == result["warnings"]
    assert v["warnings"][0]["text"] == ("The runs were judged differently (judge judge-a and no judge): the "
                                        "comparison mixes the change of judge with the agent's.")
    md = render_comparison_md(Comparison(result, side({"a": [True]}, identity=b), side({"a": [True]}, identity=c)))
    assert "| Platform (differs) | `pixel-8 / android-15` | `emulator / android-15` |" in md
    assert md.index("The judges differ") < md.index("## Verdicts")  # at the top
    # the same setup, recorded or not, says nothing more than before
    same = comparison_view(Comparison(compare(side({"a": [True]}, identity=b), side({"a": [True]}, identity=b)),
                                      side({"a": [True]}, identity=b), side({"a": [True]}, identity=b)))
    assert same["identity_notes"][0].startswith("Same model, code version and suite version: two runs of one system")
    assert not any(r["differs"] for r in same["identity"])


# --- each section says which paired tasks it leaves out and why --------------------------------

def test_each_section_counts_the_paired_tasks_it_leaves_out_and_why():
    b = side({"a": [True, True], "b": [None, True], "c": [True, "missing"], "d": [None, None], "e": [True, True]},
             quality={"a": [0.5, 0.5], "b": [None, 1.0], "c": [None, None], "d": [None, None], "e": [1.0, 1.0]})
    c = side({"a": [True, True], "b": [True, True], "c": [True, True], "d": [None, None], "e": [None, True]},
             quality={"a": [1.0, 1.0], "b": [1.0, 1.0], "c": [1.0, 1.0], "d": [None, None], "e": [None, 1.0]})
    reasons = left_out(b, c, k=2)
    assert reasons["first_attempt"] == [("attempt_1_ineligible", "baseline", 1), ("attempt_1_ineligible", "both", 1),
                                        ("attempt_1_ineligible", "candidate", 1)]
    assert reasons["pass_at_k"] == [("attempts_missing_within_k", "baseline", 1), ("ineligible_within_k", "baseline", 1),
                                    ("ineligible_within_k", "both", 1), ("ineligible_within_k", "candidate", 1)]
    assert reasons["task_success"] == [("no_eligible_attempt", "both", 1)]
    assert reasons["quality"] == [("no_eligible_attempt", "both", 1), ("no_value", "baseline", 1)]
    result = compare(b, c)
    for name in ("first_attempt", "pass_at_k", "task_success", "quality"):
        assert result[name]["n"] + sum(n for *_, n in reasons[name]) == result["tasks"]["paired"] == 5
    r = rows_by_name(view(b, c))
    assert r["first_attempt"]["n_text"] == "2 of 5"
    assert ("Left out: 3 of the 5 paired tasks (1 because attempt 1 is not eligible in the baseline; 1 because "
            "attempt 1 is not eligible in both runs; 1 because attempt 1 is not eligible in the candidate).") \
        in r["first_attempt"]["reading"]
    assert ("Left out: 2 of the 5 paired tasks (1 because it has no eligible attempt in both runs; 1 because no "
            "eligible attempt has a quality score in the baseline).") in r["quality"]["reading"]
    assert "Left out" not in rows_by_name(view(side({"a": [True]}), side({"a": [True]})))["first_attempt"]["reading"]


def test_summary_md_states_a_pass_without_margin_as_comparison_md_does():
    from bench_pipeline.reports import render_summary_md
    from bench_pipeline_tests.fixtures_reports import main_run

    tasks = [f"t{i}" for i in range(9)]
    b = side({t: [True, True] for t in tasks})
    c = side({t: [t != "t0", True] for t in tasks})
    comparison = Comparison(compare(b, c), b, c)
    summary = render_summary_md(*main_run(), comparison=comparison)
    part = summary[summary.index("## Compared with"):]
    assert "**Release gate: pass**: no significant regression of first attempt or task success was found, which " \
           "is not evidence that there is none" in part
    assert part.count("could have gone unseen") == 2 and "--max-drop X" in part
    assert "| pass@k (k=2) | 9 of 9 | 100.0% | 100.0% | 0.0 pp | n/a (no variation) | n/a (no variation) |" in part
    assert "says little" not in part.split("**First attempt (pass@1).**")[0]  # no verdict line says it


def test_a_gate_without_evidence_names_no_side_and_each_sections_own_cause():
    """An empty baseline against a good candidate: the words do not blame the candidate, and
    task success is not said to lack an eligible first attempt."""
    from bench_pipeline.reports.gate_words import gate_reason_words

    empty, good = side({}, run_id="b"), side({"t": [True, True], "u": [False, True]}, run_id="c")
    result = compare(empty, good)
    assert result["gate"]["reasons"] == ["first_attempt_no_evidence", "task_success_no_evidence"]
    first = gate_reason_words(result, "first_attempt_no_evidence")
    success = gate_reason_words(result, "task_success_no_evidence")
    assert first.startswith("the first attempt has no paired task (no task is in this section in both runs: "
                            "a run without a usable row or with no eligible first attempt, or task sets")
    assert "with no task with an eligible attempt" in success and "first attempt" not in success
    assert "candidate" not in first + success
