"""summary.md and report.html content (fast; the browser checks are in test_report_browser.py)."""

from __future__ import annotations

import copy
import html
import json
import re
from pathlib import Path

import pytest

from bench_pipeline import reports
from bench_pipeline.capability import per_task
from bench_pipeline.jsonio import EncodedJSON
from bench_pipeline.reports import render_report_html, render_summary_md, write_reports
from bench_pipeline.reports.view.resources import EFFICIENCY_ROWS
from bench_pipeline.task_groups import group_tasks
from bench_pipeline.vocabulary import COST_FIELDS, EFFICIENCY_FIELDS, RELIABILITY_FIELDS
from bench_pipeline_tests.fixtures_reports import (
    XSS_ARG,
    XSS_ERROR,
    XSS_FINAL_RESPONSE,
    XSS_REASON,
    k1_run,
    large_run,
    main_run,
    numbers,
    record,
)
from bench_pipeline_tests.support.markdown import section, table_rows
from bench_pipeline_tests.support.svg import assert_marker_labels_apart, svg_tree, texts

K1_CAUTION = "a single attempt cannot demonstrate repeatability"


@pytest.fixture(scope="module")
def run() -> tuple:
    return main_run()


@pytest.fixture(scope="module")
def summary(run: tuple) -> str:
    return render_summary_md(*run)


@pytest.fixture(scope="module")
def page(run: tuple) -> str:
    return render_report_html(*run)


def without_code_spans(md: str) -> str:
    """Markdown with inline code spans removed (their content is inert)."""
    return re.sub(r"(`+)(?:(?!\1).)*?\1", "", md)


def pct(value: float) -> str:
    return f"{value * 100:.1f}%"


# ------------------------------------------------------------------------------- summary.md


def test_headline_numbers_with_intervals(run: tuple, summary: str) -> None:
    metrics = run[0]
    rows = {r[0]: r for r in table_rows(section(summary, "Headline capability"))}
    for key, label, unit in (("pass_at_1", "pass@1", "tasks"), ("pass_at_k", "pass@k (k=3)", "tasks"),
                             ("pass_pow_k", "pass^k (k=3)", "tasks")):
        m = metrics["capability"][key]
        assert rows[label] == [label, f"**{pct(m['value'])}**", f"[{pct(m['ci95']['lower'])}, {pct(m['ci95']['upper'])}]",
                               "— (one trial per task)",
                               f"{m['successes']} / {m['eligible_tasks']} / {m['total_tasks']} {unit}",
                               pct(metrics["coverage"][key])]
    a = metrics["capability"]["attempt_success_rate"]
    g = metrics["uncertainty"]["attempt_success_rate"]["ci95"]
    assert rows["Attempt success"][1:] == [f"**{pct(a['value'])}**", f"[{pct(a['ci95']['lower'])}, {pct(a['ci95']['upper'])}]",
                                           f"[{pct(g['lower'])}, {pct(g['upper'])}]",
                                           f"{a['successes']} / {a['eligible_attempts']} / {a['total_attempts']} attempts",
                                           pct(a["coverage"])]
    # the literal hand-checked values of the fixture
    assert "| pass@1 | **66.7%** | [30.0%, 90.3%] | — (one trial per task) | 4 / 6 / 8 tasks | 75.0% |" in summary
    assert "| pass^k (k=3) | **20.0%** | [3.6%, 62.4%] | — (one trial per task) | 1 / 5 / 8 tasks | 62.5% |" in summary
    # 20 eligible attempts of 8 tasks, 12 successes: the interval grouped by task is wider
    assert "| Attempt success | **60.0%** | [38.7%, 78.1%] | [32.8%, 87.2%] | 12 / 20 / 24 attempts | 83.3% |" in summary
    assert "## Headline capability (k = 3)" in summary
    assert "Oracle best score@k: 0.95 (5 of 5" in summary


def test_cautions_follow_the_reference(summary: str) -> None:
    headline = section(summary, "Headline capability")
    assert "ignores within-task correlation" in headline
    assert "Unknown is not failure" in headline
    assert "not better first-attempt reliability" in headline
    assert "missing planned attempts: 1" in headline
    assert K1_CAUTION not in summary
    failures = section(summary, "Failures by class and stage")
    assert "different populations" in failures
    assert "status `skipped` and class `skipped` describe the same attempt" in failures


def test_the_headline_cautions_read_the_headline_not_the_estimates(summary: str) -> None:
    """"observed fixed-k outcomes, not estimates" sits with the headline table it describes,
    before the table of estimates, not under it."""
    headline = section(summary, "Headline capability")
    caution = headline.index("The headline's pass@k and pass^k are observed fixed-k outcomes")
    table_end = headline.index("| Attempt success |")
    estimates = headline.index("### Estimates from every combination of attempts")
    assert table_end < headline.index("How to read the headline:") < caution < estimates
    assert "How to read these" not in summary


