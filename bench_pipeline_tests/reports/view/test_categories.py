"""Categories and observations (bench_pipeline/reports/view/categories.py)."""

from bench_pipeline.reports.view.categories import categories_view, category_rows, observation_rows

METRICS = {"category": {"b": {"pass_rate": 0.5, "rubric_pass_rate": None, "attempts": 2}, "a": {"pass_rate": 1}},
           "observations": {"used_browser": {"pass_rate": 0.25, "passed_tasks": 1, "observed_tasks": 4}}}


def test_category_and_observation_rows():
    assert category_rows(METRICS) == [
        {"name": "a", "pass_rate": "100.0%", "rubric_pass_rate": "n/a", "attempts": "n/a"},
        {"name": "b", "pass_rate": "50.0%", "rubric_pass_rate": "n/a", "attempts": "2"}]
    assert observation_rows(METRICS) == [{"name": "used_browser", "pass_rate": "25.0%", "passed": "1", "observed": "4"}]


def test_categories_view():
    view = categories_view({})
    assert view.rows == [] and view.observations == []
    assert [r["name"] for r in categories_view(METRICS).rows] == ["a", "b"]
