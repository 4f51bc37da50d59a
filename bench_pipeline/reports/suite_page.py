"""One self-contained page per suite (``<output root>/_suites/<slug>/index.html``): the runs in
start order, the systems side by side, cost against capability (its chart: cost_chart.py),
and the flaky tasks.

Inputs (what the ``suite_pages`` asset passes):

- ``runs``: one dict per run of the suite, as the run catalog has it (``run_id``, ``model``,
  ``git_sha``, ``started_at``, ``pass_at_1``, ``pass_at_1_lower``, ``pass_at_1_upper``,
  ``attempts``, ...) plus ``gate`` ("pass", "fail", "inconclusive" or None: the run's
  release gate against its baseline), ``gate_reasons`` (its reason codes), ``gate_mde80``
  ({first_attempt, task_success: mde80 or None}), ``baseline`` (its baseline's run id or None) and ``report`` (the absolute
  path of its report.html, or None);
- ``systems``: one ``SystemEntry`` per system of the suite (repeats.json's dict, its runs as
  ``repeats.RepeatRun`` with their run folders for evidence links, and its repeats.md).

Every capability number comes from the catalog rows or repeats.json, formatted as repeats.md
formats it; only the mean cost and tokens per attempt (``mean_per_attempt``) are computed
here. The page has no script and loads nothing: inline CSS and inline SVG, under a
Content-Security-Policy of ``default-src 'none'``. Run strings are escaped by autoescaping.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from markupsafe import Markup

from ..comparison_sides import evidence_dir
from ..jsonio import write_atomic
from ..object_store import location_text
from ..repeats import RepeatRun, task_outcomes
from ..stats import fsum_mean, is_number
from ..system_folders import SUITE_PAGE
from ..task_groups import is_eligible
from .charts import svg_interval_bar
from .cost_chart import pareto_front, svg_cost_capability
from .compared import run_folder_base
from .change_format import NO_VARIATION, fmt_change, fmt_level
from .format import fmt_ci, fmt_int, fmt_pct, fmt_round, fmt_text, fmt_usd
from .planning_text import suite_plan
from .repeated import level_interval, noise_sentence, repeats_view, system_text
from .setup_text import setup_note
from .templates import _asset, _env
from .view.evidence import evidence_href, link_href
from .view.limits import LIST_CAP

CSP = ("default-src 'none'; img-src 'none'; style-src 'unsafe-inline'; script-src 'none'; "
       "base-uri 'none'; form-action 'none'")
#: The command line the page suggests, as the README runs it from the project folder.
COMMAND = ".venv/bin/bench-pipeline"
#: repeats.json's warnings as the systems table labels them (the code stays in the title).
WARNING_LABELS = {"suite_differs": "suites differ", "model_differs": "models differ",
                  "code_differs": "git shas differ", "metrics_k_differs": "metrics_k differs",
                  "suite_version_differs": "suite versions differ", "judge_differs": "judges differ",
                  "platform_differs": "platforms differ", "skills_differs": "skills differ"}
#: The most runs a suite page lists, the latest (``latest_runs``), with the systems they belong
#: to: a page of every run and system of a suite of thousands would be megabytes, made again
#: whole at each new run. Every run keeps its report.html and every system its repeats.md.
RUNS_SHOWN = 100
MEAN_NOTE = ("Mean cost and mean tokens per attempt: the mean over every eligible attempt of the system's runs "
             "(each run after its de-duplication) that recorded a number; attempts without one are left out, "
             "not counted as 0. It weighs every attempt alike, unlike repeats.json's pooled resources, which "
             "average per-task means.")


@dataclass(frozen=True)
class SystemEntry:
    """A system of the suite: its folder name, repeats.json, its runs (those pooled) and its
    repeats.md; ``setup``: its setup key in words (repeats.System.setup_text); ``left_out``:
    {run id: why it is not pooled} (system_members.Members.left_out). ``summary``: what the
    page shows of the runs (``page_summary``), when it was made before; else it is made from
    ``runs``."""

    slug: str
    doc: dict
    runs: list[RepeatRun]
    repeats_md: Path | None = None
    setup: str | None = None
    left_out: Mapping[str, str] = field(default_factory=dict)
    summary: Mapping[str, Any] | None = None

    def page(self) -> Mapping[str, Any]:
        return self.summary if self.summary is not None else page_summary(self.runs)


def page_summary(runs: Sequence[RepeatRun]) -> dict[str, Any]:
    """What a suite page shows of a system's runs, in plain JSON values, so that the catalog
    refresh keeps it with the system and makes a page again without reading the runs: each
    run's id and folder, the mean cost and tokens per attempt with their counts
    (``mean_per_attempt``), each task's eligible attempts and successes over the runs
    (``task_outcomes``), and per task attempt 1's evidence folder in each run that has the task
    (``[run index, folder or None]``, in run order)."""
    cost, cost_n = mean_per_attempt(runs, "cost_usd")
    tokens, tokens_n = mean_per_attempt(runs, "total_tokens")
    tasks = sorted({task_id for run in runs for task_id in run.side.tasks})
    return {
        "runs": [{"run_id": str(run.run_id), "run_dir": str(run.side.run_dir) if run.side.run_dir is not None else None}
                 for run in runs],
        "cost": [cost, cost_n], "tokens": [tokens, tokens_n],
        "outcomes": {task_id: list(counts) for task_id, counts in task_outcomes(runs).items()},
        "evidence": {task_id: [[i, evidence_dir(run.side, task_id, 1)] for i, run in enumerate(runs)
                               if task_id in run.side.tasks] for task_id in tasks},
    }


# --- pure functions --------------------------------------------------------------------------

def mean_per_attempt(runs: Sequence[RepeatRun], field: str) -> tuple[float | None, int]:
    """(mean, count) of ``field`` (``cost_usd``, ``total_tokens``) over every eligible attempt
    of the runs, each run's attempts after its de-duplication, that has a number for it;
    (None, 0) when none has one: unknown values are left out, never counted as 0."""
    values = [float(row[field]) for run in runs for by_attempt in run.side.tasks.values()
              for row in by_attempt.values() if is_eligible(row) and is_number(row.get(field))]
    return fsum_mean(values), len(values)


def entry_runs(entry: SystemEntry) -> list[str]:
    """The runs of a system: those it pools, then those it leaves out."""
    return [r["run_id"] for r in entry.page()["runs"]] + list(entry.left_out)


#: A system as ``latest_runs`` takes it: a SystemEntry, or whatever ``members`` reads.
AnySystem = TypeVar("AnySystem")


def latest_runs(runs: Sequence[Mapping[str, Any]], systems: Sequence[AnySystem], limit: int,
                members: Callable[[AnySystem], Iterable[str]] = entry_runs,
                ) -> tuple[list[Mapping[str, Any]], list[AnySystem]]:
    """The runs a suite page lists, the latest ``limit`` in start order (``run_start_order``:
    a run without a start is last), and the systems it shows: when runs are cut, those the
    listed runs belong to (``members``: pooled in them or left out of them), in their order;
    else all."""
    ordered = run_start_order(runs)
    if len(ordered) <= limit:  # nothing cut: every system, whichever runs it has
        return ordered, list(systems)
    shown = ordered[-limit:]
    ids = {r.get("run_id") for r in shown}
    return shown, [e for e in systems if any(run_id in ids for run_id in members(e))]


def run_start_order(runs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Catalog rows by started_at ascending (unknown last), then run id."""
    return sorted(runs, key=lambda r: (not isinstance(r.get("started_at"), str), _str(r.get("started_at")) or "",
                                       str(r.get("run_id"))))


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _num(value: Any) -> float | None:
    return float(value) if is_number(value) else None


