"""The suite page (reports/suite_page.py): the numbers of each system's repeats.json as shown,
mean cost per attempt and the Pareto marks by hand, the best-system sentence, links, escaping,
and a page that references nothing outside itself."""

from __future__ import annotations

import html as htmllib
import re
from html.parser import HTMLParser
from pathlib import Path

from bench_pipeline.comparison_sides import make_side
from bench_pipeline.repeats import RepeatRun, repeats
from bench_pipeline.reports.format import fmt_ci, fmt_pct
from bench_pipeline.reports.cost_chart import pareto_front
from bench_pipeline.reports.suite_page import SystemEntry, mean_per_attempt, run_start_order, write_suite_page
from bench_pipeline.reports.view.limits import LIST_CAP
from bench_pipeline.stats import Z_95
from bench_pipeline_tests.fixtures_suite_page import HOSTILE_MODEL, HOSTILE_RUN, NOT_COMPARED, SUITE, catalog, run, suite


class Tables(HTMLParser):
    """Every table's body rows by table id: the cells' text, and the hrefs in each row."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[list[str]]] = {}
        self.attributes: set[str] = set()
        self.links: dict[str, list[list[str]]] = {}
        self._table = self._cell = None
        self._body = False
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.attributes.update(name for name, _ in attrs)
        if tag == "table":
            self._table = a.get("id")
            self.tables[self._table], self.links[self._table] = [], []
        elif tag == "tbody":
            self._body = True
        elif tag == "tr" and self._body:
            self.tables[self._table].append([])
            self.links[self._table].append([])
        elif tag in ("td", "th") and self._body:
            self._cell = []
        elif tag == "a" and self._body and self._table:
            self.links[self._table][-1].append(a["href"])

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[self._table][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tbody":
            self._body = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def page(tmp_path: Path) -> tuple[str, list[SystemEntry]]:
    runs, systems = suite(tmp_path)
    path = write_suite_page(tmp_path / "_suites" / "smoke", SUITE, runs, systems)
    assert path == tmp_path / "_suites" / "smoke" / "index.html"
    return path.read_text(encoding="utf-8"), systems


def interval(s: dict) -> str:
    return f"[{fmt_pct(s['ci95']['lower'])}, {fmt_pct(s['ci95']['upper'])}]"


def test_mean_per_attempt_by_hand():
    rows = [{"task_id": "t1", "attempt": 1, "line": 1, "success": True, "agent_eligible": True, "cost_usd": 9.0},
            {"task_id": "t1", "attempt": 1, "line": 2, "success": True, "agent_eligible": True, "cost_usd": 0.1},
            {"task_id": "t1", "attempt": 2, "line": 3, "success": False, "agent_eligible": True, "cost_usd": 0.3},
            {"task_id": "t2", "attempt": 1, "line": 4, "success": False, "agent_eligible": True, "cost_usd": None},
            {"task_id": "t3", "attempt": 1, "line": 5, "success": None, "agent_eligible": False, "cost_usd": 5.0}]
    one = RepeatRun(make_side(rows, run_id="r1", suite="s", metrics_k=2), None)
    # line 1 is replaced by line 2 (the later line wins), t2 has no cost, t3 is not eligible: (0.1 + 0.3) / 2
    mean, n = mean_per_attempt([one], "cost_usd")
    assert n == 2 and abs(mean - 0.2) < 1e-12
    # a second run adds its attempts to the same mean, not a mean of run means: (0.1 + 0.3 + 0.8) / 3
    other = RepeatRun(make_side([{**rows[0], "cost_usd": 0.8}], run_id="r2", suite="s", metrics_k=2), None)
    mean, n = mean_per_attempt([one, other], "cost_usd")
    assert n == 3 and abs(mean - 0.4) < 1e-12
    assert mean_per_attempt([one], "total_tokens") == (None, 0)  # unknown, not 0


def test_pareto_front_by_hand():
    # (cost, capability): b is cheaper but worse (kept), c is dearer and worse than a (beaten),
    # d ties a exactly (neither beats the other), e has a's capability at a higher cost (beaten)
    a, b, c, d, e = (0.02, 0.6), (0.01, 0.4), (0.03, 0.5), (0.02, 0.6), (0.05, 0.6)
    assert pareto_front([a, b, c, d, e]) == [True, True, False, True, False]
    assert pareto_front([(0.0, 0.0)]) == [True] and pareto_front([]) == []
    # the cheapest is kept even at capability 0, the best even at the highest cost
    assert pareto_front([(0.0, 0.0), (9.0, 1.0), (5.0, 0.5), (6.0, 0.4)]) == [True, True, True, False]


def test_runs_in_start_order_with_links_and_gates(tmp_path):
    html, _ = page(tmp_path)
    t = Tables(html)
    rows = t.tables["runs-table"]
    assert [r[0] for r in rows] == ["a1", "c1", "a2", HOSTILE_RUN, "b2", "d1"]  # started_at, unknown last
    assert [r[1] for r in rows] == ["S1", "S3", "S1", "S2", "S2", "S4"]
    assert rows[0][5:7] == ["75.0%", fmt_ci(0.55, 0.95)] and rows[2][5:7] == ["50.0%", "[30.0%, 70.0%]"]
    # a run not compared says why when its comparison recorded it (a1), as its reports do
    assert [r[8] for r in rows] == [f"no baseline {NOT_COMPARED}", "no baseline", "fail vs a1", "pass vs a2",
                                    "no baseline", "no baseline"]
    assert "(judge &lt;j&gt;, device / os)" in html
    assert rows[5][2] == "n/a"  # unknown start
    # report links relative to the page, percent-encoded; none for the run without a report
    assert t.links["runs-table"] == [["../../a1/report.html"], [], ["../../a%202/report.html"],
                                     ["../../b1/report.html"], ["../../b2/report.html"], ["../../d1/report.html"]]
    # one interval bar per run, in start order
    chart = html[html.index('<div class="run-bars">'):html.index('id="runs-table"')]
    assert chart.count('<svg class="ibar"') == 6
    labels = re.findall(r'<span class="rid">(.*?)</span>', chart)
    assert labels == ["a1", "c1", "a2", 'b1&#34;&gt;&lt;script&gt;window.__xss=1&lt;/script&gt;', "b2", "d1"]


def test_an_inconclusive_gate_is_neither_green_nor_red_and_says_what_is_missing(tmp_path):
    runs, systems = suite(tmp_path)
    by_id = {r["run_id"]: r for r in runs}
    by_id["b2"].update(gate="inconclusive", baseline="a2",
                       gate_reasons=["first_attempt_no_evidence", "task_success_no_evidence"],
                       gate_mde80={"first_attempt": None, "task_success": None})
    by_id["c1"].update(gate="inconclusive", baseline="a1", gate_reasons=["task_success_below_margin"],
                       gate_mde80={"first_attempt": 0.3, "task_success": 0.25})
    html = write_suite_page(tmp_path / "_suites" / "gate", SUITE, runs, systems).read_text(encoding="utf-8")
    rows = {r[0]: r for r in Tables(html).tables["runs-table"]}
    assert rows["b2"][8] == ("inconclusive vs a2 first attempt: no paired task, so nothing was measured; a drop of any "
                             "size could have gone unseen; task success: no paired task, so nothing was measured; a drop "
                             "of any size could have gone unseen")
    assert rows["c1"][8] == ("inconclusive vs a1 task success: its 95% interval reaches below the allowed drop; a drop "
                             "smaller than 25.0 pp could have gone unseen")
    cells = re.findall(r'<td class="(gate-[a-z]+)" data-col="gate" data-gate="([a-z]+)">(\w+) vs', html)
    assert ("gate-inconclusive", "inconclusive", "inconclusive") in cells
    assert all(css == f"gate-{result}" for css, _, result in cells)  # an inconclusive gate is never drawn as a pass
    style = html[html.index("<style"):html.index("</style>")]
    rule = re.search(r"td\.gate-inconclusive \{([^}]*)\}", style).group(1)
    assert "var(--pass)" not in rule and "var(--fail)" not in rule


def test_a_comparison_across_setups_says_so_next_to_its_gate(tmp_path):
    """A run compared with a baseline measured another way (a pin across judges or devices)
    says which parts differ beside its gate; one compared within its setup says nothing more."""
    runs, systems = suite(tmp_path)
    by_id = {r["run_id"]: r for r in runs}
    by_id["b2"].update(gate="pass", baseline="a2", warnings=["metrics_k_differs", "judge_differs", "platform_differs"])
    by_id["c1"].update(gate="pass", baseline="a1", warnings=["skills_differs"])
    html = write_suite_page(tmp_path / "_suites" / "setups", SUITE, runs, systems).read_text(encoding="utf-8")
    rows = {r[0]: r for r in Tables(html).tables["runs-table"]}
    assert rows["b2"][8] == "pass vs a2 measured another way than its baseline: the judges and platforms differ"
    assert rows["c1"][8] == "pass vs a1 measured another way than its baseline: the active skills differ"
    assert rows["a2"][8] == "fail vs a1"


def test_both_intervals_of_a_run_say_which_they_are(tmp_path):
    html, _ = page(tmp_path)
    assert "95% interval (clustered by task, runs pooled)" in html
    assert "95% Wilson interval (this run alone)" in html
    assert "They answer different questions, so they differ." in html


def test_systems_show_repeats_json_numbers(tmp_path):
    html, systems = page(tmp_path)
    rows = Tables(html).tables["systems-table"]
    assert [r[0] for r in rows] == ["S1", "S2", "S3", "S4"]
    for row, entry in zip(rows, systems):
        doc = entry.doc
        fa, ts = doc["pooled"]["first_attempt"], doc["pooled"]["task_success"]
        assert row[2] == str(len(doc["runs"]))
        assert row[3] == f"{fmt_pct(fa['mean'])} {interval(fa)} {fa['n']} tasks"
        assert row[4] == f"{fmt_pct(ts['mean'])} {interval(ts)} {ts['n']} tasks"
        noise, runs = doc["between_runs"]["noise_floor95"], doc["between_runs"]["runs"]
        rough = " (rough: more runs make it firmer)" if runs <= 3 else ""
        assert row[5] == (f"{noise * 100:.1f} pp from {runs} runs{rough}" if noise is not None else "n/a")
        flip = doc["stability"]["flip_rate"]  # a percent, as report.html and repeats.md show it
        assert row[7] == fmt_pct(flip)
    assert rows[0][1] == f"{SUITE} / alpha / sha-a" and rows[1][1] == f"{SUITE} / {HOSTILE_MODEL} / sha-b"
    assert [r[3].split()[0] for r in rows] == ["62.5%", "37.5%", "75.0%", "50.0%"]
    # z * sqrt 2 * sd, sd of 0.75 and 0.5 = 0.25 / sqrt 2; from two runs, a rough floor
    assert rows[0][5] == f"{Z_95 * 0.25 * 100:.1f} pp from 2 runs (rough: more runs make it firmer)"
    assert rows[0][7] == "25.0%"  # 4 classified tasks, t2 flaky with flip 1: 1/4
    # mean cost and tokens per attempt, unknown as n/a (never $0)
    assert [r[8] for r in rows] == ["$0.0200 8 attempts", "$0.0100 8 attempts", "n/a 0 attempts", "$0.0300 4 attempts"]
    assert [r[9] for r in rows] == ["1,000 8 attempts", "n/a 0 attempts", "n/a 0 attempts", "n/a 0 attempts"]
    # Pareto by hand: S1 (62.5%, $0.02) and S2 (37.5%, $0.01) beat each other on one axis only;
    # S4 (50%, $0.03) is beaten by S1; S3 has no cost and is not placed
    assert [r[10] for r in rows] == ["yes", "yes", "n/a", "no"]
    assert all(r[11] == "repeats.md" for r in rows)
    assert Tables(html).links["systems-table"] == [[f"../../_systems/sys-{i}/repeats.md"] for i in range(1, 5)]
    assert "Mean cost and mean tokens per attempt: the mean over every eligible attempt" in html


def test_cost_chart_marks_pareto_and_lists_unknown_cost(tmp_path):
    html, _ = page(tmp_path)
    chart = html[html.index('<svg class="cc"'):]
    chart = chart[:chart.index("</svg>")]
    assert re.findall(r'<g class="(sys[^"]*)" data-label="(S\d)">', chart) == [
        ("sys front", "S1"), ("sys front", "S2"), ("sys", "S4")]
    assert chart.count('class="ci"') == 3 and '<polyline class="frontier"' in chart
    assert "Mean cost per attempt" in chart
    side = html[html.index('id="not-drawn"'):]
    assert "<b>S3</b>" in side[:side.index("</ul>")] and "no cost recorded" in side[:side.index("</ul>")]
    assert "Here: S1, S2." in html


def test_runs_per_side_beside_the_noise_floor_are_repeats_json_s(tmp_path):
    html, systems = page(tmp_path)
    cells = re.findall(r'<td class="num plan" data-col="plan">(.*?)</td>', html, re.S)
    assert len(cells) == len(systems)
    for cell, entry in zip(cells, systems):
        plan = entry.doc["planning"]["first_attempt"]
        if plan["within_task_var"] is None:  # S3 and S4: one run each, the noise cannot be measured
            assert cell == '<span class="muted small">n/a: fewer than two runs of any task</span>'
            continue
        lines = re.findall(r"<div>(.*?)</div>", cell)
        assert lines == [f"{round(e['change'] * 100):d} pp: {e['runs_per_side']:,}" for e in plan["runs_needed"]]
        points = re.findall(r'data-runs="(\d+)" data-mde80="([^"]+)"><title>(.*?)</title>', cell)
        assert [(int(r), float(m)) for r, m, _ in points] == [(e["runs_per_side"], e["mde80"])
                                                              for e in plan["mde80_by_runs"]]
        assert [t for _, _, t in points][:2] == [f"1 run per side: {plan['mde80_by_runs'][0]['mde80'] * 100:.1f} pp",
                                                 f"2 runs per side: {plan['mde80_by_runs'][1]['mde80'] * 100:.1f} pp"]
    # S1: t2 flips (1, 0) over two runs: within = (1/2) / 4 = 1/8; runs(d) = ceil(2 (1/8) zp^2 / (4 d^2))
    assert re.findall(r"<div>(.*?)</div>", cells[0]) == ["2 pp: 1,227", "5 pp: 197", "10 pp: 50"]
    assert 'id="plan-note"' in html and "when the change is the same on every task" in html


def test_best_system_sentence_within_noise(tmp_path):
    html, systems = page(tmp_path)
    sentence = re.search(r'<p class="answer" id="best-sentence">(.*?)</p>', html, re.S).group(1)
    # S3 75.0% is best, S1 62.5% next: 12.5 points; S1's noise floor 49.0 pp (S3 has one run)
    assert sentence.startswith(f"S3 ({SUITE.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')} / gamma / "
                               "sha-c) has the highest pooled first attempt, 75.0%")
    assert "12.5 pp (percentage points) above the next, S1" in sentence
    assert "Their 95% intervals (clustered by task) overlap" in sentence
    assert "is not a test of the difference" in sentence
    noise = systems[0].doc["between_runs"]["noise_floor95"]
    assert f"within run-to-run noise: below the larger noise floor of the two, {noise * 100:.1f} pp" in sentence
    assert "S3&#39;s noise floor is unknown" in sentence
    command = htmllib.unescape(re.search(r'<pre class="cmd" id="best-command">(.*?)</pre>', html, re.S).group(1))
    # the command as the README runs it, from the project folder
    assert command == (f".venv/bin/bench-pipeline compare --baseline {tmp_path / 'a1'} --baseline '{tmp_path / 'a 2'}' "
                       f"--candidate {tmp_path / 'c1'} --output-dir OUT")


def test_best_system_beyond_noise_and_tokens_axis(tmp_path):
    """Two systems, three identical runs each (noise floor 0), intervals apart; no cost, so the
    chart's x axis is the mean tokens per attempt."""
    tasks = [f"t{i:02d}" for i in range(10)]
    good = [run(f"g{r}", {t: [t != "t09"] for t in tasks}, model="good", sha="s", started=f"2026-11-0{r + 1}",
                pass_at_1=0.9, run_dir=tmp_path / f"g{r}", tokens=2000, suite="s") for r in range(3)]
    poor = [run(f"p{r}", {t: [t == "t00"] for t in tasks}, model="poor", sha="s", started=f"2026-11-0{r + 4}",
                pass_at_1=0.1, run_dir=tmp_path / f"p{r}", tokens=500, suite="s") for r in range(3)]
    systems = [SystemEntry("g", repeats(good), good), SystemEntry("p", repeats(poor), poor)]
    path = write_suite_page(tmp_path / "out", "s", [catalog(r, tmp_path) for r in good + poor], systems)
    html = path.read_text(encoding="utf-8")
    sentence = re.search(r'id="best-sentence">(.*?)</p>', html, re.S).group(1)
    assert "S1 (s / good / s) has the highest pooled first attempt, 90.0% [70.4%, 100.0%]" in sentence
    assert "80.0 pp (percentage points) above the next, S2 (s / poor / s), at 10.0% [0.0%, 29.6%]" in sentence
    assert "do not overlap; but whether two separate intervals overlap is not a test" in sentence
    assert "The gap exceeds the larger noise floor of the two, 0.0 pp" in sentence
    assert "Mean tokens per attempt" in html and "Here: S1, S2." in html  # S2 is cheaper
    assert Tables(html).tables["systems-table"][1][9] == "500 30 attempts"
    assert "<p>No flaky task in any system.</p>" in html


