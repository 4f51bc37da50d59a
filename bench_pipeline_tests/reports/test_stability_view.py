"""Within-run stability in summary.md and report.html (repeated-runs.md "stability", over one
run's attempts): the numbers, the words that say what they are, evidence links, the cap,
escaping, and nothing at all without repeats. Runs are built in memory."""

from __future__ import annotations

import copy
import html
import re
from pathlib import Path
from typing import Any

import pytest

from bench_pipeline.repeats import within_run_stability
from bench_pipeline.reports import render_report_html, render_summary_md, write_reports
from bench_pipeline_tests.fixtures_reports import (
    MANIFEST,
    capability_and_coverage,
    fill_metrics,
    numbers,
    record,
)
from bench_pipeline_tests.support.markdown import section, table_rows

RUN = "stability-run"
LOWER_BOUND = "a lower bound on how much separate runs of this system disagree"


def attempts_of(outcomes: dict[str, list[bool | None]]) -> list[dict[str, Any]]:
    """Attempt records, {task: [True (passed) / False (failed) / None (ineligible skip), ...]}
    by attempt number; task ids need not be the fixture suite's (the record is renamed)."""
    rows, line = [], 0
    for task, results in outcomes.items():
        for attempt, outcome in enumerate(results, start=1):
            line += 1
            status = "passed" if outcome is True else "failed" if outcome is False else "skipped"
            rec = record("open_settings", attempt, line, status, success=outcome, eligible=outcome is not None,
                         cls=None if outcome is True else "agent" if outcome is False else "skipped",
                         stage="final_response" if outcome is False else None,
                         quality=1.0 if outcome else 0.0 if outcome is False else None, rubric=(None, None),
                         nums=numbers(20_000 + line, 1_000, 3, 3, 2, 10_000))
            folder = f"tasks/{task}" if attempt == 1 else f"tasks/{task}/attempt-{attempt}"
            rec.update(task_id=task, run_id=RUN, artifact_dir=folder)
            rec["evidence"]["dir"] = folder
            rows.append(rec)
    return rows


def run_of(outcomes: dict[str, list[bool | None]], k: int | None = 3) -> tuple:
    """(metrics, attempts, manifest, run_id) of a run with these outcomes and metrics_k k."""
    attempts = attempts_of(outcomes)
    manifest = copy.deepcopy(MANIFEST)
    manifest.update(run_id=RUN, repeats=k, metrics_k=k,
                    planned=[{"task_id": t, "attempts": len(r)} for t, r in outcomes.items()])
    metrics: dict[str, Any] = {"schema_version": 1, "formula_version": "2026.11.1", "run_id": RUN,
                               "suite": "android-core", "generated_at": "2026-11-28T11:05:40Z"}
    metrics.update(capability_and_coverage(attempts, k or 1, len(attempts), 0))
    metrics["coverage"]["metrics_k"] = k
    metrics["data_quality"] = {"bad_rows": [], "duplicate_rows": [], "missing_attempts": [], "unsafe_artifact_dirs": []}
    return fill_metrics(metrics, attempts), attempts, manifest, RUN


#: k = 3: one task passes every attempt, one fails attempt 2 only, one fails all three.
THREE = {"always": [True, True, True], "sometimes": [True, False, True], "never": [False, False, False]}


def stability_html(page: str) -> str:
    """The text of report.html's stability section, tags dropped, entities decoded, spaces collapsed."""
    match = re.search(r'<section id="stability">(.*?)</section>', page, re.S)
    assert match, "report.html has no stability section"
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", match.group(1))).split())