def _href(out_dir: Path, path: Path | None) -> str | None:
    """A file's link relative to ``out_dir``, percent-encoded; None without a file."""
    if path is None:
        return None
    return link_href(run_folder_base(Path(path), out_dir) or ".")


# --- the view --------------------------------------------------------------------------------

def _system_row(i: int, entry: SystemEntry, out_dir: Path) -> dict[str, Any]:
    doc, page = entry.doc, entry.page()
    shown = repeats_view(doc, [], out_dir)  # the document's part: flip rate and warnings
    fa, ts = doc["pooled"]["first_attempt"], doc["pooled"]["task_success"]
    between = doc["between_runs"]
    (cost, cost_n), (tokens, tokens_n) = page["cost"], page["tokens"]

    def interval(s: Mapping[str, Any]) -> str:
        return NO_VARIATION if s["n"] >= 2 and s["se"] == 0 else level_interval("rate", s["ci95"]["lower"], s["ci95"]["upper"])

    return {
        "label": f"S{i}", "system": system_text(doc["system"]), "slug": entry.slug,
        "setup": entry.setup,
        "left_out": [f"{run_id}: {why}" for run_id, why in entry.left_out.items()],
        "runs": fmt_int(len(doc["runs"])), "run_ids": [r["run_id"] for r in doc["runs"]],
        "run_dirs": [location_text(Path(r["run_dir"])) if r["run_dir"] is not None else r["run_id"]
                     for r in page["runs"]],
        "fa": fmt_level("rate", fa["mean"]), "fa_interval": interval(fa), "fa_n": fmt_int(fa["n"]),
        "ts": fmt_level("rate", ts["mean"]), "ts_interval": interval(ts), "ts_n": fmt_int(ts["n"]),
        "noise": fmt_change("rate", between["noise_floor95"], signed=False) if between["noise_floor95"] is not None
        else "n/a",
        "noise_runs": noise_runs(between["runs"]),
        "noise_sentence": noise_sentence(between),
        "plan": suite_plan(doc, f"S{i}"),
        "flip_rate": shown["stability"]["flip_rate"],
        "cost": fmt_usd(cost), "cost_n": fmt_int(cost_n), "tokens": fmt_round(tokens), "tokens_n": fmt_int(tokens_n),
        "repeats_md": _href(out_dir, entry.repeats_md),
        "pareto": "n/a",
        "warnings": [{"code": w["code"], "label": WARNING_LABELS.get(w["code"], w["code"]), "text": w["text"]}
                     for w in shown["warnings"]],
        # raw values for the chart and the sentence
        "_fa": _num(fa["mean"]), "_lower": _num(fa["ci95"]["lower"]), "_upper": _num(fa["ci95"]["upper"]),
        "_noise": _num(between["noise_floor95"]), "_cost": cost, "_tokens": tokens,
    }


