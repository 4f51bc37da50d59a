"""Planning in words (reports/planning_text.py): repeats.md, comparison.md in both forms and
the one sentence of summary.md and report.html, rendered from documents in memory."""

from __future__ import annotations

import math

from bench_pipeline.comparison import Comparison, compare
from bench_pipeline.planning import ZP
from bench_pipeline.repeats import compare_sets, repeats
from bench_pipeline.reports import render_comparison_md
from bench_pipeline.reports.planning_text import (
    comparison_planning,
    repeats_planning,
    runs_per_side_for,
    set_planning,
    suite_plan,
    target_text,
)
from bench_pipeline.reports.repeated import render_repeats_md, render_set_comparison_md
from bench_pipeline_tests.fixtures_planning import DIFFERS_BASELINE, DIFFERS_CANDIDATE, THREE, run


def test_target_text_is_as_exact_as_the_change_given():
    assert [target_text(d) for d in (0.02, 0.05, 0.10, 0.025, 0.001, 1.0, 0.07)] == [
        "2 pp", "5 pp", "10 pp", "2.5 pp", "0.1 pp", "100 pp", "7 pp"]
    assert target_text(1e-160) == "1e-158 pp"  # a change near 0 is not written as 0 pp


def test_repeats_md_says_the_split_what_runs_detect_and_the_runs_needed():
    md = render_repeats_md(repeats(THREE), THREE)
    part = md[md.index("## Planning: how many runs per side a comparison needs"):md.index("## Stability")]
    assert "the same tasks, when the change is the same on every task: the most a comparison can hope for" in part
    first = part[part.index("**First attempt (pass@1).**"):part.index("**Task success")]
    # icc = 0.7 (test_planning_outputs): 70% the tasks' own, 30% run-to-run noise
    assert ("Of the variance of a task's value in one run, 70.0% is the tasks' own (they differ beyond run-to-run "
            "noise) and 30.0% is run-to-run noise (between-task variance 0.194, within-task variance 0.0833, over 4 "
            "tasks).") in first
    # mde80(R) = zp / sqrt(24 R): R = 1 0.5719, R = 3 0.3302, R = 10 0.1808
    r1, r3, r10 = (f"{ZP / math.sqrt(24 * r) * 100:.1f} pp" for r in (1, 3, 10))
    assert (f"With 1 run per side this system's comparisons detect {r1}, with 3 runs per side {r3}, with 10 runs per "
            f"side {r10}") in first
    assert "detect 57.2 pp, with 3 runs per side 33.0 pp, with 10 runs per side 18.1 pp" in first
    assert "Runs per side needed to detect 2 pp: 818; 5 pp: 131; 10 pp: 33." in first
    task_success = part[part.index("**Task success"):]
    # icc = 31/34 = 91.2%: tasks mostly pass or fail consistently
    assert "91.2% is the tasks' own" in task_success and "more runs buy little, more tasks buy more" in task_success
    assert "Runs per side needed to detect 2 pp: 205; 5 pp: 33; 10 pp: 9." in task_success


def test_repeats_md_of_one_run_says_to_run_the_suite_twice():
    md = render_repeats_md(repeats(THREE[:1]), THREE[:1])
    part = md[md.index("## Planning"):md.index("## Stability")]
    assert "No task is in two runs of this system, so the run-to-run noise cannot be measured" in part
    assert "Run the suite at least twice" in part and "pp" not in part


def test_repeats_md_without_planning_shows_none():
    doc = repeats(THREE)
    del doc["planning"]  # a repeats.json written before planning existed
    assert repeats_planning(doc) is None and "## Planning" not in render_repeats_md(doc, THREE)


