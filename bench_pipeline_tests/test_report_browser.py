"""report.html in headless Chromium (Debian's /usr/bin/chromium via Playwright): rendering,
sorting, filtering, lazy details, no network, no console errors, no script injection."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench_pipeline.reports import write_reports
from bench_pipeline_tests.browser import ARTIFACTS, Watched, assert_clean, open_report
from bench_pipeline_tests.fixtures_reports import (
    XSS_FINAL_RESPONSE,
    XSS_RUN,
    XSS_TASK,
    compared_run,
    fill_metrics,
    large_run,
    main_run,
)

pytestmark = pytest.mark.slow

# JS helpers evaluated in the page
VISIBLE_ATTEMPT_KEYS = """(col) => {
  const keys = JSON.parse(document.getElementById('report-data').textContent).attempts.keys;
  return Array.from(document.querySelectorAll('#attempts details.a'))
    .filter(d => !d.hidden).map(d => keys[Number(d.dataset.i)][col]);
}"""
VISIBLE_TASK_IDS = """() => Array.from(document.querySelectorAll('#task-table tbody tr'))
  .filter(r => !r.hidden).map(r => r.querySelector('button.tlink').textContent)"""
SECTION_OPEN = "(id) => document.querySelector(`#${id} > details.sec`).open"


def open_sections(page: Any, *ids: str) -> None:
    """Open collapsed sections as a reader does: from the nav bar's link to each."""
    for section_id in ids:
        page.locator(f"nav.toc a[href='#{section_id}']").click()
        assert page.evaluate(SECTION_OPEN, section_id)


@pytest.fixture
def report(browser: Any, tmp_path: Path) -> Iterator[Watched]:
    paths = write_reports(tmp_path, *main_run())
    watched = open_report(browser, paths["report.html"])
    yield watched
    watched.page.close()


def test_headline_and_tables_render(report: Watched) -> None:
    page = report.page
    cards = page.locator("#headline .card.metric")
    assert cards.count() == 4
    assert cards.nth(0).locator(".value").inner_text() == "66.7%"
    assert "[30.0%, 90.3%]" in cards.nth(0).inner_text()
    assert page.locator("#headline svg.ibar").count() == 4
    assert page.locator("#headline svg.ibar rect.ci").first.is_visible()
    assert page.locator("#task-table tbody tr").count() == 8
    assert page.locator("#attempts details.a").count() == 24
    assert page.locator("#efficiency svg.hist").count() == 4
    assert page.locator("#failures svg.hbar").count() == 2
    assert page.locator("#attempts [data-count]").text_content() == "24 of 24"  # in a collapsed section
    assert_clean(report)


def test_sorting_by_column_header(report: Watched) -> None:
    page = report.page
    open_sections(page, "tasks", "attempts")
    wall = page.locator("#attempts button[data-sort='8']")
    wall.click()
    values = page.evaluate(VISIBLE_ATTEMPT_KEYS, 8)
    known = [v for v in values if v is not None]
    assert known == sorted(known) and values[len(known):] == [None] * (len(values) - len(known))
    assert values[0] == 12_050
    assert page.locator("#attempts details.a").first.locator("summary span").first.inner_text() == "web_search"
    assert wall.get_attribute("aria-sort") == "ascending"
    wall.click()
    values = page.evaluate(VISIBLE_ATTEMPT_KEYS, 8)
    known = [v for v in values if v is not None]
    assert known == sorted(known, reverse=True) and values[0] == 300_000
    assert wall.get_attribute("aria-sort") == "descending"

    page.locator("#task-table button[data-sort='6']").click()  # pass rate, ascending
    assert page.evaluate(VISIBLE_TASK_IDS)[0] == "send_sms"
    page.locator("#task-table button[data-sort='0']").click()  # task id, ascending
    assert page.evaluate(VISIBLE_TASK_IDS) == sorted(page.evaluate(VISIBLE_TASK_IDS))
    assert_clean(report)