def test_where_k_came_from_is_said(run: tuple, summary: str, page: str) -> None:
    """main_run's manifest gives metrics_k 3; without it, k = 3 comes from the plan, and both
    reports say so beside "metrics_k not given"."""
    assert "k = 3 (from the manifest's metrics_k)" in summary
    assert '<span class="ksrc">from the manifest&#39;s metrics_k</span>' in page
    metrics, attempts, manifest, run_id = copy.deepcopy(run)
    del manifest["metrics_k"]
    md = render_summary_md(metrics, attempts, manifest, run_id)
    facts = dict((r[0], r[1]) for r in table_rows(section(md, "Run facts"))[2:])
    assert "metrics\\_k not given" in facts["Repeat plan"] and "n/a" not in facts["Repeat plan"]
    assert facts["k"] == "3, from the plan: the manifest gives no metrics\\_k, so k is the fewest attempts the plan gives a task"
    assert "k = 3 (from the plan)" in md
    other = render_report_html(metrics, attempts, manifest, run_id)
    assert '<span class="ksrc">from the plan</span>' in other
    assert "<dt>k</dt><dd>3, from the plan: the manifest gives no metrics_k" in other


def test_k1_caution() -> None:
    md = render_summary_md(*k1_run())
    assert K1_CAUTION in md
    assert "k = 1: pass@1, pass@k and pass^k coincide on the same eligible task set" in md
    assert "## Headline capability (k = 1)" in md
    html_text = render_report_html(*k1_run())
    assert K1_CAUTION in html_text


def test_exclusion_table_counts(summary: str) -> None:
    rows = table_rows(section(summary, "What was excluded and why"))
    counts = {(r[0], r[1], r[2]): int(r[3]) for r in rows[2:]}
    assert counts == {
        ("`passed`", "— (none)", "yes"): 12,
        ("`failed`", "`agent`", "yes"): 5,
        ("`failed`", "`unknown`", "yes"): 2,
        ("`timeout`", "`agent`", "yes"): 1,
        ("`failed`", "`environment`", "no"): 1,
        ("`timeout`", "`unknown`", "no"): 1,
        ("`judge_error`", "`evaluation`", "no"): 1,
        ("`skipped`", "`skipped`", "no"): 1,
    }
    assert sum(counts.values()) == 24
    denominators = {(r[0], r[1]): r[5] for r in rows[2:]}
    assert denominators[("`timeout`", "`unknown`")] == "no"
    assert "4 of 24 attempt rows (16.7%) are not agent-eligible" in summary
    text = section(summary, "What was excluded and why")
    assert "pass@1 (2 tasks without an eligible attempt 1): `recall_contact`" in text
    assert "`read_notification` (attempt 3 missing)" in text
    assert "bad rows (unreadable results.jsonl lines): 1; planned attempts with no result row: 1" in text


def test_failure_class_and_stage_tables(run: tuple, summary: str) -> None:
    text = section(summary, "Failures by class and stage")
    class_md, stage_md = text.split("| First failure stage |")
    classes = {r[0]: r[1] for r in table_rows(class_md)[2:]}
    stages = {r[0]: r[1] for r in table_rows("| First failure stage |" + stage_md)[2:]}
    assert classes == {f"`{k}`": str(v) for k, v in run[0]["failures"]["class"].items()}
    assert stages == {f"`{k}`": str(v) for k, v in run[0]["failures"]["stage"].items()}
    assert list(stages)[:3] == ["`setup`", "`perception`", "`planning`"]  # vocabulary order, zeros kept
    assert "Failure-stage coverage: 50.0%" in summary


def test_failed_tasks_list_every_attempt_with_its_evidence_folder(run: tuple, summary: str) -> None:
    text = section(summary, "Failed tasks and their evidence")
    rows = table_rows(text)[2:]
    listed = {(r[0].strip("`"), int(r[1])): r[7] for r in rows}
    attempts = run[1]
    failed_tasks = {a["task_id"] for a in attempts if a["status"] != "passed"}
    assert {t for t, _ in listed} == failed_tasks
    assert "read_notification" not in failed_tasks and "open_settings" not in failed_tasks
    latest = {(a["task_id"], a["attempt"]): a for a in sorted(attempts, key=lambda a: a["line"])}
    for (task_id, n), rec in latest.items():
        if task_id in failed_tasks:
            assert listed[(task_id, n)] == f"`{rec['evidence']['dir']}`"
    assert "| `send_sms` | 2 | `failed` | `agent` | yes | `device_execution` | 0.00 | `tasks/send_sms/attempt-2` | available |" in text
    assert "`agent_error: tap failed: element not found (id=send_button)`" in text
    # failing tasks first: send_sms passed nothing
    assert rows[0][0] == "`send_sms`"


def test_nulls_render_as_na_never_zero(summary: str) -> None:
    assert "| Cost (USD) | 0 | n/a | n/a | n/a | n/a | n/a |" in summary
    assert "| Agent retries | 0 | n/a | n/a | n/a | n/a | n/a |" in summary
    failed = {(r[0], r[1]): r for r in table_rows(section(summary, "Failed tasks and their evidence"))[2:]}
    assert failed[("`recall_contact`", "1")][6] == "n/a"      # quality null (timeout without evidence)
    assert failed[("`recall_contact`", "1")][6] != "0.00"
    expensive = section(summary, "Failed tasks")  # cost column of the token ranking is n/a, not $0
    assert "$0.0000" not in summary and "$0" not in expensive


