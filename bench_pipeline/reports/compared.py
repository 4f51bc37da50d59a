"""The "Compared with <baseline>" part of the reports, and comparison.md: a view of a
comparison (``comparison.Comparison``), formatted for reading.

Every number comes from comparison.json (``Comparison.result``); the sides only give each
task's evidence folders for the links. Strings from the runs stay raw, to be escaped where
they are rendered (autoescaping in report.html, ``md_code``/``md_text`` in markdown).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..comparison import BINARY_SECTIONS, Comparison, evidence_dir
from ..comparison_left_out import left_out
from ..identity import RunIdentity, differences
from ..object_store import relative_link
from ..stats import is_number
from ..vocabulary import COMPARISON_RESOURCE_FIELDS
from .charts import svg_delta_intervals
from .format import FIELD_LABELS, NA, fmt_int, fmt_ms, fmt_pct, fmt_text, fmt_usd
from .planning_text import comparison_planning
from .setup_text import SETUP_WARNING_TEXT, difference_sentences, setup_facts, setup_rows
from .view.evidence import evidence_href
from .view.limits import LIST_CAP

#: A table cell for the interval and MDE of a section without variation (``no_variation``).
NO_VARIATION = "n/a (no variation)"

#: What each verdict is called in the reports, and its colour class.
VERDICT_WORDS = {"regression": "regression", "improvement": "improvement",
                 "no_significant_change": "no significant change", None: "n/a"}
VERDICT_CSS = {"regression": "bad", "improvement": "good", "no_significant_change": "flat", None: "na"}

WARNING_TEXT = {
    "suite_differs": "The two runs are of different suites ({b_suite} and {c_suite}): only the tasks both "
                     "observed are paired, and the suites may not measure the same thing.",
    "metrics_k_differs": "The runs' metrics_k differ ({b_k} and {c_k}): pass@k and pass^k compare attempts "
                         "1..k with k = {k}, the smaller (null, and no pass@k comparison, when either is unknown).",
    "no_paired_tasks": "No task was observed in both runs: there is no paired statistic, so the gate "
                       "cannot decide (inconclusive).",
    **SETUP_WARNING_TEXT,
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


#: Why a paired task is outside a section (``comparison_left_out.left_out`` codes), in words.
LEFT_OUT_WORDS = {
    "attempt_1_missing": "attempt 1 is missing",
    "attempt_1_ineligible": "attempt 1 is not eligible",
    "k_unknown": "k is unknown",
    "attempts_missing_within_k": "it has fewer than k attempts (an attempt of 1..k is missing)",
    "ineligible_within_k": "an attempt of 1..k is not eligible",
    "no_eligible_attempt": "it has no eligible attempt",
    "no_value": "no eligible attempt has a value",
}
VALUE_WORDS = {"quality": "a quality score", "task_wall_ms": "a wall time", "total_tokens": "a token total",
               "cost_usd": "a cost"}
WHERE_WORDS = {"both": "in both runs", "baseline": "in the baseline", "candidate": "in the candidate"}


def no_variation(s: Mapping[str, Any]) -> bool:
    """A section of at least two paired tasks whose per-task changes are all equal: its
    standard error, interval width and MDE are 0 because there is no spread to estimate them
    from, not because the comparison is precise (comparison.json keeps the numbers as
    comparison.md defines them)."""
    return s["n"] >= 2 and s["se"] == 0


def agreement_bound(n: int) -> float:
    """With 0 of n paired tasks changing outcome, the exact one-sided 95% upper bound on the
    share of tasks that change: 1 - 0.05^(1/n) (about 3/n, the rule of three)."""
    return 1 - 0.05 ** (1 / n)


def _left_out_text(name: str, n: int, paired: int, reasons: list[tuple[str, str, int]]) -> str:
    """``Left out: 5 of the 12 paired tasks (3 because ..., 2 because ...).`` or ''."""
    missing = paired - n
    if missing <= 0:
        return ""
    parts = []
    for reason, where, count in reasons:
        words = LEFT_OUT_WORDS[reason]
        if reason == "no_value":
            words = f"no eligible attempt has {VALUE_WORDS.get(name, 'a value')}"
        parts.append(f"{fmt_int(count)} because {words} {WHERE_WORDS[where]}")
    return (f"Left out: {fmt_int(missing)} of the {fmt_int(paired)} paired tasks"
            + (f" ({'; '.join(parts)})" if parts else "") + ".")


def _mde_text(kind: str, s: Mapping[str, Any]) -> str:
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


def _reading(name: str, s: Mapping[str, Any], k: Any, paired: int = 0,
             reasons: list[tuple[str, str, int]] | None = None) -> str:
    """The section in plain words: population (and who is left out, why), direction, the test
    or the interval, and, only after a result that is not significant, the MDE. A section
    without variation says so instead of showing a zero-width interval as precision."""
    kind = _kind(name)
    n = s["n"]
    left = _left_out_text(name, n, paired, reasons or [])
    if n == 0:
        if name in ("pass_at_k", "pass_pow_k") and k is None:
            return "No comparison: k is unknown for at least one run."
        return ("No paired task is in this section's population: nothing to compare." + (" " + left if left else ""))
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
    if left:
        text += " " + left
    verdict = s["verdict"]
    flat = no_variation(s)
    if binary:
        m = s["baseline_only"] + s["candidate_only"]
        test = f"The exact McNemar test on the {fmt_int(m)} task{'s' if m != 1 else ''} whose outcome differs gives p = {fmt_p(s['mcnemar_p'])}"
        if verdict == "regression":
            text += f" {test}, below 0.05: the candidate is worse (a regression)."
        elif verdict == "improvement":
            text += f" {test}, below 0.05: the candidate is better (an improvement)."
        else:
            text += f" {test}: no significant change, which is not evidence that the runs are equally good."
        if flat and m == 0:
            text += (f" Every one of the {fmt_int(n)} tasks has the same outcome in both runs, so there is no "
                     "variation to estimate an interval or a detectable change from (both are shown as n/a). "
                     f"{fmt_int(n)} identical outcomes are not certainty: the share of tasks whose outcome "
                     f"changes between these two systems could still be as high as {fmt_pct(agreement_bound(n))} "
                     f"(exact one-sided 95% bound with 0 of {fmt_int(n)} changed).")
        elif flat:
            text += (f" Every one of the {fmt_int(n)} tasks changed the same way, so there is no variation between "
                     "tasks to put an interval around the change (shown as n/a); the verdict rests on the test alone.")
        elif verdict == "no_significant_change":
            text += _mde_text(kind, s)
    elif s["ci95"]["lower"] is None:
        text += " With fewer than two paired tasks there is no standard error, interval or verdict."
    elif flat:
        text += (f" Every one of the {fmt_int(n)} paired tasks changed by exactly {fmt_change(kind, s['delta'])}, "
                 "so there is no variation between tasks to estimate an interval or a detectable change from "
                 "(both are shown as n/a); a handful of identical changes is not certainty.")
        text += zero_width_verdict(verdict, n)
    else:
        interval = fmt_interval(kind, s["ci95"]["lower"], s["ci95"]["upper"])
        worse = "more per task is worse" if name in COMPARISON_RESOURCE_FIELDS else "higher is better"
        if verdict == "regression":
            text += f" The 95% interval {interval} excludes zero on the worse side ({worse}): a regression."
        elif verdict == "improvement":
            text += f" The 95% interval {interval} excludes zero on the better side ({worse}): an improvement."
        else:
            text += f" The 95% interval {interval} includes zero: no significant change." + _mde_text(kind, s)
    if name == "task_success":
        text += (" Each task weighs the same (its share of successful eligible attempts, every attempt number); "
                 "this is not the attempt-weighted attempt success rate.")
    return text


def _sections(result: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(name, section) in comparison.json's order, resources flattened."""
    named = [(n, result[n]) for n in (*BINARY_SECTIONS, "task_success", "quality")]
    return named + [(f, result["resources"][f]) for f in COMPARISON_RESOURCE_FIELDS]