def test_filters_hide_rows(report: Watched) -> None:
    page = report.page
    open_sections(page, "tasks", "attempts")
    page.locator("#attempts input[data-filter-text]").fill("send_sms")
    page.wait_for_function("() => document.querySelector('#attempts [data-count]').textContent === '3 of 24'")
    assert set(page.evaluate(VISIBLE_ATTEMPT_KEYS, 0)) == {"send_sms"}
    assert page.locator("#attempts details.a:visible").count() == 3

    page.locator("#attempts input[data-filter-text]").fill("")
    page.locator("#attempts select[data-filter-col='2']").select_option("timeout")
    page.wait_for_function("() => document.querySelector('#attempts [data-count]').textContent === '2 of 24'")
    page.locator("#attempts select[data-filter-col='2']").select_option("")
    page.locator("#attempts select[data-filter-col='4']").select_option("false")
    assert page.locator("#attempts [data-count]").inner_text() == "4 of 24"

    page.locator("#tasks select[data-filter-col='11']").select_option("true")
    assert len(page.evaluate(VISIBLE_TASK_IDS)) == 6
    page.locator("#tasks input[data-filter-text]").fill("messaging")
    page.wait_for_function("() => document.querySelector('#tasks [data-count]').textContent === '1 of 8'")
    assert page.evaluate(VISIBLE_TASK_IDS) == ["send_sms"]

    # a task id in the task table filters the attempts table to that task exactly
    page.locator("#attempts select[data-filter-col='4']").select_option("")
    page.locator("#task-table button.tlink", has_text="send_sms").click()
    assert page.locator("#attempts [data-count]").inner_text() == "3 of 24"
    assert_clean(report)


def test_details_render_escaped_and_injected_script_does_not_run(report: Watched) -> None:
    page = report.page
    open_sections(page, "attempts")
    row = page.locator("#attempts details.a").nth(20)  # results line 21: web_search attempt 3
    assert row.locator("summary span").first.text_content() == "web_search"
    row.locator("summary").click()
    detail = row.locator(".detail")
    detail.wait_for()
    assert detail.locator("pre").first.inner_text() == XSS_FINAL_RESPONSE
    text = detail.inner_text()
    assert "TOOL CALLS (2)" in text.upper() and "open_url" in text
    assert "<svg onload=" in text and "</script><script>window.__xss = 3</script>" in text
    assert "RUBRIC VERDICTS" in text.upper()
    assert page.locator("#attempts details.a script, #attempts details.a img, #attempts details.a svg[onload]").count() == 0

    # the chat-error attempt (line 20) carries an <img onerror> payload in its error text
    other = page.locator("#attempts details.a").nth(19)
    other.locator("summary").click()
    other.locator(".detail").wait_for()
    assert '<img src=x onerror="window.__xss = 2">' in other.locator(".detail").inner_text()
    assert "(empty: the recorded response is an empty string)" in other.locator(".detail").inner_text()

    # the hard-assertion failure of send_sms attempt 2 (line 8)
    failing = page.locator("#attempts details.a").nth(7)
    failing.locator("summary").click()
    assert "send_message must be called" in failing.locator(".detail").inner_text()
    page.wait_for_timeout(200)
    assert_clean(report)


def test_empty_report_is_clean(browser: Any, tmp_path: Path) -> None:
    paths = write_reports(tmp_path, {}, [], {}, "empty-run")
    w = open_report(browser, paths["report.html"])
    assert w.page.locator("#headline .card.metric .value").first.inner_text() == "n/a"
    open_sections(w.page, "attempts")
    w.page.locator("#attempts button[data-sort='8']").click()
    w.page.locator("#attempts input[data-filter-text]").fill("x")
    assert_clean(w)
    w.page.close()