def noise_runs(runs: int) -> str:
    """What a noise floor comes from: its runs, and how rough a floor of two or three is."""
    if runs < 2:
        return ""
    return f"from {runs} runs" + (" (rough: more runs make it firmer)" if runs <= 3 else "")


def _chart(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The chart's axis (cost, else tokens when no system has a cost), its points with the
    Pareto marks (set on the rows too) and the systems it cannot place."""
    field = "cost_usd" if any(r["_cost"] is not None for r in rows) else "total_tokens"
    key = "_cost" if field == "cost_usd" else "_tokens"
    drawn = [r for r in rows if r[key] is not None and r["_fa"] is not None]
    placed = {r["label"] for r in drawn}
    marks = pareto_front([(r[key], r["_fa"]) for r in drawn])
    points = []
    for r, front in zip(drawn, marks):
        r["pareto"] = "yes" if front else "no"
        x_text = r["cost"] if field == "cost_usd" else r["tokens"]
        points.append({"label": r["label"], "x": r[key], "y": r["_fa"], "lower": r["_lower"], "upper": r["_upper"],
                       "front": front, "title": f"{r['label']} {r['system']}: {r['fa']} {r['fa_interval']}, {x_text}"
                                                f"{' (Pareto)' if front else ''}"})
    missing = [{"label": r["label"], "system": r["system"],
                "why": "no pooled first attempt" if r["_fa"] is None
                else ("no cost recorded" if field == "cost_usd" else "no token count recorded")}
               for r in rows if r["label"] not in placed]
    return {"field": field, "what": "mean cost per attempt" if field == "cost_usd" else "mean tokens per attempt",
            "svg": svg_cost_capability(points, field) if points else None, "missing": missing,
            "front": [p["label"] for p in points if p["front"]]}


def best_system(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Which system is best on the suite's pooled first attempt, by how much over the next,
    whether their clustered intervals overlap (not a test), how the gap compares with the
    larger noise floor, and the paired comparison that tests it."""
    ranked = sorted((r for r in rows if r["_fa"] is not None), key=lambda r: -r["_fa"])
    if not ranked:
        return {"text": "No system has a pooled first attempt: there is nothing to rank.", "command": None}
    best = ranked[0]
    name = f"{best['label']} ({best['system']})"
    if len(ranked) == 1:
        return {"text": f"Only {name} has a pooled first attempt ({best['fa']}): there is no other system on this "
                        "suite to compare it with.", "command": None}
    nxt = ranked[1]
    gap = best["_fa"] - nxt["_fa"]
    gap_text = fmt_change("rate", gap, signed=False)
    other = f"{nxt['label']} ({nxt['system']})"
    if gap == 0:
        text = f"{name} and {other} tie for the highest pooled first attempt, {best['fa']}."
    else:
        text = (f"{name} has the highest pooled first attempt, {best['fa']} {best['fa_interval']}, "
                f"{gap_text} (percentage points) above the next, {other}, at {nxt['fa']} {nxt['fa_interval']}.")
    if None in (best["_lower"], best["_upper"], nxt["_lower"], nxt["_upper"]):
        text += " At least one of them has no interval (fewer than two tasks), so even their spread is unknown."
    else:
        overlap = best["_lower"] <= nxt["_upper"] and nxt["_lower"] <= best["_upper"]
        text += (f" Their 95% intervals (clustered by task) {'overlap' if overlap else 'do not overlap'}; but whether "
                 "two separate intervals overlap is not a test of the difference: both systems ran the same tasks, and "
                 "only the comparison paired by task tests it.")
    noises = [r["_noise"] for r in (best, nxt) if r["_noise"] is not None]
    if not noises:
        text += (" Neither system has two runs with a known pass@1, so their run-to-run noise is unknown: more runs "
                 "of each would tell how far apart single runs land by chance.")
    else:
        larger = fmt_change("rate", max(noises), signed=False)
        unknown = [r["label"] for r in (best, nxt) if r["_noise"] is None]
        text += (f" The gap is within run-to-run noise: below the larger noise floor of the two, {larger}."
                 if gap < max(noises) else
                 f" The gap exceeds the larger noise floor of the two, {larger} (how far apart two single runs of one "
                 "system land by chance).")
        if unknown:
            text += f" ({unknown[0]}'s noise floor is unknown: fewer than two runs with a pass@1.)"
    command = (f"{COMMAND} compare " + " ".join(f"--baseline {shlex.quote(d)}" for d in nxt["run_dirs"]) + " "
               + " ".join(f"--candidate {shlex.quote(d)}" for d in best["run_dirs"]) + " --output-dir OUT")
    return {"text": text, "command": command}


def _flaky(systems: Sequence[SystemEntry], rows: Sequence[Mapping[str, Any]], out_dir: Path) -> dict[str, Any]:
    """The tasks flaky in any system: per system its flip (``stable`` when classified and not
    flaky, n/a when not classified), and attempt 1's evidence folder in each run."""
    flips: dict[str, dict[str, float]] = {}
    for entry, row in zip(systems, rows):
        for t in entry.doc["stability"]["flaky_tasks"]:
            flips.setdefault(t["task_id"], {})[row["label"]] = t["flip"]
    order = sorted(flips, key=lambda t: (-max(flips[t].values()), t))
    pages = [entry.page() for entry in systems]
    tasks = []
    for task_id in order[:LIST_CAP]:
        cells = []
        for row, page in zip(rows, pages):
            f = flips[task_id].get(row["label"])
            seen = page["outcomes"].get(task_id, (0, 0))[0]
            cells.append(fmt_pct(f) if f is not None else "stable" if seen >= 2 else "n/a")
        links, found = [], 0  # the first LIST_CAP links are made, the rest only counted
        for page, row in zip(pages, rows):
            for i, folder in page["evidence"].get(task_id, []):
                found += 1
                if found > LIST_CAP:
                    continue
                run = page["runs"][i]
                base = run_folder_base(Path(run["run_dir"]), out_dir) if run["run_dir"] is not None else None
                links.append({"run_id": fmt_text(run["run_id"]), "label": row["label"], "folder": folder or "n/a",
                              "href": evidence_href(base, folder)})
        tasks.append({"task_id": task_id, "cells": cells, "links": links, "links_more": max(0, found - LIST_CAP)})
    return {"tasks": tasks, "more": max(0, len(order) - LIST_CAP)}


#: A gate reason's section and what it says, short, for the runs table (comparison.md's codes).
_GATE_SECTION_WORDS = {"first_attempt": "first attempt", "task_success": "task success"}
_GATE_REASON_WORDS = {
    "no_evidence": "no paired task, so nothing was measured",
    "regression": "a significant regression",
    "no_interval": "no 95% interval (fewer than two paired tasks), so the margin cannot be shown",
    "below_margin": "its 95% interval reaches below the allowed drop",
}


def gate_reasons_text(reasons: Sequence[str], mde80: Mapping[str, Any]) -> str:
    """A gate's reasons in words for the runs table, each with how large a drop could have
    gone unseen where the comparison could estimate it (its mde80): ``first attempt: no
    paired task, ...; task success: ...``; '' without reasons."""
    parts = []
    for reason in reasons:
        name = next((n for n in _GATE_SECTION_WORDS if reason.startswith(n + "_")), None)
        code = reason[len(name) + 1:] if name is not None else None
        if name is None or code not in _GATE_REASON_WORDS:
            parts.append(str(reason))
            continue
        text = f"{_GATE_SECTION_WORDS[name]}: {_GATE_REASON_WORDS[code]}"
        mde = _num(mde80.get(name))
        if code in ("no_evidence", "no_interval"):
            text += "; a drop of any size could have gone unseen"
        elif code == "below_margin" and mde is not None and mde > 0:
            text += f"; a drop smaller than {mde * 100:.1f} pp could have gone unseen"
        parts.append(text)
    return "; ".join(parts)


def _run_rows(out_dir: Path, runs: Sequence[Mapping[str, Any]], labels: Mapping[str, str]) -> list[dict[str, Any]]:
    rows = []
    for r in run_start_order(runs):
        run_id = fmt_text(r.get("run_id"))
        lower, upper = _num(r.get("pass_at_1_lower")), _num(r.get("pass_at_1_upper"))
        gate, baseline = _str(r.get("gate")), _str(r.get("baseline"))
        report = r.get("report")
        rows.append({
            "run_id": run_id, "system": labels.get(r.get("run_id"), "n/a"),
            "started_at": fmt_text(_str(r.get("started_at"))),
            "model": _str(r.get("model")) or "unknown", "git_sha": _str(r.get("git_sha")) or "unknown",
            "pass_at_1": fmt_pct(_num(r.get("pass_at_1"))), "interval": fmt_ci(lower, upper),
            "attempts": fmt_int(r.get("attempts")),
            "href": _href(out_dir, Path(report)) if report is not None else None,
            "gate": "no baseline" if baseline is None else f"{gate or 'n/a'} vs {baseline}",
            "gate_css": gate if gate in ("pass", "fail", "inconclusive") else "na",
            "gate_why": gate_reasons_text(r.get("gate_reasons") or [], r.get("gate_mde80") or {})
            if baseline is not None else _str(r.get("not_compared")) or "",
            # a pinned baseline measured another way: said next to the gate, never silently
            "setup_note": setup_note(r.get("warnings") or []) if baseline is not None else "",
            "bar": svg_interval_bar(_num(r.get("pass_at_1")), lower, upper, label=run_id, width=360),
        })
    return rows


def suite_view(out_dir: Path, suite: str | None, runs: Sequence[Mapping[str, Any]],
               systems: Sequence[SystemEntry], systems_total: int | None = None,
               runs_total: int | None = None) -> dict[str, Any]:
    """What the suite page shows (strings raw, numbers formatted; escaped where rendered): the
    latest RUNS_SHOWN runs and their systems (``latest_runs``; ``every``: how many the suite
    has, when the page shows fewer). ``systems_total``: how many systems the suite has, when
    ``systems`` are already only those of its latest runs (the catalog refresh reads no more);
    ``runs_total`` likewise, when ``runs`` are already only its latest."""
    out_dir = Path(out_dir)
    systems = [replace(entry, summary=entry.page()) for entry in systems]  # each made once
    every = {"runs": runs_total if runs_total is not None else len(runs),
             "systems": systems_total if systems_total is not None else len(systems)}
    runs, systems = latest_runs(runs, systems, RUNS_SHOWN)
    rows = [_system_row(i, entry, out_dir) for i, entry in enumerate(systems, start=1)]
    labels = {run["run_id"]: row["label"] for entry, row in zip(systems, rows) for run in entry.page()["runs"]}
    labels.update({run_id: f"{row['label']} (not pooled: {why})" for entry, row in zip(systems, rows)
                   for run_id, why in entry.left_out.items()})
    chart = _chart(rows)
    return {"suite": suite if suite is not None else "unknown", "runs": _run_rows(out_dir, runs, labels),
            "systems": rows, "chart": chart, "best": best_system(rows), "flaky": _flaky(systems, rows, out_dir),
            "mean_note": MEAN_NOTE, "list_cap": LIST_CAP,
            "every": every if (every["runs"], every["systems"]) != (len(runs), len(systems)) else None}


def render_suite_page(out_dir: Path, suite: str | None, runs: Sequence[Mapping[str, Any]],
                      systems: Sequence[SystemEntry], systems_total: int | None = None,
                      runs_total: int | None = None) -> str:
    """The suite page's HTML (links relative to ``out_dir``, where it goes; ``systems_total``
    and ``runs_total``: ``suite_view``)."""
    return _env(True).get_template("suite_page.html.j2").render(
        v=suite_view(out_dir, suite, runs, systems, systems_total, runs_total), csp=CSP,
        style=Markup(_asset("report.css") + "\n" + _asset("suite_page.css")))


def write_suite_page(out_dir: Path, suite: str | None, runs: list[dict], systems: list[SystemEntry],
                     systems_total: int | None = None, runs_total: int | None = None) -> Path:
    """``out_dir/index.html`` (written atomically); returns its path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / SUITE_PAGE
    write_atomic(path, render_suite_page(out_dir, suite, runs, systems, systems_total, runs_total).encode())
    return path