def run_folder_base(run_dir: Path | None, out_dir: Path | None) -> str | None:
    """A run folder as linked from the report's folder (as report_view makes it), or None:
    relative when both are local or in one bucket, else the run folder's URL
    (object_store.relative_link, docs/operations.md "Object storage")."""
    if run_dir is None or out_dir is None:
        return None
    return relative_link(run_dir, out_dir)


def _links(comparison: Comparison, task_ids: list[str], out_dir: Path | None) -> list[dict[str, Any]]:
    """Per task, attempt 1's evidence folder in each run, with its link from out_dir."""
    bases = {"baseline": run_folder_base(comparison.baseline.run_dir, out_dir),
             "candidate": run_folder_base(comparison.candidate.run_dir, out_dir)}
    rows = []
    for task_id in task_ids:
        row: dict[str, Any] = {"task_id": task_id}
        for which, side in (("baseline", comparison.baseline), ("candidate", comparison.candidate)):
            folder = evidence_dir(side, task_id, 1)
            row[which] = {"text": (folder or ".") if folder is not None else "n/a (unavailable)",
                          "folder": folder, "href": evidence_href(bases[which], folder)}
        rows.append(row)
    return rows


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
        return (f"{label} has no paired task (no task is in this section in both runs: an empty or unreadable "
                "candidate, no eligible first attempt, or task sets that do not overlap), so nothing was measured "
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





def _identity_rows(b: RunIdentity, c: RunIdentity, b_id: Any, c_id: Any) -> list[dict[str, Any]]:
    """What is compared, side by side: run, model, code version, suite (with its version),
    then the measurement setup: judge, platform, active skills (setup_text.setup_rows)."""
    differ = set(differences(b, c))
    if "suite_version_differs" in difference_sentences(b.setup, c.setup):
        differ.add("suite version")
    return [
        {"label": "Run", "baseline": fmt_text(b_id), "candidate": fmt_text(c_id), "differs": False},
        {"label": "Model", "baseline": b.model_text, "candidate": c.model_text, "differs": "model" in differ},
        {"label": "Code version", "baseline": b.code_text, "candidate": c.code_text, "differs": "code" in differ},
        {"label": "Suite", "baseline": b.suite_text, "candidate": c.suite_text,
         "differs": "suite version" in differ or (b.suite is not None and c.suite is not None and b.suite != c.suite)},
        *[row for row in setup_rows(b.setup, c.setup) if row["label"] != "Suite version"],
        {"label": "Started", "baseline": fmt_text(b.started_at), "candidate": fmt_text(c.started_at), "differs": False},
    ]


def identity_notes(b: RunIdentity, c: RunIdentity) -> list[str]:
    """What kind of comparison this is, from what differs between the runs, and what is unknown."""
    differ = differences(b, c)
    notes = []
    if "model" in differ:
        notes.append(f"The runs use different models ({b.model_text} and {c.model_text}): this compares two "
                     "models, not two builds of one agent.")
    if "code" in differ:
        notes.append(f"The code versions differ ({b.code_text} and {c.code_text})"
                     + (": this compares two builds of the agent on one model." if "model" not in differ
                        and b.model_name is not None else "."))
    if "suite version" in differ:
        notes.append(f"The suite versions differ ({b.suite_version} and {c.suite_version}): a task with the same id "
                     "may not be the same task.")
    setup = difference_sentences(b.setup, c.setup)  # the measurement setup's differences, in words
    if "suite version" in differ:
        setup.pop("suite_version_differs", None)
    notes += setup.values()
    for which, ident in (("baseline", b), ("candidate", c)):
        if ident.dirty is True:
            notes.append(f"The {which}'s code had uncommitted changes: its git sha does not say exactly what ran.")
    unknown = [f"the {which}'s {words}" for which, ident in (("baseline", b), ("candidate", c))
               for attr, words in (("model_name", "model"), ("git_sha", "code version"))
               if getattr(ident, attr) is None]
    if unknown:
        notes.append(f"Unknown: {', '.join(unknown)} (not recorded in manifest.json, or the run folder was not "
                     "found), so what differs between the runs is not fully known.")
    elif not differ and not setup:
        notes.append("Same model, code version and suite version: two runs of one system, so the differences "
                     "below are run-to-run variation plus whatever the manifests do not record.")
    return notes


def comparison_view(comparison: Comparison | None, out_dir: Path | None = None) -> dict[str, Any] | None:
    """What the comparison parts of the reports and comparison.md show; None without a
    comparison. ``out_dir``: where the page goes (evidence links are relative to it)."""
    if comparison is None:
        return None
    r = comparison.result
    k = r["k"]
    paired = r["tasks"]["paired"]
    reasons = left_out(comparison.baseline, comparison.candidate, k=k)
    rows, chart_rows = [], []
    for name, s in _sections(r):
        kind = _kind(name)
        binary = name in BINARY_SECTIONS
        label = _section_label(name, k)
        flat = no_variation(s)
        rows.append({
            "name": name, "label": label, "n": fmt_int(s["n"]),
            "n_text": f"{fmt_int(s['n'])} of {fmt_int(paired)}",
            "baseline": fmt_level(kind, s["baseline_rate"] if binary else s["baseline_mean"]),
            "candidate": fmt_level(kind, s["candidate_rate"] if binary else s["candidate_mean"]),
            "change": fmt_change(kind, s["delta"]),
            "interval": NO_VARIATION if flat else fmt_interval(kind, s["ci95"]["lower"], s["ci95"]["upper"]),
            "mde": NO_VARIATION if flat else fmt_change(kind, s["mde80"], signed=False),
            "no_variation": flat,
            "p": fmt_p(s["mcnemar_p"]) if binary else "—",
            "verdict": s["verdict"], "verdict_text": VERDICT_WORDS[s["verdict"]], "css": VERDICT_CSS[s["verdict"]],
            "reading": _reading(name, s, k, paired,
                                reasons[f"resources.{name}" if name in COMPARISON_RESOURCE_FIELDS else name]),
        })
        chart_rows.append({"label": label, "delta": s["delta"], "lower": s["ci95"]["lower"],
                           "upper": s["ci95"]["upper"], "scale": kind, "no_variation": flat,
                           "fmt": (lambda v, kind=kind: fmt_change(kind, v)),
                           "css": VERDICT_CSS[s["verdict"]], "verdict_text": VERDICT_WORDS[s["verdict"]]})
    b, c = r["baseline"], r["candidate"]
    facts = {"b_suite": fmt_text(b["suite"]), "c_suite": fmt_text(c["suite"]),
             "b_k": fmt_text(b["metrics_k"]), "c_k": fmt_text(c["metrics_k"]), "k": fmt_text(k),
             **setup_facts(comparison.baseline.identity.setup, comparison.candidate.identity.setup)}
    only_b, only_c = r["tasks"]["only_baseline"], r["tasks"]["only_candidate"]
    return {
        "baseline_run_id": b["run_id"], "candidate_run_id": c["run_id"],
        "baseline_suite": b["suite"], "candidate_suite": c["suite"],
        "k_text": fmt_text(k),
        "paired": fmt_int(r["tasks"]["paired"]),
        "gate": gate_view(r),
        "identity": _identity_rows(comparison.baseline.identity, comparison.candidate.identity,
                                   b["run_id"], c["run_id"]),
        "identity_notes": identity_notes(comparison.baseline.identity, comparison.candidate.identity),
        "rows": rows,
        "planning": comparison_planning(r),
        "chart": svg_delta_intervals(chart_rows),
        "warnings": [{"code": w, "text": WARNING_TEXT[w].format(**facts)} for w in r["warnings"]],
        "regressions": _links(comparison, r["regressions"], out_dir),
        "improvements": _links(comparison, r["improvements"], out_dir),
        "only_baseline": only_b[:LIST_CAP], "only_baseline_more": max(0, len(only_b) - LIST_CAP),
        "only_baseline_count": len(only_b),
        "only_candidate": only_c[:LIST_CAP], "only_candidate_more": max(0, len(only_c) - LIST_CAP),
        "only_candidate_count": len(only_c),
    }
