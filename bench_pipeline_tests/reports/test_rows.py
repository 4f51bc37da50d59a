"""reports/rows.py: the table rows rendered in plain loops (the attempt table with its details,
the task table, the failed-task tables), on records in memory."""

from __future__ import annotations

import html
import json
import re

import pytest

from bench_pipeline import reports
from bench_pipeline.reports import render_report_html
from bench_pipeline.reports.rows import attempt_row, duplicate_lines, failed_task_md_rows, render_attempt_rows, task_table_rows
from bench_pipeline_tests.fixtures_reports import main_run


@pytest.fixture(scope="module")
def run() -> tuple:
    return main_run()


def test_null_final_response_in_an_available_trace_is_not_called_a_missing_file() -> None:
    """Reference 1: a null final_response is unavailable evidence; the note says where it
    comes from (the trace exists and records null, e.g. an attempt that timed out)."""
    from bench_pipeline.reports.rows import _details_payload

    def final_note(trace_status: str) -> list:
        rec = {"evidence": {"trace_artifact": {"status": trace_status, "path": "t/trace.json"}, "final_response": None}}
        return [s[2] for s in _details_payload(rec, [], "t")[1] if s[0] == "Final response"]

    assert final_note("available") == ["n/a: evidence unavailable (trace.json records final_response null)."]
    assert final_note("missing") == ["n/a: evidence unavailable (trace.json missing or unreadable)."]
    assert final_note("invalid") == ["n/a: evidence unavailable (trace.json missing or unreadable)."]


def test_report_rows_built_in_forked_chunks_equal_the_sequential_page(run, monkeypatch):
    """Large runs build attempt rows in chunks in forked workers: same page, rows in line order."""
    sequential = render_report_html(*run)
    monkeypatch.setattr(reports.rows, "PARALLEL_MIN_ATTEMPTS", 0)
    monkeypatch.setattr(reports.rows, "_CHUNK_ATTEMPTS", 3)
    chunked = render_report_html(*run, workers=2)
    assert chunked == sequential
    indices = [int(i) for i in re.findall(r'<details class="a" data-i="(\d+)"', chunked)]
    assert indices == list(range(len(run[1])))
    details = json.loads(html.unescape(re.search(r'id="report-details">(.*?)</script>', chunked, re.S).group(1)))
    assert len(details["details"]) == len(run[1]) and details["labels"] == list(reports.FACT_LABELS)


def test_failed_task_table_without_failed_tasks_and_with_run_text() -> None:
    assert "No task has an attempt that did not pass." in reports.failed_task_html_rows([])
    task = reports.FailedTask(
        task_id="<b>x</b>", category='c"1', passed=0, n=1, eligible_failed=1,
        records=[{"task_id": "<b>x</b>", "attempt": 2, "line": 4, "status": "failed", "failure_class": "<i>",
                  "agent_eligible": True, "evidence": {"dir": "tasks/<x>"}}],
        k=2, unsafe_lines=set(), evidence_base="../run",
    )
    rows = str(reports.failed_task_html_rows([task]))
    assert "<b>" not in rows and "&lt;b&gt;x&lt;/b&gt;" in rows and "c&#34;1" in rows and "&lt;i&gt;" in rows
    assert rows.count("<tr>") == 2 and 'rowspan="2"' in rows  # attempt 1 is a missing placeholder
    assert '<span class="pill st-missing">missing</span>' in rows
    assert '<a href="../run/tasks/%3Cx%3E/"><code>tasks/&lt;x&gt;</code></a>' in rows


def test_duplicate_lines_by_task_and_attempt() -> None:
    rows = [{"task_id": "a", "attempt": 2, "lines": [3, 7]}, {"task_id": "b", "attempt": None, "lines": [1, "x", 4]},
            "not a row", {"task_id": "c", "attempt": 1, "lines": None}]
    assert duplicate_lines(rows) == {("a", 2): [3, 7], ("b", 1): [1, 4], ("c", 1): []}