def test_screenshot(report: Watched) -> None:
    page = report.page
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
    open_sections(page, "attempts")
    row = page.locator("#attempts details.a").nth(20)
    row.locator("summary").click()
    row.locator(".detail").wait_for()
    row.scroll_into_view_if_needed()
    page.locator("#attempts").screenshot(path=str(ARTIFACTS / "report-attempts.png"))
    assert (ARTIFACTS / "report.png").stat().st_size > 10_000
    assert_clean(report)


def test_comparison_section_renders_escaped(browser: Any, tmp_path: Path) -> None:
    """The candidate's "Compared with <baseline>" section: gate, verdicts, the paired table,
    the interval chart with its zero line, regressed tasks linked to both runs' evidence;
    the hostile run id and task id are shown as text and run nothing."""
    comparison = compared_run(tmp_path / "runs" / "base", tmp_path / "runs" / "cand")
    paths = write_reports(tmp_path / "out", *main_run(), comparison=comparison)
    w = open_report(browser, paths["report.html"])
    page = w.page
    section = page.locator("#comparison")
    assert section.is_visible()
    assert section.locator("h2 code").inner_text() == XSS_RUN
    assert "Release gate: FAIL" in section.locator("p.gate").inner_text()
    assert section.locator("ul.verdicts li").count() == 8
    assert section.locator("ul.verdicts li.v-bad").count() == 5  # first attempt, pass^k, task success, quality, wall time
    rows = section.locator("#comparison-table tbody tr")
    assert rows.count() == 8
    assert rows.nth(0).locator("td").nth(6).inner_text() == "0.008"
    chart = section.locator("svg.dci")
    box = chart.bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 100
    assert chart.locator("line.zero").count() == 1 and chart.locator("g.row").count() == 8
    # every paired task's wall time rose by the same 600 ms: a hollow dot and a note, not a
    # zero-width interval (so do pass@k and the tokens, unchanged); the cost row has no interval
    assert chart.locator("g.row.bad rect.ci").count() == 4 and chart.locator("g.row rect.ci").count() == 4
    hollow = chart.locator("g.row circle.pt.nv")
    assert hollow.count() == 3 and chart.locator("g.row.bad circle.pt.nv").count() == 1
    assert chart.locator("text.nv").all_text_contents() == ["no variation to estimate an interval from"] * 3
    assert "every paired task changed by the same amount" in hollow.nth(1).locator("title").text_content()
    assert hollow.nth(1).evaluate("c => getComputedStyle(c).fill") == "rgb(255, 255, 255)"
    zero = chart.locator("line.zero").bounding_box()
    first_ci = chart.locator("g.row").nth(0).locator("rect.ci").bounding_box()
    assert first_ci["x"] + first_ci["width"] < zero["x"]  # the first attempt's interval lies below zero
    regressed = section.locator("#comparison-regressions tbody tr")
    assert regressed.count() == 8
    assert regressed.nth(0).locator("td code").first.inner_text() == XSS_TASK
    hrefs = regressed.nth(0).locator("a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert hrefs == ["../runs/base/tasks/%3Cimg%20src%3Dx%20onerror%3D%22window.__xss%20%3D%205%22%3E%7Ctask/attempt-1/",
                     "../runs/cand/tasks/%3Cimg%20src%3Dx%20onerror%3D%22window.__xss%20%3D%205%22%3E%7Ctask/attempt-1/"]
    assert "only_in_candidate" in section.locator("#comparison-unpaired").inner_text()
    assert page.locator("#headline .card.metric .ci.grouped").inner_text() == "95% CI grouped by task [32.8%, 87.2%]"
    assert page.locator("#estimators tbody tr").count() == 2
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    section.screenshot(path=str(ARTIFACTS / "report-comparison.png"))
    page.wait_for_timeout(200)
    assert_clean(w)
    w.page.close()


