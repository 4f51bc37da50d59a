"""Render summary.md and report.html from metrics.json, attempt records and the manifest.

Pure rendering: every number comes from ``metrics`` (the outputs.md metrics.json dict) or is a
direct count/listing of ``attempts`` (the attempt records of docs/design.md). Nothing here
recomputes a capability metric. Unavailable values render as ``n/a``, never 0.

report.html is one self-contained file: inline CSS, inline JS (allowed by a CSP hash, so no
other script can run), inline SVG charts computed here, no network access. Every string from
the run is escaped by jinja2 autoescaping; per-attempt details are embedded as JSON (with
``<``, ``>`` and ``&`` escaped) and rendered lazily with ``textContent``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import re
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from dataclasses import dataclass
from functools import cached_property
from typing import Any
from urllib.parse import quote

import orjson
from jinja2 import Environment, FileSystemBytecodeCache, PackageLoader, StrictUndefined
from jinja2.bccache import Bucket
from markupsafe import Markup, escape

from .attempt_metrics import json_key
from .bulk import fork_map, gc_paused
from .jsonio import EncodedJSON, jsonable, write_atomic
from .process import data_quality_findings, missing_attempts_count
from .stats import is_number, numbers, percentile
from .task_groups import deduplicate
from .vocabulary import (
    COST_FIELDS,
    EFFICIENCY_FIELDS,
    FAILURE_CLASSES,
    FAILURE_ERROR_FIELDS,
    FAILURE_STAGES,
    MEASURED_FIELDS,
    RELIABILITY_FIELDS,
    STATUSES,
)

NA = "n/a"

#: The unit of a measured field is its name's suffix (metrics-reference 2: "_ms, _tokens,
#: _usd: milliseconds, token counts, and dollars").
MS_FIELDS = frozenset(f for f in MEASURED_FIELDS if f.endswith("_ms"))
TOKEN_FIELDS = frozenset(f for f in MEASURED_FIELDS if f.endswith("_tokens"))
USD_FIELDS = frozenset(f for f in MEASURED_FIELDS if f.endswith("_usd"))

#: Row labels of the distribution tables (efficiency, reliability, cost to first success),
#: in the order the efficiency table shows its rows: each count before its time ("Model
#: calls", then "Model time"), unlike metrics.json's order.
FIELD_LABELS = {
    "task_wall_ms": "Task wall time",
    "setup_ms": "Setup time (all observed attempts)",
    "llm_calls": "Model calls",
    "llm_time_ms": "Model time",
    "vision_llm_calls": "Visual model calls",
    "vision_llm_time_ms": "Visual model time",
    "time_to_first_token_ms": "Time to first token",
    "device_execution_ms": "Device execution time",
    "screenshot_capture_ms": "Runner screenshot capture",
    "tool_calls": "Tool calls",
    "device_actions": "Device actions",
    "screenshots_taken": "Screenshots taken",
    "input_tokens": "Input tokens",
    "output_tokens": "Output tokens",
    "total_tokens": "Total tokens",
    "cached_input_tokens": "Cached input tokens",
    "reasoning_tokens": "Reasoning tokens",
    "cost_usd": "Cost (USD)",
    "tool_errors": "Tool errors (incl. recovered)",
    "replan_count": "Replans",
    "retry_count": "Agent retries",
}
#: The efficiency table's rows: metrics.json's efficiency fields in FIELD_LABELS' order.
EFFICIENCY_ROWS = tuple(f for f in FIELD_LABELS if f in EFFICIENCY_FIELDS)
#: report.html's histograms: a few per-attempt distributions, titled "<label> per attempt".
HISTOGRAM_FIELDS = ("task_wall_ms", "total_tokens", "tool_calls", "device_actions")

TOP_N = 10
LIST_CAP = 25
STRIP_CAP = 50  # attempt cells per task in the task table's strip
TEXT_CAP = 8_000
ARGS_CAP = 1_000
TOOL_CALLS_CAP = 100
HTML_FAILED_TASKS_CAP = 300
NOTE_CAP = 140


# --------------------------------------------------------------------------------------------
# small pure helpers: values and formatting
# --------------------------------------------------------------------------------------------


def num(value: Any) -> float | None:
    """The value as float when it is a number, else None."""
    return float(value) if is_number(value) else None


def dig(data: Any, *path: str) -> Any:
    """Nested ``.get`` that tolerates missing keys and non-dict levels."""
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def fmt_pct(value: Any, digits: int = 1) -> str:
    """0.6667 -> '66.7%'; unavailable -> 'n/a'."""
    return f"{value * 100:.{digits}f}%" if is_number(value) else NA


def fmt_ci(lower: Any, upper: Any) -> str:
    """Wilson bounds as '[30.0%, 90.3%]'; 'n/a' unless both are numbers."""
    if is_number(lower) and is_number(upper):
        return f"[{fmt_pct(lower)}, {fmt_pct(upper)}]"
    return NA


def fmt_int(value: Any) -> str:
    """Integer-like numbers with thousands separators, other numbers with up to 2 decimals."""
    if not is_number(value):
        return NA
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def fmt_mean(value: Any) -> str:
    """A mean/percentile of a count: one decimal unless integral."""
    if not is_number(value):
        return NA
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.1f}"


def fmt_round(value: Any) -> str:
    """A number rounded to an integer with thousands separators (e.g. a mean token count)."""
    return f"{value:,.0f}" if is_number(value) else NA


def fmt_ms(value: Any) -> str:
    """Milliseconds for humans: '850 ms', '12.3 s', '4.5 min'."""
    if not is_number(value):
        return NA
    if abs(value) < 1000:
        return f"{value:,.0f} ms"
    seconds = value / 1000
    if abs(seconds) < 600:
        return f"{seconds:,.1f} s"
    return f"{seconds / 60:,.1f} min"


def fmt_usd(value: Any) -> str:
    """Dollars with four decimals."""
    return f"${value:,.4f}" if is_number(value) else NA


def fmt_quality(value: Any) -> str:
    """A 0-1 quality score with two decimals."""
    return f"{value:.2f}" if is_number(value) else NA


def fmt_bool(value: Any) -> str:
    """yes / no / n/a (null is unknown, not no)."""
    if value is True:
        return "yes"
    if value is False:
        return "no"
    return NA


def fmt_text(value: Any) -> str:
    """A scalar from the run as text; null -> n/a."""
    if value is None:
        return NA
    if isinstance(value, bool):
        return fmt_bool(value)
    return str(value)


def formatter_for(field: str) -> Callable[[Any], str]:
    """The display formatter of an attempt/efficiency field."""
    if field in MS_FIELDS:
        return fmt_ms
    if field in USD_FIELDS:
        return fmt_usd
    if field in TOKEN_FIELDS:
        return fmt_round
    return fmt_mean


def fmt_compact(value: float, field: str) -> str:
    """Short axis labels: '12 s', '9.6k', '$0.01'."""
    if value == 0:
        return "0"
    if field in MS_FIELDS:
        if abs(value) < 1000:
            return f"{value:.0f} ms"
        seconds = value / 1000
        return f"{seconds:.0f} s" if abs(seconds) >= 10 else f"{seconds:.1f} s"
    if field in USD_FIELDS:
        return f"${value:.2f}"
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            scaled = value / limit
            return f"{scaled:.0f}{suffix}" if abs(scaled) >= 10 else f"{scaled:.1f}{suffix}"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def clip(text: str, limit: int) -> str:
    """Shorten long text, saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more characters]"


