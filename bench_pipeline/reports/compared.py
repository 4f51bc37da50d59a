"""The "Compared with <baseline>" part of the reports, and comparison.md: a view of a
comparison (``comparison.Comparison``), formatted for reading.

Every number comes from comparison.json (``Comparison.result``); the sides only give each
task's evidence folders for the links. Strings from the runs stay raw, to be escaped where
they are rendered (autoescaping in report.html, ``md_code``/``md_text`` in markdown).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..comparison import BINARY_SECTIONS, Comparison, evidence_dir
from ..stats import is_number
from ..vocabulary import COMPARISON_RESOURCE_FIELDS
from .charts import svg_delta_intervals
from .format import FIELD_LABELS, NA, fmt_int, fmt_ms, fmt_pct, fmt_text, fmt_usd
from .view import LIST_CAP, evidence_href

#: What each verdict is called in the reports, and its colour class.
VERDICT_WORDS = {"regression": "regression", "improvement": "improvement",
                 "no_significant_change": "no significant change", None: "n/a"}
VERDICT_CSS = {"regression": "bad", "improvement": "good", "no_significant_change": "flat", None: "na"}

WARNING_TEXT = {
    "suite_differs": "The two runs are of different suites ({b_suite} and {c_suite}): only the tasks both "
                     "observed are paired, and the suites may not measure the same thing.",
    "metrics_k_differs": "The runs' metrics_k differ ({b_k} and {c_k}): pass@k and pass^k compare attempts "
                         "1..k with k = {k}, the smaller (null, and no pass@k comparison, when either is unknown).",
    "no_paired_tasks": "No task was observed in both runs: there is no paired statistic, and the gate has "
                       "nothing to check.",
}


def _section_label(name: str, k: Any) -> str:
    return {
        "first_attempt": "First attempt (pass@1)",
        "pass_at_k": f"pass@k (k={fmt_text(k)})",
        "pass_pow_k": f"pass^k (k={fmt_text(k)})",
        "task_success": "Task success (task-weighted)",
        "quality": "Quality score",
    }.get(name) or FIELD_LABELS.get(name, name)


def _kind(name: str) -> str:
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


def _reading(name: str, s: Mapping[str, Any], k: Any) -> str:
    """The section in plain words: population, direction, the test or the interval, the MDE."""
    kind = _kind(name)
    n = s["n"]
    if n == 0:
        if name in ("pass_at_k", "pass_pow_k") and k is None:
            return "No comparison: k is unknown for at least one run."
        return "No paired task is in this section's population: nothing to compare."
    binary = name in BINARY_SECTIONS
    b = s["baseline_rate"] if binary else s["baseline_mean"]
    c = s["candidate_rate"] if binary else s["candidate_mean"]
    words = [f"{fmt_int(n)} paired task{'s' if n != 1 else ''}"]
    if binary:
        words[0] += (f" ({fmt_int(s['both_pass'])} succeed in both, {fmt_int(s['baseline_only'])} only in the "
                     f"baseline, {fmt_int(s['candidate_only'])} only in the candidate, {fmt_int(s['both_fail'])} in neither)")
    words.append(f"{fmt_level(kind, b)} in the baseline, {fmt_level(kind, c)} in the candidate, "
                 f"a change of {fmt_change(kind, s['delta'])}.")
    text = "; ".join(words[:-1]) + ": " + words[-1]
    verdict = s["verdict"]
    if binary:
        m = s["baseline_only"] + s["candidate_only"]
        test = f"The exact McNemar test on the {fmt_int(m)} task{'s' if m != 1 else ''} whose outcome differs gives p = {fmt_p(s['mcnemar_p'])}"
        if verdict == "regression":
            text += f" {test}, below 0.05: the candidate is worse (a regression)."
        elif verdict == "improvement":
            text += f" {test}, below 0.05: the candidate is better (an improvement)."
        else:
            text += f" {test}: no significant change, which is not evidence that the runs are equally good."
    elif s["ci95"]["lower"] is None:
        text += " With fewer than two paired tasks there is no standard error, interval or verdict."
    else:
        interval = fmt_interval(kind, s["ci95"]["lower"], s["ci95"]["upper"])
        worse = "more per task is worse" if name in COMPARISON_RESOURCE_FIELDS else "higher is better"
        if verdict == "regression":
            text += f" The 95% interval {interval} excludes zero on the worse side ({worse}): a regression."
        elif verdict == "improvement":
            text += f" The 95% interval {interval} excludes zero on the better side ({worse}): an improvement."
        else:
            text += f" The 95% interval {interval} includes zero: no significant change."
    if s["mde80"] is not None:
        text += f" The smallest true change this comparison detects with 80% power is {fmt_change(kind, s['mde80'], signed=False)}"
        text += ("; the observed change is smaller, so this comparison says little either way."
                 if is_number(s["delta"]) and abs(s["delta"]) < s["mde80"] else ".")
    if name == "task_success":
        text += (" Each task weighs the same (its share of successful eligible attempts, every attempt number); "
                 "this is not the attempt-weighted attempt success rate.")
    return text


def _sections(result: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(name, section) in comparison.json's order, resources flattened."""
    named = [(n, result[n]) for n in (*BINARY_SECTIONS, "task_success", "quality")]
    return named + [(f, result["resources"][f]) for f in COMPARISON_RESOURCE_FIELDS]