def test_stability_section_renders(browser: Any, tmp_path: Path) -> None:
    """main_run (k = 3): the within-run stability section, reached from its nav link, counts
    6 classified tasks and lists its 3 flaky ones, each attempt linked to its evidence folder."""
    paths = write_reports(tmp_path / "out", *main_run(), run_dir=tmp_path / "runs" / "r")
    w = open_report(browser, paths["report.html"])
    page = w.page
    page.locator("nav.toc a[href='#stability']").click()
    section = page.locator("#stability")
    assert section.is_visible()
    assert "lower bound" in section.locator("#stability-note").inner_text()
    counts = section.locator("#stability-counts tbody tr")
    assert counts.count() == 5
    assert counts.nth(0).locator("td").inner_text() == "6 of 8 observed"
    assert counts.nth(4).locator("td").inner_text() == "33.3%"
    rows = section.locator("#stability-table tbody tr")
    assert rows.count() == 3
    assert [rows.nth(i).locator("td code").first.inner_text() for i in range(3)] == ["create_event", "set_alarm", "web_search"]
    assert rows.nth(0).locator("td").nth(3).inner_text() == "66.7%"
    assert rows.nth(0).locator("a").evaluate_all("links => links.map(a => a.getAttribute('href'))") == [
        "../runs/r/tasks/create_event/", "../runs/r/tasks/create_event/attempt-2/",
        "../runs/r/tasks/create_event/attempt-3/"]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    section.screenshot(path=str(ARTIFACTS / "report-stability.png"))
    assert_clean(w)
    w.page.close()


HISTOGRAM_TEXT_BOXES = """() => Array.from(document.querySelectorAll('#efficiency figure.chart')).map(f => {
  const svg = f.querySelector('svg.hist');
  return {field: f.dataset.field, scale: svg.dataset.scale, width: svg.viewBox.baseVal.width,
    texts: Array.from(svg.querySelectorAll('text')).map(t => {
      const b = t.getBBox();
      return {cls: t.getAttribute('class'), text: t.textContent, x: b.x, y: b.y, w: b.width, h: b.height};
    })};
})"""


def long_tailed_run() -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any], str]:
    """A generated run whose wall times have a long tail (20-30 s and a few 600 s timeouts)
    and whose token counts put p50 and p90 close together at the axis's left end."""
    metrics, attempts, manifest, run_id = large_run(150, seed=11)
    eligible = [a for a in attempts if a["agent_eligible"] is True]
    for i, a in enumerate(eligible):
        a["task_wall_ms"] = 600_000 if i % 40 == 39 else 20_000 + (i * 7_919) % 10_000
        a["total_tokens"] = 1_000 if i % 10 < 8 else (1_800 if i % 10 == 8 else 20_000 + (i * 997) % 30_000)
    return fill_metrics(metrics, attempts), attempts, manifest, run_id


def test_histogram_labels_do_not_overlap(browser: Any, tmp_path: Path) -> None:
    """The histograms' marker labels (and all their other texts) as Chromium lays them out:
    no two getBBox() rectangles intersect, none leaves the chart; the long tail is cut."""
    from bench_pipeline.reports.histogram import text_width

    paths = write_reports(tmp_path, *long_tailed_run())
    w = open_report(browser, paths["report.html"])
    charts = {c["field"]: c for c in w.page.evaluate(HISTOGRAM_TEXT_BOXES)}
    assert set(charts) == {"task_wall_ms", "total_tokens", "tool_calls", "device_actions"}

    def meets(a: dict, b: dict) -> bool:
        return a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"] and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]

    for field, chart in charts.items():
        boxes = chart["texts"]
        labels = [b for b in boxes if b["cls"].startswith("mlabel")]
        assert [b["text"].split()[0] for b in labels] == ["p50", "p90"], field
        overlapping = [(a["text"], b["text"]) for i, a in enumerate(boxes) for b in boxes[i + 1:] if meets(a, b)]
        assert overlapping == [], (field, overlapping)
        for b in boxes:
            assert 0 <= b["x"] and b["x"] + b["w"] <= chart["width"] and b["w"] > 0, (field, b)
        for b in labels:  # the layout's width estimate is an upper bound of the rendered width
            assert b["w"] <= text_width(b["text"]), (field, b)
    wall = charts["task_wall_ms"]
    captions = " ".join(b["text"] for b in wall["texts"] if "caption" in b["cls"])
    assert wall["scale"] == "linear" and "linear scale cut at 30.0 s" in captions
    assert "+3 attempts above 30.0 s, max 10.0 min" in captions
    p50, p90 = (b for b in charts["total_tokens"]["texts"] if b["cls"].startswith("mlabel"))
    assert p50["y"] + p50["h"] <= p90["y"]  # close together: stacked, p50 above
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    w.page.locator("#efficiency").screenshot(path=str(ARTIFACTS / "report-histograms.png"))
    assert_clean(w)
    w.page.close()