def one_line(text: str, limit: int = NOTE_CAP) -> str:
    """Collapse whitespace and shorten to one short line."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def attempt_no(record: Mapping[str, Any]) -> int:
    """The attempt number; a null attempt means 1 (R27)."""
    value = record.get("attempt")
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def line_no(record: Mapping[str, Any]) -> int:
    """The results.jsonl line (0 when unknown, so it sorts first)."""
    value = record.get("line")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _as_list(value: Any) -> list:
    """A run value that should be a list, or an empty one (the runner may write anything)."""
    return value if isinstance(value, list) else []


def md_code(value: Any, table: bool = True) -> str:
    """Run text as a markdown code span (inert: no HTML, links or emphasis); null -> n/a."""
    if value is None:
        return NA
    text = " ".join(str(value).split()) or "(empty)"  # whitespace collapsed; only whitespace -> (empty)
    if table:
        text = text.replace("|", "\\|")
    longest = 0
    if "`" in text:  # the fence must be longer than any backtick run inside
        longest = max(len(run) for run in re.findall("`+", text))
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_text(value: Any) -> str:
    """Free run text for markdown prose/table cells, with markdown/HTML metacharacters escaped."""
    if value is None:
        return NA
    text = " ".join(str(value).split())
    out = []
    for char in text:
        out.append("\\" + char if char in "\\`*_[]<>|&" else char)
    return "".join(out)


def _fragment(value: Any) -> orjson.Fragment:
    if type(value) is EncodedJSON:
        return orjson.Fragment(value.encoded)
    raise TypeError(f"not JSON: {type(value).__name__}")


def _json_text(data: Any, separators: tuple[str, str] = (",", ":")) -> str:
    """JSON text of run values: orjson (NaN/Infinity become null), else ``jsonable`` first."""
    if separators == (",", ":"):
        try:
            return orjson.dumps(data, default=_fragment, option=orjson.OPT_NON_STR_KEYS).decode()
        except TypeError:
            pass
    return json.dumps(jsonable(data), ensure_ascii=False, separators=separators, allow_nan=False)


def script_json(data: Any) -> Markup:
    """JSON safe inside ``<script type="application/json">`` (no ``</script>``, ``<!--``)."""
    text = _json_text(data)
    for raw, escaped in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return Markup(text)


def _ordered_keys(counts: Mapping[str, Any], vocabulary: Sequence[str]) -> list[str]:
    """The vocabulary in order, then any unlisted keys (R35), sorted."""
    extra = sorted(str(k) for k in counts if k not in vocabulary)
    return [*vocabulary, *extra]


# --------------------------------------------------------------------------------------------
# inline SVG builders (pure; return Markup built only from escaped text)
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# view model shared by summary.md and report.html
# --------------------------------------------------------------------------------------------

HEADLINE: tuple[tuple[str, str, str], ...] = (
    ("pass_at_1", "pass@1", "tasks"),
    ("pass_at_k", "pass@k", "tasks"),
    ("pass_pow_k", "pass^k", "tasks"),
    ("attempt_success_rate", "Attempt success", "attempts"),
)

HEADLINE_HELP = {
    "pass_at_1": "Tasks whose actual attempt 1 succeeded, among tasks with an eligible attempt 1.",
    "pass_at_k": "Tasks with at least one success in attempts 1..k, among tasks whose attempts 1..k all exist and are eligible.",
    "pass_pow_k": "Tasks whose attempts 1..k all succeeded (consistency), on the same complete-task denominator.",
    "attempt_success_rate": "Successful eligible attempts / eligible attempts, including attempts beyond k.",
}


def _manifest_facts(manifest: Mapping[str, Any], metrics: Mapping[str, Any], run_id: str) -> list[tuple[str, str]]:
    """(label, text) pairs describing what was evaluated."""

    def named(value: Any, *keys: str) -> str | None:
        if isinstance(value, str):
            return value
        if isinstance(value, dict):
            bits = [str(value[k]) for k in keys if value.get(k) not in (None, "")]
            return " / ".join(bits) if bits else None
        return None

    suite = manifest.get("suite")
    suite_name = metrics.get("suite") or named(suite, "name")
    suite_version = dig(suite, "version")
    suite_text = fmt_text(suite_name)
    if suite_version is not None:
        suite_text += f" (version {suite_version})"

    judge = manifest.get("judge")
    if isinstance(judge, dict):
        enabled = judge.get("enabled")
        model = judge.get("model")
        if enabled is False:
            judge_text = "disabled (--no-judge: passing attempts get quality 1 without semantic rubric evaluation)"
        else:
            judge_text = f"{fmt_text(model)}" + (" (enabled)" if enabled is True else "")
    else:
        judge_text = fmt_text(judge)

    code = manifest.get("code")
    if isinstance(code, dict):
        code_text = fmt_text(code.get("git_sha"))
        if code.get("dirty") is True:
            code_text += " (dirty working tree)"
        elif code.get("dirty") is False:
            code_text += " (clean)"
    else:
        code_text = fmt_text(code)

    platform = manifest.get("platform")
    if isinstance(platform, dict) and platform:
        platform_text = ", ".join(f"{k} {fmt_text(v)}" for k, v in platform.items())
    else:
        platform_text = fmt_text(platform)

    skills = manifest.get("active_skills")
    skills_text = ", ".join(str(s) for s in skills) if isinstance(skills, list) and skills else (
        "none" if isinstance(skills, list) else NA)

    planned = manifest.get("planned")
    plan_bits = [f"repeats {fmt_text(manifest.get('repeats'))}",
                 f"metrics_k {fmt_text(manifest.get('metrics_k'))}"]
    if isinstance(planned, list):
        plan_bits.append(f"{len(planned):,} planned tasks")
    status = fmt_text(manifest.get("status"))
    times = f"{fmt_text(manifest.get('started_at'))} to {fmt_text(manifest.get('finished_at'))}"
    return [
        ("Run id", run_id),
        ("Run status", f"{status}, {times}"),
        ("Suite", suite_text),
        ("Model", fmt_text(named(manifest.get("model"), "provider", "name"))),
        ("Judge", judge_text),
        ("Code", code_text),
        ("Platform", platform_text),
        ("Active skills", skills_text),
        ("Repeat plan", " · ".join(plan_bits)),
        ("Metrics", f"schema {fmt_text(metrics.get('schema_version'))} · formula "
                    f"{fmt_text(metrics.get('formula_version'))} · generated {fmt_text(metrics.get('generated_at'))}"),
    ]


def _headline(metrics: Mapping[str, Any], k: Any) -> list[dict[str, Any]]:
    """The four headline capability metrics, formatted."""
    rows = []
    for key, label, unit in HEADLINE:
        m = dig(metrics, "capability", key) or {}
        lower, upper = dig(m, "ci95", "lower"), dig(m, "ci95", "upper")
        if unit == "tasks":
            eligible, total = m.get("eligible_tasks"), m.get("total_tasks")
            coverage = dig(metrics, "coverage", key)
        else:
            eligible, total = m.get("eligible_attempts"), m.get("total_attempts")
            coverage = m.get("coverage")
        shown = label if key in ("pass_at_1", "attempt_success_rate") else f"{label} (k={fmt_text(k)})"
        rows.append({
            "key": key,
            "label": shown,
            "help": HEADLINE_HELP[key],
            "value": m.get("value"),
            "value_text": fmt_pct(m.get("value")),
            "ci_text": fmt_ci(lower, upper),
            "successes": fmt_int(m.get("successes")),
            "eligible": fmt_int(eligible),
            "total": fmt_int(total),
            "unit": unit,
            "coverage_text": fmt_pct(coverage),
            "svg": svg_interval_bar(m.get("value"), lower, upper, label=shown),
        })
    return rows


def _cautions(k: Any, judge_disabled: bool, missing: Any) -> list[str]:
    """Interpretation cautions from the reference for the headline."""
    notes = []
    if k == 1:
        notes.append("k = 1: pass@1, pass@k and pass^k coincide on the same eligible task set; "
                     "a single attempt cannot demonstrate repeatability.")
    elif is_number(k):
        notes.append("A higher pass@k describes observed success with more opportunities, not better "
                     "first-attempt reliability; pass^k is the consistency measure. These are observed "
                     "fixed-k outcomes, not estimates from arbitrary combinations of attempts.")
    else:
        notes.append("k (manifest metrics_k) is unknown, so the fixed-k metrics cannot be interpreted.")
    notes.append("The attempt-success interval ignores within-task correlation: repeats of the same task "
                 "are correlated, so the simple Wilson interval is too narrow for release decisions. "
                 "Compare paired tasks and repeated runs grouped by task.")
    notes.append("Do not infer significance from a small percentage change or from overlapping or "
                 "separate confidence intervals.")
    notes.append("Coverage = eligible / observed. Attempts entirely missing from results.jsonl escape these "
                 f"denominators (missing planned attempts: {fmt_int(missing)}).")
    notes.append("Unknown is not failure: attempts with an unknown outcome are excluded by eligibility, "
                 "never counted as 0.")
    if judge_disabled:
        notes.append("The judge was disabled: passing attempts get quality 1 without semantic rubric evaluation.")
    return notes


def _exclusion_reading(status: Any, cls: Any, eligible: Any, derived_false: bool = False) -> str:
    """What a status x class x eligibility combination means for the denominators.

    ``derived_false``: the rows' success is false only because the legacy rule derived it
    from status (raw success unknown, reference 2), so the reading names it instead of
    contradicting the outcome beside it.
    """
    if eligible is True:
        if status == "passed":
            return "Counted; success."
        if cls == "agent":
            if status == "timeout":
                return "Counted as a failure: timeout with execution evidence."
            return "Counted as an Agent failure (audit the evaluator before blaming the model)."
        if cls == "unknown":
            return "Counted as a failure with insufficient classification evidence (e.g. a chat error after execution started)."
        return "Counted in capability denominators."
    if eligible is False:
        if cls == "environment":
            return "Excluded: setup assertion or initialization failure; not an Agent failure."
        if cls == "evaluation":
            return "Excluded: judge or required evidence unavailable; outcome unknown."
        if cls == "skipped":
            return ("Excluded: skipped or could not run normally (agent not ready, missing input screenshot, "
                    "setup error, outer exception); inspect the error.")
        if cls == "unknown" and status == "timeout":
            reading = "Excluded from every capability denominator: timeout without evidence that execution started"
            return reading + ("; success derived false from status, raw unknown." if derived_false else ".")
        if cls == "unknown":
            return "Excluded: insufficient classification evidence (e.g. chat error without execution evidence)."
        return "Excluded by the runner's explicit eligibility flag; inspect the error."
    return "Eligibility unknown."


def shown_stage(rec: Mapping[str, Any]) -> Any:
    """The first failure stage the reports show: an eligible failure without a stage label
    is ``unknown``, the word failures.stage counts it under (docs/metric-choices.md), so the
    stage table and the attempt lists say the same; any other row shows its own value."""
    stage = rec.get("first_failure_stage")
    if stage in (None, "") and rec.get("agent_eligible") is True and rec.get("success") is False:
        return "unknown"
    return stage


def _sort_key_status(status: Any) -> tuple[int, str]:
    return (STATUSES.index(status) if status in STATUSES else len(STATUSES), str(status))


def _sort_key_class(cls: Any) -> tuple[int, str]:
    if cls is None:
        return (-1, "")
    return (FAILURE_CLASSES.index(cls) if cls in FAILURE_CLASSES else len(FAILURE_CLASSES), str(cls))


#: Outcome labels of the exclusion table; "from status" marks a success value the legacy
#: rule derived from status because the row recorded none (reference 2).
OUTCOME_WORDS = (
    ("true", "success"), ("true_from_status", "success (from status; raw unknown)"),
    ("false", "failure"), ("false_from_status", "failure (from status; raw unknown)"),
    ("unknown", "unknown"),
)


def _exclusion_rows(groups: Mapping[tuple[Any, Any, Any], Counter]) -> list[dict[str, Any]]:
    """The exclusion table: {(status, failure class, eligibility): outcome label counts}
    as rows, eligible first."""
    rows = []
    for (status, cls, eligible), counts in groups.items():
        outcome = ", ".join(f"{counts[o]:,} {word}" for o, word in OUTCOME_WORDS if counts[o])
        rows.append({
            "status": status, "cls": cls, "eligible": eligible,
            "eligible_text": fmt_bool(eligible), "count": sum(counts.values()),
            "outcome": outcome,
            "counted": "yes" if eligible is True else "no" if eligible is False else NA,
            "reading": _exclusion_reading(status, cls, eligible,
                                          derived_false=counts["false_from_status"] == sum(counts.values())),
        })
    rows.sort(key=lambda r: (0 if r["eligible"] is True else 1 if r["eligible"] is False else 2,
                             _sort_key_status(r["status"]), _sort_key_class(r["cls"])))
    return rows


def _task_exclusions(tasks: Mapping[str, Mapping[int, Mapping[str, Any]]], k: Any) -> dict[str, list[tuple[str, str]]]:
    """Which tasks fall outside the pass@1 and fixed-k denominators, and why."""

    def why(rec: Mapping[str, Any] | None, n: int) -> str | None:
        if rec is None:
            return f"attempt {n} missing"
        if rec.get("agent_eligible") is not True:
            return (f"attempt {n} ineligible ({fmt_text(rec.get('status'))}"
                    f"/{fmt_text(rec.get('failure_class'))})")
        return None

    at1, atk = [], []
    for task_id in sorted(tasks):
        by_attempt = tasks[task_id]
        reason = why(by_attempt.get(1), 1)
        if reason:
            at1.append((task_id, reason))
        if isinstance(k, int) and k >= 1:
            # In attempt order; at most LIST_CAP missing attempts by number (k may be large).
            missing = [n for n in range(1, min(k, LIST_CAP + len(by_attempt)) + 1) if n not in by_attempt]
            numbered = sorted([a for a in by_attempt if isinstance(a, int) and a <= k] + missing[:LIST_CAP])
            reasons = [r for n in numbered if (r := why(by_attempt.get(n), n))]
            n_missing = k - sum(1 for a in by_attempt if isinstance(a, int) and a <= k)
            if n_missing > LIST_CAP:
                reasons.append(f"{n_missing - LIST_CAP:,} more attempts missing")
            if reasons:
                atk.append((task_id, "; ".join(reasons)))
    return {"pass_at_1": at1, "fixed_k": atk}


def _attempt_note(rec: Mapping[str, Any]) -> str:
    """The most telling evidence line for an attempt that did not pass.

    Order: execution/evaluation errors, hard-assertion failures, failed environment-state
    checks, answer/memory mismatches, rubric "no" verdicts, judge error, artifact-acquisition
    errors (which may not fail a task), then the failure event reference.
    """
    ev = rec.get("evidence") if isinstance(rec.get("evidence"), dict) else {}
    errors = ev.get("errors") if isinstance(ev.get("errors"), dict) else {}
    for key in FAILURE_ERROR_FIELDS:
        if errors.get(key):
            return one_line(f"{key}: {errors[key]}")
    for item in _as_list(ev.get("hard_assertion_failures")):
        if isinstance(item, dict):
            return one_line(f"hard assertion {item.get('id')}: {item.get('requirement')} "
                            f"(actual: {_compact_json(item.get('actual'))})")
    for item in _as_list(ev.get("environment_state_assertions")):
        if isinstance(item, dict) and item.get("passed") is False:
            return one_line(f"state check {item.get('id')} failed (expected {_compact_json(item.get('expected'))}, "
                            f"actual {_compact_json(item.get('actual'))})")
    if ev.get("expected_answer_match") is False:
        return "expected answer did not match"
    if ev.get("expected_recalled_memory_match") is False:
        return one_line(f"expected memory not recalled (source: {fmt_text(ev.get('memory_recall_evidence_source'))})")
    for item in _as_list(ev.get("rubric")):
        if isinstance(item, dict) and item.get("verdict") == "no":
            return one_line(f"rubric {item.get('id')}: no ({item.get('reason')})")
    judge = ev.get("judge")
    if isinstance(judge, dict) and judge.get("error"):
        return one_line(f"judge: {judge['error']}")
    for key, text in errors.items():
        if text:
            return one_line(f"{key}: {text}")
    if rec.get("failure_event_ref"):
        return f"failure event at {rec['failure_event_ref']}"
    return ""


def _compact_json(value: Any, limit: int = ARGS_CAP) -> str:
    """Compact JSON text of a value (strings stay bare)."""
    if isinstance(value, str):
        return clip(value, limit)
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    except (TypeError, ValueError):
        try:
            text = json.dumps(jsonable(value), ensure_ascii=False, separators=(", ", ": "))
        except (TypeError, ValueError):
            text = str(value)
    return clip(text, limit)


#: Above this many bytes of JSON an attempt's tool calls are formatted (and clipped) here.
INLINE_CALLS_BYTES = 64_000


def _inline_calls(calls: Any) -> EncodedJSON | None:
    """The first TOOL_CALLS_CAP calls as [[name, arguments], ...] for report.js to render,
    when well formed and at most INLINE_CALLS_BYTES of JSON (encoded once, here)."""
    if not isinstance(calls, list) or not calls:
        return None
    head = calls[:TOOL_CALLS_CAP]
    if not all(type(c) is dict for c in head):
        return None
    pairs = [[c.get("name"), c.get("arguments")] for c in head]
    try:
        encoded = orjson.dumps(pairs)
    except TypeError:
        return None
    return EncodedJSON(pairs, encoded) if len(encoded) <= INLINE_CALLS_BYTES else None


def _args_json(value: Any, limit: int = ARGS_CAP) -> str:
    """Tool-call arguments as compact JSON text (the hot path of large reports: orjson)."""
    if isinstance(value, str):
        return clip(value, limit)
    try:
        return clip(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode(), limit)
    except TypeError:
        return _compact_json(value, limit)


def _evidence_dir(rec: Mapping[str, Any], unsafe_lines: set[int]) -> tuple[str | None, str]:
    """(folder or None, display text) for an attempt's evidence folder."""
    ev = rec.get("evidence")
    folder = ev.get("dir") if isinstance(ev, dict) else None
    if isinstance(folder, str):
        return folder, folder or "."
    if line_no(rec) in unsafe_lines:
        return None, "n/a (artifact_dir refused as unsafe)"
    return None, "n/a (unavailable)"


