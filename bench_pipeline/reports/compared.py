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

from ..comparison import BINARY_SECTIONS, Comparison
from ..comparison_sides import evidence_dir
from ..comparison_left_out import left_out
from ..identity import RunIdentity, differences
from ..object_store import relative_link
from ..vocabulary import COMPARISON_RESOURCE_FIELDS
from .charts import svg_delta_intervals
from .change_format import (NO_VARIATION, VERDICT_CSS, VERDICT_WORDS, fmt_change, fmt_interval, fmt_level, fmt_p,
                            mde_text, no_variation, section_kind, section_label, zero_width_verdict)
from .format import fmt_int, fmt_pct, fmt_text
from .gate_words import gate_view
from .planning_text import comparison_planning
from .setup_text import SETUP_WARNING_TEXT, difference_sentences, setup_facts, setup_rows
from .view.evidence import evidence_href
from .view.limits import LIST_CAP

WARNING_TEXT = {
    "suite_differs": "The two runs are of different suites ({b_suite} and {c_suite}): only the tasks both "
                     "observed are paired, and the suites may not measure the same thing.",
    "metrics_k_differs": "The runs' metrics_k differ ({b_k} and {c_k}): pass@k and pass^k compare attempts "
                         "1..k with k = {k}, the smaller (null, and no pass@k comparison, when either is unknown).",
    "no_paired_tasks": "No task was observed in both runs: there is no paired statistic, so the gate "
                       "cannot decide (inconclusive).",
    **SETUP_WARNING_TEXT,
}


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


def _reading(name: str, s: Mapping[str, Any], k: Any, paired: int = 0,
             reasons: list[tuple[str, str, int]] | None = None) -> str:
    """The section in plain words: population (and who is left out, why), direction, the test
    or the interval, and, only after a result that is not significant, the MDE. A section
    without variation says so instead of showing a zero-width interval as precision."""
    kind = section_kind(name)
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
        words[0] += (f" ({fmt_int(s['both_pass'])} succeed{'s' if s['both_pass'] == 1 else ''} in both, {fmt_int(s['baseline_only'])} only in the "
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
            text += mde_text(kind, s)
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
            text += f" The 95% interval {interval} includes zero: no significant change." + mde_text(kind, s)
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
        kind = section_kind(name)
        binary = name in BINARY_SECTIONS
        label = section_label(name, k)
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
