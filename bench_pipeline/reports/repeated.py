"""repeats.md and the repeated form of comparison.md: views of ``repeats.repeats`` and
``repeats.compare_sets`` formatted for reading (repeated-runs.md).

Every number comes from the documents; the runs only give the links to each run's report
and evidence. Strings from the runs stay raw, to be escaped where they are rendered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..comparison_sides import evidence_dir
from ..repeats import SECTIONS, RepeatRun, group_systems
from ..vocabulary import COMPARISON_RESOURCE_FIELDS
from .change_format import (NO_VARIATION, VERDICT_WORDS, fmt_change, fmt_interval, fmt_level, mde_text, no_variation,
                            section_kind, section_label, zero_width_verdict)
from .compared import run_folder_base
from .gate_words import gate_view
from .format import fmt_int, fmt_pct, fmt_text, plural
from .planning_text import repeats_planning, set_planning
from .repeated_verdicts import side_notes, single_pair_text, task_evidence
from .setup_text import runs_setup_lines, set_setup_lines
from .templates import _env
from .view.evidence import evidence_href, link_href
from .view.limits import LIST_CAP

REPEATS_WARNING_TEXT = {
    "suite_differs": "The runs are of different suites: their tasks are pooled by id as the specification says, "
                     "but they may not measure the same thing.",
    "model_differs": "The runs use different models: they are not repeats of one system.",
    "code_differs": "The runs have different git shas: they are not repeats of one build.",
    "metrics_k_differs": "The runs' metrics_k differ: pass@k and pass^k use the smallest k (none when any is unknown).",
    "suite_version_differs": "The runs' suite versions differ: a task with the same id may not be the same task.",
    "judge_differs": "The runs were judged differently (judge on or off, or another judge model): the pooled values "
                     "mix the judges' verdicts, and the noise floor includes their disagreement.",
    "platform_differs": "The runs ran on different devices or OS versions: they are not repeats of one measurement "
                        "setup, and the noise floor includes the platforms' difference.",
    "skills_differs": "The runs' active skills differ: the agent could use different skills in different runs.",
}
#: The measurement setup's warnings, in words, in both forms of the repeated documents.
_SETUP_SET_TEXT = {
    "suite_version_differs": "The runs' suite versions differ: a task with the same id may not be the same task.",
    "judge_differs": "The runs were judged differently (judge on or off, or another judge model): the comparison mixes "
                     "the change of judge with the agent's.",
    "platform_differs": "The runs ran on different devices or OS versions: the comparison mixes that change with the "
                        "agent's.",
    "skills_differs": "The runs' active skills differ: part of any change may be the skills'.",
}
SET_WARNING_TEXT = {
    **_SETUP_SET_TEXT,
    "suite_differs": "The runs are of different suites: only tasks observed on both sides are paired.",
    "metrics_k_differs": "The runs' metrics_k differ: pass@k and pass^k use the smallest k (none when any is unknown).",
    "baseline_systems_differ": "The baseline's runs are of more than one system (model or git sha): its pooled "
                               "values mix them.",
    "candidate_systems_differ": "The candidate's runs are of more than one system (model or git sha): its pooled "
                                "values mix them.",
    "no_paired_tasks": "No task was observed on both sides: there is no paired statistic, so the gate cannot "
                       "decide (inconclusive).",
}


def _sections(doc: Mapping[str, Any], key: str | None = None) -> list[tuple[str, Mapping[str, Any]]]:
    """(name, section) in the document's order, resources flattened."""
    block = doc[key] if key else doc
    return [(n, block[n]) for n in SECTIONS] + [(f, block["resources"][f]) for f in COMPARISON_RESOURCE_FIELDS]


def _report_link(out_dir: Path | None, report: Path | None) -> str | None:
    """A run's report.html relative to ``out_dir``, percent-encoded."""
    if report is None or out_dir is None:
        return None
    base = run_folder_base(report.parent, out_dir)
    return link_href(f"{base}/report.html" if base else "report.html")


def level_interval(kind: str, lower: Any, upper: Any) -> str:
    """An interval of a level (a rate, a score, a resource), not of a change."""
    if lower is None or upper is None:
        return "n/a"
    return f"[{fmt_level(kind, lower)}, {fmt_level(kind, upper)}]"


def system_text(system: Mapping[str, Any]) -> str:
    """``suite / model / git sha``, unknown parts named so."""
    return " / ".join(fmt_text(system.get(k)) if system.get(k) is not None else "unknown"
                      for k in ("suite", "model", "git_sha"))