FRAME_TIMED = """(action) => new Promise((resolve) => {
  const t = performance.now();
  if (action === 'sort') { document.querySelector('#attempts button[data-sort="9"]').click(); }
  if (action === 'filter') {
    const s = document.querySelector('#attempts select[data-filter-col="2"]');
    s.value = 'timeout'; s.dispatchEvent(new Event('change'));
  }
  if (action === 'expand') { document.querySelector('#attempts details.a:not([hidden])').open = true; }
  requestAnimationFrame(() => setTimeout(() => resolve(performance.now() - t), 0));
})"""
NAVIGATION = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const paint = performance.getEntriesByName('first-contentful-paint')[0];
  return {fcp: paint ? paint.startTime : null, interactive: nav.domInteractive, load: nav.loadEventEnd};
}"""


def test_large_run_loads_sorts_and_filters(browser: Any, tmp_path: Path) -> None:
    """10,000 attempts: measure size, render, load and interaction times (printed with -s)."""
    metrics, attempts, manifest, run_id = large_run(10_000)
    started = time.perf_counter()
    paths = write_reports(tmp_path, metrics, attempts, manifest, run_id)
    render_s = time.perf_counter() - started
    size_mb = paths["report.html"].stat().st_size / 1e6

    w = open_report(browser, paths["report.html"])
    page = w.page
    nav = page.evaluate(NAVIGATION)
    assert page.locator("#attempts details.a").count() == 10_000
    sort_ms = page.evaluate(FRAME_TIMED, "sort")
    values = page.evaluate(VISIBLE_ATTEMPT_KEYS, 9)
    known = [v for v in values if v is not None]
    assert known == sorted(known) and len(values) == 10_000
    filter_ms = page.evaluate(FRAME_TIMED, "filter")
    shown = int(page.locator("#attempts [data-count]").text_content().split(" of ")[0].replace(",", ""))
    assert 0 < shown < 10_000
    expand_ms = page.evaluate(FRAME_TIMED, "expand")
    assert page.locator("#attempts details.a[open] .detail pre").count() == 1
    print(f"\n10,000 attempts: report.html {size_mb:.1f} MB; render+write {render_s:.2f} s; "
          f"first contentful paint {nav['fcp']:.0f} ms, DOM interactive {nav['interactive']:.0f} ms, "
          f"load {nav['load']:.0f} ms; sort {sort_ms:.0f} ms, filter {filter_ms:.0f} ms, "
          f"first expand {expand_ms:.0f} ms")
    assert size_mb < 30
    assert nav["load"] < 20_000 and sort_ms < 10_000 and filter_ms < 10_000
    assert_clean(w)
    w.page.close()


def test_comparison_words_in_the_browser(browser: Any, tmp_path: Path) -> None:
    """A gate that passes without a margin states the drops that could have gone unseen; a
    section without variation shows no interval (neither in the table nor as a zero-width bar);
    both runs' models and code versions are named, the difference flagged."""
    from bench_pipeline.comparison import comparison_of
    from bench_pipeline.comparison_sides import make_side
    from bench_pipeline.identity import RunIdentity

    def side(run_id: str, lost: set[str], identity: RunIdentity):
        rows, line = [], 0
        for i in range(9):
            task = f"task_{i}"
            for attempt in (1, 2):
                line += 1
                ok = not (attempt == 1 and task in lost)
                rows.append({"task_id": task, "attempt": attempt, "line": line, "success": ok, "agent_eligible": True,
                             "quality_score": None, "task_wall_ms": None, "total_tokens": None, "cost_usd": None,
                             "evidence": {"dir": f"tasks/{task}/attempt-{attempt}"}})
        return make_side(rows, run_id=run_id, suite="android-core", metrics_k=2, identity=identity)

    large = RunIdentity(suite="android-core", model_name="large", model_provider="acme", git_sha="aaa1111", dirty=False)
    small = RunIdentity(suite="android-core", model_name="<b>small</b>", model_provider="acme", git_sha="bbb2222",
                        dirty=True)
    comparison = comparison_of(side("base", set(), large), side("cand", {"task_0", "task_1"}, small))
    assert comparison.result["gate"]["result"] == "pass" and comparison.result["pass_at_k"]["se"] == 0.0
    paths = write_reports(tmp_path / "out", *main_run(), comparison=comparison)
    w = open_report(browser, paths["report.html"])
    section = w.page.locator("#comparison")
    gate = section.locator("#gate-statement").inner_text()
    mde = comparison.result["first_attempt"]["mde80"]
    assert gate.startswith("Release gate: pass: no significant regression of first attempt or task success was found")
    assert f"a true drop in first attempt smaller than {mde * 100:.1f} pp (9 paired tasks) could have gone unseen" in gate
    assert "--max-drop" in gate
    rows = section.locator("#comparison-table tbody tr")
    pass_at_k = rows.nth(1).locator("td")
    assert pass_at_k.nth(4).inner_text() == "n/a (no variation)" and pass_at_k.nth(5).inner_text() == "n/a (no variation)"
    assert "[0.0 pp, 0.0 pp]" not in section.inner_text()
    chart_row = section.locator("svg.dci g.row").nth(1)
    assert chart_row.locator("rect.ci").count() == 0 and chart_row.locator("circle.nv").count() == 1
    identity = section.locator("#comparison-identity")
    assert identity.locator("tr.differs").count() == 2  # model and code version
    assert "<b>small</b> (acme)" in identity.inner_text()  # a name is text, never markup
    assert "this compares two models, not two builds of one agent" in section.locator("ul.identity-notes").inner_text()
    assert_clean(w)
    w.page.close()