def evidence_href(base: str | None, folder: str | None) -> str | None:
    """Percent-encoded link to an evidence folder, or None without a base or a folder."""
    if base is None or folder is None:
        return None
    joined = "/".join(p for p in (base.strip("/"), folder.replace("\\", "/").strip("/")) if p)
    return quote((joined or ".") + "/", safe="/._-~")


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _task_rows(tasks: Mapping[str, Mapping[int, Mapping[str, Any]]], per_task: Mapping[str, Any],
               k: Any) -> list[dict[str, Any]]:
    """One row per observed task (deduplicated attempts) joined with aggregate.per_task."""
    rows = []
    for task_id in sorted(tasks):
        by_attempt = tasks[task_id]
        recs = [by_attempt[n] for n in sorted(by_attempt)]
        agg = per_task.get(task_id) if isinstance(per_task, dict) else None
        agg = agg if isinstance(agg, dict) else {}
        walls, tokens, costs = [], [], []
        category, n_passed = None, 0
        for r in recs:  # one pass over the task's attempts
            # The max beside per_task.avg_wall_ms is over the same eligible attempts (R30).
            if r.get("agent_eligible") is True and (v := num(r.get("task_wall_ms"))) is not None:
                walls.append(v)
            if (v := num(r.get("total_tokens"))) is not None:
                tokens.append(v)
            if (v := num(r.get("cost_usd"))) is not None:
                costs.append(v)
            if category is None:
                category = r.get("category")
            if r.get("status") == "passed":
                n_passed += 1
        max_attempt = max(by_attempt) if by_attempt else 0
        span = max(max_attempt, k if isinstance(k, int) else 0)
        strip = []
        for n in range(1, min(span, STRIP_CAP) + 1):
            r = by_attempt.get(n)
            if r is None:
                strip.append(("missing", f"#{n} missing"))
            else:
                status = str(r.get("status"))
                elig = "" if r.get("agent_eligible") is True else ", ineligible"
                strip.append((status_kind(status), f"#{n} {status}{elig}"))
        if span > STRIP_CAP:
            strip.append(("other", f"#{STRIP_CAP + 1}-#{span}: see the attempt table"))
        rows.append({
            "task_id": task_id,
            "category": category,
            "records": recs,
            "strip": strip,
            "attempts": agg.get("attempts", len(recs)),
            "eligible": agg.get("eligible_attempts"),
            "passed": agg.get("passed"),
            "failed": agg.get("failed"),
            "pass_rate": agg.get("pass_rate"),
            "best_quality": agg.get("best_quality"),
            "avg_quality": agg.get("avg_quality"),
            "avg_wall_ms": agg.get("avg_wall_ms"),
            "max_wall_ms": max(walls) if walls else None,
            "mean_tokens": _mean(tokens),
            "sum_tokens": sum(tokens) if tokens else None,
            "n_tokens": len(tokens),
            "sum_cost": sum(costs) if costs else None,
            "has_nonpass": n_passed < len(recs),
            "n_passed_status": n_passed,
        })
    return rows