def _r30_run() -> tuple:
    """main_run with an ineligible judge error that has a wall time and a quality
    (recall_contact attempt 3) and a task without an eligible attempt (never_eligible),
    aggregate.per_task computed by the formulas (R30)."""
    metrics, attempts, manifest, run_id = main_run()
    judge_error = next(a for a in attempts if a["task_id"] == "recall_contact" and a["attempt"] == 3)
    judge_error.update(task_wall_ms=90_000, quality_score=0.4)
    for n, status, cls, wall, quality in ((1, "skipped", "skipped", None, None),
                                          (2, "judge_error", "evaluation", 45_000, 0.8)):
        rec = record("toggle_wifi", n, 30 + n, status, success=None, eligible=False, cls=cls, quality=quality,
                     rubric=(None, None), nums=numbers(wall, 2_000, None, None, None, None))
        rec["task_id"] = "never_eligible"
        attempts.append(rec)
    metrics["aggregate"]["per_task"] = per_task(group_tasks(attempts, 3))
    return metrics, attempts, manifest, run_id


def test_per_task_numbers_use_eligible_attempts_in_both_reports() -> None:
    """R30: the ineligible judge error's 90 s and 0.4 are left out (recall_contact: eligible
    attempt 2 only, 33.5 s and 1.00, not 61.7 s and 0.70); a task without an eligible attempt
    is listed in the task table with n/a and is not ranked among the slowest."""
    run = _r30_run()
    pt = run[0]["aggregate"]["per_task"]
    assert (pt["recall_contact"]["avg_wall_ms"], pt["recall_contact"]["avg_quality"]) == (33_480, 1.0)
    assert pt["never_eligible"] == {"attempts": 2, "eligible_attempts": 0, "passed": 0, "failed": 0,
                                    "pass_rate": None, "best_quality": None, "avg_quality": None,
                                    "avg_wall_ms": None, "first_attempt_passed": None}
    md = render_summary_md(*run)
    slowest = md[md.index("### Slowest tasks"):md.index("### Most expensive tasks")]
    assert "over the task's eligible attempts with a value (aggregate.per_task.avg_wall_ms)" in slowest
    assert "ineligible attempts included" not in md
    assert "| `recall_contact` | 3 | 33.5 s | 33.5 s | 100.0% |" in slowest
    assert "never_eligible" not in slowest
    page = render_report_html(*run)
    assert "<td><code>recall_contact</code></td><td class=\"num\">3</td><td class=\"num\">33.5 s</td><td class=\"num\">33.5 s</td>" in page
    rows = {re.search(r'data-task="([^"]+)"', r).group(1): r for r in re.findall(r"<tr data-i=.*?</tr>", page)}
    cells = {task: re.findall(r'<td class="num">([^<]*)</td>', row) for task, row in rows.items()}
    # eligible, passed, failed, pass rate, best q., avg q., avg wall, mean tokens (all attempts)
    assert cells["recall_contact"] == ["1", "1", "0", "100.0%", "1.00", "1.00", "33.5 s", "26,378"]
    assert cells["never_eligible"][:7] == ["0", "0", "0", "n/a", "n/a", "n/a", "n/a"]
    assert 'title="mean task wall time of the eligible attempts with one"' in page


def test_data_quality_findings(summary: str) -> None:
    text = section(summary, "Data quality")
    assert "line 25 (task\\_id is not a string)" in text
    assert "`web_search` attempt 2 on lines 20, 24" in text
    assert "`read_notification` attempt 3" in text
    assert "line 23 `read_notification` attempt 2 `tasks/../../outside/read_notification`" in text
    assert "`available` 19, `missing` 4, `invalid` 1" in text
    assert ("Unreadable or invalid artifact files (that file's values are n/a): 1: line 10 `create_event` "
            "attempt 1 `tasks/create_event/trace.json` invalid (not valid JSON") in text
    assert ("Problems found in the run files manifest.json and suite.json (missing, unreadable or invalid, "
            "a manifest value of the wrong type: metrics_k, started_at, the planned list, "
            "or a missing-attempts list too long to name in full), in a re-judged results copy (not read, or empty) "
            "and object keys refused when a run in a bucket "
            "was copied: 1: `suite.json` invalid "
            "(tasks is not a list \\<b\\>of") in text


def _attempt(attempts: list, task_id: str, n: int) -> dict:
    return next(a for a in attempts if a["task_id"] == task_id and a["attempt"] == n)


TIMEOUT_READING = ("Excluded from every capability denominator: timeout without evidence that execution "
                   "started; success derived false from status, raw unknown.")