def _base(run_dir: Path | None, out_dir: Path | None) -> str | None:
    """A run folder relative to the report's folder (as report_view makes it), or None."""
    if run_dir is None or out_dir is None:
        return None
    base = Path(os.path.relpath(Path(run_dir).resolve(), Path(out_dir).resolve())).as_posix()
    return "" if base == "." else base


def _links(comparison: Comparison, task_ids: list[str], out_dir: Path | None) -> list[dict[str, Any]]:
    """Per task, attempt 1's evidence folder in each run, with its link from out_dir."""
    bases = {"baseline": _base(comparison.baseline.run_dir, out_dir),
             "candidate": _base(comparison.candidate.run_dir, out_dir)}
    rows = []
    for task_id in task_ids:
        row: dict[str, Any] = {"task_id": task_id}
        for which, side in (("baseline", comparison.baseline), ("candidate", comparison.candidate)):
            folder = evidence_dir(side, task_id, 1)
            row[which] = {"text": (folder or ".") if folder is not None else "n/a (unavailable)",
                          "folder": folder, "href": evidence_href(bases[which], folder)}
        rows.append(row)
    return rows


def _gate(gate: Mapping[str, Any]) -> dict[str, Any]:
    margin = gate["max_drop"]
    margin_text = fmt_change("rate", margin, signed=False) if margin is not None else None
    words = {
        "first_attempt_regression": "the first attempt is a regression",
        "first_attempt_below_margin": f"the first attempt's interval reaches below -{margin_text}, the allowed drop",
        "task_success_regression": "task success is a regression",
        "task_success_below_margin": f"task success's interval reaches below -{margin_text}, the allowed drop",
    }
    return {"result": gate["result"], "passed": gate["result"] == "pass",
            "reasons": [words[r] for r in gate["reasons"]],
            "margin_text": margin_text}


def comparison_view(comparison: Comparison | None, out_dir: Path | None = None) -> dict[str, Any] | None:
    """What the comparison parts of the reports and comparison.md show; None without a
    comparison. ``out_dir``: where the page goes (evidence links are relative to it)."""
    if comparison is None:
        return None
    r = comparison.result
    k = r["k"]
    rows, chart_rows = [], []
    for name, s in _sections(r):
        kind = _kind(name)
        binary = name in BINARY_SECTIONS
        label = _section_label(name, k)
        rows.append({
            "name": name, "label": label, "n": fmt_int(s["n"]),
            "baseline": fmt_level(kind, s["baseline_rate"] if binary else s["baseline_mean"]),
            "candidate": fmt_level(kind, s["candidate_rate"] if binary else s["candidate_mean"]),
            "change": fmt_change(kind, s["delta"]),
            "interval": fmt_interval(kind, s["ci95"]["lower"], s["ci95"]["upper"]),
            "mde": fmt_change(kind, s["mde80"], signed=False),
            "p": fmt_p(s["mcnemar_p"]) if binary else "—",
            "verdict": s["verdict"], "verdict_text": VERDICT_WORDS[s["verdict"]], "css": VERDICT_CSS[s["verdict"]],
            "reading": _reading(name, s, k),
        })
        chart_rows.append({"label": label, "delta": s["delta"], "lower": s["ci95"]["lower"],
                           "upper": s["ci95"]["upper"], "scale": kind,
                           "fmt": (lambda v, kind=kind: fmt_change(kind, v)),
                           "css": VERDICT_CSS[s["verdict"]], "verdict_text": VERDICT_WORDS[s["verdict"]]})
    b, c = r["baseline"], r["candidate"]
    facts = {"b_suite": fmt_text(b["suite"]), "c_suite": fmt_text(c["suite"]),
             "b_k": fmt_text(b["metrics_k"]), "c_k": fmt_text(c["metrics_k"]), "k": fmt_text(k)}
    only_b, only_c = r["tasks"]["only_baseline"], r["tasks"]["only_candidate"]
    return {
        "baseline_run_id": b["run_id"], "candidate_run_id": c["run_id"],
        "baseline_suite": b["suite"], "candidate_suite": c["suite"],
        "k_text": fmt_text(k),
        "paired": fmt_int(r["tasks"]["paired"]),
        "gate": _gate(r["gate"]),
        "rows": rows,
        "chart": svg_delta_intervals(chart_rows),
        "warnings": [{"code": w, "text": WARNING_TEXT[w].format(**facts)} for w in r["warnings"]],
        "regressions": _links(comparison, r["regressions"], out_dir),
        "improvements": _links(comparison, r["improvements"], out_dir),
        "only_baseline": only_b[:LIST_CAP], "only_baseline_more": max(0, len(only_b) - LIST_CAP),
        "only_baseline_count": len(only_b),
        "only_candidate": only_c[:LIST_CAP], "only_candidate_more": max(0, len(only_c) - LIST_CAP),
        "only_candidate_count": len(only_c),
    }
