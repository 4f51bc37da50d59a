"""The data-quality section (bench_pipeline/reports/view/data_quality.py)."""

from bench_pipeline.reports.view.data_quality import data_quality_view

FACTS = {"trace_status": [("available", 3)], "recorded_attempts": 1, "recorded_fields": [("llm_calls", 1)]}


def test_data_quality_view_keeps_dict_findings():
    metrics = {"data_quality": {"bad_rows": [{"line": 4}, "junk"], "duplicate_rows": [],
                                "missing_attempts": [{"task_id": "a", "attempt": 2}],
                                "unsafe_artifact_dirs": [{"line": 7}, {"line": "x"}], "invalid_artifacts": None}}
    view = data_quality_view(metrics, FACTS)
    assert view.bad_rows == [{"line": 4}] and view.invalid_artifacts == [] and view.run_files == []
    assert view.present and view.missing_count == 1 and view.unsafe_lines == {7}
    assert (view.trace_status, view.recorded_attempts, view.cap) == ([("available", 3)], 1, 25)


def test_without_a_data_quality_block():
    view = data_quality_view({}, FACTS)
    assert not view.present and view.bad_rows == [] and view.unsafe_lines == set()