def test_sections_collapse_and_open_from_the_nav_bar(browser: Any, tmp_path: Path) -> None:
    """At load the headline, the decision (the comparison's gate) and the failed tasks are shown
    and the long sections are collapsed to their headings (the page is under 60% of its full
    height); a nav link, a task id and the page's address open a section, printing opens
    all; without JavaScript a heading opens its section. Evidence links underline below the
    underscores of task ids."""
    comparison = compared_run(tmp_path / "runs" / "base", tmp_path / "runs" / "cand")
    paths = write_reports(tmp_path / "out", *main_run(), run_dir=tmp_path / "runs" / "r", comparison=comparison)
    w = open_report(browser, paths["report.html"])
    page = w.page
    for shown in ("#headline .card.metric", "#gate-statement", "#failed-tasks table.failed"):
        assert page.locator(shown).first.is_visible(), shown
    for hidden in ("#stability-table", "#exclusions", "#failures svg.hbar", "#efficiency svg.hist", "#task-table",
                   "#attempts .agrid"):
        assert not page.locator(hidden).first.is_visible(), hidden
    assert page.locator("#excluded > details.sec > summary").is_visible()
    collapsed = page.evaluate("document.documentElement.scrollHeight")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report-collapsed.png"), full_page=True)

    open_sections(page, "excluded")
    assert page.locator("#exclusions").is_visible()
    # a task id opens the attempts and filters them to that task
    page.locator("nav.toc a[href='#tasks']").click()
    assert not page.evaluate(SECTION_OPEN, "attempts")
    page.locator("#task-table button.tlink", has_text="send_sms").click()
    assert page.evaluate(SECTION_OPEN, "attempts") and page.locator("#attempts .agrid").is_visible()
    assert page.locator("#attempts [data-count]").inner_text() == "3 of 24"
    # printing shows every section, and puts them back afterwards
    page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
    assert page.evaluate("Array.from(document.querySelectorAll('details.sec')).every(d => d.open)")
    expanded = page.evaluate("document.documentElement.scrollHeight")
    assert collapsed < 0.6 * expanded, (collapsed, expanded)  # 4,685 px against 8,527 here
    page.evaluate("window.dispatchEvent(new Event('afterprint'))")
    assert not page.evaluate(SECTION_OPEN, "failures")
    # evidence links: the underline sits below the descenders, so tasks/set_alarm keeps its underscore
    link = page.locator("#failed-tasks table.failed a").first
    style = link.evaluate("a => { const s = getComputedStyle(a); return [s.textUnderlineOffset, s.textDecorationSkipInk]; }")
    assert style[0] not in ("auto", "0px") and style[1] == "none", style
    assert_clean(w)
    page.close()

    # the page's address opens the section it names
    addressed = browser.new_page(viewport={"width": 1440, "height": 900})
    addressed.goto(paths["report.html"].as_uri() + "#data-quality", wait_until="load")
    assert addressed.evaluate(SECTION_OPEN, "data-quality")
    assert addressed.locator("#data-quality .card").first.is_visible()
    addressed.close()

    context = browser.new_context(java_script_enabled=False)
    plain = context.new_page()
    plain.goto(paths["report.html"].as_uri(), wait_until="load")
    assert not plain.locator("#attempts .agrid").is_visible()
    plain.locator("#attempts > details.sec > summary").click()
    assert plain.locator("#attempts .agrid").is_visible()
    context.close()