def test_timeout_without_evidence_reading_agrees_with_its_derived_outcome() -> None:
    """Reference 2: the legacy rule derives success false from status timeout when the raw
    value is unknown; the reading says so instead of "not a failure"."""
    metrics, attempts, manifest, run_id = main_run()
    _attempt(attempts, "recall_contact", 1).update(success=False, success_raw=None)  # as the pipeline derives it
    md = render_summary_md(metrics, attempts, manifest, run_id)
    rows = {(r[0], r[1], r[2]): r for r in table_rows(section(md, "What was excluded and why"))[2:]}
    assert rows[("`timeout`", "`unknown`", "no")][3:] == [
        "1", "1 failure (from status; raw unknown)", "no", TIMEOUT_READING]
    page = render_report_html(metrics, attempts, manifest, run_id)
    for text in (md, page):
        assert "not a failure" not in text
    assert (f'<td class="nowrap">1 failure (from status; raw unknown)</td><td>no</td>'
            f'<td class="reading">{TIMEOUT_READING}</td>') in page
    details = json.loads(re.search(r'id="report-details">(.*?)</script>', page, re.S).group(1))
    line = details["labels"].index("Results line")
    notes = [s[2] for d in details["details"] if d[0][line] == "13" for s in d[1] if s[0] == "Note"]
    assert notes == [TIMEOUT_READING]


def test_timeout_reading_without_a_derived_outcome(summary: str) -> None:
    """The fixture's row keeps success null: the reading adds no outcome of its own."""
    rows = {(r[0], r[1], r[2]): r for r in table_rows(section(summary, "What was excluded and why"))[2:]}
    assert rows[("`timeout`", "`unknown`", "no")][4:] == [
        "1 unknown", "no",
        "Excluded from every capability denominator: timeout without evidence that execution started."]


def test_run_file_problems_and_attempt_rows_say_what_they_count(summary: str, page: str) -> None:
    coverage = dict((r[0], r[1]) for r in table_rows(section(summary, "Headline capability"))[2:] if len(r) == 2)
    label = "Attempt rows, as aggregate.tasks (the name kept for older readers of metrics.json)"
    assert coverage[label] == "24"
    assert f'<tr><th scope="row">{label}</th><td class="num">24</td></tr>' in page
    md_k1, page_k1 = render_summary_md(*k1_run()), render_report_html(*k1_run())
    assert ("- Problems found in the run files manifest.json and suite.json (missing, unreadable or invalid, "
            "a manifest value of the wrong type: metrics_k, started_at, the planned list, "
            "or a missing-attempts list too long to name in full), in a re-judged results copy (not read, or empty) "
            "and object keys refused when a run in a bucket "
            "was copied: 0\n") in md_k1
    assert ('<h3>Run-file problems <span class="muted">0 · found in manifest.json and suite.json: missing, '
            'unreadable or invalid, a manifest value of the wrong type (metrics_k, started_at, the planned list), '
            'or a missing-attempts list too long to name in full; in a re-judged results '
            'copy: not read, or empty; object keys refused when '
            'a run in a bucket was copied</span></h3>') in page_k1
    assert '<h3>Run-file problems <span class="muted">1 · found in manifest.json' in page
    for text in (summary, page, md_k1, page_k1):
        assert "Legacy aggregate.tasks" not in text and "Run files (manifest.json, suite.json)" not in text


def test_eligible_failure_without_a_stage_is_unknown_in_every_list() -> None:
    """failures.stage counts an eligible failure without a stage label as unknown; the failed
    task tables, the attempt table and its details say `unknown` too, not a dash. Other rows
    without a stage keep the dash."""
    metrics, attempts, manifest, run_id = main_run()
    _attempt(attempts, "set_alarm", 2)["first_failure_stage"] = None  # eligible, success false
    md = render_summary_md(metrics, attempts, manifest, run_id)
    failed = {(r[0], r[1]): r for r in table_rows(section(md, "Failed tasks and their evidence"))[2:]}
    assert failed[("`set_alarm`", "2")][5] == "`unknown`"
    assert failed[("`set_alarm`", "1")][5] == "—"        # passed: no failure stage
    page = render_report_html(metrics, attempts, manifest, run_id)
    table = re.search(r'<table class="data compact failed">(.*?)</table>', page, re.S).group(1)
    body = next(b for b in re.findall(r"<tbody>(.*?)</tbody>", table, re.S) if "<code>set_alarm</code>" in b)
    stages = [re.findall(r"<td>([^<]*)</td>", row)[2] for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]
    assert stages == ["—", "unknown", "—"]
    keys = json.loads(re.search(r'id="report-data">(.*?)</script>', page, re.S).group(1))["attempts"]["keys"]
    assert [k[6] for k in keys if k[0] == "set_alarm"] == [None, "unknown", None]
    details = json.loads(re.search(r'id="report-details">(.*?)</script>', page, re.S).group(1))
    labels = details["labels"]
    by_line = {d[0][labels.index("Results line")]: d[0] for d in details["details"]}
    assert by_line["5"][labels.index("First failure stage")] == "unknown"
    assert by_line["4"][labels.index("First failure stage")] == "n/a"


def test_html_data_quality_lists_and_counts_every_finding(page: str) -> None:
    """Every entry of metrics.json's data_quality lists, as the command's summary line counts
    them: bad, duplicate, missing, unsafe, invalid artifact, run file (one each here)."""
    block = re.search(r'<section id="data-quality">(.*?)</section>', page, re.S).group(1)
    assert "6 findings" in block
    assert ("line 10 <code>create_event</code> attempt 1: <code>tasks/create_event/trace.json</code> invalid "
            "(not valid JSON") in block
    assert "<code>suite.json</code> invalid: tasks is not a list &lt;b&gt;of&lt;/b&gt; objects" in block
    assert 'Data quality <span class="badge warn">6</span>' in page