def test_a_noise_of_zero_and_a_single_task_in_words():
    stable = [run(f"r{i}", {"a": [True], "b": [False]}) for i in (1, 2)]
    lines = repeats_planning(repeats(stable))["sections"][0]["lines"]
    assert lines[0].startswith("Of the variance of a task's value in one run, 100.0% is the tasks' own")
    assert "the run-to-run noise measured is 0, so on paper one run per side detects" in lines[1]
    assert lines[2] == "Runs per side needed to detect 2 pp: 1; 5 pp: 1; 10 pp: 1."
    single = [run("r1", {"a": [True]}), run("r2", {"a": [False]})]
    lines = repeats_planning(repeats(single))["sections"][0]["lines"]
    assert lines[0] == ("With one task the spread between tasks cannot be measured; its run-to-run noise can "
                        "(within-task variance 0.5).")


def test_repeated_comparison_md_says_runs_cannot_get_there_and_tasks_are_needed():
    result = compare_sets(DIFFERS_BASELINE, DIFFERS_CANDIDATE)
    single = compare_sets(DIFFERS_BASELINE[:1], DIFFERS_CANDIDATE[:1])
    md = render_set_comparison_md(result, single, DIFFERS_BASELINE, DIFFERS_CANDIDATE)
    part = md[md.index("## What would have detected a change"):md.index("## Regressed and improved tasks")]
    first = part[part.index("**First attempt (pass@1).**"):part.index("**Task success")]
    # mde80 = zp sqrt(1/6) = 114.4 pp; change_var = 13/24 = 0.542 > L for every target
    assert ("Now (2 baseline runs, 2 candidate runs, 4 paired tasks) the smallest change this comparison "
            "detects") in first
    assert f"is {ZP * math.sqrt(1 / 6) * 100:.1f} pp." in first
    assert ("To detect 2 pp: no number of runs per side on these tasks (more tasks are needed: about 13,082 paired "
            "tasks would, with as many runs per side as now); 5 pp: no number of runs per side on these tasks (more "
            "tasks are needed: about 2,094 paired tasks would, with as many runs per side as now); 10 pp: no number "
            "of runs per side on these tasks (more tasks are needed: about 524 paired tasks would") in first
    assert "baseline 0.125, candidate 0.125; the true change differs from task to task with variance 0.542" in first
    assert "more runs cannot remove the spread of the change, only more tasks can" in first
    assert "The tasks assume that added tasks behave like these." in first
    assert "the observed change" not in first  # delta = 0: nothing observed to plan for


def test_repeated_comparison_words_with_runs_and_an_observed_change():
    result = compare_sets(DIFFERS_BASELINE, DIFFERS_CANDIDATE)
    fa = result["first_attempt"]
    fa["delta"] = -0.25  # as if observed: the words read the document's entries
    fa["planning"]["change_var"] = 0.0
    fa["planning"]["runs_needed"] = [{"change": 0.05, "runs_per_side": 40},
                                     {"change": 0.25, "runs_per_side": 3, "observed": True}]
    text = set_planning(result)[0]["text"]
    assert "To detect the observed change of -25.0 pp: 3 runs per side; 5 pp: 40 runs per side." in text
    assert "variance 0 (`change_var`: 0, the change looks the same on every task as far as these runs tell)" in text
    assert "The tasks assume" not in text


def test_repeated_comparison_with_one_run_per_side_cannot_plan_runs():
    result = compare_sets(DIFFERS_BASELINE[:1], DIFFERS_CANDIDATE[:1])
    text = set_planning(result)[0]["text"]
    assert ("The run-to-run noise of the baseline and candidate cannot be measured with fewer than two runs of any "
            "task: run each side at least twice to plan runs per side.") in text
    assert "Tasks like these would detect 2 pp with 13,082, 5 pp with 2,094, 10 pp with 524, with as many runs" in text


def test_a_significant_section_gets_no_planning_words():
    result = compare_sets(DIFFERS_BASELINE, DIFFERS_CANDIDATE)
    result["first_attempt"]["verdict"] = "regression"
    assert [p["label"] for p in set_planning(result)] == ["Task success (task-weighted)"]
    result["task_success"]["verdict"] = "improvement"
    assert set_planning(result) == []
    # an inconclusive gate with a reason from the section brings it back
    result["gate"] = {"result": "inconclusive", "max_drop": 0.01, "reasons": ["task_success_below_margin"]}
    assert [p["label"] for p in set_planning(result)] == ["Task success (task-weighted)"]