def _distribution_rows(block: Any, fields: Sequence[str], stats: Sequence[str]) -> list[dict[str, Any]]:
    """Formatted rows of an efficiency/reliability/cost_to_first_success block."""
    rows = []
    for field in fields:
        entry = block.get(field) if isinstance(block, dict) else None
        entry = entry if isinstance(entry, dict) else {}
        fmt = formatter_for(field)
        cells = {"count": fmt_int(entry.get("count"))}
        for stat in stats:
            if stat != "count":
                cells[stat] = fmt(entry.get(stat))
        rows.append({"field": field, "label": FIELD_LABELS[field], **cells})
    return rows


def _data_quality(metrics: Mapping[str, Any], facts: Mapping[str, Any]) -> dict[str, Any]:
    """Data-quality findings (from metrics) plus evidence availability counts (attempt_facts)."""
    dq = metrics.get("data_quality") if isinstance(metrics.get("data_quality"), dict) else {}

    def listed(key: str) -> list[Mapping[str, Any]]:
        value = dq.get(key)
        return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []

    bad = listed("bad_rows")
    dups = listed("duplicate_rows")
    missing = listed("missing_attempts")
    unsafe = listed("unsafe_artifact_dirs")
    invalid = listed("invalid_artifacts")
    run_files = listed("run_files")
    return {
        "bad_rows": bad,
        "duplicate_rows": dups,
        "missing_attempts": missing,
        "missing_count": missing_attempts_count(metrics),  # the list names at most 100,000
        "unsafe_artifact_dirs": unsafe,
        "invalid_artifacts": invalid,
        "run_files": run_files,
        "findings": data_quality_findings(metrics),  # as the command's summary line counts them
        "present": bool(dq),
        "trace_status": facts["trace_status"],
        "recorded_attempts": facts["recorded_attempts"],
        "recorded_fields": facts["recorded_fields"],
        "cap": LIST_CAP,
    }