def test_summary_shows_the_runs_own_stability_labelled_within_run() -> None:
    md = render_summary_md(*run_of(THREE), evidence_base="../runs/r")
    text = section(md, "Within-run stability")
    assert text.startswith("## Within-run stability (k = 3)\n")
    assert "attempts of one run, not independent runs" in text and "day, device and build" in text
    assert LOWER_BOUND in text
    rows = {r[0]: r[1] for r in table_rows(text)}
    assert rows["Classified (at least two eligible attempts)"] == "3 of 3 observed (0 with fewer)"
    assert rows["Stable pass"] == "1"
    assert rows["Stable fail"] == "1"
    assert rows["Flaky"] == "1"
    assert rows["Flip rate"] == "22.2%"  # (0 + 0 + 2*2*1/(3*2)) / 3 = 2/9
    flaky = [r for r in table_rows(text) if len(r) == 5]
    assert flaky[0] == ["Task", "Eligible attempts", "Successes", "Flip", "Evidence folders"]
    assert flaky[2:] == [["`sometimes`", "3", "2", "66.7%",
                          "#1 success [`tasks/sometimes`](<../runs/r/tasks/sometimes/>), "
                          "#2 failure [`tasks/sometimes/attempt-2`](<../runs/r/tasks/sometimes/attempt-2/>), "
                          "#3 success [`tasks/sometimes/attempt-3`](<../runs/r/tasks/sometimes/attempt-3/>)"]]
    # it stands apart from the headline and before the failure sections
    assert md.index("## Within-run stability") < md.index("## What was excluded and why")
    assert "Within-run stability" not in section(md, "Headline capability")


def test_report_html_shows_the_same_numbers_and_links(tmp_path: Path) -> None:
    paths = write_reports(tmp_path / "out", *run_of(THREE), run_dir=tmp_path / "runs" / RUN)
    page = paths["report.html"].read_text(encoding="utf-8")
    text = stability_html(page)
    # the collapsed section's heading carries its numbers: flaky of classified, the flip rate
    assert text.startswith("Within-run stability 1 flaky task of 3 classified · flip rate 22.2% · attempts of this "
                           "run only · k = 3")
    assert LOWER_BOUND in text and "day, device and build" in text
    assert "Tasks classified (at least two eligible attempts) 3 of 3 observed" in text
    assert "Stable pass 1 Stable fail 1 Flaky 1 Flip rate 22.2%" in text
    assert "0 observed tasks have fewer and are not classified" in text
    assert ("sometimes 3 2 66.7% #1 success tasks/sometimes , #2 failure tasks/sometimes/attempt-2 , "
            "#3 success tasks/sometimes/attempt-3") in text
    table = re.search(r'<table class="data compact" id="stability-table">.*?</table>', page, re.S).group(0)
    assert table.count("<tr>") == 2  # header and the one flaky task
    assert f'href="../runs/{RUN}/tasks/sometimes/attempt-2/"' in table
    assert '<a href="#stability">Stability</a>' in page
    assert page.index('id="headline"') < page.index('id="stability"') < page.index('id="excluded"')
    # summary.md from the same view says the same
    md = paths["summary.md"].read_text(encoding="utf-8")
    assert f"[`tasks/sometimes/attempt-2`](<../runs/{RUN}/tasks/sometimes/attempt-2/>)" in md


@pytest.mark.parametrize("k", [1, None])
def test_no_stability_without_repeats(k: int | None) -> None:
    outcomes = {t: r[:1] for t, r in THREE.items()} if k == 1 else THREE
    args = run_of(outcomes, k)
    md = render_summary_md(*args)
    page = render_report_html(*args)
    assert "Within-run stability" not in md and "Flip rate" not in md
    assert 'id="stability"' not in page and 'href="#stability"' not in page


def test_attempts_outside_the_population_and_tasks_with_fewer_than_two() -> None:
    """Ineligible attempts are neither counted nor linked; a task with one eligible attempt is
    observed but not classified."""
    outcomes = {"sometimes": [True, None, False], "once": [True, None, None], "always": [True, True, True]}
    md = render_summary_md(*run_of(outcomes))
    text = section(md, "Within-run stability")
    rows = {r[0]: r[1:] for r in table_rows(text)}
    assert rows["Classified (at least two eligible attempts)"] == ["2 of 3 observed (1 with fewer)"]
    assert rows["Flip rate"] == ["50.0%"]  # sometimes: 2*1*1/(2*1) = 1; always: 0
    assert rows["`sometimes`"] == ["2", "1", "100.0%", "#1 success `tasks/sometimes`, #3 failure `tasks/sometimes/attempt-3`"]
    # one unclassified task: the sentence agrees with it
    text = stability_html(render_report_html(*run_of(outcomes)))
    assert "1 observed task has fewer and is not classified" in text and "1 observed tasks" not in text
    assert text.startswith("Within-run stability 1 flaky task of 2 classified · flip rate 50.0%")


