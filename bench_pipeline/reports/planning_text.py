"""Planning in words (planning.md "Where a reader sees it"): how many runs per side, or how
many tasks, would detect a change, where decisions are read.

- ``repeats_planning``: repeats.md's planning part (the variance split, what R runs per side
  detect, the runs needed for each target);
- ``comparison_planning``: comparison.md (one pair of runs), and the one sentence of
  summary.md's and report.html's "Compared with" section;
- ``set_planning``: the repeated form of comparison.md;
- ``suite_plan``: a suite page's cell per system (runs per side for each target in first
  attempt, and the chart of the detectable change against runs per side).

Every number is the document's ``planning`` (planning.py's formulas), except the tasks for
the observed change, which are planning.tasks_needed of the section's own n and mde80. A
document without ``planning`` (written before it existed) shows none. Planning text is shown
for a gate section whose result is not significant, or that makes the gate inconclusive.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..planning import PLANNED_SECTIONS, tasks_needed
from ..stats import is_number
from .format import NA, fmt_int, fmt_pct, plural
from .planning_chart import svg_mde_by_runs

#: The planned sections as the words name them, and as a heading.
WORDS = {"first_attempt": "first attempt", "task_success": "task success"}
TITLES = {"first_attempt": "First attempt (pass@1)", "task_success": "Task success (task-weighted)"}
#: The runs per side repeats.md names in its "with R runs per side ..." sentence.
SHOWN_RUNS = (1, 3, 10)
#: What each figure assumes (docs/metric-choices.md "Planning: what the numbers assume").
SAME_CHANGE = ("Each figure describes a comparison of this system against one with the same run-to-run noise, on "
               "the same tasks, when the change is the same on every task: the most a comparison can hope for. A "
               "change that differs by task needs more (the repeated comparison measures how much more).")


def pp(value: float, signed: bool = False) -> str:
    """A change in percentage points, one decimal: ``5.0 pp``, signed ``-4.0 pp``."""
    sign = ("+" if value > 0 else "-" if value < 0 else "") if signed else ""
    return f"{sign}{abs(value) * 100:.1f} pp"


def target_text(change: float) -> str:
    """A planned change as given, to six significant digits: 0.05 -> ``5 pp``, 0.025 ->
    ``2.5 pp``, 1e-160 -> ``1e-158 pp``."""
    return f"{change * 100:.6g} pp"


def count_text(count: int | None) -> str:
    """A count of tasks or runs needed; null only when it is beyond the float range (a
    change near 0: planning.ceil_count)."""
    return fmt_int(count) if count is not None else "more than can be counted"


def _var(value: float) -> str:
    return f"{value:.3g}"


def _planned(result: Mapping[str, Any], name: str) -> bool:
    """Whether a gate section gets planning text: its result is not significant, or it gives
    a reason to an inconclusive gate."""
    section = result.get(name) or {}
    gate = result.get("gate") or {}
    inconclusive = gate.get("result") == "inconclusive" and any(
        str(r).startswith(name + "_") for r in gate.get("reasons") or [])
    return section.get("verdict") == "no_significant_change" or inconclusive


def _observed_tasks(s: Mapping[str, Any]) -> int | None:
    """The paired tasks that would detect the observed change (planning.md section 1's T for
    d = |delta|); None without a change or an mde80."""
    delta = s.get("delta")
    if not is_number(delta) or delta == 0:
        return None
    return tasks_needed(s["n"], s["mde80"], [abs(delta)])[0]["tasks"]


def _no_plan(s: Mapping[str, Any]) -> str | None:
    """Why a comparison section has nothing to plan tasks from, None when it has."""
    n = s["n"]
    if n == 0:
        return "No paired task is in this section: nothing to plan from; more paired tasks would be needed first."
    if s["mde80"] is None:
        return (f"With {plural(n, 'paired task')} there is no spread of per-task changes to plan from: no number of "
                "tasks can be read from this comparison.")
    if s["mde80"] == 0:
        return ("Every paired task changed by the same amount, so there is no spread to plan from (`tasks_needed` is "
                "null); more tasks would show how large a change could go unseen.")
    return None


def _tasks_clause(s: Mapping[str, Any], entries: Sequence[Mapping[str, Any]]) -> str:
    """``the observed change of -4.0 pp with about 378 paired tasks, 2 pp with 1,513, ...``."""
    parts = []
    observed = _observed_tasks(s)
    if observed is not None:
        parts.append(f"the observed change of {pp(s['delta'], signed=True)} with about {fmt_int(observed)} "
                     "paired tasks")
    parts += [f"{target_text(e['change'])} with {count_text(e['tasks'])}" for e in entries]
    return ", ".join(parts)


# --- comparison.md, one pair of runs -----------------------------------------------------------

def comparison_planning(result: Mapping[str, Any]) -> dict[str, Any]:
    """comparison.md's planning paragraphs ({label, text} per gate section that needs one) and
    the one sentence summary.md and report.html show (None when no section has a figure)."""
    sections, parts = [], []
    for name in PLANNED_SECTIONS:
        s = result.get(name) or {}
        plan = s.get("planning")
        if not isinstance(plan, Mapping) or not _planned(result, name):
            continue
        missing = _no_plan(s)
        if missing is not None:
            sections.append({"label": TITLES[name], "text": missing})
            continue
        n, entries = s["n"], plan["tasks_needed"]
        sections.append({"label": TITLES[name], "text": (
            f"With its {plural(n, 'paired task')} this comparison detects changes of {pp(s['mde80'])} or more (80% "
            f"power). Tasks like these would detect {_tasks_clause(s, entries)} (`tasks_needed` in comparison.json). "
            f"This assumes that added tasks behave like these {fmt_int(n)}: per-task changes as large and as varied, "
            "one run per side; tasks that are harder, easier or flakier than these change the count.")})
        observed = _observed_tasks(s)
        parts.append(f"{WORDS[name]} would need about {' / '.join(count_text(e['tasks']) for e in entries)} paired tasks "
                     f"to detect {' / '.join(target_text(e['change'])[:-3] for e in entries)} pp (it has {fmt_int(n)})"
                     + (f", and {fmt_int(observed)} for its observed change of {pp(s['delta'], signed=True)}"
                        if observed is not None else ""))
    sentence = None
    if parts:
        sentence = ("What would detect a change (tasks like these, 80% power): " + "; ".join(parts)
                    + "; comparison.md says what each figure assumes.")
    return {"sections": sections, "sentence": sentence}


# --- comparison.md, two sets of runs -----------------------------------------------------------

def _runs_entry(e: Mapping[str, Any], s: Mapping[str, Any], tasks: int | None) -> str:
    what = f"the observed change of {pp(s['delta'], signed=True)}" if e.get("observed") else target_text(e["change"])
    runs = e["runs_per_side"]
    if runs is not None:
        return f"{what}: {plural(runs, 'run')} per side"
    more = (f"about {fmt_int(tasks)} paired tasks would, with as many runs per side as now" if tasks is not None
            else "nor can the tasks needed be read")
    return f"{what}: no number of runs per side on these tasks (more tasks are needed: {more})"


def _set_text(result: Mapping[str, Any], s: Mapping[str, Any], plan: Mapping[str, Any]) -> str:
    n = s["n"]
    if n == 0:
        return "No paired task is in this section on both sides: nothing to plan from."
    b_runs, c_runs = len(result["baseline"]["runs"]), len(result["candidate"]["runs"])
    now = f"Now ({plural(b_runs, 'baseline run')}, {plural(c_runs, 'candidate run')}, {plural(n, 'paired task')})"
    mde = s["mde80"]
    if mde is None:
        text = f"{now} there are too few paired tasks to estimate the smallest detectable change."
    elif mde == 0:
        text = (f"{now} every paired task changed by the same amount, so there is no spread to estimate the smallest "
                "detectable change from.")
    else:
        text = f"{now} the smallest change this comparison detects with 80% power is {pp(mde)}."
    wb, wc = plan["within_task_var"]["baseline"], plan["within_task_var"]["candidate"]
    change_var = plan["change_var"]
    by_change = {e["change"]: e["tasks"] for e in plan["tasks_needed"]}
    tasks_sentence = (f" Tasks like these would detect {_tasks_clause(s, plan['tasks_needed'])}, with as many runs "
                      "per side as now (this assumes added tasks behave like these)." if _no_plan(s) is None else "")
    if wb is None or wc is None:
        which = " and ".join(w for w, v in (("baseline", wb), ("candidate", wc)) if v is None)
        again = "each side" if " and " in which else "it"
        return (text + f" The run-to-run noise of the {which} cannot be measured with fewer than two runs of any task: "
                f"run {again} at least twice to plan runs per side." + tasks_sentence)
    if change_var is None:
        return text + " With fewer than two paired tasks the spread of the change across tasks cannot be measured, " \
                      "so runs per side cannot be planned."
    entries = plan["runs_needed"]
    ordered = [e for e in entries if e.get("observed")] + [e for e in entries if not e.get("observed")]
    listed = "; ".join(_runs_entry(e, s, _observed_tasks(s) if e.get("observed") else by_change.get(e["change"]))
                       for e in ordered)
    text += (f" To detect {listed}. Run-to-run noise per task (within-task variance): baseline {_var(wb)}, candidate "
             f"{_var(wc)}; the true change differs from task to task with variance {_var(change_var)} (`change_var`"
             + (": 0, the change looks the same on every task as far as these runs tell" if change_var == 0 else "")
             + f"). Runs per side assume that each side's noise and the spread of the change stay as measured, on "
             f"these same {fmt_int(n)} tasks; more runs cannot remove the spread of the change, only more tasks can.")
    if any(e["runs_per_side"] is None for e in entries):
        text += " The tasks assume that added tasks behave like these."
    return text


def set_planning(result: Mapping[str, Any]) -> list[dict[str, str]]:
    """The repeated comparison.md's planning paragraphs: {label, text} per gate section that
    needs one (planning.md section 3 in words)."""
    out = []
    for name in PLANNED_SECTIONS:
        s = result.get(name) or {}
        plan = s.get("planning")
        if isinstance(plan, Mapping) and "runs_needed" in plan and _planned(result, name):
            out.append({"label": TITLES[name], "text": _set_text(result, s, plan)})
    return out


# --- repeats.md --------------------------------------------------------------------------------

def _split_lines(p: Mapping[str, Any]) -> list[str]:
    """One section of repeats.json's planning in words: the split, what R runs per side
    detect, and the runs needed for each target."""
    n, within, between, icc = p["n"], p["within_task_var"], p["between_task_var"], p["icc"]
    if n == 0:
        return ["No task is in this section: nothing to plan from."]
    if within is None:
        return ["No task of this section is in two runs, so the run-to-run noise cannot be measured: run the suite "
                "at least twice to see how many runs per side a comparison needs."]
    if icc is not None:
        split = (f"Of the variance of a task's value in one run, {fmt_pct(icc)} is the tasks' own (they differ beyond "
                 f"run-to-run noise) and {fmt_pct(1 - icc)} is run-to-run noise (between-task variance "
                 f"{_var(between)}, within-task variance {_var(within)}, over {plural(n, 'task')}).")
        if icc >= 0.75:
            split += " Tasks mostly pass or fail consistently: more runs buy little, more tasks buy more."
        elif icc <= 0.25:
            split += " Most of what one run shows is noise: more runs per side help."
    elif between is None:
        split = (f"With one task the spread between tasks cannot be measured; its run-to-run noise can (within-task "
                 f"variance {_var(within)}).")
    else:
        split = "No task's value varies, neither from run to run nor between tasks: there is no spread to split."
    by_runs = {e["runs_per_side"]: e["mde80"] for e in p["mde80_by_runs"]}
    if within == 0:
        detect = ("No task's value changed between runs: the run-to-run noise measured is 0, so on paper one run per "
                  "side detects any change that is the same on every task (a few runs can show no noise by chance; "
                  "more runs would tell).")
    else:
        shown = [r for r in SHOWN_RUNS if by_runs.get(r) is not None]
        verb = [" this system's comparisons detect"] + [""] * len(shown)
        said = [f"{plural(r, 'run')} per side{verb[i]} {pp(by_runs[r])}" for i, r in enumerate(shown)]
        detect = ("With " + ", with ".join(said)
                  + " (the smallest change detected with 80% power; `mde80_by_runs` in repeats.json).")
    runs = ("Runs per side needed to detect " + "; ".join(
        f"{target_text(e['change'])}: {count_text(e['runs_per_side'])}" for e in p["runs_needed"]) + ".")
    return [split, detect, runs]


def repeats_planning(doc: Mapping[str, Any]) -> dict[str, Any] | None:
    """repeats.md's planning part: per gate section its lines, ``run_twice`` when the noise
    cannot be measured anywhere (fewer than two runs of every task), and what the figures
    assume; None for a document without ``planning``."""
    planning = doc.get("planning")
    if not isinstance(planning, Mapping):
        return None
    sections = [{"label": TITLES[name], "lines": _split_lines(planning[name])}
                for name in PLANNED_SECTIONS if isinstance(planning.get(name), Mapping)]
    planned = [planning[name] for name in PLANNED_SECTIONS if isinstance(planning.get(name), Mapping)]
    run_twice = all(p["within_task_var"] is None for p in planned) and any(p["n"] > 0 for p in planned)
    return {"sections": sections, "run_twice": run_twice, "assumption": SAME_CHANGE}


# --- the suite page ------------------------------------------------------------------------------

def runs_per_side_for(doc: Mapping[str, Any], change: float = 0.05, section: str = "first_attempt") -> int | None:
    """The runs per side repeats.json's planning gives for ``change`` in ``section`` (None when
    it has none: no planning, a change not planned for, or noise that cannot be measured)."""
    plan = (doc.get("planning") or {}).get(section) or {}
    return next((e["runs_per_side"] for e in plan.get("runs_needed") or [] if e["change"] == change), None)


def suite_plan(doc: Mapping[str, Any], label: str = "") -> dict[str, Any]:
    """A suite page's planning cell for a system: ``lines`` (``5 pp: 131`` per target of
    first attempt), the chart of mde80 against runs per side, and ``note`` when there is
    nothing to show."""
    p = (doc.get("planning") or {}).get("first_attempt")
    if not isinstance(p, Mapping):
        return {"lines": [], "chart": None, "note": NA}
    if p["within_task_var"] is None:
        return {"lines": [], "chart": None,
                "note": "n/a: no task" if p["n"] == 0 else "n/a: fewer than two runs of any task"}
    lines = [f"{target_text(e['change'])}: {count_text(e['runs_per_side'])}" for e in p["runs_needed"]]
    return {"lines": lines, "note": None,
            "chart": svg_mde_by_runs(p["mde80_by_runs"], [e["change"] for e in p["runs_needed"]], label=label)}