def test_single_comparison_md_and_the_one_sentence():
    b, c = DIFFERS_BASELINE[0].side, DIFFERS_CANDIDATE[0].side
    result = compare(b, c)
    md = render_comparison_md(Comparison(result, b, c))
    part = md[md.index("## What would have detected a change"):md.index("## Regressed tasks")]
    first = part[part.index("**First attempt (pass@1).**"):part.index("**Task success")]
    assert (f"With its 4 paired tasks this comparison detects changes of {ZP * math.sqrt(1 / 6) * 100:.1f} pp or more "
            "(80% power). Tasks like these would detect 2 pp with 13,082, 5 pp with 2,094, 10 pp with 524 "
            "(`tasks_needed` in comparison.json). This assumes that added tasks behave like these 4") in first
    sentence = comparison_planning(result)["sentence"]
    assert sentence.startswith("What would detect a change (tasks like these, 80% power): first attempt would need "
                               "about 13,082 / 2,094 / 524 paired tasks to detect 2 / 5 / 10 pp (it has 4); task "
                               "success would need about ")
    assert sentence.endswith("; comparison.md says what each figure assumes.")
    assert sentence not in md  # comparison.md has the paragraphs; summary.md and report.html the sentence


def test_single_comparison_words_for_the_observed_change_and_targets_given():
    b, c = THREE[0].side, run("x", {"a": [False], "b": [False], "c": [True], "d": [False]}).side
    result = compare(b, c, targets=(0.25,))
    # first attempt b = 1 0 1 1, c = 0 0 1 0: d = -1, 0, 0, -1, delta = -1/2, s_d^2 = 1/3, se = sqrt(1/12)
    # observed: T = ceil(4 (zp sqrt(1/12) / 0.5)^2) = ceil(zp^2 4 / 3) = ceil(10.47) = 11;
    # 25 pp: ceil(4 zp^2 / 12 / 0.0625) = ceil(41.86) = 42
    text = comparison_planning(result)["sections"][0]["text"]
    assert "the observed change of -50.0 pp with about 11 paired tasks, 25 pp with 42 (`tasks_needed`" in text
    assert "and 11 for its observed change of -50.0 pp" in comparison_planning(result)["sentence"]


def test_a_section_without_paired_tasks_or_variation_has_nothing_to_plan_from():
    b, c = THREE[0].side, run("x", {"z": [True]}).side
    result = compare(b, c)  # nothing paired: the gate is inconclusive
    words = comparison_planning(result)
    assert [s["text"] for s in words["sections"]] == [
        "No paired task is in this section: nothing to plan from; more paired tasks would be needed first."] * 2
    assert words["sentence"] is None
    same = compare(b, b)  # every task changed by 0: no spread
    assert "no spread to plan from (`tasks_needed` is null)" in comparison_planning(same)["sections"][0]["text"]
    # a comparison.json written before planning existed shows none
    for name in ("first_attempt", "task_success"):
        del same[name]["planning"]
    assert comparison_planning(same) == {"sections": [], "sentence": None}


def test_suite_plan_cell_and_the_runs_for_five_points():
    doc = repeats(THREE)
    cell = suite_plan(doc, "S1")
    assert cell["lines"] == ["2 pp: 818", "5 pp: 131", "10 pp: 33"] and cell["note"] is None
    assert 'data-runs="20"' in cell["chart"] and f'data-mde80="{ZP / math.sqrt(480)!r}"' in cell["chart"]
    assert runs_per_side_for(doc) == 131 and runs_per_side_for(doc, 0.10, "task_success") == 9
    assert runs_per_side_for(doc, 0.07) is None and runs_per_side_for({}) is None
    one = suite_plan(repeats(THREE[:1]))
    assert one == {"lines": [], "chart": None, "note": "n/a: fewer than two runs of any task"}
    assert suite_plan({"planning": None}) == {"lines": [], "chart": None, "note": "n/a"}
