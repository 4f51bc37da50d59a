"""reports/repeated.py: repeats.md and the repeated comparison.md, from documents in memory."""

from __future__ import annotations

from pathlib import Path

from bench_pipeline.comparison_sides import make_side
from bench_pipeline.identity import RunIdentity
from bench_pipeline.repeats import RepeatRun, compare_sets, repeats
from bench_pipeline.reports.repeated import (
    REPEATS_WARNING_TEXT,
    _report_link,
    _set_reading,
    level_interval,
    noise_sentence,
    render_repeats_md,
    render_set_comparison_md,
    repeats_view,
    set_comparison_view,
    system_text,
)


def one_run(run_id: str, outcomes: dict[str, bool], *, model: str = "m", pass_at_1: float | None = None) -> RepeatRun:
    """A run of one attempt per task, from {task: success}."""
    rows = [{"task_id": task, "attempt": 1, "line": line, "success": ok, "agent_eligible": True,
             "quality_score": None, "task_wall_ms": None, "total_tokens": None, "cost_usd": None}
            for line, (task, ok) in enumerate(outcomes.items(), start=1)]
    identity = RunIdentity(suite="s", model_name=model, git_sha="g", started_at=None)
    return RepeatRun(make_side(rows, run_id=run_id, suite="s", metrics_k=1, identity=identity), pass_at_1)


def test_level_interval_formats_both_ends_by_kind() -> None:
    assert level_interval("rate", 0.25, 0.5) == "[25.0%, 50.0%]"
    assert level_interval("score", 0.5, 0.75) == "[0.500, 0.750]"
    assert level_interval("task_wall_ms", 850, 1500) == "[850 ms, 1.5 s]"
    assert level_interval("rate", None, 0.5) == "n/a" and level_interval("rate", 0.1, None) == "n/a"


def test_system_text_names_unknown_parts() -> None:
    assert system_text({"suite": "core", "model": "m1", "git_sha": "abc"}) == "core / m1 / abc"
    assert system_text({"suite": "core", "model": None}) == "core / unknown / unknown"


def test_noise_sentence_with_and_without_a_spread() -> None:
    assert noise_sentence({"noise_floor95": None, "runs": 1, "pass_at_1_sd": None}) == (
        "With 1 run whose pass@1 is known there is no between-run spread yet: at least two runs are needed "
        "to tell how far apart single runs land by chance.")
    assert noise_sentence({"noise_floor95": 0.125, "runs": 3, "pass_at_1_sd": 0.05}) == (
        "Two single runs of this system differ in pass@1 by up to 12.5 points by chance (95% of the time; "
        "between-run standard deviation 5.0 points over 3 runs): a single-run comparison whose change is smaller "
        "than that is noise.")


def test_report_links_are_relative_to_the_output_folder() -> None:
    assert _report_link(Path("/o/sys"), Path("/o/runs/r 1/report.html")) == "../runs/r%201/report.html"
    assert _report_link(None, Path("/o/r1/report.html")) is None and _report_link(Path("/o"), None) is None


def test_a_section_reading_in_words() -> None:
    assert _set_reading("first_attempt", {"n": 0}, None) == (
        "No paired task is in this section on both sides: nothing to compare.")
    one = {"n": 1, "baseline_mean": 1.0, "candidate_mean": 0.5, "delta": -0.5, "verdict": None, "se": None,
           "ci95": {"lower": None, "upper": None}}
    assert _set_reading("first_attempt", one, None) == (
        "1 paired task: 100.0% pooled over the baseline's runs, 50.0% over the candidate's, a change of -50.0 pp. "
        "With fewer than two paired tasks there is no interval or verdict.")


