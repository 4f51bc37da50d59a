"""How much of one kind the reports list (bench_pipeline/reports/view/limits.py)."""

from bench_pipeline.reports.view.limits import LIST_CAP, STRIP_CAP, TOP_N


def test_the_limits():
    assert (LIST_CAP, STRIP_CAP, TOP_N) == (25, 50, 10)