def test_an_attempt_row_has_its_cells_keys_and_notes() -> None:
    rec = {"task_id": "t1", "attempt": 2, "line": 5, "status": "failed", "failure_class": "agent_failure",
           "agent_eligible": True, "success": False, "first_failure_stage": "verify", "quality_score": 0.5,
           "task_wall_ms": 1500, "total_tokens": 1234, "tool_calls": 3, "category": "messaging"}
    cells, keys, (facts, sections) = attempt_row(rec, {("t1", 2): [5, 9]}, set())
    assert cells == ["t1", "2 (dup)", "failed", "agent_failure", "yes", "no", "verify", "0.50", "1.5 s", "1,234", "3"]
    assert keys == ["t1", 2, "failed", "agent_failure", True, False, "verify", 0.5, 1500, 1234, 3, "messaging"]
    assert len(facts) == len(reports.FACT_LABELS)
    notes = [s[2] for s in sections if s[1] == "note"]
    assert ("Duplicate task/attempt on lines 5, 9: line 9 is used for task-level metrics; every row counts in "
            "attempt-level populations.") in notes


def test_an_eligible_attempt_of_unknown_success_says_so() -> None:
    rec = {"task_id": "t", "attempt": None, "line": 1, "status": "failed", "agent_eligible": True, "success": None}
    cells, keys, (_, sections) = attempt_row(rec, {}, set())
    assert cells == ["t", "1", "failed", "—", "yes", "unknown", "—", "n/a", "n/a", "n/a", "n/a"]
    assert keys[:2] == ["t", 1] and keys[5] is None
    assert "Eligible with unknown success: in every denominator, not a success." in [s[2] for s in sections]


def test_attempt_rows_are_numbered_from_their_start_and_escaped() -> None:
    rec = {"task_id": "<b>", "attempt": 1, "line": 1, "status": "passed", "agent_eligible": True, "success": True}
    rows = render_attempt_rows(4, [rec, {**rec, "line": 2, "attempt": 2}], {}, set())
    markup = rows.html.decode()
    assert re.findall(r'data-i="(\d+)"', markup) == ["4", "5"]
    assert "<span>&lt;b&gt;</span>" in markup and "<b>" not in markup
    assert '<span class="pill st-passed">passed</span>' in markup
    assert [k[:2] for k in rows.keys] == [["<b>", 1], ["<b>", 2]]
    assert len(json.loads(b"[" + rows.details + b"]")) == 2
    joined = reports.join_attempt_rows([rows, render_attempt_rows(6, [rec], {}, set())])
    assert re.findall(r'data-i="(\d+)"', joined.html.decode()) == ["4", "5", "6"] and len(joined.keys) == 3
    assert len(json.loads(b"[" + joined.details + b"]")) == 3


def test_a_task_table_row_holds_its_counts_and_strip() -> None:
    row = {"task_id": "t<1>", "category": None, "strip": [("passed", "attempt 1: passed"), ("failed", "attempt 2: failed")],
           "attempts": 2, "eligible": 2, "passed": 1, "failed": 1, "pass_rate": 0.5, "best_quality": 1.0,
           "avg_quality": 0.75, "avg_wall_ms": 850.0, "mean_tokens": 1234.4}
    markup = str(task_table_rows([row]))
    cells = re.findall(r'<td class="num">([^<]*)</td>', markup)
    assert cells == ["2", "1", "1", "50.0%", "1.00", "0.75", "850 ms", "1,234"]
    assert 'data-task="t&lt;1&gt;"' in markup and "<td>n/a</td>" in markup
    assert ('<span class="strip"><i class="o st-passed" title="attempt 1: passed"></i>'
            '<i class="o st-failed" title="attempt 2: failed"></i></span> 2</td>') in markup


def test_failed_task_md_rows_one_per_attempt_with_the_missing_placeholder() -> None:
    task = reports.FailedTask(
        task_id="t|1", category="c", passed=0, n=1, eligible_failed=1,
        records=[{"task_id": "t|1", "attempt": 2, "line": 4, "status": "failed", "failure_class": "agent_failure",
                  "agent_eligible": True, "success": False, "evidence": {"dir": "tasks/t/attempt-2"}}],
        k=2, unsafe_lines=set(), evidence_base=None,
    )
    lines = failed_task_md_rows([task]).split("\n")
    assert lines[0] == ("| `t\\|1` | 1 | missing | — | n/a | — | n/a | n/a (no result row) | n/a | "
                        "`planned or expected attempt missing from the results` |")
    assert lines[1].startswith("| `t\\|1` | 2 | `failed` | `agent_failure` | yes | ")
    assert len(lines) == 2 and failed_task_md_rows([]) == ""