def noise_sentence(between: Mapping[str, Any]) -> str:
    """The noise floor in plain words."""
    noise = between["noise_floor95"]
    if noise is None:
        return (f"With {plural(between['runs'], 'run')} whose pass@1 is known there is no between-run spread yet: "
                "at least two runs are needed to tell how far apart single runs land by chance.")
    return (f"Two single runs of this system differ in pass@1 by up to {noise * 100:.1f} points by chance (95% of the "
            f"time; between-run standard deviation {between['pass_at_1_sd'] * 100:.1f} points over "
            f"{fmt_int(between['runs'])} runs): a single-run comparison whose change is smaller than that is noise.")


#: The warnings that say the runs are not one system (suite, model, git sha and setup key:
#: repeated-runs.md "Systems"): repeats.json's ``system`` is then the first run's only.
SYSTEM_DIFFERS = frozenset({"suite_differs", "model_differs", "code_differs", "judge_differs", "platform_differs"})


def repeats_view(doc: Mapping[str, Any], runs: Sequence[RepeatRun], out_dir: Path | None = None,
                 reports: Mapping[str, Path] | None = None, notes: Sequence[str] = ()) -> dict[str, Any]:
    """What repeats.md shows. ``reports``: {run id: that run's report.html}, for links;
    ``notes``: the runs not pooled, or pooled without adding anything, and why
    (system_members.Members.notes)."""
    reports = reports or {}
    run_rows = [{"run_id": r["run_id"], "started_at": fmt_text(r["started_at"]), "pass_at_1": fmt_pct(r["pass_at_1"]),
                 "href": _report_link(out_dir, reports.get(r["run_id"]))} for r in doc["runs"]]
    pooled = []
    for name, s in _sections(doc, "pooled"):
        kind = section_kind(name)
        flat = s["n"] >= 2 and s["se"] == 0
        pooled.append({"label": section_label(name, doc["k"]), "n": fmt_int(s["n"]), "mean": fmt_level(kind, s["mean"]),
                       "interval": NO_VARIATION if flat else level_interval(kind, s["ci95"]["lower"], s["ci95"]["upper"]),
                       "no_variation": flat})
    st = doc["stability"]
    flaky = []
    for t in st["flaky_tasks"][:LIST_CAP]:
        links = []
        for run in runs:
            folder = evidence_dir(run.side, t["task_id"], 1)
            if t["task_id"] in run.side.tasks:
                base = run_folder_base(run.side.run_dir, out_dir) if run.side.run_dir is not None else None
                links.append({"run_id": run.run_id, "text": folder or ".", "href": evidence_href(base, folder)})
        flaky.append({"task_id": t["task_id"], "attempts": fmt_int(t["attempts"]), "successes": fmt_int(t["successes"]),
                      "flip": fmt_pct(t["flip"]), "links": links})
    return {
        "system": system_text(doc["system"]),
        "setup": runs_setup_lines(runs), "notes": list(notes),
        "runs": run_rows,
        "k": fmt_text(doc["k"]),
        "tasks": doc["tasks"],
        "pooled": pooled,
        "noise": noise_sentence(doc["between_runs"]),
        "stability": {**{k: fmt_int(st[k]) for k in ("tasks_classified", "stable_pass", "stable_fail", "flaky")},
                      "flip_rate": fmt_pct(st["flip_rate"])},  # a percent, as report.html shows it
        "flaky": flaky, "flaky_more": max(0, len(st["flaky_tasks"]) - LIST_CAP),
        "warnings": [{"code": w, "text": REPEATS_WARNING_TEXT[w]} for w in doc["warnings"]],
        "differs": any(w in SYSTEM_DIFFERS for w in doc["warnings"]),
        "planning": repeats_planning(doc),
    }


def _set_reading(name: str, s: Mapping[str, Any], single: Mapping[str, Any] | None) -> str:
    """One section of the repeated comparison in words, with what pooling bought."""
    kind = section_kind(name)
    n = s["n"]
    if n == 0:
        return "No paired task is in this section on both sides: nothing to compare."
    text = (f"{fmt_int(n)} paired task{'s' if n != 1 else ''}: {fmt_level(kind, s['baseline_mean'])} pooled over the "
            f"baseline's runs, {fmt_level(kind, s['candidate_mean'])} over the candidate's, a change of "
            f"{fmt_change(kind, s['delta'])}.")
    verdict = s["verdict"]
    if s["ci95"]["lower"] is None:
        text += " With fewer than two paired tasks there is no interval or verdict."
    elif no_variation(s):
        text += (f" Every paired task changed by exactly {fmt_change(kind, s['delta'])}: there is no variation to "
                 "estimate an interval from (shown as n/a), which is not certainty." + zero_width_verdict(verdict, n))
    else:
        interval = fmt_interval(kind, s["ci95"]["lower"], s["ci95"]["upper"])
        if verdict in ("regression", "improvement"):
            text += f" The 95% interval {interval} excludes zero: {VERDICT_WORDS[verdict]}."
        else:
            text += f" The 95% interval {interval} includes zero: no significant change." + mde_text(kind, s)
    return text + single_pair_text(kind, s, single)