def test_one_system_and_no_system(tmp_path):
    only = [run("r1", {"t": [True]}, model="m", sha="s", started=None, pass_at_1=1.0, run_dir=tmp_path / "r1",
                suite="s")]
    html = write_suite_page(tmp_path / "one", "s", [catalog(only[0], tmp_path)],
                            [SystemEntry("x", repeats(only), only)]).read_text(encoding="utf-8")
    assert "Only S1 (s / m / s) has a pooled first attempt (100.0%): there is no other system" in html
    assert 'id="best-command"' not in html and "<span class=\"muted\">n/a</span>" in html  # no repeats.md
    html = write_suite_page(tmp_path / "none", None, [], []).read_text(encoding="utf-8")
    assert "No system has a pooled first attempt" in html and '<h1 id="suite-name">unknown</h1>' in html


def test_flaky_tasks_across_systems_with_evidence(tmp_path):
    html, _ = page(tmp_path)
    t = Tables(html)
    # t2 flips in S1 (a1 pass, a2 fail), t3 in S2 (b1 fail, b2 pass); flip 1 each, by task id.
    # In the other systems: stable (two attempts that agree) or n/a (one attempt: not classified)
    assert t.tables["flaky-table"] == [
        ["t2", "100.0%", "stable", "n/a", "n/a",
         "S1 a1 · S1 a2 · S2 " + HOSTILE_RUN + " · S2 b2 · S3 c1 · S4 d1"],
        ["t3", "stable", "100.0%", "n/a", "n/a",
         "S1 a1 · S1 a2 · S2 " + HOSTILE_RUN + " · S2 b2 · S3 c1 · S4 d1"]]
    assert t.links["flaky-table"][0] == ["../../a1/evidence/t2/1/", "../../a%202/evidence/t2/1/",
                                         "../../b1/evidence/t2/1/", "../../b2/evidence/t2/1/",
                                         "../../c1/evidence/t2/1/", "../../d1/evidence/t2/1/"]
    assert 'id="flaky-more"' not in html