def test_no_flaky_task_says_so() -> None:
    md = render_summary_md(*run_of({"always": [True, True], "never": [False, False]}, k=2))
    text = section(md, "Within-run stability")
    assert "No task is flaky: every classified task succeeded on all of its eligible attempts or on none." in text
    assert {r[0]: r[1] for r in table_rows(text)}["Flip rate"] == "0.0%"
    page = render_report_html(*run_of({"always": [True, True], "never": [False, False]}, k=2))
    assert "No task is flaky" in stability_html(page)


def test_flaky_tasks_by_flip_descending_then_id_and_capped() -> None:
    """30 flaky tasks: the first LIST_CAP (25) listed by flip descending then task id, the rest
    counted; k = 4 so flips differ (2 of 4: 2/3; 1 of 4 and 3 of 4: 1/2)."""
    outcomes: dict[str, list[bool | None]] = {}
    for i in range(10):
        outcomes[f"half_{i:02d}"] = [True, False, True, False]  # flip 2*2*2/12 = 0.667
        outcomes[f"one_{i:02d}"] = [True, False, False, False]  # 2*1*3/12 = 0.5
        outcomes[f"three_{i:02d}"] = [True, True, True, False]  # 0.5
    md = render_summary_md(*run_of(outcomes, k=4))
    text = section(md, "Within-run stability")
    listed = [r[0].strip("`") for r in table_rows(text) if len(r) == 5][2:]
    assert listed == ([f"half_{i:02d}" for i in range(10)] + [f"one_{i:02d}" for i in range(10)]
                      + [f"three_{i:02d}" for i in range(5)])
    assert "… and 5 more flaky tasks." in text
    assert {r[0]: r[1] for r in table_rows(text)}["Flaky"] == "30"
    page = render_report_html(*run_of(outcomes, k=4))
    table = re.search(r'id="stability-table">.*?</table>', page, re.S).group(0)
    assert table.count("<tr><td><code>") == 25 and table.count("<tr><td><code>half_") == 10
    assert "… and 5 more flaky tasks" in stability_html(page)


def test_evidence_links_of_one_task_are_capped() -> None:
    """A task with 30 eligible attempts lists the first LIST_CAP (25) with their folders."""
    md = render_summary_md(*run_of({"many": [True, False] * 15}, k=30), evidence_base="b")
    cell = next(r for r in table_rows(section(md, "Within-run stability")) if r[0] == "`many`")
    assert cell[1:4] == ["30", "15", "51.7%"]  # 2*15*15/(30*29)
    assert cell[4].count("](<b/tasks/many") == 25 and cell[4].endswith("#25 success [`tasks/many/attempt-25`]"
                                                                       "(<b/tasks/many/attempt-25/>) … and 5 more")


def test_no_classified_task_says_so() -> None:
    md = render_summary_md(*run_of({"once": [True, None], "other": [None, False]}, k=2))
    text = section(md, "Within-run stability")
    assert "No task has two eligible attempts, so none is classified." in text
    assert {r[0]: r[1] for r in table_rows(text)}["Flip rate"] == "n/a"


def test_run_text_is_escaped() -> None:
    hostile = '<img src=x onerror="window.__xss = 9">|`task`'
    args = run_of({hostile: [True, False, True]})
    md = section(render_summary_md(*args), "Within-run stability")
    assert "`` <img src=x onerror=\"window.__xss = 9\">\\|`task` ``" in md  # an inert code span, pipe escaped
    page = render_report_html(*args)
    assert "<img src=x" not in re.search(r'<section id="stability">.*?</section>', page, re.S).group(0)
    assert "&lt;img src=x onerror=&#34;window.__xss = 9&#34;&gt;|`task`" in page


def test_stability_is_computed_once_for_both_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = within_run_stability

    def counted(rows):
        calls.append(1)
        return real(rows)

    monkeypatch.setattr("bench_pipeline.reports.view.stability.within_run_stability", counted)
    write_reports(tmp_path, *run_of(THREE))
    assert len(calls) == 1
