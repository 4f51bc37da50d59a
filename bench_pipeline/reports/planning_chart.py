"""The suite page's small chart of planning: the smallest change a comparison of a system
detects (mde80, in percentage points) against runs per side, from repeats.json's
``mde80_by_runs`` (planning.md section 2), with the changes planned for as dashed lines.

Pure; returns Markup built only from formatted numbers and escaped text, as charts.py's
charts (whose coordinate and axis-step helpers it reuses).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup, escape

from ..stats import is_number
from .charts import coord, nice_step


#: The least vertical distance between two target labels, in pixels (their font is 9px).
LABEL_GAP = 10.0


def _pp(value: float) -> str:
    """A detectable change as the reports write it: one decimal."""
    return f"{value * 100:.1f} pp"


def _change(value: float) -> str:
    """An axis tick or a planned change, as short as it is exact: ``50 pp``, ``2.5 pp``."""
    return f"{round(value * 100, 6):g} pp"


def svg_mde_by_runs(entries: Sequence[Mapping[str, Any]], targets: Sequence[float] = (), *, label: str = "",
                    width: int = 220, height: int = 104) -> Markup | None:
    """Points (runs per side on a log axis, mde80) joined by a line; a dashed line for each
    target change within the axis. Each point carries ``data-runs`` and ``data-mde80`` (the
    number as repeats.json has it) and a title with both in words. None when no entry has an
    mde80."""
    points = [(int(e["runs_per_side"]), float(e["mde80"])) for e in entries
              if is_number(e.get("mde80")) and is_number(e.get("runs_per_side")) and e["runs_per_side"] >= 1]
    if not points:
        return None
    left, right, top, bottom = 40, 34, 8, 28
    span_x, span_y = width - left - right, height - top - bottom
    most = max(r for r, _ in points)
    highest = max(m for _, m in points)
    ceiling = highest if highest > 0 else max([t for t in targets if is_number(t)] or [0.1])
    step = nice_step(ceiling / 2)
    y_top = step * max(1, math.ceil(ceiling / step - 1e-9))
    log_most = math.log10(most) if most > 1 else 1.0
    px = lambda r: left + span_x * (math.log10(r) / log_most)  # noqa: E731
    py = lambda v: top + span_y * (1 - v / y_top)  # noqa: E731
    title = f"{label}: smallest detectable change (80% power) against runs per side" if label else \
        "Smallest detectable change (80% power) against runs per side"
    parts = [f'<svg class="mde" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
             f'aria-label="{escape(title)}"><title>{escape(title)}</title>']
    for tick in (0.0, y_top / 2, y_top):
        y = coord(py(tick))
        parts.append(f'<line class="grid" x1="{left}" y1="{y}" x2="{width - right}" y2="{y}"/>'
                     f'<text class="axis" x="{left - 4}" y="{coord(py(tick) + 3)}" text-anchor="end">'
                     f'{"0" if tick == 0 else _change(tick)}</text>')
    for r, _ in points:
        x = coord(px(r))
        parts.append(f'<text class="axis" x="{x}" y="{top + span_y + 12}" text-anchor="middle">{r}</text>')
    parts.append(f'<text class="axis" x="{coord(left + span_x / 2)}" y="{height - 3}" text-anchor="middle">'
                 "runs per side</text>")
    labelled: list[float] = []  # the heights of the target labels drawn: one never covers another
    for t in sorted((t for t in targets if is_number(t) and 0 < t <= y_top), reverse=True):
        y = py(t)
        parts.append(f'<line class="target" x1="{left}" y1="{coord(y)}" x2="{width - right}" y2="{coord(y)}" '
                     f'data-change="{t!r}"/>')
        if all(abs(y - other) >= LABEL_GAP for other in labelled):
            labelled.append(y)
            parts.append(f'<text class="axis tlabel" x="{width - right + 3}" y="{coord(y + 3)}">'
                         f'{escape(_change(t))}</text>')
    path = " ".join(f"{coord(px(r))},{coord(py(m))}" for r, m in points)
    parts.append(f'<polyline class="curve" points="{path}"/>')
    for r, m in points:
        parts.append(f'<circle class="pt" cx="{coord(px(r))}" cy="{coord(py(m))}" r="3" data-runs="{r}" data-mde80="{m!r}">'
                     f'<title>{r} run{"" if r == 1 else "s"} per side: {_pp(m)}</title></circle>')
    parts.append("</svg>")
    return Markup("".join(parts))
