"""The bins of report.html's histograms (reports/histogram.py draws them): linear, or
logarithmic for values spanning decades, with the far outliers counted apart.

Pure arithmetic over the values; no markup.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..stats import numbers, percentile
from .charts import nice_step

#: Histogram axes (``histogram_bins``). A value is an outlier beyond Tukey's far-out fences,
#: q1 - 3 IQR and q3 + 3 IQR (at most a quarter of the values per side); the outliers of a
#: side are counted beside a cut axis when they would stretch it by more than half the span
#: of the other values. A log axis shows every value instead when all values are positive,
#: the others span two orders of magnitude (largest / smallest >= 100) and half of them
#: would crowd into the lowest fifth of a linear axis.
OUTLIER_FENCE = 3.0
LOG_RATIO = 100.0
LOG_CROWDED = 0.2
_LOG_BARS_PER_DECADE = (10, 8, 6, 5, 4, 3, 2, 1)


@dataclass(frozen=True)
class HistogramBins:
    """A histogram's axis and counts.

    ``bins``: ``[(lo, hi, count)]``, in order; with ``per_value`` one bin per integer
    value (``(v, v + 1, count)``). ``scale``: ``"linear"`` or ``"log"`` (bins of equal
    width in log10, ``log_step`` decades each, the first from 10^``log_start``). ``below``/``above``: values left out of
    a cut axis, under ``below_threshold`` / over ``above_threshold``; ``low`` and
    ``high`` are the smallest and largest value overall.
    """

    scale: str
    bins: list[tuple[float, float, int]]
    per_value: bool = False
    log_step: float | None = None
    log_start: float | None = None
    below: int = 0
    below_threshold: float | None = None
    above: int = 0
    above_threshold: float | None = None
    low: float | None = None
    high: float | None = None

    @property
    def count(self) -> int:
        return sum(c for *_, c in self.bins) + self.below + self.above


def _linear_layout(lo: float, hi: float, integral: bool, max_bins: int) -> tuple[float, float, int, bool] | None:
    """(start, step, count, per_value) of linear bins covering [lo, hi]; None when floats
    cannot step through the range (beyond 2^52 they no longer step by one, or the span
    overflows)."""
    if not math.isfinite(hi - lo) or max(abs(lo), abs(hi)) >= 2 ** 52:
        return None
    if integral and hi - lo + 1 <= max_bins:
        return lo, 1.0, int(hi - lo) + 1, True
    step = float(nice_step((hi - lo) / max_bins) if hi > lo else max(abs(lo) / 10, 1.0))
    if integral and not step.is_integer():
        step = float(math.ceil(step)) if step < 2 else 5.0  # counts of integers: whole steps (2.5 -> 5)
    start = math.floor(lo / step) * step
    count = max(1, math.ceil((hi - start) / step + 1e-9))
    if start + count * step <= hi:
        count += 1
    return start, step, count, False


def _log_layout(lo: float, hi: float, max_bins: int) -> tuple[int, float, int]:
    """(k0, step, count) of log bins covering [lo, hi] (both > 0): bin i spans
    10^((k0 + i) * step) to 10^((k0 + i + 1) * step), ``step`` in decades."""
    a, b = math.log10(lo), math.log10(hi)
    for per in _LOG_BARS_PER_DECADE:
        k0 = math.floor(a * per)
        k1 = max(k0 + 1, math.ceil(b * per))
        if k1 - k0 <= max_bins:
            return k0, 1.0 / per, k1 - k0
    decades = 1
    while True:  # several decades per bin: 2, 5, 10, 20, 50, ...
        for mult in (2, 5, 10):
            step = decades * mult
            k0 = math.floor(a / step)
            k1 = max(k0 + 1, math.ceil(b / step))
            if k1 - k0 <= max_bins:
                return k0, float(step), k1 - k0
        decades *= 10


#: The largest power of ten a float holds (10^308): a log axis whose top edge would be beyond
#: it is not drawn (values near the float range get the linear path's single bin).
MAX_DECADE = 308


def _log_index(v: float, step: float) -> int:
    t = math.log10(v)
    return math.floor(t * round(1 / step)) if step < 1 else math.floor(t / step)


def histogram_bins(values: Sequence[Any], max_bins: int = 20) -> HistogramBins:
    """The axis and bins of a histogram of ``values`` (non-numbers, e.g. None, are skipped).

    Integer data with a small range gets one bin per value and never a cut axis. Else
    far-out outliers (beyond q1 - 3 IQR or q3 + 3 IQR) are counted beside the axis when
    they would stretch it by more than half the span of the other values; and when all
    values are positive and those others span two orders of magnitude (largest / smallest
    >= 100) with half of them in the lowest fifth of their span, a log axis shows every
    value instead.
    Cost: one sort and a pass over the values.
    """
    data = sorted(map(float, numbers(values)))
    if not data:
        return HistogramBins("linear", [])
    lo, hi = data[0], data[-1]
    integral = all(map(float.is_integer, data))
    keep_lo, keep_hi = 0, len(data)
    if not (integral and hi - lo + 1 <= max_bins):
        q1, q3 = percentile(data, 25), percentile(data, 75)
        iqr = (q3 - q1) if q1 is not None and q3 is not None else 0.0
        if math.isfinite(iqr) and iqr > 0:
            inner_lo = bisect.bisect_left(data, q1 - OUTLIER_FENCE * iqr)
            inner_hi = bisect.bisect_right(data, q3 + OUTLIER_FENCE * iqr)
            span = data[inner_hi - 1] - data[inner_lo]
            if inner_hi < len(data) and hi - data[inner_hi - 1] > span / 2:
                keep_hi = inner_hi
            if inner_lo > 0 and data[inner_lo] - lo > span / 2:
                keep_lo = inner_lo
    k_lo, k_hi = data[keep_lo], data[keep_hi - 1]
    median = data[(keep_lo + keep_hi - 1) // 2]
    if lo > 0 and k_hi / k_lo >= LOG_RATIO and median - k_lo < LOG_CROWDED * (k_hi - k_lo):
        k0, step, count = _log_layout(lo, hi, max_bins)
        if (k0 + count) * step <= MAX_DECADE:  # else the top bin's edge is beyond the float range
            counts = [0] * count
            for v in data:
                counts[min(max(_log_index(v, step) - k0, 0), count - 1)] += 1
            bins = [(10 ** ((k0 + i) * step), 10 ** ((k0 + i + 1) * step), c) for i, c in enumerate(counts)]
            return HistogramBins("log", bins, log_step=step, log_start=k0 * step, low=lo, high=hi)
    layout = _linear_layout(k_lo, k_hi, integral, max_bins)
    if layout is None:
        # one bin for the kept values
        return HistogramBins("linear", [(k_lo, k_hi, keep_hi - keep_lo)], below=keep_lo,
                             below_threshold=k_lo if keep_lo else None, above=len(data) - keep_hi,
                             above_threshold=k_hi if keep_hi < len(data) else None, low=lo, high=hi)
    start, step, count, per_value = layout
    # what the axis covers: per value [first, last], else the bins' outer edges; outliers
    # that fall inside it after all are counted in its bins
    cover_lo, cover_hi = (start, start + count - 1) if per_value else (start, start + count * step)
    below = bisect.bisect_left(data, cover_lo)
    above = len(data) - bisect.bisect_right(data, cover_hi)
    counts = [0] * count
    for v in data[below:len(data) - above]:
        counts[min(max(int((v - start) // step), 0), count - 1)] += 1
    bins = [(start + i * step, start + (i + 1) * step, c) for i, c in enumerate(counts)]
    return HistogramBins("linear", bins, per_value=per_value, below=below,
                         below_threshold=cover_lo if below else None, above=above,
                         above_threshold=cover_hi if above else None, low=lo, high=hi)
