"""Fixtures shared by the cross-run asset tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture()
def pages(monkeypatch):
    """write_suite_page replaced by a recorder of its inputs (the page itself has tests of its own)."""
    calls = []

    def record(out_dir, suite, runs, systems_, systems_total=None, runs_total=None):
        calls.append({"out_dir": Path(out_dir), "suite": suite, "runs": runs, "systems": systems_,
                      "systems_total": systems_total, "runs_total": runs_total})
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / "index.html").write_text("page")
        return Path(out_dir) / "index.html"

    monkeypatch.setattr("bench_pipeline.assets.suite_pages.write_suite_page", record)
    return calls