def test_a_systems_warning_in_words(tmp_path):
    """Two runs of one system with different metrics_k: the systems table labels the warning in
    words, its sentence and repeats.json's code in the title; one task, one attempt, agree."""
    rs = [RepeatRun(make_side([{"task_id": "t", "attempt": 1, "line": 1, "success": True, "agent_eligible": True,
                                "evidence": {"dir": "e"}}], run_id=f"r{k}", suite="s", metrics_k=k,
                               run_dir=tmp_path / f"r{k}"), 1.0) for k in (1, 2)]
    html = write_suite_page(tmp_path / "out", "s", [], [SystemEntry("x", repeats(rs), rs)]).read_text(encoding="utf-8")
    badge = re.search(r'<span class="badge warn" data-warning="metrics_k_differs" title="([^"]*)">([^<]*)</span>', html)
    assert badge is not None and badge.group(2) == "metrics_k differs"
    assert htmllib.unescape(badge.group(1)) == (
        "The runs' metrics_k differ: pass@k and pass^k use the smallest k (none when any is unknown). "
        "(repeats.json warning metrics_k_differs)")
    assert Tables(html).tables["systems-table"][0][3].endswith(" 1 task")


def test_flaky_tasks_capped(tmp_path):
    tasks = [f"t{i:02d}" for i in range(LIST_CAP + 3)]
    rs = [run(f"r{r}", {t: [r == 0] for t in tasks}, model="m", sha="s", started=f"2026-11-0{r + 1}",
              pass_at_1=float(r == 0), run_dir=tmp_path / f"r{r}") for r in range(2)]
    html = write_suite_page(tmp_path / "out", "s", [catalog(r, tmp_path) for r in rs],
                            [SystemEntry("x", repeats(rs), rs)]).read_text(encoding="utf-8")
    rows = Tables(html).tables["flaky-table"]
    assert len(rows) == LIST_CAP and [r[0] for r in rows] == tasks[:LIST_CAP]
    assert "… and 3 more flaky tasks" in html


