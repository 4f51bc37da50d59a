"""reports/write.py: both pages (and comparison.md) rendered and written."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from bench_pipeline import reports
from bench_pipeline.reports import (
    render_comparison_md,
    render_report_html,
    render_summary_md,
    report_view,
    write_comparison_md,
    write_report_html,
    write_reports,
    write_summary_md,
)
from bench_pipeline_tests.fixtures_reports import compared_run, main_run


@pytest.fixture(scope="module")
def run() -> tuple:
    return main_run()


@pytest.fixture(scope="module")
def page(run: tuple) -> str:
    return render_report_html(*run)


def test_csp_hash_matches_the_inline_script(page: str) -> None:
    script = re.search(r"<script>(.*?)</script>", page, re.S).group(1)
    csp = html.unescape(re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)"', page).group(1))
    assert csp == reports.write._csp(script)


def test_write_reports(tmp_path: Path, run: tuple) -> None:
    paths = write_reports(tmp_path / "out", *run)
    assert set(paths) == {"summary.md", "report.html"}
    assert paths["summary.md"].read_text(encoding="utf-8").startswith("# Benchmark run")
    assert paths["report.html"].read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert not list((tmp_path / "out").glob(".*.tmp"))
    # with the run folder known, evidence folders become links relative to the output folder
    run_dir = tmp_path / "runs" / run[3]
    linked = write_reports(tmp_path / "out2", *run, run_dir=run_dir)
    md = linked["summary.md"].read_text(encoding="utf-8")
    assert f"[`tasks/send_sms/attempt-2`](<../runs/{run[3]}/tasks/send_sms/attempt-2/>)" in md
    assert f'href="../runs/{run[3]}/tasks/send_sms/attempt-2/"' in linked["report.html"].read_text(encoding="utf-8")


def test_csp_allows_only_the_inline_script_by_its_hash() -> None:
    # sha256 of the empty string, base64
    assert reports.write._csp("") == (
        "default-src 'none'; img-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='; base-uri 'none'; form-action 'none'")


def test_each_page_written_from_one_view_is_the_page_rendered(tmp_path: Path, run: tuple) -> None:
    view = report_view(tmp_path, *run)
    summary = write_summary_md(tmp_path, view)["summary.md"]
    page = write_report_html(tmp_path, view, run[0], run[1])["report.html"]
    assert summary == tmp_path / "summary.md" and page == tmp_path / "report.html"
    assert summary.read_text(encoding="utf-8") == render_summary_md(*run)
    assert page.read_text(encoding="utf-8") == render_report_html(*run)


def test_comparison_md_is_written_as_rendered(tmp_path: Path) -> None:
    comparison = compared_run()
    written = write_comparison_md(tmp_path, comparison)
    assert written == {"comparison.md": tmp_path / "comparison.md"}
    assert written["comparison.md"].read_text(encoding="utf-8") == render_comparison_md(comparison, tmp_path)


def test_report_html_lists_the_first_failed_tasks_and_says_where_the_rest_are(
        run: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    failed = len(report_view(Path("."), *run).failed_tasks)
    assert failed > 2
    monkeypatch.setattr(reports.write, "HTML_FAILED_TASKS_CAP", 2)
    page = render_report_html(*run)
    table = re.search(r'<table class="data compact failed">(.*?)</table>', page, re.S).group(1)
    assert table.count('<th scope="rowgroup"') == 2
    assert "The first 2 (lowest pass share first) are listed here; summary.md lists all" in page
    assert f"{failed} tasks with a non-passing attempt" in page


def test_a_run_not_compared_says_why_in_both_pages(tmp_path: Path, run: tuple) -> None:
    """Without a comparison, the reason a baseline was looked for and not found (baselines.py)
    is a section of both pages, escaped as run text; with none given (the command line's
    ``process``, which looks for no baseline) neither page has the section."""
    why = "the pinned baseline 'b*|<x>' of suite 's' has not been processed"
    view = report_view(tmp_path, *run, not_compared=why)
    summary = write_summary_md(tmp_path, view)["summary.md"].read_text(encoding="utf-8")
    page = write_report_html(tmp_path, view, run[0], run[1])["report.html"].read_text(encoding="utf-8")
    assert ("## Not compared\n\nThis run has no baseline, so no comparison: the pinned baseline 'b\\*\\|\\<x\\>' of "
            "suite 's' has not been processed. To compare it with another run of its suite, pin that run in the "
            "baselines file (docs/operations.md).\n\n## What was excluded and why") in summary
    assert ('<p id="not-compared">This run has no baseline, so no comparison: the pinned baseline '
            '&#39;b*|&lt;x&gt;&#39; of suite &#39;s&#39; has not been processed.') in page
    assert '<a href="#comparison">Not compared</a>' in page
    plain = report_view(tmp_path, *run)
    assert plain.not_compared is None
    assert "Not compared" not in render_summary_md(*run) and 'id="not-compared"' not in render_report_html(*run)
    # a comparison shows itself, never the reason there is none
    assert report_view(tmp_path, *run, comparison=compared_run(), not_compared=why).not_compared is None
