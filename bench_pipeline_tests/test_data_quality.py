"""metrics.json data_quality: the section from a run's findings, and the count of them."""

from __future__ import annotations

from pathlib import Path

from bench_pipeline.data_quality import data_quality, data_quality_findings, findings_note, missing_attempts_count
from bench_pipeline.run_reader import RawRun


def _attempt(unsafe_dir: dict | None = None, artifacts: tuple = (), values: tuple = (), artifact_values: tuple = ()) -> dict:
    return {"evidence": {"findings": {"unsafe_dir": unsafe_dir, "artifacts": list(artifacts), "values": list(values),
                                      "artifact_values": list(artifact_values)}}}


def test_data_quality_lists_every_kind_of_finding_in_outputs_md_order():
    raw = RawRun("run-1", Path("run-1"), {}, {}, "suite-x", [], None, None,
                 bad_rows=[{"line": 2, "reason": "not JSON"}], duplicate_rows=[{"line": 5}],
                 run_files=[{"file": "suite.json", "status": "invalid"}])
    attempts = [_attempt(), _attempt({"line": 3, "artifact_dir": "../x"}, [{"file": "tasks/t/history.json"}]),
                _attempt(artifacts=[{"file": "tasks/u/episode.json"}, {"file": "tasks/u/trace.json"}],
                         values=[{"line": 4, "field": "cost_usd"}, {"line": 4, "field": "success"}],
                         artifact_values=[{"line": 4, "file": "tasks/u/history.json", "field": "[2].duration_ms"}])]
    assert data_quality(raw, attempts) == {
        "bad_rows": [{"line": 2, "reason": "not JSON"}],
        "duplicate_rows": [{"line": 5}],
        "missing_attempts": [],  # no plan: nothing is missing
        "unsafe_artifact_dirs": [{"line": 3, "artifact_dir": "../x"}],
        "invalid_artifacts": [{"file": "tasks/t/history.json"}, {"file": "tasks/u/episode.json"},
                              {"file": "tasks/u/trace.json"}],
        "invalid_values": [{"line": 4, "field": "cost_usd"}, {"line": 4, "field": "success"}],
        "invalid_artifact_values": [{"line": 4, "file": "tasks/u/history.json", "field": "[2].duration_ms"}],
        "run_files": [{"file": "suite.json", "status": "invalid"}],
    }
    assert raw.run_files == [{"file": "suite.json", "status": "invalid"}]  # the run's own list is not extended


def test_data_quality_findings_counts_every_missing_planned_attempt():
    """The missing-attempts list names at most MISSING_LIST_CAP pairs; the count of
    findings (CLI line, catalog, Dagster metadata) uses coverage's exact number."""
    metrics = {
        "coverage": {"missing_attempts": 10 ** 12},
        "data_quality": {"bad_rows": [{"line": 3}], "duplicate_rows": [], "missing_attempts": [{}] * 5,
                         "unsafe_artifact_dirs": [], "invalid_artifacts": [{}, {}], "run_files": [{}]},
    }
    assert data_quality_findings(metrics) == 1 + 10 ** 12 + 2 + 1
    metrics["coverage"]["missing_attempts"] = None  # no plan: nothing is missing
    metrics["data_quality"]["missing_attempts"] = []
    assert data_quality_findings(metrics) == 4


def test_missing_attempts_count_prefers_coverage_and_never_counts_fewer_than_listed():
    listed = {"data_quality": {"missing_attempts": [{}] * 3}}
    assert missing_attempts_count({**listed, "coverage": {"missing_attempts": 7}}) == 7
    assert missing_attempts_count({**listed, "coverage": {"missing_attempts": 2}}) == 3  # fewer than listed
    assert missing_attempts_count({**listed, "coverage": {"missing_attempts": 7.0}}) == 3  # not an integer
    assert missing_attempts_count({**listed, "coverage": {"missing_attempts": True}}) == 3
    assert missing_attempts_count(listed) == 3
    assert missing_attempts_count({}) == 0
    assert missing_attempts_count({"data_quality": "broken", "coverage": []}) == 0


def test_the_per_run_line_says_how_many_findings_and_where_they_are_listed():
    """What the per-run step's `[i/n] <run>: ok (...)` line adds (test_main checks the line)."""
    assert findings_note(None) == ""  # failed before its metrics: nothing known
    assert findings_note(0) == ", no data-quality findings"
    assert findings_note(1) == ', 1 data-quality finding: see "Data quality" in its summary.md or report.html'
    assert findings_note(7) == ', 7 data-quality findings: see "Data quality" in its summary.md or report.html'
