"""reports/templates.py: the jinja2 environments over bench_pipeline/templates and their on-disk
cache of compiled templates (the cache's job is files: these tests use tmp_path)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_pipeline import reports
from bench_pipeline.reports import render_report_html
from bench_pipeline.reports.format import FILTERS
from bench_pipeline.reports.templates import _asset, _env, template_cache_dir
from bench_pipeline_tests.fixtures_reports import main_run


@pytest.fixture(scope="module")
def run() -> tuple:
    return main_run()


def _render_with_fresh_environment(run: tuple) -> str:
    """report.html through a new jinja2 environment (as a new process would make)."""
    reports.templates._ENVS.clear()
    try:
        return render_report_html(*run)
    finally:
        reports.templates._ENVS.clear()


def test_compiled_templates_are_cached_on_disk_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            run: tuple) -> None:
    monkeypatch.setenv("BENCH_TEMPLATE_CACHE", str(tmp_path / "cache"))
    first = _render_with_fresh_environment(run)
    entries = sorted((tmp_path / "cache").iterdir())
    assert len(entries) == 1 and entries[0].stat().st_size > 1000  # report.html.j2, compiled
    compiled = []
    monkeypatch.setattr(reports.templates.Environment, "compile", lambda *a, **k: compiled.append(a) or None)
    second = _render_with_fresh_environment(run)
    assert compiled == []  # loaded, not compiled again
    assert second == first


def test_a_damaged_or_unwritable_template_cache_only_means_compiling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     run: tuple) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("BENCH_TEMPLATE_CACHE", str(cache))
    expected = _render_with_fresh_environment(run)
    for entry in cache.iterdir():
        entry.write_bytes(b"j2\x00 not a compiled template")
    assert _render_with_fresh_environment(run) == expected
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("BENCH_TEMPLATE_CACHE", str(blocked / "cache"))
    assert _render_with_fresh_environment(run) == expected


def test_a_template_cache_others_can_write_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Compiled templates are code: a folder writable by others is never loaded from."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("BENCH_TEMPLATE_CACHE", str(shared))
    assert reports.templates._template_cache() is None
    private = tmp_path / "private" / "templates"
    monkeypatch.setenv("BENCH_TEMPLATE_CACHE", str(private))
    assert reports.templates._template_cache() is not None and (private.stat().st_mode & 0o777) == 0o700


def test_the_cache_folder_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_TEMPLATE_CACHE", "/somewhere/cache")
    assert template_cache_dir() == Path("/somewhere/cache")
    monkeypatch.delenv("BENCH_TEMPLATE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg")
    assert template_cache_dir() == Path("/xdg/bench_pipeline/templates")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", "/home/someone")
    assert template_cache_dir() == Path("/home/someone/.cache/bench_pipeline/templates")


def test_one_environment_per_kind_escaping_only_html() -> None:
    assert _env(True) is _env(True) and _env(False) is _env(False) and _env(True) is not _env(False)
    assert _env(True).from_string("{{ v }}").render(v="<b>") == "&lt;b&gt;"
    assert _env(False).from_string("{{ v }}").render(v="<b>") == "<b>"
    assert set(FILTERS) <= set(_env(True).filters)
    assert _env(False).from_string("{{ v | pct }}").render(v=0.5) == "50.0%"
    with pytest.raises(Exception, match="undefined"):
        _env(False).from_string("{{ missing }}").render()


def test_assets_are_read_from_the_templates_folder() -> None:
    assert _asset("report.css").strip() and _asset("report.js").strip()
