"""report.html's inline SVG charts: interval bars, bar charts and the comparison's changes
(the histograms are in histogram.py, their bins in histogram_bins.py).

Pure functions; each returns Markup built only from escaped text and formatted numbers.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup, escape

from ..stats import is_number
from .format import fmt_ci, fmt_pct



def coord(value: float) -> str:
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
        x = coord(pos(tick))
        parts.append(f'<line class="tick" x1="{x}" y1="11" x2="{x}" y2="21"/>')
        if tick in (0.0, 0.5, 1.0):
            parts.append(f'<text class="axis" x="{x}" y="{height - 6}" text-anchor="middle">'
                         f"{int(tick * 100)}%</text>")
    if is_number(lower) and is_number(upper):
        x1, x2 = pos(lower), pos(upper)
        parts.append(f'<rect class="ci" x="{coord(x1)}" y="10" width="{coord(max(x2 - x1, 1.5))}" '
                     f'height="12" rx="3"/>')
    if is_number(value):
        parts.append(f'<circle class="pt" cx="{coord(pos(value))}" cy="16" r="5.5"/>')
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
            parts.append(f'<rect class="{css}" x="{bar_left}" y="{y + 4}" width="{coord(max(bar_w, 2))}" '
                         f'height="16" rx="3"/>')
        parts.append(f'<text class="val{" zero" if not count else ""}" x="{coord(bar_left + max(bar_w, 0) + 6)}" '
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
        parts.append(f'<rect class="{escape(css)}" x="{coord(x)}" y="0" width="{coord(w)}" height="{height}">'
                     f"<title>{escape(label)}: {count:,}</title></rect>")
        x += w
    parts.append("</svg>")
    return Markup("".join(parts))


def nice_step(raw: float) -> float:
    """The smallest 1/2/2.5/5 x 10^n step >= raw. Near the float range: raw itself when that
    step is beyond it (raw 1.1e308: 2e308 is no float), and an infinite raw (a span beyond
    the range) as it is, for the caller to draw no steps."""
    if raw <= 0:
        return 1.0
    if not math.isfinite(raw):
        return raw
    power = 10 ** math.floor(math.log10(raw))
    for mult in (1, 2, 2.5, 5, 10):
        if mult * power >= raw:
            return mult * power if mult * power <= sys.float_info.max else raw
    return raw


#: svg_delta_intervals's note for a change without variation among the paired tasks.
NO_VARIATION_NOTE = "no variation to estimate an interval from"


def _axis_end(text: str) -> str:
    """An axis end as the row's formatter writes it, unsigned and without trailing zeros
    ('+200.0 pp' -> '200 pp', '+0.500' -> '0.5', '+10,000.0' -> '10,000', '+2.5 s' as is)."""
    text = text.lstrip("+")
    m = re.search(r"(\d[\d,]*)\.(\d+)", text)
    if m:
        decimals = m.group(2).rstrip("0")
        text = text[:m.start()] + m.group(1) + ("." + decimals if decimals else "") + text[m.end():]
    return text


def svg_delta_intervals(rows: Sequence[Mapping[str, Any]], *, width: int = 760, label_width: int = 200) -> Markup:
    """The comparison's changes as intervals around a common zero line: per row the 95%
    interval of the change (a bar) and the change itself (a dot).

    Rows are ``{"label", "delta", "lower", "upper", "scale", "fmt", "css", "verdict_text"}``;
    rows of one ``scale`` share an axis symmetric about zero (the rates, in percentage
    points), every other scale has its own, written at the row's right end as its half
    width. ``fmt`` formats a signed number of the row's unit. A row with ``"no_variation":
    True`` (every paired task changed by the same amount: a standard error of 0 and an
    interval [delta, delta] that tells nothing about spread) shows its change as a hollow
    dot with a note instead of an interval bar.
    """
    row_h, top, right_w = 30, 26, 104
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
             f'<text class="axis" x="{coord(left)}" y="14" text-anchor="start">worse for rates, better for resources</text>'
             f'<text class="axis" x="{coord(right)}" y="14" text-anchor="end">better for rates, worse for resources</text>',
             f'<line class="zero" x1="{coord(mid)}" y1="{top - 6}" x2="{coord(mid)}" y2="{height - 4}"/>',
             f'<text class="axis" x="{coord(mid)}" y="{top - 8}" text-anchor="middle">0</text>',
             f'<text class="axis head" x="{coord(right + 6)}" y="14" text-anchor="start">axis range</text>']
    for i, r in enumerate(rows):
        y = top + i * row_h + row_h / 2
        fmt = r.get("fmt") or str
        span = nice_step(spans.get(r.get("scale"), 0.0) * 1.05) if spans.get(r.get("scale")) else 1.0
        pos = lambda v: mid + half * max(-1.0, min(1.0, float(v) / span))  # noqa: E731
        delta, lower, upper = r.get("delta"), r.get("lower"), r.get("upper")
        no_variation = r.get("no_variation") is True and is_number(delta)
        if no_variation:
            title = (f"{r.get('label')}: change {fmt(delta)}, no 95% interval (every paired task changed by "
                     f"the same amount: {NO_VARIATION_NOTE}), {r.get('verdict_text')}")
        else:
            title = (f"{r.get('label')}: change {fmt(delta)}, 95% interval "
                     f"{'[' + fmt(lower) + ', ' + fmt(upper) + ']' if is_number(lower) and is_number(upper) else 'n/a'}"
                     f", {r.get('verdict_text')}")
        css = escape(str(r.get("css") or "na"))
        parts.append(f'<g class="row {css}"><title>{escape(title)}</title>'
                     f'<text class="lbl" x="{label_width}" y="{coord(y + 4)}" text-anchor="end">{escape(str(r.get("label")))}</text>'
                     f'<line class="track" x1="{coord(left)}" y1="{coord(y)}" x2="{coord(right)}" y2="{coord(y)}"/>')
        if no_variation:
            x = pos(delta)
            # the note above the track, from the end away from the dot (the track is wide
            # enough for it; above the dot it clears the dot: baseline 9 px above its centre)
            note_right = x < mid
            dot = f"change {fmt(delta)}: every paired task changed by the same amount, so there is {NO_VARIATION_NOTE}"
            parts.append(f'<circle class="pt nv" cx="{coord(x)}" cy="{coord(y)}" r="5"><title>{escape(dot)}</title></circle>'
                         f'<text class="axis nv" x="{coord(right if note_right else left)}" y="{coord(y - 9)}" '
                         f'text-anchor="{"end" if note_right else "start"}">{NO_VARIATION_NOTE}</text>')
        else:
            if is_number(lower) and is_number(upper):
                x1, x2 = pos(lower), pos(upper)
                parts.append(f'<rect class="ci" x="{coord(x1)}" y="{coord(y - 5)}" width="{coord(max(x2 - x1, 1.5))}" '
                             f'height="10" rx="3"/>')
            if is_number(delta):
                parts.append(f'<circle class="pt" cx="{coord(pos(delta))}" cy="{coord(y)}" r="5"/>')
                if not (is_number(lower) and is_number(upper)):
                    parts.append(f'<text class="axis na" x="{coord(right)}" y="{coord(y - 8)}" text-anchor="end">'
                                 "no interval</text>")
            else:
                parts.append(f'<text class="axis na" x="{coord(mid + 8)}" y="{coord(y + 4)}" text-anchor="start">n/a</text>')
        if is_number(delta):  # the row's axis, not an interval: its ends, -span and +span
            end = _axis_end(fmt(span))
            title = f"the axis of this row runs from -{end} to +{end} (the 95% interval is the bar)"
            parts.append(f'<text class="axis range" x="{coord(right + 6)}" y="{coord(y + 4)}" text-anchor="start">'
                         f'±{escape(end)}<title>{escape(title)}</title></text>')
        parts.append('</g>')
    parts.append("</svg>")
    return Markup("".join(parts))
