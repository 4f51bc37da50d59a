"""How a comparison section's numbers read: levels, changes, intervals, p-values and verdicts,
shared by both forms of comparison.md, the reports' "Compared with" section and the suite
pages (comparison.md "Verdicts"; repeated-runs.md for the repeated form)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..comparison import BINARY_SECTIONS
from ..stats import is_number
from .format import FIELD_LABELS, NA, fmt_int, fmt_ms, fmt_pct, fmt_text, fmt_usd

#: A table cell for the interval and MDE of a section without variation (``no_variation``).
NO_VARIATION = "n/a (no variation)"

#: What each verdict is called in the reports, and its colour class.
VERDICT_WORDS = {"regression": "regression", "improvement": "improvement",
                 "no_significant_change": "no significant change", None: "n/a"}
VERDICT_CSS = {"regression": "bad", "improvement": "good", "no_significant_change": "flat", None: "na"}


def section_label(name: str, k: Any) -> str:
    """A section's name as the tables head it (the resources by their field labels)."""
    return {
        "first_attempt": "First attempt (pass@1)",
        "pass_at_k": f"pass@k (k={fmt_text(k)})",
        "pass_pow_k": f"pass^k (k={fmt_text(k)})",
        "task_success": "Task success (task-weighted)",
        "quality": "Quality score",
    }.get(name) or FIELD_LABELS.get(name, name)


def section_kind(name: str) -> str:
    """How a section's numbers read: ``rate`` (a share of tasks or attempts), ``score``
    (quality, 0-1) or the resource field itself."""
    if name in BINARY_SECTIONS or name == "task_success":
        return "rate"
    return "score" if name == "quality" else name


def fmt_level(kind: str, value: Any) -> str:
    """A section's per-run value (a rate, a mean score, a mean resource)."""
    if kind == "rate":
        return fmt_pct(value)
    if kind == "score":
        return f"{value:.3f}" if is_number(value) else NA
    if kind.endswith("_ms"):
        return fmt_ms(value)
    if kind.endswith("_usd"):
        return fmt_usd(value)
    return f"{value:,.1f}" if is_number(value) else NA


def fmt_change(kind: str, value: Any, signed: bool = True) -> str:
    """A change (delta, an interval bound) or, unsigned, a size (the MDE): rates in
    percentage points, quality in score units, resources in their unit."""
    if not is_number(value):
        return NA
    sign = ("+" if value > 0 else "-" if value < 0 else "") if signed else ""
    size = abs(value) if signed else value
    if kind == "rate":
        return f"{sign}{size * 100:.1f} pp"
    if kind == "score":
        return f"{sign}{size:.3f}"
    if kind.endswith("_ms"):
        return f"{sign}{fmt_ms(size)}"
    if kind.endswith("_usd"):
        return f"{sign}{fmt_usd(size)}"
    return f"{sign}{size:,.1f}"


def fmt_interval(kind: str, lower: Any, upper: Any) -> str:
    if is_number(lower) and is_number(upper):
        return f"[{fmt_change(kind, lower)}, {fmt_change(kind, upper)}]"
    return NA


def fmt_p(p: Any) -> str:
    """An exact p-value: three decimals, ``< 0.001`` below that."""
    if not is_number(p):
        return NA
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def no_variation(s: Mapping[str, Any]) -> bool:
    """A section of at least two paired tasks whose per-task changes are all equal: its
    standard error, interval width and MDE are 0 because there is no spread to estimate them
    from, not because the comparison is precise (comparison.json keeps the numbers as
    comparison.md defines them)."""
    return s["n"] >= 2 and s["se"] == 0


def mde_text(kind: str, s: Mapping[str, Any]) -> str:
    """After a result that is not significant: how large a true change could go unseen."""
    if s["mde80"] is None or no_variation(s):
        return ""
    size = fmt_change(kind, s["mde80"], signed=False)
    return (f" The smallest true change this comparison detects with 80% power is {size}: a true change "
            f"smaller than that could easily go unseen, so this result says little about changes below {size}.")


def zero_width_verdict(verdict: str | None, n: int) -> str:
    """After a section of n tasks without variation (``no_variation``): why its interval verdict
    is a regression or an improvement; '' for any other verdict."""
    if verdict not in ("regression", "improvement"):
        return ""
    return (f" comparison.md's rule reads the zero-width interval as excluding zero, hence the verdict "
            f"({VERDICT_WORDS[verdict]}); it rests on {fmt_int(n)} tasks without spread.")
