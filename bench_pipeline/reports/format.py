"""Values and text for the reports: number formatters, field labels, markdown and JSON escaping.

Every formatter renders an unavailable value as ``n/a`` (NA), never 0. Run text becomes inert
markdown (``md_code``, ``md_text``) or JSON that is safe inside a script element
(``script_json``); HTML escaping is markupsafe's, in the callers and in jinja2's autoescaping.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import orjson
from markupsafe import Markup, escape

from ..jsonio import EncodedJSON, jsonable
from ..measured_fields import DISPLAY_ORDER, MEASURED, MS, USD, field_names, in_order
from ..stats import is_number
from ..vocabulary import STATUSES, TOKEN_FIELDS

NA = "n/a"

#: The measured fields in milliseconds and in dollars (their ``measured_fields`` kinds).
MS_FIELDS = frozenset(field_names(kind=MS))
USD_FIELDS = frozenset(field_names(kind=USD))

#: Row labels of the distribution tables (efficiency, reliability, cost to first success),
#: in the order the efficiency table shows its rows (``measured_fields.DISPLAY_ORDER``).
FIELD_LABELS = {f.name: f.label for f in in_order(MEASURED, DISPLAY_ORDER)}

NOTE_CAP = 140  # characters of a one-line note
ARGS_CAP = 1_000  # characters of a JSON value shown (tool-call arguments, expected/actual)


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


def plural(count: Any, singular: str, plural_form: str | None = None) -> str:
    """A count with its noun in agreement: ``plural(1, "task")`` -> '1 task', ``plural("1,204",
    "task")`` -> '1,204 tasks'. ``count`` may be a number or a formatted number (a count the
    views formatted already); only exactly one takes the singular."""
    text = fmt_int(count) if is_number(count) else str(count)
    return f"{text} {singular if text == '1' else plural_form or singular + 's'}"


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


def md_cell(value: Any) -> str:
    """Run text (a run id, a suite, a model, a setup) for a markdown table cell or list item in
    Dagster's metadata: ``md_text`` of a non-empty string, "unknown" for anything else (None,
    NaN or NA: a catalog cell that is missing)."""
    return md_text(value) if isinstance(value, str) and value else "unknown"


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


_KNOWN_STATUSES = frozenset(STATUSES)


def status_kind(status: Any) -> str:
    """The status's colour in report.html (class ``st-<kind>``): the status, or ``other``
    for one outside the vocabulary."""
    return status if status in _KNOWN_STATUSES else "other"


def status_pill(status: Any) -> Markup:
    """A status badge (a filter rather than a macro: it runs once per attempt row)."""
    return Markup(f'<span class="pill st-{status_kind(status)}">{escape(fmt_text(status))}</span>')


#: The formatters by the names the templates call them as filters.
FILTERS: dict[str, Callable[..., Any]] = {
    "mdc": md_code, "mdt": md_text, "pct": fmt_pct, "intf": fmt_int, "ms": fmt_ms, "txt": fmt_text,
    "quality": fmt_quality, "usd": fmt_usd, "yn": fmt_bool, "round0": fmt_round, "pill": status_pill,
    "status_kind": status_kind, "plural": plural,
}
