"""report.html's inline SVG charts: interval bars, bar charts and histograms.

Pure functions; each returns Markup built only from escaped text and formatted numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup, escape

from ..stats import is_number, numbers, percentile
from .format import FIELD_LABELS, dig, fmt_ci, fmt_compact, fmt_int, fmt_pct, formatter_for

#: report.html's histograms: a few per-attempt distributions, titled "<label> per attempt".
HISTOGRAM_FIELDS = ("task_wall_ms", "total_tokens", "tool_calls", "device_actions")


def _x(value: float) -> str:
    """Compact SVG coordinate."""
    return f"{value:.1f}".rstrip("0").rstrip(".")


def svg_interval_bar(value: Any, lower: Any, upper: Any, *, label: str = "",
                     width: int = 300, height: int = 44) -> Markup:
    """A 0-100% track with the Wilson interval as a band and the point estimate as a dot."""
    left, right = 16, width - 16
    span = right - left
    pos = lambda p: left + span * min(max(p, 0.0), 1.0)  # noqa: E731
    title = f"{label}: {fmt_pct(value)}, 95% CI {fmt_ci(lower, upper)}" if label else ""
    parts = [
        f'<svg class="ibar" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>" if title else "",
        f'<line class="track" x1="{left}" y1="16" x2="{right}" y2="16"/>',
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = _x(pos(tick))
        parts.append(f'<line class="tick" x1="{x}" y1="11" x2="{x}" y2="21"/>')
        if tick in (0.0, 0.5, 1.0):
            parts.append(f'<text class="axis" x="{x}" y="{height - 6}" text-anchor="middle">'
                         f"{int(tick * 100)}%</text>")
    if is_number(lower) and is_number(upper):
        x1, x2 = pos(lower), pos(upper)
        parts.append(f'<rect class="ci" x="{_x(x1)}" y="10" width="{_x(max(x2 - x1, 1.5))}" '
                     f'height="12" rx="3"/>')
    if is_number(value):
        parts.append(f'<circle class="pt" cx="{_x(pos(value))}" cy="16" r="5.5"/>')
    else:
        parts.append(f'<text class="axis na" x="{width / 2}" y="8" text-anchor="middle">'
                     "n/a: no eligible denominator</text>")
    parts.append("</svg>")
    return Markup("".join(parts))


def svg_hbar_chart(items: Sequence[tuple[str, int]], *, css: str = "bar",
                   width: int = 420, label_width: int = 140) -> Markup:
    """Horizontal bars of counts (zero rows kept and labelled 0)."""
    row_h, pad = 24, 6
    height = pad * 2 + row_h * max(len(items), 1)
    bar_left = label_width + 8
    bar_span = width - bar_left - 44
    top = max((count for _, count in items), default=0) or 1
    parts = [f'<svg class="hbar" viewBox="0 0 {width} {height}" width="100%" '
             f'preserveAspectRatio="xMinYMin meet" role="img">']
    for i, (label, count) in enumerate(items):
        y = pad + i * row_h
        bar_w = bar_span * count / top
        safe = escape(label)
        parts.append(f'<g><title>{safe}: {count:,}</title>'
                     f'<text class="lbl" x="{label_width}" y="{y + 16}" text-anchor="end">{safe}</text>'
                     f'<rect class="bg" x="{bar_left}" y="{y + 4}" width="{bar_span}" height="16" rx="3"/>')
        if count:
            parts.append(f'<rect class="{css}" x="{bar_left}" y="{y + 4}" width="{_x(max(bar_w, 2))}" '
                         f'height="16" rx="3"/>')
        parts.append(f'<text class="val{" zero" if not count else ""}" x="{_x(bar_left + max(bar_w, 0) + 6)}" '
                     f'y="{y + 16}">{count:,}</text></g>')
    parts.append("</svg>")
    return Markup("".join(parts))


def svg_stacked_bar(parts_in: Sequence[tuple[str, int, str]], *, width: int = 1000,
                    height: int = 18) -> Markup:
    """One horizontal bar split into (label, count, css class) segments."""
    total = sum(count for _, count, _ in parts_in) or 1
    x = 0.0
    parts = [f'<svg class="stack" viewBox="0 0 {width} {height}" width="100%" height="{height}" '
             f'preserveAspectRatio="none" role="img">']
    for label, count, css in parts_in:
        if not count:
            continue
        w = width * count / total
        parts.append(f'<rect class="{escape(css)}" x="{_x(x)}" y="0" width="{_x(w)}" height="{height}">'
                     f"<title>{escape(label)}: {count:,}</title></rect>")
        x += w
    parts.append("</svg>")
    return Markup("".join(parts))


def nice_step(raw: float) -> float:
    """The smallest 1/2/2.5/5 x 10^n step >= raw."""
    if raw <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(raw))
    for mult in (1, 2, 2.5, 5, 10):
        if mult * power >= raw:
            return mult * power
    return 10 * power


def histogram_bins(values: Sequence[float], max_bins: int = 20) -> tuple[list[tuple[float, float, int]], int, float | None]:
    """Bins ``[(lo, hi, count)]``, an overflow count and its threshold for long tails.

    Integer data with a small range gets one bin per value. Values above the p99 are folded
    into an overflow bin when the tail is long (max > 1.5 x p99, at least 50 values).
    """
    data = sorted(values)
    if not data:
        return [], 0, None
    overflow, threshold = 0, None
    p99 = percentile(data, 99)
    if len(data) >= 50 and p99 is not None and p99 > data[0] and data[-1] > 1.5 * p99:
        threshold = p99
        overflow = sum(1 for v in data if v > p99)
        data = [v for v in data if v <= p99]
    lo, hi = data[0], data[-1]
    if not math.isfinite(float(hi) - float(lo)) or max(abs(float(lo)), abs(float(hi))) >= 2 ** 52:
        # Beyond 2^52 floats no longer step by one, and a span can overflow: one bin.
        return [(lo, hi, len(data))], overflow, threshold
    integral = all(map(float.is_integer, map(float, data)))
    if integral and hi - lo + 1 <= max_bins:
        edges = [(lo + i, lo + i + 1) for i in range(int(hi - lo) + 1)]
    else:
        step = nice_step((hi - lo) / max_bins) if hi > lo else max(abs(lo) / 10, 1.0)
        start = math.floor(lo / step) * step
        count = max(1, math.ceil((hi - start) / step + 1e-9))
        if start + count * step <= hi:
            count += 1
        edges = [(start + i * step, start + (i + 1) * step) for i in range(count)]
    counts = [0] * len(edges)
    width = edges[0][1] - edges[0][0]
    for v in data:
        idx = min(int((v - edges[0][0]) // width), len(edges) - 1)
        counts[idx] += 1
    return [(a, b, c) for (a, b), c in zip(edges, counts)], overflow, threshold


def svg_histogram(values: Sequence[float], field: str, *, markers: Mapping[str, Any] | None = None,
                  width: int = 560, height: int = 190) -> Markup:
    """Histogram of per-attempt values with dashed percentile markers (e.g. p50, p90)."""
    bins, overflow, threshold = histogram_bins(values)
    if not bins:
        return Markup('<p class="muted chart-empty">n/a: no attempt has a value.</p>')
    ml, mr, mt, mb = 34, 10, 20, 30
    plot_w, plot_h = width - ml - mr, height - mt - mb
    n_bars = len(bins) + (1 if overflow else 0)
    slot = plot_w / n_bars
    top = max([c for _, _, c in bins] + [overflow]) or 1
    integral_bins = all(float(a).is_integer() and b - a == 1 for a, b, _ in bins)
    parts = [f'<svg class="hist" viewBox="0 0 {width} {height}" width="100%" role="img">',
             f'<line class="grid" x1="{ml}" y1="{mt}" x2="{width - mr}" y2="{mt}"/>',
             f'<line class="axisline" x1="{ml}" y1="{mt + plot_h}" x2="{width - mr}" y2="{mt + plot_h}"/>',
             f'<text class="axis" x="{ml - 4}" y="{mt + 4}" text-anchor="end">{top:,}</text>',
             f'<text class="axis" x="{ml - 4}" y="{mt + plot_h}" text-anchor="end">0</text>']
    fmt = formatter_for(field)
    for i, (lo, hi, count) in enumerate(bins):
        h = plot_h * count / top
        x = ml + i * slot
        if integral_bins:
            label = f"{fmt_int(lo)}: {count:,} attempts"
        else:
            label = f"{fmt(lo)} to {fmt(hi)}: {count:,} attempts"
        parts.append(f'<rect class="bar" x="{_x(x + 0.5)}" y="{_x(mt + plot_h - h)}" '
                     f'width="{_x(max(slot - 1, 0.8))}" height="{_x(h)}"><title>{escape(label)}</title></rect>')
    if overflow and threshold is not None:
        h = plot_h * overflow / top
        x = ml + len(bins) * slot
        parts.append(f'<rect class="bar over" x="{_x(x + 0.5)}" y="{_x(mt + plot_h - h)}" '
                     f'width="{_x(max(slot - 1, 0.8))}" height="{_x(h)}"><title>'
                     f'{escape(f"above {fmt(threshold)} (p99): {overflow:,} attempts")}</title></rect>')
    lo_all, hi_all = bins[0][0], bins[-1][1]

    def xpos(v: float) -> float:
        span = float(hi_all) - float(lo_all)
        if not (math.isfinite(span) and span > 0):
            return ml
        return ml + (float(v) - float(lo_all)) / span * (len(bins) * slot)

    if integral_bins:
        last = bins[-1][0]
        ticks = [(lo_all, "middle"), (last, "middle")]
        mid = lo_all + (last - lo_all) // 2
        if last - lo_all >= 4:
            ticks.insert(1, (mid, "middle"))
    else:
        ticks = [(lo_all, "start"), (float(lo_all) / 2 + float(hi_all) / 2, "middle"), (hi_all, "end")]
    for v, anchor in ticks:
        x = xpos(v + 0.5) if integral_bins else xpos(v)
        parts.append(f'<text class="axis" x="{_x(x)}" y="{height - 12}" text-anchor="{anchor}">'
                     f"{escape(fmt_compact(v, field))}</text>")
    if overflow and threshold is not None:
        parts.append(f'<text class="axis" x="{_x(ml + (len(bins) + 0.5) * slot)}" y="{height - 12}" '
                     f'text-anchor="middle">&gt;p99</text>')
    for i, (name, value) in enumerate((markers or {}).items()):
        if not is_number(value) or (threshold is not None and value > threshold):
            continue
        x = xpos(value + 0.5) if integral_bins else xpos(value)
        text = f"{name} {fmt(value)}"
        text_w = 5.6 * len(text)
        # first marker's label to the left of its line, the others to the right, unless clipped
        left_side = (i == 0 and x - text_w - 3 >= 0) or x + text_w + 3 > width
        tx, anchor = (x - 3, "end") if left_side else (x + 3, "start")
        parts.append(f'<line class="marker m{i}" x1="{_x(x)}" y1="{mt - 4}" x2="{_x(x)}" y2="{mt + plot_h}"/>'
                     f'<text class="mlabel m{i}" x="{_x(tx)}" y="{mt - 8}" text-anchor="{anchor}">'
                     f"{escape(text)}</text>")
    parts.append("</svg>")
    return Markup("".join(parts))


def histograms(metrics: Mapping[str, Any], attempts: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """report.html's charts of per-attempt distributions over eligible attempts with a value
    (the efficiency population); only ``metrics["efficiency"]`` is read (p50/p90 markers)."""
    eligible = [a for a in attempts if a.get("agent_eligible") is True]
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


def svg_delta_intervals(rows: Sequence[Mapping[str, Any]], *, width: int = 760, label_width: int = 200) -> Markup:
    """The comparison's changes as intervals around a common zero line: per row the 95%
    interval of the change (a bar) and the change itself (a dot).

    Rows are ``{"label", "delta", "lower", "upper", "scale", "fmt", "css", "verdict_text"}``;
    rows of one ``scale`` share an axis symmetric about zero (the rates, in percentage
    points), every other scale has its own, written at the row's right end as its half
    width. ``fmt`` formats a signed number of the row's unit.
    """
    row_h, top, right_w = 30, 26, 96
    left, right = label_width + 10, width - right_w
    mid = (left + right) / 2
    half = (right - left) / 2
    spans: dict[Any, float] = {}
    for r in rows:
        for v in (r.get("delta"), r.get("lower"), r.get("upper")):
            if is_number(v):
                spans[r.get("scale")] = max(spans.get(r.get("scale"), 0.0), abs(float(v)))
    height = top + row_h * max(len(rows), 1) + 8
    parts = [f'<svg class="dci" viewBox="0 0 {width} {height}" width="100%" '
             f'preserveAspectRatio="xMinYMin meet" role="img" aria-label="Changes from the baseline with 95% intervals">',
             f'<text class="axis" x="{_x(left)}" y="14" text-anchor="start">worse for rates, better for resources</text>'
             f'<text class="axis" x="{_x(right)}" y="14" text-anchor="end">better for rates, worse for resources</text>',
             f'<line class="zero" x1="{_x(mid)}" y1="{top - 6}" x2="{_x(mid)}" y2="{height - 4}"/>',
             f'<text class="axis" x="{_x(mid)}" y="{top - 8}" text-anchor="middle">0</text>']
    for i, r in enumerate(rows):
        y = top + i * row_h + row_h / 2
        fmt = r.get("fmt") or str
        span = nice_step(spans.get(r.get("scale"), 0.0) * 1.05) if spans.get(r.get("scale")) else 1.0
        pos = lambda v: mid + half * max(-1.0, min(1.0, float(v) / span))  # noqa: E731
        delta, lower, upper = r.get("delta"), r.get("lower"), r.get("upper")
        title = (f"{r.get('label')}: change {fmt(delta)}, 95% interval "
                 f"{'[' + fmt(lower) + ', ' + fmt(upper) + ']' if is_number(lower) and is_number(upper) else 'n/a'}"
                 f", {r.get('verdict_text')}")
        css = escape(str(r.get("css") or "na"))
        parts.append(f'<g class="row {css}"><title>{escape(title)}</title>'
                     f'<text class="lbl" x="{label_width}" y="{_x(y + 4)}" text-anchor="end">{escape(str(r.get("label")))}</text>'
                     f'<line class="track" x1="{_x(left)}" y1="{_x(y)}" x2="{_x(right)}" y2="{_x(y)}"/>')
        if is_number(lower) and is_number(upper):
            x1, x2 = pos(lower), pos(upper)
            parts.append(f'<rect class="ci" x="{_x(x1)}" y="{_x(y - 5)}" width="{_x(max(x2 - x1, 1.5))}" height="10" rx="3"/>')
        if is_number(delta):
            parts.append(f'<circle class="pt" cx="{_x(pos(delta))}" cy="{_x(y)}" r="5"/>')
            if not (is_number(lower) and is_number(upper)):
                parts.append(f'<text class="axis na" x="{_x(right)}" y="{_x(y - 8)}" text-anchor="end">no interval</text>')
        else:
            parts.append(f'<text class="axis na" x="{_x(mid + 8)}" y="{_x(y + 4)}" text-anchor="start">n/a</text>')
        scale_text = f"±{fmt(span).lstrip('+')}" if is_number(delta) else ""
        parts.append(f'<text class="axis" x="{_x(right + 6)}" y="{_x(y + 4)}" text-anchor="start">{escape(scale_text)}</text></g>')
    parts.append("</svg>")
    return Markup("".join(parts))