def test_names_escaped_and_nothing_external(tmp_path):
    html, _ = page(tmp_path)
    assert HOSTILE_MODEL not in html and "<script" not in html and HOSTILE_RUN not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "b1&#34;&gt;&lt;script&gt;window.__xss=1&lt;/script&gt;" in html
    assert "smoke &amp; &lt;suite&gt;" in html
    for needle in ("http://", "https://", "<link", "@import", "url("):
        assert needle not in html, needle
    attributes = Tables(html).attributes
    assert "src" not in attributes and "srcset" not in attributes  # no element loads anything
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', html).group(1)
    assert htmllib.unescape(csp).startswith("default-src 'none';") and "script-src &#39;none&#39;" in csp
    hrefs = re.findall(r'href="([^"]*)"', html)
    assert hrefs and all(h.startswith(("#", "../")) for h in hrefs), hrefs


def test_run_start_order():
    rows = [{"run_id": "b", "started_at": None}, {"run_id": "c", "started_at": "2026-01-02"},
            {"run_id": "a", "started_at": None}, {"run_id": "d", "started_at": "2026-01-01"}]
    assert [r["run_id"] for r in run_start_order(rows)] == ["d", "c", "a", "b"]


def test_a_page_lists_the_latest_runs_and_their_systems_only(tmp_path, monkeypatch):
    """With more runs than RUNS_SHOWN, the page lists the latest ones in start order (a run
    without a start counts as the latest) and only the systems they belong to, and says how
    many the suite has; at or under the bound nothing is cut and nothing is said."""
    import bench_pipeline.reports.suite_page as suite_page

    rows, systems = suite(tmp_path)
    shown, kept = suite_page.latest_runs(rows, systems, 3)
    assert [r["run_id"] for r in shown] == [HOSTILE_RUN, "b2", "d1"]  # d1 has no start: last
    assert [e.slug for e in kept] == ["sys-2", "sys-4"]
    assert suite_page.latest_runs(rows, systems, 6) == (run_start_order(rows), systems)

    monkeypatch.setattr(suite_page, "RUNS_SHOWN", 4)  # a2, b1, b2, d1: systems 1, 2 and 4
    html = write_suite_page(tmp_path / "page", SUITE, rows, systems).read_text()
    t = Tables(html)
    assert [r[0] for r in t.tables["runs-table"]] == ["a2", HOSTILE_RUN, "b2", "d1"]
    assert [r[0] for r in t.tables["systems-table"]] == ["S1", "S2", "S3"]
    assert [r[1] for r in t.tables["runs-table"]] == ["S1", "S2", "S2", "S3"]
    cut = htmllib.unescape(re.sub(r"<[^>]+>", "", re.search(r'<p class="muted" id="page-cut">(.*?)</p>', html,
                                                                  re.S).group(1)))
    assert cut.startswith("This page shows the latest 4 runs of the suite's 6 runs and the 3 systems they belong "
                          "to, of 4 systems;")
    monkeypatch.setattr(suite_page, "RUNS_SHOWN", 6)
    assert 'id="page-cut"' not in write_suite_page(tmp_path / "all", SUITE, rows, systems).read_text()