def attempt_facts(attempts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """What the reports count over the attempt rows alone, needing neither the metrics nor
    the task groups: statuses, eligibility, the exclusion table (status x failure class x
    eligibility, with outcomes), evidence availability. One pass over the rows."""
    n = ineligible = eligible_unknown = recorded_attempts = 0
    status_counts: Counter = Counter()
    trace_status: Counter = Counter()
    recorded_fields: Counter = Counter()
    groups: dict[tuple[Any, Any, Any], Counter] = {}
    for rec in attempts:
        if not isinstance(rec, dict):
            continue
        n += 1
        status, eligible, outcome = rec.get("status"), rec.get("agent_eligible"), rec.get("success")
        if eligible is not True:
            ineligible += 1
        elif outcome is None:
            eligible_unknown += 1
        status_counts[str(status)] += 1
        label = "true" if outcome is True else "false" if outcome is False else "unknown"
        if outcome is not None and rec.get("success_raw") is None:
            label += "_from_status"  # the legacy derivation filled a missing raw success
        groups.setdefault((status, rec.get("failure_class"), eligible), Counter())[label] += 1
        trace_status[str(dig(rec, "evidence", "trace_artifact", "status") or "n/a")] += 1
        prov = rec.get("provenance")
        if isinstance(prov, dict) and "recorded" in prov.values():
            recorded_attempts += 1
            recorded_fields.update(f for f, v in prov.items() if v == "recorded")
    return {
        "n_attempts": n,
        "ineligible": ineligible,
        "eligible_unknown": eligible_unknown,
        "status_counts": status_counts,
        "exclusions": _exclusion_rows(groups),
        "trace_status": sorted(trace_status.items(), key=lambda kv: (-kv[1], kv[0])),
        "recorded_attempts": recorded_attempts,
        "recorded_fields": recorded_fields.most_common(6),
    }


def task_facts(attempts: Sequence[Mapping[str, Any]], per_task: Any, k: Any) -> dict[str, Any]:
    """The reports' per-task part: attempts grouped by task as task_groups groups them (the
    later line wins, R29), the task table rows joined with aggregate.per_task, and the tasks
    outside each denominator. ``attempts`` are attempt records, whose task id, attempt
    number and line run_reader has already checked (R27)."""
    tasks = deduplicate(a for a in attempts if isinstance(a, dict))
    per_task = per_task if isinstance(per_task, dict) else {}
    return {"tasks": tasks, "task_rows": _task_rows(tasks, per_task, k), "task_exclusions": _task_exclusions(tasks, k)}


def view_k(metrics: Mapping[str, Any], manifest: Mapping[str, Any]) -> Any:
    """The k the reports use: coverage.metrics_k, else the manifest's."""
    metrics = metrics if isinstance(metrics, dict) else {}
    manifest = manifest if isinstance(manifest, dict) else {}
    coverage = metrics.get("coverage") if isinstance(metrics.get("coverage"), dict) else {}
    return coverage.get("metrics_k", manifest.get("metrics_k"))


@dataclass
class FailedTask:
    """A task with an attempt that did not pass, as both reports list it.

    ``attempts`` (one row per attempt, plus placeholders for missing ones) is built when a
    report first reads it: summary.md lists every failed task, report.html the first
    HTML_FAILED_TASKS_CAP, so a large run's page does not wait for rows it never shows.
    """

    task_id: str
    category: Any
    passed: int  # attempts with status passed
    n: int  # attempts observed
    eligible_failed: int
    records: list[Mapping[str, Any]]
    k: Any
    unsafe_lines: set[int]
    evidence_base: str | None

    @cached_property
    def attempts(self) -> list[dict[str, Any]]:
        rows = []
        present = {attempt_no(rec) for rec in self.records}
        expected = max(present | {self.k if isinstance(self.k, int) else 0})
        for n in range(1, min(expected, LIST_CAP + len(present)) + 1):  # placeholders: at most LIST_CAP
            if n not in present:
                rows.append({"attempt": n, "status": None, "cls": None, "eligible": NA, "stage": None,
                             "quality": NA, "folder": None, "folder_text": "n/a (no result row)", "href": None,
                             "trace": NA, "note": "planned or expected attempt missing from results.jsonl",
                             "missing": True})
        for rec in self.records:
            folder, folder_text = _evidence_dir(rec, self.unsafe_lines)
            href = evidence_href(self.evidence_base, folder)
            rows.append({
                "attempt": attempt_no(rec), "status": rec.get("status"), "cls": rec.get("failure_class"),
                "eligible": fmt_bool(rec.get("agent_eligible")), "stage": shown_stage(rec),
                "quality": fmt_quality(rec.get("quality_score")), "folder": folder, "folder_text": folder_text,
                "href": href or None,
                "trace": fmt_text(dig(rec, "evidence", "trace_artifact", "status")),
                "note": _attempt_note(rec) if rec.get("status") != "passed" else "",
                "missing": False,
            })
        rows.sort(key=lambda r: r["attempt"])
        return rows


def build_view(metrics: Mapping[str, Any], attempts: Sequence[Mapping[str, Any]], manifest: Mapping[str, Any],
               run_id: str, evidence_base: str | None = None, facts: Mapping[str, Any] | None = None,
               per_task_facts: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Everything both reports show, pre-formatted (strings from the run left raw for escaping).

    ``facts`` (attempt_facts) and ``per_task_facts`` (task_facts), when given, were computed
    already (for instance in parallel with the metrics); else they are computed here.
    """
    metrics = metrics if isinstance(metrics, dict) else {}
    manifest = manifest if isinstance(manifest, dict) else {}
    coverage = metrics.get("coverage") if isinstance(metrics.get("coverage"), dict) else {}
    k = view_k(metrics, manifest)
    judge_disabled = dig(manifest, "judge", "enabled") is False
    if facts is None:
        facts = attempt_facts(attempts)
    if per_task_facts is None:
        per_task_facts = task_facts(attempts, dig(metrics, "aggregate", "per_task"), k)

    tasks, task_rows = per_task_facts["tasks"], per_task_facts["task_rows"]
    dq = _data_quality(metrics, facts)
    unsafe_lines = {u.get("line") for u in dq["unsafe_artifact_dirs"] if isinstance(u.get("line"), int)}

    cap = metrics.get("capability") if isinstance(metrics.get("capability"), dict) else {}
    oracle = cap.get("oracle_best_score_at_k") if isinstance(cap.get("oracle_best_score_at_k"), dict) else {}
    first = cap.get("first_success_attempt") if isinstance(cap.get("first_success_attempt"), dict) else {}

    # exclusions
    ineligible, n_attempts = facts["ineligible"], facts["n_attempts"]

    # failures
    class_counts = dig(metrics, "failures", "class") or {}
    stage_counts = dig(metrics, "failures", "stage") or {}
    class_items = [(c, int(class_counts.get(c) or 0)) for c in _ordered_keys(class_counts, FAILURE_CLASSES)]
    stage_items = [(s, int(stage_counts.get(s) or 0)) for s in _ordered_keys(stage_counts, FAILURE_STAGES)]
    class_counts_ok = isinstance(class_counts, dict) and bool(class_counts)
    stage_counts_ok = isinstance(stage_counts, dict) and bool(stage_counts)

    # status mix
    status_counts = facts["status_counts"]
    status_items = [(s, status_counts.get(s, 0)) for s in STATUSES] + [
        (s, c) for s, c in sorted(status_counts.items()) if s not in STATUSES]

    # slowest / most expensive
    with_wall = [t for t in task_rows if is_number(t["avg_wall_ms"])]
    slowest = sorted(with_wall, key=lambda t: (-t["avg_wall_ms"], t["task_id"]))[:TOP_N]
    any_cost = any(t["sum_cost"] is not None for t in task_rows)
    if any_cost:
        expensive = sorted([t for t in task_rows if t["sum_cost"] is not None],
                           key=lambda t: (-t["sum_cost"], t["task_id"]))[:TOP_N]
    else:
        expensive = sorted([t for t in task_rows if t["mean_tokens"] is not None],
                           key=lambda t: (-t["mean_tokens"], t["task_id"]))[:TOP_N]

    # failed tasks with evidence folders (each task's attempt rows are built when listed)
    failed_tasks = [
        FailedTask(t["task_id"], t["category"], t["n_passed_status"], len(t["records"]),
                   sum(1 for rec in t["records"] if rec.get("agent_eligible") is True and rec.get("success") is not True),
                   t["records"], k, unsafe_lines, evidence_base)
        for t in task_rows if t["has_nonpass"]
    ]
    failed_tasks.sort(key=lambda f: (f.passed / max(f.n, 1), -f.eligible_failed, f.task_id))

    categories = []
    for name, entry in sorted((metrics.get("category") or {}).items()):
        entry = entry if isinstance(entry, dict) else {}
        categories.append({"name": name, "pass_rate": fmt_pct(entry.get("pass_rate")),
                           "rubric_pass_rate": fmt_pct(entry.get("rubric_pass_rate")),
                           "attempts": fmt_int(entry.get("attempts"))})
    observations = []
    for name, entry in sorted((metrics.get("observations") or {}).items()):
        entry = entry if isinstance(entry, dict) else {}
        observations.append({"name": name, "pass_rate": fmt_pct(entry.get("pass_rate")),
                             "passed": fmt_int(entry.get("passed_tasks")),
                             "observed": fmt_int(entry.get("observed_tasks"))})

    efficiency = metrics.get("efficiency") or {}
    suite = metrics.get("suite") or dig(manifest, "suite", "name") or (
        manifest.get("suite") if isinstance(manifest.get("suite"), str) else None)
    model = dig(manifest, "model", "name") or (manifest.get("model") if isinstance(manifest.get("model"), str) else None)

    return {
        "run_id": run_id,
        "suite": suite,
        "model": model,
        "k": k,
        "k_text": fmt_text(k),
        "k_is_one": k == 1,
        "generated_at": metrics.get("generated_at"),
        "formula_version": metrics.get("formula_version"),
        "facts": _manifest_facts(manifest, metrics, run_id),
        "headline": _headline(metrics, k),
        "oracle": {"value": fmt_quality(oracle.get("value")), "count": fmt_int(oracle.get("count")),
                   "eligible_tasks": fmt_int(oracle.get("eligible_tasks"))},
        "first_success": {"mean": fmt_mean(first.get("mean")), "p50": fmt_mean(first.get("p50")),
                          "count": fmt_int(first.get("count"))},
        "cautions": _cautions(k, judge_disabled, coverage.get("missing_attempts")),
        "coverage": [
            ("Observed unique tasks", fmt_int(coverage.get("unique_tasks"))),
            ("Observed attempt rows", fmt_int(coverage.get("attempts"))),
            ("Agent-eligible attempts", fmt_int(coverage.get("agent_eligible_attempts"))),
            ("Invalid (ineligible) attempts", fmt_int(coverage.get("invalid_attempts"))),
            ("Planned attempts", fmt_int(coverage.get("planned_attempts"))),
            ("Missing planned attempts", fmt_int(coverage.get("missing_attempts"))),
            ("k (metrics_k)", fmt_int(k)),
            ("Attempt rows, as aggregate.tasks (the name kept for older readers of metrics.json)",
             fmt_int(dig(metrics, "aggregate", "tasks"))),
        ],
        "status_items": status_items,
        "n_attempts": n_attempts,
        "ineligible": ineligible,
        "ineligible_pct": fmt_pct(ineligible / n_attempts) if n_attempts else NA,
        "eligible_unknown": facts["eligible_unknown"],
        "exclusions": facts["exclusions"],
        "task_exclusions": per_task_facts["task_exclusions"],
        "class_items": class_items,
        "stage_items": stage_items,
        "class_counts_ok": class_counts_ok,
        "stage_counts_ok": stage_counts_ok,
        "class_total": sum(c for _, c in class_items),
        "stage_total": sum(c for _, c in stage_items),
        "stage_coverage": fmt_pct(dig(metrics, "diagnostics", "failure_stage_coverage")),
        "efficiency": _distribution_rows(efficiency, EFFICIENCY_ROWS, ("count", "mean", "p50", "p90", "p95", "sum")),
        "reliability": _distribution_rows(metrics.get("reliability") or {}, RELIABILITY_FIELDS,
                                          ("count", "mean", "p50", "p90", "p95", "sum")),
        "cost_first": _distribution_rows(metrics.get("cost_to_first_success") or {}, COST_FIELDS,
                                         ("count", "mean", "p50")),
        "slowest": slowest,
        "expensive": expensive,
        "expensive_by_cost": any_cost,
        "failed_tasks": failed_tasks,
        "categories": categories,
        "observations": observations,
        "dq": dq,
        "task_rows": task_rows,
        "tasks": tasks,
        "unsafe_lines": unsafe_lines,
        "cap": LIST_CAP,
    }


# --------------------------------------------------------------------------------------------
# report.html specifics: tables, lazy per-attempt details, charts
# --------------------------------------------------------------------------------------------


FACT_LABELS: tuple[str, ...] = (
    "Evidence folder", "Trace artifact", "results.jsonl line", "Success (raw / used)",
    "Eligible (raw / used)", "First failure stage", "Failure event ref", "Quality score",
    "Rubric passed", "Expected answer match", "Recalled memory match (source)",
    "Timeout recovery (attempted / succeeded)", "Episode id", "Execution trace id",
    "Started / finished", "Model time / tokens in, out", "Device actions / device time",
    "Tool errors / replans", "Setup time", "Recorded (not derived) fields",
)


def _details_payload(rec: Mapping[str, Any], notes: list[str], folder_text: str) -> list[Any]:
    """An attempt's expandable details: [fact values (in FACT_LABELS order), sections].

    A section is [title, kind, content]; kinds: "pre" -> text, "note" -> text,
    "table" -> [columns, rows], "kv" -> [[label, text]].
    """
    ev = rec.get("evidence") if isinstance(rec.get("evidence"), dict) else {}
    trace = ev.get("trace_artifact") if isinstance(ev.get("trace_artifact"), dict) else {}
    prov = rec.get("provenance") if isinstance(rec.get("provenance"), dict) else {}
    recorded = sorted(f for f, v in prov.items() if v == "recorded")
    facts = [
        folder_text,
        fmt_text(trace.get("status")) + (f" ({trace['path']})" if trace.get("path") else ""),
        fmt_text(rec.get("line")),
        f"{fmt_bool(rec.get('success_raw'))} / {fmt_bool(rec.get('success'))}",
        f"{fmt_bool(rec.get('agent_eligible_raw'))} / {fmt_bool(rec.get('agent_eligible'))}",
        fmt_text(shown_stage(rec)),
        fmt_text(rec.get("failure_event_ref")),
        fmt_quality(rec.get("quality_score")),
        f"{fmt_int(rec.get('rubric_pass_count'))} / {fmt_int(rec.get('rubric_total'))}",
        fmt_bool(ev.get("expected_answer_match")),
        f"{fmt_bool(ev.get('expected_recalled_memory_match'))} ({fmt_text(ev.get('memory_recall_evidence_source'))})",
        f"{fmt_bool(rec.get('recovery_attempted'))} / {fmt_bool(rec.get('recovery_succeeded'))}",
        fmt_text(ev.get("episode_id")),
        fmt_text(ev.get("trace_id")),
        f"{fmt_text(ev.get('started_at'))} / {fmt_text(ev.get('finished_at'))}",
        f"{fmt_ms(rec.get('llm_time_ms'))} / {fmt_int(rec.get('input_tokens'))}, {fmt_int(rec.get('output_tokens'))}",
        f"{fmt_int(rec.get('device_actions'))} / {fmt_ms(rec.get('device_execution_ms'))}",
        f"{fmt_int(rec.get('tool_errors'))} / {fmt_int(rec.get('replan_count'))}",
        fmt_ms(rec.get("setup_ms")),
        ", ".join(recorded) if recorded else "none",
    ]
    sections: list[list[Any]] = [["Note", "note", note] for note in notes]

    errors = ev.get("errors") if isinstance(ev.get("errors"), dict) else {}
    err_rows = [[str(k), clip(str(v), TEXT_CAP)] for k, v in errors.items() if v not in (None, "")]
    if err_rows:
        sections.append(["Errors", "table", [["source", "text"], err_rows]])

    final = ev.get("final_response")
    if final is None and trace.get("status") == "available":  # reference 1: null is unavailable evidence
        sections.append(["Final response", "note", "n/a: evidence unavailable (trace.json records final_response null)."])
    elif final is None:
        sections.append(["Final response", "note", "n/a: evidence unavailable (trace.json missing or unreadable)."])
    elif final == "":
        sections.append(["Final response", "note", "(empty: the recorded response is an empty string)"])
    else:
        sections.append(["Final response", "pre", clip(str(final), TEXT_CAP)])

    calls = ev.get("tool_calls")
    inline = _inline_calls(calls)
    if inline is not None:
        # Rendered by report.js on expand (names and arguments as text, arguments clipped
        # to ARGS_CAP characters): formatting 10,000 attempts' calls here costs seconds.
        sections.append([f"Tool calls ({len(calls):,})", "calls", [inline, len(calls) - len(inline.value), ARGS_CAP]])
    elif isinstance(calls, list):
        rows = []
        for i, call in enumerate(calls[:TOOL_CALLS_CAP], start=1):
            call = call if isinstance(call, dict) else {"name": None, "arguments": call}
            rows.append([str(i), fmt_text(call.get("name")), _args_json(call.get("arguments"))])
        if len(calls) > TOOL_CALLS_CAP:
            rows.append(["…", f"{len(calls) - TOOL_CALLS_CAP:,} more", ""])
        title = f"Tool calls ({len(calls):,})"
        sections.append([title, "table", [["#", "tool", "arguments"], rows]] if rows else [title, "note", "none recorded"])
    else:
        sections.append(["Tool calls", "note", "n/a: evidence unavailable."])

    hard = ev.get("hard_assertions")
    if isinstance(hard, dict) and hard:
        rows = [[str(k), "passed" if v is True else "failed" if v is False else NA] for k, v in hard.items()]
        sections.append(["Hard assertions", "table", [["check", "result"], rows]])
    hard_fail = ev.get("hard_assertion_failures")
    if isinstance(hard_fail, list) and hard_fail:
        rows = [[fmt_text(f.get("id")), fmt_text(f.get("requirement")), _compact_json(f.get("actual"))]
                for f in hard_fail if isinstance(f, dict)]
        sections.append(["Hard-assertion failures", "table", [["id", "requirement", "actual"], rows]])

    # {id as a key (ids may be any JSON, R14's rule): (id, requirement)}
    spec = {json_key(s.get("id")): (s.get("id"), s.get("requirement"))
            for s in _as_list(ev.get("rubric_spec")) if isinstance(s, dict)}
    rubric = ev.get("rubric")
    judge = ev.get("judge") if isinstance(ev.get("judge"), dict) else {}
    verdicts = rubric if isinstance(rubric, list) and rubric else judge.get("verdicts")
    if isinstance(verdicts, list) and verdicts:
        rows = [[fmt_text(v.get("id")), fmt_text(spec.get(json_key(v.get("id")), (None, None))[1]), fmt_text(v.get("verdict")),
                 clip(fmt_text(v.get("reason")), TEXT_CAP)] for v in verdicts if isinstance(v, dict)]
        sections.append(["Rubric verdicts", "table", [["id", "requirement", "verdict", "reason"], rows]])
    elif spec:
        rows = [[fmt_text(i), fmt_text(r), NA, "not evaluated"] for i, r in spec.values()]
        sections.append(["Rubric (no verdicts: the judge may not have run)", "table",
                         [["id", "requirement", "verdict", "reason"], rows]])
    if judge:
        sections.append(["Judge", "kv", [["Model", fmt_text(judge.get("model"))],
                                         ["Error", fmt_text(judge.get("error"))]]])

    env = ev.get("environment_state_assertions")
    if isinstance(env, list) and env:
        rows = [[fmt_text(e.get("id")), "passed" if e.get("passed") is True else "failed" if e.get("passed") is False else NA,
                 _compact_json(e.get("expected")), _compact_json(e.get("actual"))] for e in env if isinstance(e, dict)]
        sections.append(["Environment-state checks", "table", [["id", "result", "expected", "actual"], rows]])
    obs = ev.get("trace_observations")
    if isinstance(obs, list) and obs:
        rows = [[fmt_text(o.get("id")), "passed" if o.get("passed") is True else "failed" if o.get("passed") is False else NA]
                for o in obs if isinstance(o, dict)]
        sections.append(["Trace observations (behavior; not a pass/fail gate)", "table",
                         [["id", "result"], rows]])
    return [facts, sections]


def attempt_row(rec: Mapping[str, Any], dup_info: Mapping[tuple[Any, int], list[int]],
                unsafe_lines: set[int]) -> tuple[list[str], list[Any], list[Any]]:
    """One attempt's table cells, sort/filter keys and expandable details."""
    task_id, n = rec.get("task_id"), attempt_no(rec)
    _, folder_text = _evidence_dir(rec, unsafe_lines)
    notes = []
    lines = dup_info.get((task_id, n))
    dup = bool(lines) and len(lines) > 1
    if dup:
        used = max(lines)
        notes.append(f"Duplicate task/attempt on lines {', '.join(map(str, lines))}: line {used} is used for "
                     "task-level metrics; every row counts in attempt-level populations.")
    if line_no(rec) in unsafe_lines:
        notes.append("The row's artifact_dir was refused as unsafe: its artifacts were not read.")
    if rec.get("agent_eligible") is not True:
        derived_false = rec.get("success") is False and rec.get("success_raw") is None
        notes.append(_exclusion_reading(rec.get("status"), rec.get("failure_class"), rec.get("agent_eligible"),
                                        derived_false))
    elif rec.get("success") is None:
        notes.append("Eligible with unknown success: in every denominator, not a success.")
    status, cls, stage = rec.get("status"), rec.get("failure_class"), shown_stage(rec)
    cells = [
        fmt_text(task_id), f"{n}{' (dup)' if dup else ''}", fmt_text(status),
        "—" if cls is None else str(cls), fmt_bool(rec.get("agent_eligible")),
        fmt_bool(rec.get("success")) if rec.get("success") is not None else "unknown",
        "—" if stage is None else str(stage), fmt_quality(rec.get("quality_score")),
        fmt_ms(rec.get("task_wall_ms")), fmt_int(rec.get("total_tokens")), fmt_int(rec.get("tool_calls")),
    ]
    keys = [task_id, n, status, cls, rec.get("agent_eligible"), rec.get("success"), stage,
            num(rec.get("quality_score")), num(rec.get("task_wall_ms")),
            num(rec.get("total_tokens")), num(rec.get("tool_calls")), rec.get("category")]
    return cells, keys, _details_payload(rec, notes, folder_text)


#: Above this many attempts, report.html's attempt rows are built in forked workers.
PARALLEL_MIN_ATTEMPTS = 500
_CHUNK_ATTEMPTS = 250


@dataclass
class AttemptRows:
    """report.html's attempt table for consecutive attempts (in results.jsonl line order)."""

    html: bytes  # the rows' markup, UTF-8
    keys: list[list[Any]]  # sort/filter keys, one list per row
    details: bytes  # the rows' details as JSON array items, without the brackets, UTF-8


def duplicate_lines(duplicate_rows: Sequence[Any]) -> dict[tuple[Any, int], list[int]]:
    """{(task_id, attempt): results.jsonl lines} of every duplicated task/attempt."""
    dup_info: dict[tuple[Any, int], list[int]] = {}
    for d in duplicate_rows:
        if not isinstance(d, dict):
            continue
        lines = [v for v in _as_list(d.get("lines")) if isinstance(v, int)]
        dup_info[(d.get("task_id"), d.get("attempt") if isinstance(d.get("attempt"), int) else 1)] = lines
    return dup_info


def _attempt_row_html(index: int, cells: Sequence[str]) -> str:
    """One attempt-table row: a ``<details>`` whose summary holds the cells (status as a
    pill); ``data-i`` is the row's index in the whole table, matching its keys and details."""
    c = [escape(cell) for cell in cells]
    return (f'<details class="a" data-i="{index}"><summary><span>{c[0]}</span><span>{c[1]}</span>'
            f'{status_pill(cells[2])}<span>{c[3]}</span><span>{c[4]}</span><span>{c[5]}</span>'
            f'<span>{c[6]}</span><span>{c[7]}</span><span>{c[8]}</span><span>{c[9]}</span>'
            f'<span>{c[10]}</span></summary></details>\n')


def render_attempt_rows(start: int, records: Sequence[Mapping[str, Any]],
                        dup_info: Mapping[tuple[Any, int], list[int]], unsafe_lines: set[int]) -> AttemptRows:
    """The table rows of ``records`` (already in line order), the first being row ``start``."""
    rows = [attempt_row(rec, dup_info, unsafe_lines) for rec in records]
    html = "".join(_attempt_row_html(start + i, row[0]) for i, row in enumerate(rows))
    details = str(script_json([r[2] for r in rows]))[1:-1]  # the items, without [ ]
    # Encoded here, where the chunk is made: the page is written from these bytes as they are.
    return AttemptRows(html.encode(), [r[1] for r in rows], details.encode())


def join_attempt_rows(parts: Sequence[AttemptRows]) -> AttemptRows:
    """Consecutive chunks of rows as one table."""
    return AttemptRows(b"".join(p.html for p in parts), [k for p in parts for k in p.keys],
                       b",".join(p.details for p in parts if p.details))


def _attempt_rows(attempts: Sequence[Mapping[str, Any]], view: Mapping[str, Any], workers: int = 1) -> AttemptRows:
    """The attempt table in line order, in chunks (in forked workers for large runs)."""
    dup_info = duplicate_lines(view["dq"]["duplicate_rows"])
    unsafe_lines = view["unsafe_lines"]
    ordered = sorted(attempts, key=line_no)
    parts = fork_map(lambda start, chunk: render_attempt_rows(start, chunk, dup_info, unsafe_lines), ordered,
                     workers=workers if len(ordered) >= PARALLEL_MIN_ATTEMPTS else 1, chunk_size=_CHUNK_ATTEMPTS)
    return join_attempt_rows(parts)


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


# --------------------------------------------------------------------------------------------
# rendering
# --------------------------------------------------------------------------------------------


def _asset(name: str) -> str:
    """A static file from the templates folder (CSS/JS inlined into report.html)."""
    return resources.files("bench_pipeline").joinpath("templates", name).read_text(encoding="utf-8")


def _csp(script: str) -> str:
    """Content-Security-Policy allowing only our inline script (by hash) and inline styles."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return ("default-src 'none'; img-src 'none'; style-src 'unsafe-inline'; "
            f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'")


_KNOWN_STATUSES = frozenset(STATUSES)


def status_kind(status: Any) -> str:
    """The status's colour in report.html (class ``st-<kind>``): the status, or ``other``
    for one outside the vocabulary."""
    return status if status in _KNOWN_STATUSES else "other"


def status_pill(status: Any) -> Markup:
    """A status badge (a filter rather than a macro: it runs once per attempt row)."""
    return Markup(f'<span class="pill st-{status_kind(status)}">{escape(fmt_text(status))}</span>')


class TemplateCache(FileSystemBytecodeCache):
    """Compiled templates kept on disk between commands, and never a reason to fail.

    Compiling report.html.j2 and summary.md.j2 takes about 0.06 s of every
    `bench-pipeline process` command; loading them compiled takes about 1 ms. Jinja keys
    each entry by the template's source checksum and the Python version, so an edited
    template or another interpreter never loads a stale entry. A cache that cannot be
    read or written (a read-only home, a damaged file) only means compiling again.
    """

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:  # noqa: BLE001 - a damaged entry is a cache miss
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass


def template_cache_dir() -> Path:
    """Where compiled templates are kept: $BENCH_TEMPLATE_CACHE, else the user's cache folder."""
    configured = os.environ.get("BENCH_TEMPLATE_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "bench_pipeline" / "templates"


def _template_cache() -> TemplateCache | None:
    """The cache, or None when its folder cannot be made or is not safe to load code from:
    compiled templates are code, so the folder must be this user's and writable by no one
    else (as Jinja requires of its own default folder)."""
    directory = template_cache_dir()
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = directory.stat()
    except OSError:
        return None
    if hasattr(os, "getuid") and (st.st_uid != os.getuid() or st.st_mode & 0o022):
        return None
    return TemplateCache(str(directory))


def _environment(html: bool) -> Environment:
    """A jinja2 environment; autoescaping on for HTML."""
    env = Environment(
        loader=PackageLoader("bench_pipeline", "templates"),
        bytecode_cache=_template_cache(),
        autoescape=html,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(mdc=md_code, mdt=md_text, pct=fmt_pct, intf=fmt_int, ms=fmt_ms, txt=fmt_text,
                       quality=fmt_quality, usd=fmt_usd, yn=fmt_bool, round0=fmt_round, pill=status_pill,
                       status_kind=status_kind)
    return env


_ENVS: dict[bool, Environment] = {}


def _env(html: bool) -> Environment:
    if html not in _ENVS:
        _ENVS[html] = _environment(html)
    return _ENVS[html]


def render_summary_md(metrics: dict, attempts: list[dict], manifest: dict, run_id: str,
                      evidence_base: str | None = None) -> str:
    """summary.md: where a reviewer starts (see outputs.md "summary.md and report.html")."""
    return _summary_md(build_view(metrics, attempts, manifest, run_id, evidence_base))


def _summary_md(view: Mapping[str, Any]) -> str:
    return _env(False).get_template("summary.md.j2").render(v=view, failed_rows=failed_task_md_rows(view["failed_tasks"]))


def failed_task_md_rows(failed_tasks: Sequence[FailedTask]) -> str:
    """summary.md's failed-task table rows, one per attempt (a plain loop: a large run has
    thousands of them)."""
    lines = []
    for f in failed_tasks:
        task = md_code(f.task_id)
        for a in f.attempts:
            status = "missing" if a["missing"] else md_code(a["status"])
            cls = md_code(a["cls"]) if a["cls"] is not None else "—"
            stage = md_code(a["stage"]) if a["stage"] is not None else "—"
            if a["href"]:
                folder = f'[{md_code(a["folder_text"])}](<{a["href"]}>)'
            elif a["folder"] is not None:
                folder = md_code(a["folder_text"])
            else:
                folder = a["folder_text"]
            note = md_code(a["note"]) if a["note"] else ""
            lines.append(f"| {task} | {a['attempt']} | {status} | {cls} | {a['eligible']} | {stage} | "
                         f"{a['quality']} | {folder} | {a['trace']} | {note} |")
    return "\n".join(lines)


def failed_task_html_rows(failed_tasks: Sequence[FailedTask]) -> Markup:
    """report.html's failed-task table bodies, one per task and one row per attempt, escaped
    (a plain loop, like the task table: hundreds of tasks with several attempts each)."""
    if not failed_tasks:
        return Markup('      <tbody><tr><td colspan="8" class="muted">No task has an attempt that did not pass.</td></tr></tbody>')
    out = []
    for f in failed_tasks:
        out.append("      <tbody>\n")
        for i, a in enumerate(f.attempts):
            head = (f'<th scope="rowgroup" rowspan="{len(f.attempts)}"><code>{escape(f.task_id)}</code>'
                    f'<div class="muted small">{escape(fmt_text(f.category))} · {f.passed}/{f.n} passed</div></th>'
                    if i == 0 else "")
            status = '<span class="pill st-missing">missing</span>' if a["missing"] else status_pill(a["status"])
            if a["href"]:
                folder = f'<a href="{escape(a["href"])}"><code>{escape(a["folder_text"])}</code></a>'
            elif a["folder"] is not None:
                folder = f'<code>{escape(a["folder_text"])}</code>'
            else:
                folder = f'<span class="muted">{escape(a["folder_text"])}</span>'
            out.append(
                f'        <tr>{head}<td class="num">{escape(a["attempt"])}</td><td>{status}</td>'
                f'<td>{escape(a["cls"] if a["cls"] is not None else "—")}</td><td>{escape(a["eligible"])}</td>'
                f'<td>{escape(a["stage"] if a["stage"] is not None else "—")}</td><td>{folder}</td>'
                f'<td class="note">{escape(a["note"])}</td></tr>\n'
            )
        out.append("      </tbody>\n")
    return Markup("".join(out).removesuffix("\n"))


def render_report_html(metrics: dict, attempts: list[dict], manifest: dict, run_id: str,
                       evidence_base: str | None = None, workers: int = 1) -> str:
    """report.html: one self-contained, escaped, interactive page.

    ``workers`` > 1 builds the attempt rows of large runs in that many forked processes.
    """
    view = build_view(metrics, attempts, manifest, run_id, evidence_base)
    return _report_html(view, metrics, attempts, workers)


def task_table_rows(task_rows: Sequence[Mapping[str, Any]]) -> Markup:
    """report.html's task table rows, escaped (a plain loop: thousands of tasks take a
    fraction of the time a template loop takes). Run text is escaped; the number
    formatters' output (digits, separators, units, "n/a") has no markup characters."""
    out = []
    strips: dict[tuple, str] = {}  # most tasks share one of a few attempt strips
    for i, t in enumerate(task_rows):
        task = escape(t["task_id"])
        key = tuple(t["strip"])
        strip = strips.get(key)
        if strip is None:
            strip = strips[key] = "".join(f'<i class="o st-{escape(s)}" title="{escape(title)}"></i>' for s, title in key)
        out.append(
            f'      <tr data-i="{i}"><td><button type="button" class="tlink" data-task="{task}" '
            f'title="Show this task\'s attempts">{task}</button></td><td>{escape(fmt_text(t["category"]))}</td>'
            f'<td><span class="strip">{strip}</span> {fmt_int(t["attempts"])}</td>'
            f'<td class="num">{fmt_int(t["eligible"])}</td><td class="num">{fmt_int(t["passed"])}</td>'
            f'<td class="num">{fmt_int(t["failed"])}</td><td class="num">{fmt_pct(t["pass_rate"])}</td>'
            f'<td class="num">{fmt_quality(t["best_quality"])}</td><td class="num">{fmt_quality(t["avg_quality"])}</td>'
            f'<td class="num">{fmt_ms(t["avg_wall_ms"])}</td><td class="num">{fmt_round(t["mean_tokens"])}</td></tr>\n'
        )
    return Markup("".join(out))


def _report_html(view: Mapping[str, Any], metrics: dict, attempts: list[dict], workers: int,
                 rows: AttemptRows | None = None) -> str:
    return b"".join(_report_html_parts(view, metrics, attempts, workers, rows)).decode()


def _report_html_parts(view: Mapping[str, Any], metrics: dict, attempts: list[dict], workers: int,
                       rows: AttemptRows | None = None, charts: list[dict[str, Any]] | None = None) -> list[bytes]:
    """report.html as consecutive UTF-8 pieces: the page is rendered around two markers that
    the attempt rows and their details (the bulk of a large page, already encoded) replace,
    so they are never copied into one big string. ``charts``: ``histograms``, when made already."""
    records = [a for a in attempts if isinstance(a, dict)]
    if rows is None:
        rows = _attempt_rows(records, view, workers)
    keys = rows.keys
    task_keys = [[t["task_id"], t["category"], t["attempts"], t["eligible"], t["passed"], t["failed"],
                  num(t["pass_rate"]), num(t["best_quality"]), num(t["avg_quality"]),
                  num(t["avg_wall_ms"]), t["mean_tokens"], t["has_nonpass"]]
                 for t in view["task_rows"]]
    script = _asset("report.js")
    payload = {"tasks": {"keys": task_keys}, "attempts": {"keys": keys}}
    statuses = sorted({k[2] for k in keys if isinstance(k[2], str)}, key=_sort_key_status)
    classes = sorted({k[3] for k in keys if isinstance(k[3], str)}, key=_sort_key_class)
    marker = f"\x00{uuid.uuid4().hex}"
    rows_marker, details_marker = f"{marker}:rows\x00", f"{marker}:details\x00"
    page = _env(True).get_template("report.html.j2").render(
        v=view,
        histograms=charts if charts is not None else histograms(metrics if isinstance(metrics, dict) else {}, records),
        class_svg=svg_hbar_chart(view["class_items"], css="bar cls"),
        stage_svg=svg_hbar_chart(view["stage_items"], css="bar stg", label_width=150),
        status_svg=svg_stacked_bar([(s, c, f"st-{status_kind(s)}")
                                    for s, c in view["status_items"]]),
        attempt_rows=Markup(rows_marker),
        task_rows=task_table_rows(view["task_rows"]),
        failed_rows=failed_task_html_rows(view["failed_tasks"][:HTML_FAILED_TASKS_CAP]),
        n_attempts=len(keys),
        statuses=statuses,
        classes=classes,
        payload=script_json(payload),
        details=Markup(f'{{"labels":{script_json(FACT_LABELS)},"details":[{details_marker}]}}'),
        failed_cap=HTML_FAILED_TASKS_CAP,
        style=Markup(_asset("report.css")),
        script=Markup(script),
        csp=_csp(script),
    )
    if page.count(rows_marker) != 1 or page.count(details_marker) != 1:
        raise RuntimeError("report.html: the attempt-table markers did not come out exactly once")
    head, rest = page.split(rows_marker)
    middle, tail = rest.split(details_marker)
    return [head.encode(), rows.html, middle.encode(), rows.details, tail.encode()]


def report_view(out_dir: Path, metrics: dict, attempts: list[dict], manifest: dict, run_id: str,
                run_dir: Path | None = None, facts: Mapping[str, Any] | None = None,
                per_task_facts: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The view both reports render; with ``run_dir``, evidence links are relative to out_dir.
    ``facts`` and ``per_task_facts`` as for build_view."""
    base = None
    if run_dir is not None:
        base = Path(os.path.relpath(Path(run_dir).resolve(), Path(out_dir).resolve())).as_posix()
        base = "" if base == "." else base
    return build_view(metrics, attempts, manifest, run_id, base, facts, per_task_facts)


def write_summary_md(out_dir: Path, view: Mapping[str, Any]) -> dict[str, Path]:
    """summary.md from a report_view; returns {"summary.md": path}."""
    path = Path(out_dir) / "summary.md"
    write_atomic(path, _summary_md(view).encode())
    return {"summary.md": path}


def write_report_html(out_dir: Path, view: Mapping[str, Any], metrics: dict, attempts: list[dict],
                      workers: int = 1, rows: AttemptRows | None = None,
                      charts: list[dict[str, Any]] | None = None) -> dict[str, Path]:
    """report.html from a report_view; returns {"report.html": path}.

    ``rows``: the attempt table already rendered (render_attempt_rows over every attempt
    in line order, for instance where the attempts were derived); else it is built here.
    ``charts``: ``histograms(metrics, attempts)``, when made already.
    """
    path = Path(out_dir) / "report.html"
    write_atomic(path, _report_html_parts(view, metrics, attempts, workers, rows, charts))
    return {"report.html": path}


@gc_paused()
def write_reports(out_dir: Path, metrics: dict, attempts: list[dict], manifest: dict, run_id: str,
                  run_dir: Path | None = None, workers: int = 1) -> dict[str, Path]:
    """Write summary.md and report.html into out_dir; returns {"summary.md": path, "report.html": path}.

    With ``run_dir`` (the run folder), evidence folders become links relative to out_dir;
    ``workers`` as for render_report_html.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    view = report_view(out_dir, metrics, attempts, manifest, run_id, run_dir)  # shared by both reports
    return {**write_summary_md(out_dir, view), **write_report_html(out_dir, view, metrics, attempts, workers)}
