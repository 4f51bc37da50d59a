"""Reading the reports' inline SVG charts in tests: the chart as XML, its texts and their boxes,
the attempts each bar counts."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET


SVG = "{http://www.w3.org/2000/svg}"


def svg_tree(markup: object) -> ET.Element:
    """The chart parsed as XML (default namespace added so that ElementTree reads it)."""
    return ET.fromstring(str(markup).replace("<svg ", f'<svg xmlns="{SVG[1:-1]}" ', 1))


def texts(root: ET.Element, css: str) -> list[ET.Element]:
    return [t for t in root.iter(f"{SVG}text") if css in t.get("class", "").split()]


def text_box(t: ET.Element, font_px: float = 10.0) -> tuple[float, float, float, float]:
    """(x0, x1, y0, y1) of a text at ~0.6 em per character, 1 em above and 0.3 em below its baseline."""
    w = 0.6 * font_px * len(t.text or "")
    x, y = float(t.get("x")), float(t.get("y"))
    x0 = {"start": x, "middle": x - w / 2, "end": x - w}[t.get("text-anchor", "start")]
    return x0, x0 + w, y - font_px, y + 0.3 * font_px


def intersect(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[1] and b[0] < a[1] and a[2] < b[3] and b[2] < a[3]


def bar_counts(root: ET.Element, css: str = "bar") -> list[int]:
    """Attempts per bar, read from each bar's title ('... : 3 attempts')."""
    rects = [r for r in root.iter(f"{SVG}rect") if r.get("class") == css]
    return [int(re.search(r"([\d,]+) attempts?\b", r.find(f"{SVG}title").text).group(1).replace(",", ""))
            for r in rects]


def assert_marker_labels_apart(root: ET.Element) -> list[tuple[float, ...]]:
    boxes = [text_box(t) for t in texts(root, "mlabel")]
    for i, a in enumerate(boxes):
        assert 0 <= a[0] and a[1] <= float(root.get("viewBox").split()[2]), a
        for b in boxes[i + 1:]:
            assert not intersect(a, b), (a, b)
    return boxes
