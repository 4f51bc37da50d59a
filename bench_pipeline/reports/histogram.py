"""report.html's histograms of per-attempt distributions (task wall time, tokens, tool calls,
device actions): the tick labels placed so that they do not overlap, and the SVG of the bins
that reports/histogram_bins.py makes.

Pure functions; each returns Markup built only from escaped text and formatted numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup, escape

from ..stats import is_number, numbers
from ..task_groups import is_eligible
from .charts import coord, nice_step
from .format import FIELD_LABELS, MS_FIELDS, USD_FIELDS, dig, fmt_int, formatter_for
from .histogram_bins import HistogramBins, histogram_bins

#: report.html's histograms: a few per-attempt distributions, titled "<label> per attempt".
HISTOGRAM_FIELDS = ("task_wall_ms", "total_tokens", "tool_calls", "device_actions")

#: Conservative text extent for layout: 0.7 em per character (DejaVu Sans digits are 0.64 em,
#: "+" 0.84 em, "m" 0.97 em; narrower fonts only leave more room) plus a little padding.
_EM_PER_CHAR = 0.7
_FONT_PX = 10.0  # svg .axis and svg.hist .mlabel (report.css)


def text_width(text: str, font_px: float = _FONT_PX) -> float:
    """An upper estimate of the rendered width of ``text`` at ``font_px``."""
    return _EM_PER_CHAR * font_px * len(text) + 2.0


def _boxes_overlap(a: tuple[float, float], b: tuple[float, float], pad: float = 3.0) -> bool:
    return a[0] < b[1] + pad and b[0] < a[1] + pad


def place_labels(items: Sequence[tuple[float, float, bool]], width: float) -> list[tuple[float, int]]:
    """Rows and left edges for labels beside vertical marker lines, never overlapping.

    ``items``: per label its line's x, the label's (conservative) width and whether it
    prefers the line's left side. Returns per label ``(x0, row)``; row 0 is nearest the
    plot and a line rises to its own label's row. Labels of a row never intersect: each
    is put in the first row with room, and with n labels rows 0..n-1 include an empty one.
    Two placing orders are tried (rightmost line first, leftmost first) and the layout
    with the fewest lines crossing a label, then the fewest rows, is kept.
    """
    if not items:
        return []

    def greedy(order: Sequence[int]) -> dict[int, tuple[float, float, int]]:
        placed: dict[int, tuple[float, float, int]] = {}  # index: x0, x1, row
        for i in order:
            x, w, prefer_left = items[i]
            fits = [left for left in (prefer_left, not prefer_left)
                    if 0 <= (x - 3 - w if left else x + 3) and (x - 3 if left else x + 3 + w) <= width]
            chosen = fallback = None
            for row in range(len(items)):
                for left in fits or [prefer_left]:
                    x0 = x - 3 - w if left else x + 3
                    x0 = min(max(x0, 0.0), max(width - w, 0.0))  # only when it fits on neither side
                    box = (x0, x0 + w)
                    if any(r == row and _boxes_overlap(box, (a, b)) for a, b, r in placed.values()):
                        continue
                    trial = dict(placed)
                    trial[i] = (x0, x0 + w, row)
                    if fallback is None:
                        fallback = trial[i]
                    if _crossings(items, trial) == _crossings(items, placed):
                        chosen = trial[i]
                        break
                if chosen:
                    break
            placed[i] = chosen or fallback  # type: ignore[assignment]
        return placed

    by_x = sorted(range(len(items)), key=lambda i: (items[i][0], i))
    layouts = [greedy(by_x[::-1]), greedy(by_x)]
    best = min(layouts, key=lambda p: (_crossings(items, p), max(r for *_, r in p.values())))
    return [(best[i][0], best[i][2]) for i in range(len(items))]


def _crossings(items: Sequence[tuple[float, float, bool]], placed: Mapping[int, tuple[float, float, int]]) -> int:
    """How many (line, label) pairs cross: a line rises through the rows up to its own."""
    return sum(1 for i, (_, _, ri) in placed.items() for j, (a, b, rj) in placed.items()
               if i != j and rj <= ri and a - 1 <= items[i][0] <= b + 1)


def _wrap(parts: Sequence[str], limit: float, sep: str = " · ") -> list[str]:
    """Join ``parts`` into lines whose estimated width stays within ``limit``."""
    lines: list[str] = []
    for part in parts:
        if lines and text_width(lines[-1] + sep + part) <= limit:
            lines[-1] += sep + part
        else:
            lines.append(part)
    return lines


def _attempts(count: int) -> str:
    return f"{count:,} attempt" + ("" if count == 1 else "s")


def _decimals(resolution: float) -> int:
    """Decimals (0 to 3) that write multiples of ``resolution`` exactly where they can
    (0.25 -> 2, 2.5 -> 1, 0.3 -> 1), and else tell apart numbers that far apart."""
    if not (resolution > 0 and math.isfinite(resolution)):
        return 0
    digits = min(3, max(0, math.ceil(-math.log10(resolution) - 1e-9)))
    while digits < 3:
        scaled = resolution * 10 ** digits
        if abs(scaled - round(scaled)) <= 1e-6 * scaled:
            break
        digits += 1
    return digits


def _tick_text(value: float, field: str, resolution: float) -> str:
    """A short axis label ('24.5 s', '9.6k', '$0.01') precise enough for labels
    ``resolution`` apart; far from the usual magnitudes in e-notation."""
    value = float(value)
    if value == 0:
        return "0"
    if abs(value) >= 1e15 or abs(value) < 1e-3:
        return f"{value:.0e}"
    if field in MS_FIELDS:
        if abs(value) < 1000:
            return f"{value:,.{_decimals(resolution)}f} ms"
        return f"{value / 1000:,.{_decimals(resolution / 1000)}f} s"
    if field in USD_FIELDS:
        return f"${value:,.{max(2, _decimals(resolution))}f}"
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:,.{_decimals(resolution / limit)}f}{suffix}"
    return f"{value:,.{_decimals(resolution)}f}"


def _short(value: float, field: str, fmt: Any) -> str:
    """``fmt(value)``, or for a value of absurd magnitude (e.g. 1e300 tokens) e-notation."""
    text = fmt(value)
    return text if len(text) <= 16 else _tick_text(value, field, abs(float(value)) / 1000)


def _caption(h: HistogramBins, field: str, fmt: Any) -> list[str]:
    """What the axis is: its scale, and the outliers counted beside a cut axis."""
    if h.scale == "log":
        step = h.log_step or 1.0
        if step < 1:
            per = round(1 / step)
            parts = [f"log scale: {per} bar{'s' if per != 1 else ''} per factor of 10"]
        else:
            parts = [f"log scale: each bar a factor of 10^{step:g}"]
        return parts
    res = h.bins[0][1] - h.bins[0][0]
    cut = [_tick_text(t, field, res) for t in (h.below_threshold, h.above_threshold) if t is not None]
    parts = [f"linear scale cut at {' and '.join(cut)}" if cut else "linear scale"]
    both = h.below and h.above
    if h.below:
        parts.append(f"+{_attempts(h.below)} below {cut[0]}, min {_short(h.low, field, fmt)} (grey bar{', left' if both else ''})")
    if h.above:
        parts.append(f"+{_attempts(h.above)} above {cut[-1]}, max {_short(h.high, field, fmt)} (grey bar{', right' if both else ''})")
    return parts


def _linear_ticks(lo: float, hi: float, minimum_step: float = 0.0) -> tuple[list[float], float]:
    """Round values between lo and hi (about 3 to 5) and their spacing."""
    step = max(float(nice_step((hi - lo) / 4)) if hi > lo else 0.0, minimum_step)
    if not (step > 0 and math.isfinite(step)) or (hi - lo) / step > 10:
        return [lo, hi], max(hi - lo, 1.0)
    k0, k1 = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
    return [k * step for k in range(k0, k1 + 1)], step


def svg_histogram(values: Sequence[float], field: str, *, markers: Mapping[str, Any] | None = None,
                  width: int = 560, height: int = 190) -> Markup:
    """Histogram of per-attempt values with dashed percentile markers (e.g. p50, p90).

    The axis is ``histogram_bins``'s: linear, linear and cut with the outliers counted in
    grey bars beside it, or log; a caption under the axis says which, with the outliers'
    counts and extremes. Marker labels go to rows above the plot, stacked where they would
    touch (``place_labels``, with conservative text widths). ``height``: with one row of
    marker labels and one caption line; more rows add to it.
    """
    h = histogram_bins(values)
    if not h.bins:
        return Markup('<p class="muted chart-empty">n/a: no attempt has a value.</p>')
    fmt = formatter_for(field)
    bins = h.bins
    ml, mr, row_h, out_w, gap = 40, 10, 14, 22, 8
    plot_h = max(height - 58, 40)
    left = ml + (out_w + gap if h.below else 0)
    right = width - mr - (out_w + gap if h.above else 0)
    slot = (right - left) / len(bins)
    below_x, above_x = ml + out_w / 2, width - mr - out_w / 2
    first, last = bins[0][0], bins[-1][1]
    step = h.log_step or 1.0
    k0 = round((h.log_start or 0.0) / step)  # log: the first bin's index (its edge may underflow to 0)

    def xpos(v: float) -> float:
        """x of a value on the axis (an outlier: the middle of its grey bar)."""
        v = float(v)
        if h.below_threshold is not None and v < h.below_threshold:
            return below_x
        if h.above_threshold is not None and v > h.above_threshold:
            return above_x
        if h.scale == "log":
            return left + (math.log10(v) / step - k0) * slot if v > 0 else left
        if h.per_value:
            return left + (v - first + 0.5) * slot
        span = float(last) - float(first)
        if not (math.isfinite(span) and span > 0):
            return left + (right - left) / 2
        return left + (v - float(first)) / span * (right - left)

    # marker labels: rows above the plot
    shown = [(i, name, value) for i, (name, value) in enumerate((markers or {}).items()) if is_number(value)]
    texts = [f"{name} {_short(value, field, fmt)}" for _, name, value in shown]
    xs = [min(max(xpos(value), ml), width - mr) for _, _, value in shown]
    spots = place_labels([(x, text_width(t), i == 0) for (i, _, _), x, t in zip(shown, xs, texts)], width)
    rows = max((r for _, r in spots), default=-1) + 1
    mt = 8 + row_h * max(rows, 1)
    base = mt + plot_h

    caption = _caption(h, field, fmt)
    lines = _wrap(caption, width - ml - mr)
    total_h = base + 30 + 13 * (len(lines) - 1) + 6
    top = max([c for *_, c in bins] + [h.below, h.above]) or 1
    summary = f"{FIELD_LABELS.get(field, field)} per attempt: histogram of {_attempts(h.count)}; {'; '.join(caption)}"
    parts = [f'<svg class="hist" viewBox="0 0 {width} {coord(total_h)}" width="100%" role="img" '
             f'aria-label="{escape(summary)}" data-scale="{h.scale}"><title>{escape(summary)}</title>',
             f'<line class="grid" x1="{ml}" y1="{mt}" x2="{width - mr}" y2="{mt}"/>',
             f'<line class="axisline" x1="{ml}" y1="{base}" x2="{width - mr}" y2="{base}"/>',
             f'<text class="axis" x="{ml - 4}" y="{mt + 8}" text-anchor="end">{top:,}</text>',
             f'<text class="axis" x="{ml - 4}" y="{base}" text-anchor="end">0</text>']
    res = (first / 100) if h.scale == "log" else (bins[0][1] - bins[0][0])
    for i, (lo, hi, count) in enumerate(bins):
        bar_h = plot_h * count / top
        if h.per_value:
            text = f"{fmt_int(lo)}: {_attempts(count)}"
        else:
            r = lo / 100 if h.scale == "log" else res
            text = f"{_tick_text(lo, field, r)} to {_tick_text(hi, field, r)}: {_attempts(count)}"
        parts.append(f'<rect class="bar" x="{coord(left + i * slot + 0.5)}" y="{coord(base - bar_h)}" '
                     f'width="{coord(max(slot - 1, 0.8))}" height="{coord(bar_h)}"><title>{escape(text)}</title></rect>')
    ticks: list[tuple[float, str, str, bool]] = []  # x, anchor, text, tick mark
    for count, threshold, extreme, x, word in ((h.below, h.below_threshold, h.low, below_x, "below"),
                                               (h.above, h.above_threshold, h.high, above_x, "above")):
        if not count or threshold is None:
            continue
        bar_h = plot_h * count / top
        text = (f"{word} {_tick_text(threshold, field, res)}: {_attempts(count)}, "
                f"{'min' if word == 'below' else 'max'} {fmt(extreme)}")
        parts.append(f'<rect class="bar over" x="{coord(x - out_w / 2)}" y="{coord(base - bar_h)}" width="{out_w}" '
                     f'height="{coord(bar_h)}"><title>{escape(text)}</title></rect>')
        ticks.append((x, "middle", f"+{count:,}", False))
    if h.scale == "log":
        d0, d1 = math.ceil(k0 * step - 1e-9), math.floor((k0 + len(bins)) * step + 1e-9)
        every = max(1, math.ceil((d1 - d0 + 1) / 8), round(step) if step >= 1 else 1)
        ticks += [(left + (d / step - k0) * slot, "middle",
                   _tick_text(10.0 ** d, field, 10.0 ** d) if 10.0 ** d > 0 else f"1e{d}", True)
                  for d in range(d0, d1 + 1) if d % every == 0]
    elif h.per_value:
        values_at, spacing = _linear_ticks(first, bins[-1][0], 1.0)
        ticks += [(xpos(v), "middle", _tick_text(v, field, spacing), True) for v in values_at]
    else:
        values_at, spacing = _linear_ticks(float(first), float(last))
        ticks += [(xpos(v), "middle", _tick_text(v, field, spacing), True) for v in values_at]
        # the axis's ends, where there is room for them
        ticks += [(left, "start", _tick_text(first, field, res), True), (right, "end", _tick_text(last, field, res), True)]
    taken: list[tuple[float, float]] = []
    for x, anchor, text, mark in ticks:
        w = text_width(text)
        if mark and abs(x - left) < 1:  # a tick at the axis's ends: its label inward
            anchor = "start"
        elif mark and abs(x - right) < 1:
            anchor = "end"
        x0 = x - w / 2 if anchor == "middle" else x - w if anchor == "end" else x
        if x0 < 0 or x0 + w > width:
            x0 = min(max(x0, 0.0), width - w)
            anchor = "start"
        if any(_boxes_overlap((x0, x0 + w), t) for t in taken):
            continue
        taken.append((x0, x0 + w))
        if mark:
            parts.append(f'<line class="tick" x1="{coord(x)}" y1="{base}" x2="{coord(x)}" y2="{base + 3}"/>')
        parts.append(f'<text class="axis" x="{coord(x0 if anchor == "start" else x)}" y="{base + 14}" '
                     f'text-anchor="{anchor}">{escape(text)}</text>')
    for n, line in enumerate(lines):
        parts.append(f'<text class="axis caption" x="{ml}" y="{base + 30 + 13 * n}" text-anchor="start">'
                     f"{escape(line)}</text>")
    for ((i, _, _), x, text, (x0, row)) in zip(shown, xs, texts, spots):
        y = mt - 7 - row_h * row
        parts.append(f'<line class="marker m{i}" x1="{coord(x)}" y1="{coord(y - 4)}" x2="{coord(x)}" y2="{base}"/>'
                     f'<text class="mlabel m{i}" x="{coord(x0)}" y="{coord(y)}" text-anchor="start">'
                     f"{escape(text)}</text>")
    parts.append("</svg>")
    return Markup("".join(parts))


def histograms(metrics: Mapping[str, Any], attempts: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """report.html's charts of per-attempt distributions over eligible attempts with a value
    (the efficiency population); only ``metrics["efficiency"]`` is read (p50/p90 markers)."""
    eligible = [a for a in attempts if is_eligible(a)]
    charts = []
    for field in HISTOGRAM_FIELDS:
        values = list(map(float, numbers(a.get(field) for a in eligible)))
        stats = dig(metrics, "efficiency", field) or {}
        fmt = formatter_for(field)
        charts.append({
            "field": field,
            "title": f"{FIELD_LABELS[field]} per attempt",
            "svg": svg_histogram(values, field, markers={"p50": stats.get("p50"), "p90": stats.get("p90")}),
            "n": len(values),
            "missing": len(eligible) - len(values),
            "summary": f"mean {fmt(stats.get('mean'))} · p50 {fmt(stats.get('p50'))} · "
                       f"p90 {fmt(stats.get('p90'))} · p95 {fmt(stats.get('p95'))}",
        })
    return charts
