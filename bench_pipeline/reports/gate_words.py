"""The release gate in words (comparison.md "The release gate"): its result, each reason code
and how large a drop could have gone unseen, for both forms of comparison.md, the reports,
the command's stderr line and run_comparison's metadata."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .change_format import fmt_change, fmt_interval, no_variation
from .format import fmt_int

GATE_SECTIONS = (("first_attempt", "first attempt"), ("task_success", "task success"))


def _unseen(name: str, label: str, s: Mapping[str, Any]) -> str:
    """How large a drop of a gate section could have gone unseen, for a gate without margin."""
    n = s["n"]
    if n == 0:
        return f"{label} has no paired task, so any drop could have gone unseen"
    if s["se"] is None:
        return f"{label} has {fmt_int(n)} paired task, too few to estimate any drop, so any drop could have gone unseen"
    if no_variation(s):
        return (f"{label} shows no variation among its {fmt_int(n)} paired tasks, so the size of a drop that "
                "could go unseen cannot be estimated")
    return (f"a true drop in {label} smaller than {fmt_change('rate', s['mde80'], signed=False)} "
            f"({fmt_int(n)} paired tasks) could have gone unseen")


#: How a gate result is titled in the reports ("Release gate: FAIL") and its colour class:
#: an inconclusive gate is neither green nor red.
GATE_TITLES = {"pass": "pass", "fail": "FAIL", "inconclusive": "inconclusive"}
GATE_CSS = {"pass": "pass", "fail": "fail", "inconclusive": "inconclusive"}


def _tasks(n: Any) -> str:
    return f"{fmt_int(n)} paired task{'' if n == 1 else 's'}"


def gate_reason_words(result: Mapping[str, Any], reason: str) -> str:
    """One gate reason code (comparison.md: ``<section>_no_evidence``, ``_regression``,
    ``_no_interval``, ``_below_margin``) in words: what is missing or what was found, and how
    large a drop could have gone unseen."""
    name = next(n for n, _ in GATE_SECTIONS if reason.startswith(n + "_"))
    label = "the first attempt" if name == "first_attempt" else "task success"
    code = reason[len(name) + 1:]
    s = result[name]
    margin = result["gate"]["max_drop"]
    margin_text = fmt_change("rate", margin, signed=False) if margin is not None else None
    interval = fmt_interval("rate", s["ci95"]["lower"], s["ci95"]["upper"])
    if code == "no_evidence":
        # either side may be the empty one: the causes are named for the section, not a side
        missing = "no eligible first attempt" if name == "first_attempt" else "no task with an eligible attempt"
        return (f"{label} has no paired task (no task is in this section in both runs: a run without a usable row "
                f"or with {missing}, or task sets that do not overlap), so nothing was measured "
                "and a drop of any size could have gone unseen")
    if code == "regression":
        return f"{label} is a significant regression"
    if code == "no_interval":
        return (f"{label} has no 95% interval ({_tasks(s['n'])}: at least two are needed to estimate one), so the "
                f"allowed drop of {margin_text} cannot be shown to hold and a drop of any size could have gone unseen")
    if code == "below_margin":
        flat = no_variation(s)
        mde = ("" if flat or s["mde80"] is None else
               f"; a true drop smaller than {fmt_change('rate', s['mde80'], signed=False)} could go unseen "
               "with these tasks (80% power)")
        return (f"{label}'s 95% interval {interval} ({_tasks(s['n'])}) reaches below -{margin_text}, the allowed "
                f"drop: a drop of up to {fmt_change('rate', -s['ci95']['lower'], signed=False)} is not ruled out, "
                f"so the margin is not shown to hold{mde}")
    raise ValueError(f"unknown gate reason {reason!r}")


def gate_statement(result: Mapping[str, Any], short: bool = False) -> str:
    """What the release gate's result means, in words (comparison.md "the release gate"),
    as ``<result>: <words>``.

    A fail names its reasons (and any section that could not be decided). An inconclusive
    gate says what is missing (no paired task in a section, no interval, an interval that
    reaches below the margin) and how large a drop could have gone unseen. A pass with a
    margin says both intervals stay above it. A pass without a margin is "no significant
    regression was found", never "safe": it states how large a regression of first attempt
    and task success could have gone unseen (their MDEs) and points to ``--max-drop``.
    ``short``: the one line the command prints."""
    gate = result["gate"]
    margin = gate["max_drop"]
    margin_text = fmt_change("rate", margin, signed=False) if margin is not None else None
    words = [gate_reason_words(result, r) for r in gate["reasons"]]
    if gate["result"] == "fail":
        return "FAIL: " + "; ".join(words) + "."
    if gate["result"] == "inconclusive":
        return ("inconclusive: the data cannot decide, so this is neither a pass nor a fail: " + "; and ".join(words)
                + ". More paired tasks (or repeated runs of each side) would decide it.")
    sections = [(label, result[name]) for name, label in GATE_SECTIONS]
    if margin is not None:
        flat = [f"{label} shows no variation among its {_tasks(s['n'])}"
                for label, s in sections if no_variation(s)]
        if not flat:
            return (f"pass: neither first attempt nor task success is a significant regression, and both 95% "
                    f"intervals stay above -{margin_text}, the allowed drop: the candidate is shown to be at most "
                    f"{margin_text} worse on both.")
        return (f"pass: neither first attempt nor task success is a significant regression and no 95% interval "
                f"reaches below -{margin_text}, the allowed drop; but {' and '.join(flat)}, so its interval has "
                "zero width for want of any spread to estimate, not because the comparison is precise: more tasks "
                "would show how large a drop could go unseen.")
    unseen = [_unseen(name, label, result[name]) for name, label in GATE_SECTIONS]
    if short:
        return ("pass: no significant regression found, which is not evidence of none: " + "; ".join(unseen)
                + "; --max-drop X requires evidence that the drop is at most X")
    return ("pass: no significant regression of first attempt or task success was found, which is not evidence "
            "that there is none: " + "; and ".join(unseen) + " (the smallest changes detected with 80% power). "
            "For a gate that requires evidence that the candidate is at most a margin worse, compare with "
            "--max-drop X (for example --max-drop 0.05: at most 5 pp).")


def gate_view(result: Mapping[str, Any]) -> dict[str, Any]:
    """The gate as the reports show it: result, title, colour class, reasons in words."""
    gate = result["gate"]
    margin = gate["max_drop"]
    statement = gate_statement(result)
    return {"result": gate["result"], "passed": gate["result"] == "pass",
            "title": GATE_TITLES[gate["result"]], "css": GATE_CSS[gate["result"]],
            "reasons": list(gate["reasons"]),
            "reason_words": [gate_reason_words(result, r) for r in gate["reasons"]],
            "statement": statement,
            "explanation": statement.split(": ", 1)[1],
            "margin_text": fmt_change("rate", margin, signed=False) if margin is not None else None}