def test_repeats_view_of_two_runs() -> None:
    runs = [one_run("r1", {"a": True, "b": True}, pass_at_1=1.0), one_run("r2", {"a": True, "b": False}, pass_at_1=0.5)]
    view = repeats_view(repeats(runs), runs)
    assert view["system"] == "s / m / g" and view["k"] == "1"
    assert [(r["run_id"], r["pass_at_1"], r["href"]) for r in view["runs"]] == [("r1", "100.0%", None), ("r2", "50.0%", None)]
    # first attempt pooled per task: a 1, b 1/2: mean 75.0% over 2 tasks
    first = view["pooled"][0]
    assert (first["label"], first["n"], first["mean"]) == ("First attempt (pass@1)", "2", "75.0%")
    # the flip rate is a percent, as report.html and the suite page show it (repeats.json keeps 0.5)
    assert view["stability"] == {"tasks_classified": "2", "stable_pass": "1", "stable_fail": "0", "flaky": "1",
                                 "flip_rate": "50.0%"}  # b: 2 * 1 * 1 / (2 * 1) = 1; (0 + 1) / 2
    assert [(t["task_id"], t["flip"]) for t in view["flaky"]] == [("b", "100.0%")]
    assert view["flaky_more"] == 0 and view["warnings"] == []
    md = render_repeats_md(repeats(runs), runs)
    assert "s / m / g" in md and "75.0%" in md
    assert md.startswith("# Repeated runs of `s / m / g`\n\n2 runs pooled by task, k = 1; 2 tasks observed, ")
    assert ("Over every eligible attempt of every run: 2 tasks with at least two attempts, 1 always succeeds, "
            "0 always fail, 1 flaky. Flip rate (the chance that two attempts of a task disagree, averaged over "
            "those tasks): 50.0%.") in md
    assert "| `b` | 2 | 1 | 100.0% |" in md and "0.500" not in md


def test_repeats_view_says_what_each_warning_means() -> None:
    runs = [one_run("r1", {"a": True}, model="m1"), one_run("r2", {"a": True}, model="m2")]
    view = repeats_view(repeats(runs), runs)
    assert view["warnings"] == [{"code": "model_differs", "text": REPEATS_WARNING_TEXT["model_differs"]}]
    # repeats.md says it in words; the code is a secondary label, as repeats.json has it
    md = render_repeats_md(repeats(runs), runs)
    assert "- The runs use different models: they are not repeats of one system. (`model_differs` in repeats.json)" in md


def test_set_comparison_view_of_two_sides() -> None:
    base = [one_run("b1", {"a": True, "b": True}), one_run("b2", {"a": True, "b": True})]
    cand = [one_run("c1", {"a": False, "b": True}, model="m2")]
    view = set_comparison_view(compare_sets(base, cand), None, base, cand)
    assert view["baseline"] == {"runs": ["b1", "b2"], "count": 2, "systems": ["s / m / g"]}
    assert view["candidate"] == {"runs": ["c1"], "count": 1, "systems": ["s / m2 / g"]}
    assert view["paired"] == "2" and view["only_baseline"] == 0
    # the regressed task with attempt 1 in each run that decided it; no run folder and no
    # evidence folder recorded here, so nothing to link
    unlinked = {"text": "n/a (unavailable)", "folder": None, "href": None}
    assert view["regressions"] == [{"task_id": "a",
                                    "baseline": [{"run_id": "b1", **unlinked}, {"run_id": "b2", **unlinked}],
                                    "candidate": [{"run_id": "c1", **unlinked}]}]
    first = view["rows"][0]
    # a: 1 -> 0, b: 1 -> 1: baseline 100.0%, candidate 50.0%, change -50.0 pp; no single-run comparison given
    assert (first["label"], first["n"], first["baseline"], first["candidate"], first["change"], first["single"]) == (
        "First attempt (pass@1)", "2", "100.0%", "50.0%", "-50.0 pp", "n/a")
    assert "100.0%" in render_set_comparison_md(compare_sets(base, cand), None, base, cand)


def measured_run(run_id: str, tasks: dict[str, tuple[bool, float, int]]) -> RepeatRun:
    """A run of one attempt per task, from {task: (success, quality score, wall ms)}."""
    rows = [{"task_id": task, "attempt": 1, "line": line, "success": ok, "agent_eligible": True,
             "quality_score": quality, "task_wall_ms": wall, "total_tokens": None, "cost_usd": None}
            for line, (task, (ok, quality, wall)) in enumerate(tasks.items(), start=1)]
    identity = RunIdentity(suite="s", model_name="m", git_sha="g", started_at=None)
    return RepeatRun(make_side(rows, run_id=run_id, suite="s", metrics_k=1, identity=identity), None)