SECTIONS_OPEN = {"run": True, "headline": True, "stability": False, "comparison": True, "excluded": False,
                 "failures": False, "efficiency": False, "failed-tasks": True, "tasks": False, "attempts": False,
                 "data-quality": False, "categories": False}


def test_long_sections_are_collapsed_the_headline_decision_and_failed_tasks_open(run: tuple) -> None:
    """Every section is a <details> whose summary is its heading (no script needed to open
    one); open by default: run facts, the headline, the comparison (the decision) and the
    failed tasks; a collapsed section's heading still carries its numbers."""
    from bench_pipeline_tests.fixtures_reports import compared_run

    page = render_report_html(*run, comparison=compared_run())
    found = dict(re.findall(r'<section id="([\w-]+)"[^>]*>\s*<details class="sec"( open)?>\s*<summary><h2>', page))
    assert {k: v == " open" for k, v in found.items()} == SECTIONS_OPEN
    assert [f'href="#{k}"' in page for k in SECTIONS_OPEN if k != "categories"] == [True] * 11  # the nav reaches them
    summaries = {k: " ".join(html.unescape(re.sub(r"<[^>]+>", " ", v)).split()) for k, v in re.findall(
        r'<section id="([\w-]+)"[^>]*>\s*<details class="sec"(?: open)?>\s*<summary>(.*?)</summary>', page, re.S)}
    assert summaries["stability"].startswith("Within-run stability 3 flaky tasks of 6 classified · flip rate 33.3%")
    assert summaries["excluded"].startswith("What was excluded and why 4 of 24 attempt rows not agent-eligible")
    assert summaries["data-quality"].startswith("Data quality 6 6 findings")
    assert summaries["attempts"].startswith("Attempts 24 rows, in results.jsonl order")
    assert summaries["comparison"].startswith("Compared with base-<script>window.__xss = 6</script> gate FAIL")
    script = reports.write._asset("report.js")
    assert 'querySelector(":scope > details.sec")' in script and "beforeprint" in script


def test_warnings_are_words_with_their_code_as_a_small_label(run: tuple) -> None:
    """report.html says a comparison warning in words; the code (comparison.json's) is a small
    secondary label, never the lead of the line."""
    from bench_pipeline_tests.fixtures_reports import compared_run

    page = render_report_html(*run, comparison=compared_run())
    item = re.search(r'<li data-warning="suite_differs">(.*?)</li>', page, re.S).group(1)
    assert item.startswith("The two runs are of different suites (android-core and android-core-&lt;b&gt;v2&lt;/b&gt;)")
    assert item.endswith('<span class="code-label" title="the warning\'s code in comparison.json">suite_differs</span>')
    assert "<code>suite_differs</code>" not in page
    md = render_summary_md(*run, comparison=compared_run())
    assert "- The two runs are of different suites" in md and "(`suite_differs` in comparison.json)" in md


def test_manifest_facts(summary: str) -> None:
    facts = dict((r[0], r[1]) for r in table_rows(section(summary, "Run facts"))[2:])
    assert facts["Model"] == "example / agent-model-large"
    assert facts["Judge"] == "judge-model (enabled)"
    assert facts["Suite"] == "android-core (version 7)"
    assert facts["Code"] == "4f2c9e1 (clean)"
    assert facts["Platform"] == "device emulator-pixel, os android-15"
    assert facts["Active skills"] == "calendar, contacts"
    assert "metrics\\_k 3" in facts["Repeat plan"]


def test_run_strings_are_inert_in_markdown(summary: str) -> None:
    assert "`rubric r2: no (</script><script>window.__xss = 3</script>)`" in summary
    outside = without_code_spans(summary)
    assert "<script" not in outside and "<img" not in outside


def test_judge_disabled_and_unlisted_labels() -> None:
    metrics, attempts, manifest, run_id = main_run()
    manifest["judge"] = {"enabled": False, "model": None}
    metrics["failures"]["class"]["<b>odd|class</b>"] = 2
    md = render_summary_md(metrics, attempts, manifest, run_id)
    assert "The judge was disabled" in md
    assert "| `<b>odd\\|class</b>` | 2 |" in md
    page = render_report_html(metrics, attempts, manifest, run_id)
    assert "&lt;b&gt;odd|class&lt;/b&gt;" in page and "<b>odd|class" not in page


def test_distribution_tables_show_every_field_of_their_metrics_section() -> None:
    assert sorted(EFFICIENCY_ROWS) == sorted(EFFICIENCY_FIELDS)
    assert set(RELIABILITY_FIELDS) | set(COST_FIELDS) <= set(reports.format.FIELD_LABELS)


def test_empty_inputs_render() -> None:
    md = render_summary_md({}, [], {}, "empty-run")
    assert "| pass@1 | **n/a** | n/a | — (one trial per task) | n/a / n/a / n/a tasks | n/a |" in md
    assert "| Attempt success | **n/a** | n/a | n/a | n/a / n/a / n/a attempts | n/a |" in md
    assert "| pass@k estimate (k=n/a) | n/a | n/a | pass@k n/a |" in md
    assert "metrics.json has no data_quality block" in md
    page = render_report_html({}, [], {}, "empty-run")
    assert "n/a: no eligible denominator" in page


