"""The suite page in headless Chromium: it renders, loads nothing but itself, logs no error,
shows the systems' repeats.json numbers, and the hostile names as text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench_pipeline.reports.format import fmt_pct
from bench_pipeline.reports.suite_page import write_suite_page
from bench_pipeline_tests.browser import ARTIFACTS, assert_clean, open_report
from bench_pipeline_tests.fixtures_suite_page import HOSTILE_MODEL, HOSTILE_RUN, SUITE, suite

pytestmark = pytest.mark.slow

#: Each body row of a table: {data-col (or the column's index): the cell's rendered lines}.
CELLS = """(id) => Array.from(document.querySelectorAll(`#${id} tbody tr`)).map(r =>
  Object.fromEntries(Array.from(r.children).map((c, i) =>
    [c.dataset.col || String(i), c.innerText.split('\\n').map(s => s.trim()).filter(Boolean)])))"""


def test_suite_page_renders_clean_with_repeats_numbers(browser: Any, tmp_path: Path) -> None:
    runs, systems = suite(tmp_path)
    path = write_suite_page(tmp_path / "_suites" / "smoke", SUITE, runs, systems)
    w = open_report(browser, path)
    page = w.page
    assert page.locator("#suite-name").inner_text() == SUITE
    rows = page.evaluate(CELLS, "systems-table")
    assert len(rows) == len(systems)
    for row, entry in zip(rows, systems):
        doc = entry.doc
        for col, section in (("fa", "first_attempt"), ("ts", "task_success")):
            s = doc["pooled"][section]
            assert row[col] == [fmt_pct(s["mean"]), f"[{fmt_pct(s['ci95']['lower'])}, {fmt_pct(s['ci95']['upper'])}]",
                                f"{s['n']} tasks"]
        assert row["runs"] == [str(len(doc["runs"]))]
        noise, flip = doc["between_runs"]["noise_floor95"], doc["stability"]["flip_rate"]
        runs = doc["between_runs"]["runs"]
        rough = " (rough: more runs make it firmer)" if runs <= 3 else ""
        assert row["noise"] == ([f"{noise * 100:.1f} pp", f"from {runs} runs{rough}"] if noise is not None else ["n/a"])
        assert row["flip"] == [fmt_pct(flip)]  # a percent, as in report.html and repeats.md
    assert [r["pareto"] for r in rows] == [["yes"], ["yes"], ["n/a"], ["no"]]
    # the hostile model and run id are text, not elements
    assert rows[1]["1"] == [f"{SUITE} / {HOSTILE_MODEL} / sha-b"]
    assert page.locator("img").count() == 0 and page.locator("script").count() == 0
    run_rows = page.evaluate(CELLS, "runs-table")
    assert [r["0"] for r in run_rows] == [["a1"], ["c1"], ["a2"], [HOSTILE_RUN], ["b2"], ["d1"]]
    assert run_rows[2]["pass_at_1"] == ["50.0%"] and run_rows[2]["gate"] == ["fail vs a1"]
    # the first body row is not hidden under the header
    head = page.locator("#runs-table thead").bounding_box()
    first = page.locator("#runs-table tbody tr").first.bounding_box()
    assert head is not None and first is not None and first["y"] >= head["y"] + head["height"] - 1
    # the charts are drawn with a size: one interval bar per run, three systems placed, S3 beside
    assert page.locator(".run-bars svg.ibar").count() == 6
    chart = page.locator("svg.cc")
    box = chart.bounding_box()
    assert box is not None and box["width"] > 400 and box["height"] > 200
    assert chart.locator("g.sys").count() == 3 and chart.locator("g.sys.front").count() == 2
    assert page.locator("#not-drawn li").inner_text().startswith("S3 ")
    assert "within run-to-run noise" in page.locator("#best-sentence").inner_text()
    # the command as the README runs it; the flaky table's flips are percents too
    assert page.locator("#best-command").inner_text().startswith(".venv/bin/bench-pipeline compare --baseline ")
    assert page.evaluate(CELLS, "flaky-table")[0]["1"] == ["100.0%"]
    # links underline below the descenders (run ids and task ids keep their underscores)
    link = page.locator("#runs-table a").first
    assert link.evaluate("a => getComputedStyle(a).textUnderlineOffset") not in ("auto", "0px")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "suite-page.png"), full_page=True)
    assert [u for u in w.requests if u != path.as_uri()] == []  # nothing but the page itself
    assert_clean(w)
    page.close()


def test_an_inconclusive_gate_on_the_suite_page_is_neither_green_nor_red(browser: Any, tmp_path: Path) -> None:
    runs, systems = suite(tmp_path)
    by_id = {r["run_id"]: r for r in runs}
    by_id["b2"].update(gate="inconclusive", baseline="a2",
                       gate_reasons=["first_attempt_no_evidence", "task_success_no_evidence"], gate_mde80={})
    path = write_suite_page(tmp_path / "_suites" / "gate", SUITE, runs, systems)
    w = open_report(browser, path)
    rows = {r["0"][0]: r for r in w.page.evaluate(CELLS, "runs-table")}
    assert rows["b2"]["gate"][0] == "inconclusive vs a2"
    assert "first attempt: no paired task, so nothing was measured" in rows["b2"]["gate"][1]
    color = "(sel) => getComputedStyle(document.querySelector(sel)).color"
    inconclusive = w.page.evaluate(color, "td.gate-inconclusive")
    assert inconclusive not in (w.page.evaluate(color, "td.gate-pass"), w.page.evaluate(color, "td.gate-fail"))
    assert_clean(w)
    w.page.close()


def test_suite_page_planning_chart_shows_repeats_json_numbers(browser: Any, tmp_path: Path) -> None:
    """Each system's runs per side for each change in first attempt, beside its noise floor, and
    the chart of the detectable change against runs per side: drawn with a size, its points
    where repeats.json's mde80_by_runs puts them, their numbers equal to repeats.json's."""
    runs, systems = suite(tmp_path)
    path = write_suite_page(tmp_path / "_suites" / "plan", SUITE, runs, systems)
    w = open_report(browser, path)
    page = w.page
    cells = page.locator("#systems-table td[data-col=plan]")
    assert cells.count() == len(systems)
    # the column right after the noise floor's
    after = page.evaluate("() => Array.from(document.querySelectorAll('#systems-table tbody tr')).map("
                          "r => r.querySelector('td[data-col=noise]').nextElementSibling.dataset.col)")
    assert after == ["plan"] * len(systems)
    drawn = 0
    for i, entry in enumerate(systems):
        plan = entry.doc["planning"]["first_attempt"]
        cell = cells.nth(i)
        if plan["within_task_var"] is None:
            assert cell.inner_text().strip() == "n/a: fewer than two runs of any task"
            assert cell.locator("svg").count() == 0
            continue
        drawn += 1
        lines = cell.locator(":scope > div").all_inner_texts()
        assert lines == [f"{round(e['change'] * 100):d} pp: {e['runs_per_side']:,}" for e in plan["runs_needed"]]
        chart = cell.locator("svg.mde")
        box = chart.bounding_box()
        assert box is not None and box["width"] > 150 and box["height"] > 60
        points = chart.locator("circle.pt")
        numbers = points.evaluate_all("ps => ps.map(p => [Number(p.dataset.runs), Number(p.dataset.mde80), "
                                      "p.getBoundingClientRect().x, p.getBoundingClientRect().y, "
                                      "p.querySelector('title').textContent])")
        assert [(r, m) for r, m, *_ in numbers] == [(e["runs_per_side"], e["mde80"]) for e in plan["mde80_by_runs"]]
        assert [t for *_, t in numbers] == [
            f"{e['runs_per_side']} run{'' if e['runs_per_side'] == 1 else 's'} per side: {e['mde80'] * 100:.1f} pp"
            for e in plan["mde80_by_runs"]]
        # more runs per side: further right and lower (a smaller detectable change)
        xs, ys = [x for _, _, x, _, _ in numbers], [y for _, _, _, y, _ in numbers]
        assert xs == sorted(xs) and len(set(xs)) == len(xs) and ys == sorted(ys)
        assert chart.locator("line.target").count() == len(plan["runs_needed"])
    assert drawn == 2  # S1 and S2 have two runs; S3 and S4 one
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator("#systems").screenshot(path=str(ARTIFACTS / "suite-page-planning.png"))
    assert_clean(w)
    page.close()


def test_the_suite_page_fits_a_phone_wide_window(browser: Any, tmp_path: Path) -> None:
    """At 390 px the page is as wide as the window (the runs' interval bars take one column)."""
    runs, systems = suite(tmp_path)
    path = write_suite_page(tmp_path / "_suites" / "smoke", SUITE, runs, systems)
    w = open_report(browser, path, width=390)
    w.page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
    assert w.page.evaluate("() => document.documentElement.scrollWidth") == 390
    assert_clean(w)
    w.page.close()
