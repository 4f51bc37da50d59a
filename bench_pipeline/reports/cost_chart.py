"""The suite page's cost-against-capability chart: each system at (its mean cost, or tokens, per
attempt; its pooled first attempt) with the pooled 95% interval, and the systems nothing beats
on both (the Pareto front) marked.

Pure functions; the chart is Markup built only from escaped text and formatted numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup, escape

from .charts import coord, nice_step
from .format import fmt_compact, fmt_usd


def pareto_front(points: Sequence[tuple[float, float]]) -> list[bool]:
    """For (cost, capability) points: True where no other point has capability >= and
    cost <= with at least one of them strict (nothing beats it on both)."""
    def beats(o: tuple[float, float], p: tuple[float, float]) -> bool:
        return o[1] >= p[1] and o[0] <= p[0] and (o[1] > p[1] or o[0] < p[0])

    return [not any(beats(o, p) for j, o in enumerate(points) if j != i) for i, p in enumerate(points)]


def svg_cost_capability(points: Sequence[Mapping[str, Any]], field: str, width: int = 640,
                        height: int = 320) -> Markup:
    """Systems as dots at (mean ``field`` per attempt, pooled first attempt), the pooled 95%
    interval as a vertical bar; Pareto systems (``front``) filled and joined by a dashed line."""
    left, right, top, bottom = 58, 24, 14, 46
    span_x, span_y = width - left - right, height - top - bottom
    xs = [p["x"] for p in points]
    low = min(0.0, *xs)
    step = nice_step((max(xs) - low) / 5 if max(xs) > low else 0)
    high = max(step * math.ceil(max(xs) * 1.08 / step), low + step)  # room for the rightmost label
    px = lambda v: left + span_x * (v - low) / (high - low)  # noqa: E731
    py = lambda v: top + span_y * (1 - min(max(v, 0.0), 1.0))  # noqa: E731
    tick_text = (lambda v: fmt_usd(v) if v else "0") if field == "cost_usd" else (lambda v: fmt_compact(v, field))
    what = "Mean cost per attempt" if field == "cost_usd" else "Mean tokens per attempt"
    parts = [f'<svg class="cc" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
             f'aria-label="Pooled first attempt against {what.lower()}">']
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = coord(py(t))
        parts.append(f'<line class="grid" x1="{left}" y1="{y}" x2="{width - right}" y2="{y}"/>'
                     f'<text class="axis" x="{left - 6}" y="{coord(py(t) + 3)}" text-anchor="end">{int(t * 100)}%</text>')
    for i in range(round((high - low) / step) + 1):
        tick = low + i * step
        x = coord(px(tick))
        parts.append(f'<line class="tick" x1="{x}" y1="{top + span_y}" x2="{x}" y2="{top + span_y + 4}"/>'
                     f'<text class="axis" x="{x}" y="{top + span_y + 16}" text-anchor="middle">'
                     f'{escape(tick_text(tick))}</text>')
    parts.append(f'<line class="axisline" x1="{left}" y1="{top + span_y}" x2="{width - right}" y2="{top + span_y}"/>'
                 f'<text class="axis" x="{left + span_x / 2}" y="{height - 6}" text-anchor="middle">{what}</text>'
                 f'<text class="axis" x="12" y="{top + span_y / 2}" text-anchor="middle" '
                 f'transform="rotate(-90 12 {top + span_y / 2})">Pooled first attempt</text>')
    front = sorted((p for p in points if p["front"]), key=lambda p: (p["x"], -p["y"]))
    if len(front) > 1:
        path = " ".join(f"{coord(px(p['x']))},{coord(py(p['y']))}" for p in front)
        parts.append(f'<polyline class="frontier" points="{path}"/>')
    for p in points:
        x, y = coord(px(p["x"])), coord(py(p["y"]))
        parts.append(f'<g class="sys{" front" if p["front"] else ""}" data-label="{escape(p["label"])}">'
                     f'<title>{escape(p["title"])}</title>')
        if p["lower"] is not None and p["upper"] is not None:
            y1, y2 = coord(py(p["upper"])), coord(py(p["lower"]))
            parts.append(f'<line class="ci" x1="{x}" y1="{y1}" x2="{x}" y2="{y2}"/>'
                         f'<line class="cap" x1="{coord(px(p["x"]) - 4)}" y1="{y1}" x2="{coord(px(p["x"]) + 4)}" y2="{y1}"/>'
                         f'<line class="cap" x1="{coord(px(p["x"]) - 4)}" y1="{y2}" x2="{coord(px(p["x"]) + 4)}" y2="{y2}"/>')
        parts.append(f'<circle class="pt" cx="{x}" cy="{y}" r="5.5"/>'
                     f'<text class="lbl" x="{coord(px(p["x"]) + 8)}" y="{coord(py(p["y"]) - 6)}">{escape(p["label"])}</text></g>')
    parts.append("</svg>")
    return Markup("".join(parts))