def test_no_interval_from_a_pair_or_a_section_without_variation() -> None:
    """The first run of each side agree on every first attempt (no variation in that pair), the
    pooled runs do not; every task's wall time rises by exactly 100 ms: neither has an interval
    to state, so no reading says what one pair of runs would have given there."""
    quality_b = {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.6}
    quality_c = {"a": 0.5, "b": 0.6, "c": 0.3, "d": 0.4}
    outcomes = {"a": True, "b": True, "c": False, "d": False}
    base = [measured_run(r, {t: (outcomes[t], quality_b[t], 1000) for t in outcomes}) for r in ("b1", "b2")]
    cand = [measured_run("c1", {t: (outcomes[t], quality_c[t], 1100) for t in outcomes}),
            measured_run("c2", {t: (ok, quality_c[t], 1100)
                                for t, ok in {"a": False, "b": True, "c": True, "d": False}.items()})]
    result, single = compare_sets(base, cand), compare_sets(base[:1], cand[:1])
    assert single["first_attempt"]["ci95"] == {"lower": 0.0, "upper": 0.0}  # what the old sentence quoted
    view = set_comparison_view(result, single, base, cand)
    rows = {r["label"]: r for r in view["rows"]}
    # pooled first attempt per task, baseline 1, 1, 0, 0 and candidate 1/2, 1, 1/2, 0: changes -0.5, 0, +0.5, 0,
    # mean 0, se = sqrt(0.5 / 3 / 4) = 0.2041, 95% interval +/- 40.0 pp; the single pair changed nothing
    first = rows["First attempt (pass@1)"]
    assert (first["interval"], first["single"], first["verdict"]) == (
        "[-40.0 pp, +40.0 pp]", "n/a (no variation)", "no significant change")
    for label in ("First attempt (pass@1)", "pass@k (k=1)", "pass^k (k=1)", "Task success (task-weighted)",
                  "Task wall time"):
        assert "would have given" not in rows[label]["reading"], label
    wall = rows["Task wall time"]
    assert (wall["interval"], wall["single"], wall["verdict"]) == ("n/a (no variation)", "n/a (no variation)",
                                                                   "regression")
    assert wall["reading"] == (
        "4 paired tasks: 1.0 s pooled over the baseline's runs, 1.1 s over the candidate's, a change of +100 ms. "
        "Every paired task changed by exactly +100 ms: there is no variation to estimate an interval from (shown as "
        "n/a), which is not certainty. comparison.md's rule reads the zero-width interval as excluding zero, hence "
        "the verdict (regression); it rests on 4 tasks without spread.")
    # quality varies in both: changes -0.4, -0.2, -0.4, -0.2, mean -0.3, se = sqrt(0.04 / 3 / 4) = 0.0577,
    # interval -0.3 +/- 0.113 in the pooled runs and in the first pair alike
    assert rows["Quality score"]["reading"].endswith(
        "The 95% interval [-0.413, -0.187] excludes zero: regression. One run per side (the first of each) would "
        "have given [-0.413, -0.187], 0.226 wide against 0.226 pooled.")
    md = render_set_comparison_md(result, single, base, cand)
    assert "[0.0 pp, 0.0 pp]" not in md and "0.0 pp wide" not in md
    assert "- Quality score: **regression**\n- Task wall time: **regression**\n" in md


def test_repeats_md_says_when_the_runs_are_not_one_system_and_what_no_variation_means():
    """The title names the first run's system (repeated-runs.md); the line under it says the
    runs differ when a system warning is there. A zero-width interval reads "n/a (no
    variation)" with the legend beside the table."""
    from bench_pipeline.comparison_sides import make_side
    from bench_pipeline.repeats import RepeatRun, repeats
    from bench_pipeline.reports.repeated import render_repeats_md

    def run(run_id, model):
        rows = [{"task_id": t, "attempt": a, "line": i, "success": True, "agent_eligible": True, "quality_score": 1.0,
                 "task_wall_ms": None, "total_tokens": None, "cost_usd": None}
                for i, (t, a) in enumerate([("t", 1), ("t", 2), ("u", 1), ("u", 2)], start=1)]
        return RepeatRun(make_side(rows, run_id=run_id, suite="s", metrics_k=2,
                                   identity=RunIdentity(suite="s", model_name=model, git_sha="abc")), 1.0)

    same = [run("a", "m"), run("b", "m")]
    md = render_repeats_md(repeats(same), same)
    assert "System: suite / model / git sha, measured with one setup" in md
    assert "| pass@k (k=2) | 2 | 100.0% | n/a (no variation) |" in md
    assert '"n/a (no variation)": every task has the same pooled value' in md
    mixed = [run("a", "m"), run("b", "other")]
    doc = repeats(mixed)
    assert "model_differs" in doc["warnings"]
    md = render_repeats_md(doc, mixed)
    assert "These runs are not all one system (the warnings below say how they differ)" in md
    assert "measured with one setup" not in md