def set_comparison_view(result: Mapping[str, Any], single: Mapping[str, Any] | None,
                        baseline: Sequence[RepeatRun], candidate: Sequence[RepeatRun],
                        out_dir: Path | None = None) -> dict[str, Any]:
    """What the repeated comparison.md shows. ``single``: ``compare_sets`` of the first run of
    each side, for the interval a single pair of runs would have had; ``out_dir``: where the
    file goes (evidence links are relative to it)."""
    k = result["k"]
    rows = []
    for name, s in _sections(result):
        kind = section_kind(name)
        one = None
        if single is not None:
            one = single["resources"][name] if name in COMPARISON_RESOURCE_FIELDS else single[name]
        flat = no_variation(s)
        rows.append({
            "label": section_label(name, k), "n": fmt_int(s["n"]),
            "baseline": fmt_level(kind, s["baseline_mean"]), "candidate": fmt_level(kind, s["candidate_mean"]),
            "change": fmt_change(kind, s["delta"]),
            "interval": NO_VARIATION if flat else fmt_interval(kind, s["ci95"]["lower"], s["ci95"]["upper"]),
            "single": NO_VARIATION if one is not None and no_variation(one)
            else fmt_interval(kind, one["ci95"]["lower"], one["ci95"]["upper"]) if one is not None else "n/a",
            "mde": NO_VARIATION if flat else fmt_change(kind, s["mde80"], signed=False),
            "verdict": VERDICT_WORDS[s["verdict"]],
            "reading": _set_reading(name, s, one),
        })

    def side(runs: Sequence[RepeatRun]) -> dict[str, Any]:
        systems = group_systems(runs)
        return {"runs": [r.run_id for r in runs], "count": len(runs),
                "systems": [system_text({"suite": s.suite, "model": s.model, "git_sha": s.git_sha})
                            + (f" ({s.setup_text})" if s.setup_text else "") for s in systems]}

    return {
        "baseline": side(baseline), "candidate": side(candidate), "k": fmt_text(k),
        "setup": set_setup_lines(baseline, candidate),
        "paired": fmt_int(result["tasks"]["paired"]),
        "gate": {**gate_view(result), "margin": gate_view(result)["margin_text"]},
        "rows": rows,
        "warnings": [{"code": w, "text": SET_WARNING_TEXT[w]} for w in result["warnings"]],
        "planning": set_planning(result),
        "side_notes": side_notes(baseline, candidate),
        "regressions": task_evidence(result["regressions"][:LIST_CAP], baseline, candidate, k, out_dir),
        "regressions_more": max(0, len(result["regressions"]) - LIST_CAP),
        "improvements": task_evidence(result["improvements"][:LIST_CAP], baseline, candidate, k, out_dir),
        "improvements_more": max(0, len(result["improvements"]) - LIST_CAP),
        "only_baseline": len(result["tasks"]["only_baseline"]), "only_candidate": len(result["tasks"]["only_candidate"]),
    }



def render_repeats_md(doc: Mapping[str, Any], runs: Sequence[RepeatRun], out_dir: Path | None = None,
                      reports: Mapping[str, Path] | None = None, notes: Sequence[str] = ()) -> str:
    """repeats.md (links relative to ``out_dir``, where the file goes)."""
    return _env(False).get_template("repeats.md.j2").render(v=repeats_view(doc, runs, out_dir, reports, notes))


def render_set_comparison_md(result: Mapping[str, Any], single: Mapping[str, Any] | None,
                             baseline: Sequence[RepeatRun], candidate: Sequence[RepeatRun],
                             out_dir: Path | None = None) -> str:
    """comparison.md in the repeated form (evidence links relative to ``out_dir``, where the
    file goes)."""
    return _env(False).get_template("comparison_repeated.md.j2").render(
        c=set_comparison_view(result, single, baseline, candidate, out_dir))