def test_an_inconclusive_gate_is_drawn_neither_green_nor_red(browser: Any, tmp_path: Path) -> None:
    """An empty candidate against a baseline of nine tasks, with a margin: the gate is
    inconclusive; in Chromium its box and badge are neither the pass's green nor the fail's
    red, and its words say no task was paired and that a drop of any size could have gone unseen."""
    from bench_pipeline.comparison import comparison_of
    from bench_pipeline.comparison_sides import make_side

    rows = [{"task_id": f"task_{i}", "attempt": 1, "line": i + 1, "success": True, "agent_eligible": True,
             "quality_score": None, "task_wall_ms": None, "total_tokens": None, "cost_usd": None} for i in range(9)]
    comparison = comparison_of(make_side(rows, run_id="base", suite="s", metrics_k=1),
                               make_side([], run_id="cand", suite="s", metrics_k=1), max_drop=0.05)
    assert comparison.result["gate"]["result"] == "inconclusive"
    paths = write_reports(tmp_path / "out", *main_run(), comparison=comparison)
    w = open_report(browser, paths["report.html"])
    section = w.page.locator("#comparison")
    gate = section.locator("#gate-statement")
    assert gate.get_attribute("class") == "gate inconclusive"
    text = gate.inner_text()
    assert text.startswith("Release gate: inconclusive: the data cannot decide")
    assert "the first attempt has no paired task" in text and "a drop of any size could have gone unseen" in text
    assert "first_attempt_no_evidence" in text and "task_success_no_evidence" in text
    style = "(sel) => getComputedStyle(document.querySelector(sel)).backgroundColor"
    green, red = "rgb(218, 251, 225)", "rgb(255, 235, 233)"  # .gate.pass, .gate.fail
    shown = w.page.evaluate(style, "#gate-statement")
    badge = w.page.evaluate(style, "#comparison .gate-badge")
    assert shown not in (green, red) and badge not in (green, red)
    assert shown == badge == "rgb(255, 248, 197)"  # amber
    assert w.page.locator("nav.toc .badge.neutral").inner_text() == "gate inconclusive"
    assert_clean(w)
    w.page.close()


