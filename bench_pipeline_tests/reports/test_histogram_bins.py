"""reports/histogram_bins.py: the bins of report.html's histograms, on values in memory (the
histograms drawn from them, with cut axes and log axes, are in test_charts.py)."""

from __future__ import annotations

from bench_pipeline.reports.histogram_bins import histogram_bins


def test_histogram_bins() -> None:
    h = histogram_bins([1, 2, 2, 3, 7])
    assert [(lo, c) for lo, _, c in h.bins] == [(1, 1), (2, 2), (3, 1), (4, 0), (5, 0), (6, 0), (7, 1)]
    assert h.per_value and h.scale == "linear" and h.above == 0 and h.above_threshold is None
    # only the far-out 10,000 is left out (198 and 199 are no outliers), in whole steps of 10
    values = [float(v) for v in range(1, 200)] + [10_000.0]
    h = histogram_bins(values)
    assert h.scale == "linear" and h.count == len(values) and (h.above, h.above_threshold, h.high) == (1, 200, 10_000)
    assert [b[:2] for b in h.bins[:2]] == [(0, 10), (10, 20)] and h.bins[-1][2] == 10
    assert histogram_bins([]).bins == [] and histogram_bins([]).count == 0
    assert histogram_bins([5.5] * 3).count == 3


def test_linear_bins_in_nice_steps() -> None:
    # span 9 in at most 4 bins: raw step 2.25, nice step 2.5, from floor(0.5 / 2.5) * 2.5 = 0 to 10
    h = histogram_bins([0.5, 1.5, 9.5], max_bins=4)
    assert h.bins == [(0.0, 2.5, 2), (2.5, 5.0, 0), (5.0, 7.5, 0), (7.5, 10.0, 1)]
    assert (h.scale, h.per_value, h.below, h.above, h.low, h.high) == ("linear", False, 0, 0, 0.5, 9.5)
    # integers within max_bins: one bin per value, [v, v + 1)
    h = histogram_bins([3, 5, 5], max_bins=4)
    assert h.per_value and h.bins == [(3.0, 4.0, 1), (4.0, 5.0, 0), (5.0, 6.0, 2)]


def test_values_near_the_float_range_get_bins_not_an_error() -> None:
    # 1.0 and 1e308 would take a log axis whose top edge (10^310) no float holds: one linear bin
    h = histogram_bins([1.0, 2.0, 1e308])
    assert h.scale == "linear" and h.count == 3 and all(edge < float("inf") for lo, hi, _ in h.bins for edge in (lo, hi))
    # a span beyond the float range (-1e308 to 1e308): the kept values in one bin
    h = histogram_bins([-1e308, 0.0, 1e308])
    assert h.scale == "linear" and h.count == 3
    # a log axis that still fits is kept
    assert histogram_bins([1.0, 1.5, 2.0, 1e300]).scale == "log"