# ------------------------------------------------------------------------------ report.html


def test_html_is_self_contained(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(?:src|href|action|poster|data)\s*=\s*["']?\s*(?:https?:)?//""", page, re.I)
    assert not re.search(r"<link\b", page, re.I)
    assert "@import" not in page and "@font-face" not in page and "url(" not in page
    assert not re.search(r"<script[^>]*\bsrc=", page, re.I)
    assert not re.search(r"<(?:img|iframe|object|embed|video|audio)\b", page, re.I)
    csp = html.unescape(re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)"', page).group(1))
    assert csp.startswith("default-src 'none';") and "script-src 'sha256-" in csp and "unsafe-inline' ;" not in csp


def test_injected_strings_are_escaped(page: str) -> None:
    for raw in (XSS_FINAL_RESPONSE, XSS_ERROR, XSS_REASON, XSS_ARG, "<script>window.__xss", "<img src=x"):
        assert raw not in page
    assert len(re.findall(r"<script\b", page)) == 3  # two JSON blocks and our own script
    assert page.count("</script>") == 3
    data = re.search(r'<script type="application/json" id="report-details">(.*?)</script>', page, re.S).group(1)
    assert "<" not in data and ">" not in data
    assert "\\u003cscript\\u003ewindow.__xss = 1; alert(1)\\u003c/script\\u003eSearch done." in data
    details = json.loads(data)
    final = [s for d in details["details"] for s in d[1] if s[0] == "Final response" and s[1] == "pre"]
    assert [XSS_FINAL_RESPONSE] == [s[2] for s in final if "__xss" in s[2]]
    # server-side text (the failed-task list) is HTML-escaped
    assert html.escape("rubric r2: no (</script><script>window.__xss = 3</script>)", quote=False) in page


def test_html_has_headline_charts_and_tables(run: tuple, page: str) -> None:
    assert page.count('class="card metric"') == 4
    assert page.count('<svg class="ibar"') == 4
    assert page.count('<svg class="hist"') == 4
    assert page.count('<svg class="hbar"') == 2
    assert "[30.0%, 90.3%]" in page and "66.7%" in page
    assert page.count('<details class="a" data-i=') == 24
    assert page.count('<tr data-i=') == 8
    assert "2 (dup)" in page
    keys = json.loads(re.search(r'id="report-data">(.*?)</script>', page, re.S).group(1))
    assert len(keys["attempts"]["keys"]) == 24 and len(keys["tasks"]["keys"]) == 8


def test_attempt_details_carry_the_evidence(page: str) -> None:
    details = json.loads(re.search(r'id="report-details">(.*?)</script>', page, re.S).group(1))
    labels = details["labels"]
    by_line = {int(d[0][labels.index("Results line")]): d for d in details["details"]}
    facts, sections = by_line[8]
    titles = [s[0] for s in sections]
    assert facts[labels.index("Evidence folder")] == "tasks/send_sms/attempt-2"
    assert {"Errors", "Final response", "Tool calls (2)", "Hard assertions", "Hard-assertion failures"} <= set(titles)
    failures = sections[titles.index("Hard-assertion failures")][2]
    assert failures[1][0] == ["required_tools", "send_message must be called", '{"called": ["open_app", "tap", "enter_text"]}']
    facts, sections = by_line[13]  # timeout without evidence
    assert [s[2] for s in sections if s[0] == "Final response"] == [
        "n/a: evidence unavailable (trace.json missing or unreadable)."]
    assert any("timeout without evidence" in s[2] for s in sections if s[1] == "note")
    facts, sections = by_line[23]  # unsafe artifact_dir
    assert facts[labels.index("Evidence folder")] == "n/a (artifact_dir refused as unsafe)"
    facts, sections = by_line[7]
    rubric = [s for s in sections if s[0] == "Rubric verdicts"][0][2]
    assert rubric[1][3] == ["r4", "Final answer confirms sending", "no", "The answer says the message was drafted, not sent."]
    facts, sections = by_line[15]  # judge_error: the rubric's items without verdicts, the judge's error among the errors
    titles = [s[0] for s in sections]
    assert "Rubric (no verdicts: the judge may not have run)" in titles and "Rubric verdicts" not in titles
    assert "judge request failed: HTTP 503" in json.dumps(sections[titles.index("Errors")][2])


def test_markup_per_attempt_stays_lean() -> None:
    small = render_report_html(*large_run(100))
    big = render_report_html(*large_run(1_000))
    per_attempt = (len(big.encode()) - len(small.encode())) / 900
    assert per_attempt < 2_600, f"{per_attempt:.0f} bytes per attempt"
    assert 'class="agrid lazy"' in big and 'class="agrid lazy"' not in small


# ------------------------------------------------------------------------------ helpers


@pytest.mark.parametrize(("value", "text"), [(None, "n/a"), (0, "0.0%"), (0.6666, "66.7%"), (float("nan"), "n/a"),
                                             (True, "n/a")])
def test_fmt_pct(value: object, text: str) -> None:
    assert reports.fmt_pct(value) == text


def test_formatters() -> None:
    assert reports.fmt_ci(0.3, 0.9032) == "[30.0%, 90.3%]"
    assert reports.fmt_ci(None, 0.5) == "n/a"
    assert [reports.fmt_ms(v) for v in (None, 0, 850, 12_345, 300_000, 900_000)] == [
        "n/a", "0 ms", "850 ms", "12.3 s", "300.0 s", "15.0 min"]
    assert reports.fmt_int(12345) == "12,345" and reports.fmt_int(None) == "n/a" and reports.fmt_int(2.5) == "2.5"
    assert reports.fmt_bool(None) == "n/a" and reports.fmt_bool(False) == "no"
    assert reports.fmt_usd(0.01234) == "$0.0123" and reports.fmt_usd(None) == "n/a"
    assert reports.fmt_compact(9_600, "total_tokens") == "9.6k" and reports.fmt_compact(45_000, "task_wall_ms") == "45 s"


def test_md_escaping() -> None:
    assert reports.md_code("a|b") == "`a\\|b`"
    assert reports.md_code("x`y") == "``x`y``"
    assert reports.md_code("`edge") == "`` `edge ``"
    assert reports.md_code(None) == "n/a"
    assert reports.md_code("two\nlines") == "`two lines`"
    assert reports.md_text("<b>*x*</b>") == "\\<b\\>\\*x\\*\\</b\\>"


def test_script_json_cannot_close_its_script_tag() -> None:
    text = str(reports.script_json({"a": "</script><!-- & \u2028"}))
    assert "</" not in text and "<!--" not in text and "&" not in text
    assert json.loads(text) == {"a": "</script><!-- & \u2028"}


def test_does_not_mutate_inputs(run: tuple) -> None:
    before = copy.deepcopy(run)
    render_summary_md(*run)
    render_report_html(*run)
    assert run == before


def test_json_made_once_is_written_as_is_on_both_encoding_paths() -> None:
    pairs = [["tap", {"x": 1, "note": "a</script>"}], ["type", {"text": "ü"}]]
    encoded = EncodedJSON(pairs, b'[["tap",{"x":1,"note":"a</script>"}],["type",{"text":"\xc3\xbc"}]]')
    assert reports.format._json_text([encoded, 2]) == reports.format._json_text([pairs, 2])
    # a value orjson cannot write (an integer beyond 64 bits) takes the standard library's path
    assert reports.format._json_text([encoded, 2**70]) == json.dumps([pairs, 2**70], ensure_ascii=False, separators=(",", ":"))
    assert "</script>" not in reports.script_json([encoded])


def test_failed_task_table_groups_each_tasks_attempts(page: str) -> None:
    table = re.search(r'<table class="data compact failed">(.*?)</table>', page, re.S).group(1)
    bodies = re.findall(r"<tbody>(.*?)</tbody>", table, re.S)
    assert bodies and "No task has an attempt" not in table
    for body in bodies:
        rows = re.findall(r"<tr>", body)
        assert re.search(r'<th scope="rowgroup" rowspan="(\d+)">', body).group(1) == str(len(rows))
    assert '<span class="pill st-missing">missing</span>' in table or '<span class="pill st-' in table


@pytest.mark.parametrize("value", [None, True, 0, -3, 7, 1234567, 2.5, -0.004, 1e308, -1e308, 10**300,
                                   float("nan"), float("inf"), "x<y", [1]])
def test_number_formatters_never_emit_markup_characters(value) -> None:
    """task_table_rows writes these formatters' output unescaped."""
    for fmt in (reports.fmt_int, reports.fmt_pct, reports.fmt_quality, reports.fmt_ms, reports.fmt_round):
        assert not set(fmt(value)) & set("<>&\"'"), (fmt.__name__, value)


# ----------------------------------------------------------- metrics.json additions, comparison


def test_the_grouped_interval_and_the_estimates_are_labelled_for_what_they_are(run: tuple, summary: str, page: str) -> None:
    u = run[0]["uncertainty"]["attempt_success_rate"]
    headline = section(summary, "Headline capability")
    assert (f"95% interval [{pct(u['ci95']['lower'])}, {pct(u['ci95']['upper'])}] over 20 eligible attempts of 8 tasks, "
            "beside the reference's Wilson interval [38.7%, 78.1%]") in headline
    assert "design effect 1.60" in headline
    # the estimators apart from the observed fixed-k values, labelled as estimates
    estimates = headline[headline.index("### Estimates from every combination of attempts"):]
    assert "Unbiased estimates (metrics.json estimators), not observed values" in estimates
    assert "| pass@k estimate (k=3) | 80.0% | 5 | pass@k 80.0% |" in estimates
    assert "| pass^k estimate (k=3) | 20.0% | 5 | pass^k 20.0% |" in estimates
    card = page[page.index('data-metric="attempt_success_rate"'):]
    card = card[:card.index('<div class="grid2">')]
    assert "95% Wilson CI [38.7%, 78.1%]" in card and "95% CI grouped by task [32.8%, 87.2%]" in card
    assert 'id="estimators"' in page and "unbiased estimates, not observed values" in page


def test_summary_compared_with_the_baseline(run: tuple) -> None:
    from bench_pipeline_tests.fixtures_reports import compared_run

    md = render_summary_md(*run, comparison=compared_run())
    part = section(md, "Compared with")
    assert part.startswith("## Compared with `base-<script>window.__xss = 6</script>`")
    # verdicts first: the gate and the verdict list come before the table
    assert part.index("**Release gate: FAIL**") < part.index("### Verdicts") < part.index("### Paired sections")
    # the first reason that holds per section: a regression, not also its margin (comparison.md)
    assert ("**Release gate: FAIL**: the first attempt is a significant regression; task success is a significant "
            "regression. Reasons: `first_attempt_regression`, `task_success_regression`.") in part
    assert "could have gone unseen" not in part  # a fail is not a pass without a margin
    assert "- First attempt (pass@1): **regression**" in part and "- pass@k (k=2): **no significant change**" in part
    rows = {r[0]: r for r in table_rows(part)}
    # 12 paired: attempt 1 passes in every baseline task, fails in 8 candidate tasks;
    # McNemar p = 2 / 2^8 = 0.0078
    assert rows["First attempt (pass@1)"][1:] == ["12 of 12", "100.0%", "33.3%", "-66.7 pp", "[-94.5 pp, -38.8 pp]",
                                                  "39.8 pp", "0.008", "regression"]
    assert rows["Task wall time"][-1] == "regression" and rows["Task wall time"][4] == "+600 ms"
    assert rows["Cost (USD)"][1:] == ["0 of 12", "n/a", "n/a", "n/a", "n/a", "n/a", "—", "n/a"]
    assert "task-weighted" in part and "not the attempt-weighted attempt success rate" in part
    assert "p = 0.008, below 0.05: the candidate is worse (a regression)" in part
    # run text stays inert: code spans for ids, escaped text in the warning
    assert "| `<img src=x onerror=\"window.__xss = 5\">\\|task` | `tasks/<img src=x onerror=\"window.__xss = 5\">\\|task/attempt-1` |" in part
    assert "android-core-\\<b\\>v2\\</b\\>" in part
    assert "<script>" not in without_code_spans(part) and "<img" not in without_code_spans(part)
    assert "- Only in the baseline (1): `only_in_baseline`" in part


def test_report_html_compared_with_the_baseline_is_escaped(run: tuple, tmp_path: Path) -> None:
    from bench_pipeline_tests.fixtures_reports import compared_run

    paths = write_reports(tmp_path / "out", *run, comparison=compared_run(tmp_path / "runs" / "b", tmp_path / "runs" / "c"))
    page = paths["report.html"].read_text()
    part = page[page.index('<section id="comparison">'):page.index('<section id="excluded">')]
    assert "Compared with <code>base-&lt;script&gt;window.__xss = 6&lt;/script&gt;</code>" in part
    assert "<script" not in part and "<img" not in part and "onerror=\"" not in part
    assert 'href="#comparison">Compared <span class="badge warn">gate fails</span>' in page
    assert part.count('<li class="v-') == 8 and part.count('data-section="first_attempt"') == 2
    assert '<svg class="dci"' in part and part.count('<g class="row ') == 8 and 'class="zero"' in part
    # links to attempt 1's evidence in both runs, percent-encoded, relative to the report
    assert 'href="../runs/b/tasks/%3Cimg%20src%3Dx%20onerror%3D%22window.__xss%20%3D%205%22%3E%7Ctask/attempt-1/"' in part
    assert 'href="../runs/c/tasks/task_00/attempt-1/"' in part
    assert html.unescape(re.sub(r"<[^>]+>", "", part)).count('<img src=x onerror="window.__xss = 5">|task') >= 2


# ------------------------------------------------------------------------------ histograms

def test_report_histograms_say_their_scale(page: str) -> None:
    charts = re.findall(r'<svg class="hist".*?</svg>', page, re.S)
    assert len(charts) == 4
    for chart in charts:
        root = svg_tree(chart)
        assert root.get("data-scale") in ("linear", "log")
        assert "scale" in " ".join(t.text for t in texts(root, "caption"))
        assert_marker_labels_apart(root)


def test_the_category_table_names_each_rate_s_denominator(run: tuple, summary: str) -> None:
    """Category rates (3.8): the pass rate over all rows, the rubric pass rate over rubric
    items (rubric-weighted, R37); each column says what it divides by, and each cell is the
    stored rate as a percent with one decimal (n/a when null)."""
    rows = table_rows(section(summary, "Categories and observations"))
    assert rows[0] == ["Category", "Pass rate (all rows)", "Rubric pass rate (rubric items passed / rubric items)",
                       "Attempts"]
    stored = run[0]["category"]
    body = [r for r in rows[2:] if r and r[0].strip("`") in stored]  # names as code spans
    assert len(body) == len(stored) > 0
    for name, rate, rubric, attempts in body:
        entry = stored[name.strip("`")]
        assert rate == pct(entry["pass_rate"])
        assert rubric == (pct(entry["rubric_pass_rate"]) if entry["rubric_pass_rate"] is not None else "n/a")
        assert attempts == str(entry["attempts"])