def test_a_very_long_task_id_does_not_widen_the_page(browser: Any, tmp_path: Path) -> None:
    """A 400-character task id in the failed tasks, the stability table and the slowest and
    most expensive tasks breaks inside its cell instead of pushing those tables (and the page)
    to about three times the window's width."""
    from bench_pipeline.outputs import write_run_outputs
    from bench_pipeline.pipeline import run_stages
    from bench_pipeline_tests.run_builder import make_run, row

    long_id = "L" * 400
    metrics = {"task_wall_ms": 1000, "total_tokens": 50, "cost_usd": 0.01}
    rows = [row(long_id, 1, metrics=metrics), row(long_id, 2, status="failed", success=False, metrics=metrics),
            row("b", 1, metrics=metrics), row("b", 2, metrics=metrics)]
    written = write_run_outputs(tmp_path / "out", run_stages(make_run(tmp_path, rows)).processed)
    w = open_report(browser, written["report.html"], width=1280)
    w.page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
    assert w.page.locator("#failed-tasks").inner_text().count(long_id) >= 1
    assert w.page.evaluate("() => document.documentElement.scrollWidth") <= 1280
    assert_clean(w)
    w.page.close()


def test_a_phone_wide_window_scrolls_the_tables_not_the_page(browser: Any, tmp_path: Path) -> None:
    """At 390 px (a phone) with every section and attempt open, the page is as wide as the
    window: the attempts' grid and the wide tables scroll sideways inside themselves, and the
    attempts' grid keeps its columns (it scrolls, it is not squeezed)."""
    comparison = compared_run(tmp_path / "runs" / "base", tmp_path / "runs" / "cand")
    paths = write_reports(tmp_path / "out", *main_run(), comparison=comparison)
    w = open_report(browser, paths["report.html"], width=390)
    w.page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
    assert w.page.evaluate("() => document.documentElement.scrollWidth") == 390
    grid = w.page.evaluate("() => { const g = document.querySelector('.agrid'); return [g.clientWidth, g.scrollWidth]; }")
    assert grid[0] < 390 and grid[1] >= 1040
    assert_clean(w)
    w.page.close()


def test_the_sample_runs_reports_fit_a_phone_wide_window(browser: Any, tmp_path: Path) -> None:
    """The reports a new user opens first: two of the sample runs compared (`bench-pipeline
    compare`), their long run ids in the comparison's notes and warnings, at 390 px: as wide
    as the window (a run id breaks inside the line instead of widening the page)."""
    from bench_pipeline.cli import main as cli_main
    from bench_pipeline.sample_runs import ensure_sample_runs

    ensure_sample_runs(tmp_path / "runs")
    runs = sorted((tmp_path / "runs").iterdir())
    baseline = next(r for r in runs if r.name.startswith("sample-with-data-problems-"))
    candidate = next(r for r in runs if r.name.startswith("sample-clean-") and r.name > "sample-clean-2026-11-28T10")
    assert cli_main(["compare", str(baseline), str(candidate), "--output-dir", str(tmp_path / "out")]) in (0, 1, 3)
    for side in ("baseline", "candidate"):
        w = open_report(browser, tmp_path / "out" / side / "report.html", width=390)
        w.page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
        assert w.page.evaluate("() => document.documentElement.scrollWidth") == 390, side
        assert_clean(w)
        w.page.close()
    assert baseline.name in (tmp_path / "out" / "candidate" / "report.html").read_text()
