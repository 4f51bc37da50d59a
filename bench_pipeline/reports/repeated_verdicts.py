"""The parts of the repeated comparison.md that make it read like the single form's
(comparison.md "Verdicts and the release gate"; repeated-runs.md "Comparing two sets of
runs"): the regressed and improved tasks with their evidence in every run that decided them,
what differs between the sides besides the measurement setup (which setup_text names), and
what a single pair of runs would have given, stated only where that pair had an interval.

Every number comes from the documents; the runs only give the evidence folders and the
models and code versions. Strings from the runs stay raw, to be escaped where they are rendered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..comparison import SECTION_VALUES
from ..comparison_sides import evidence_dir
from ..identity import differences
from ..repeats import RepeatRun
from ..setup import differs_among
from .compared import run_folder_base
from .change_format import fmt_change, fmt_interval, no_variation
from .view.evidence import evidence_href


def _decided_in(run: RepeatRun, task_id: str, k: Any) -> bool:
    """Whether the task's attempt 1 entered the run's first-attempt value (present and
    eligible in that run: comparison.md's population read for one run)."""
    by_attempt = run.side.tasks.get(task_id)
    return by_attempt is not None and SECTION_VALUES["first_attempt"](by_attempt, k) is not None


def task_evidence(task_ids: Sequence[str], baseline: Sequence[RepeatRun], candidate: Sequence[RepeatRun],
                  k: Any, out_dir: Path | None) -> list[dict[str, Any]]:
    """Per regressed or improved task, attempt 1's evidence folder in each run of each side
    whose first attempt of the task counts in the pooled value, with its link from
    ``out_dir`` (where comparison.md goes).

    Those runs are the ones that make the task regressed or improved: its first attempt
    succeeded in every one of them on one side and failed in every one on the other, so a
    reviewer can open each failure (is it the same failure every time?) and each success to
    set against it. A run where the task is absent, or its attempt 1 is missing or not
    eligible, decided nothing and is not linked. Each link is
    ``{"run_id", "text", "folder", "href"}``, as the single form's evidence cells are (``href``
    None when the run folder is unknown, ``folder`` None when the row's folder is unavailable).
    """
    rows = []
    for task_id in task_ids:
        row: dict[str, Any] = {"task_id": task_id}
        for which, runs in (("baseline", baseline), ("candidate", candidate)):
            links = []
            for run in runs:
                if not _decided_in(run, task_id, k):
                    continue
                folder = evidence_dir(run.side, task_id, 1)
                links.append({"run_id": run.run_id,
                              "text": (folder or ".") if folder is not None else "n/a (unavailable)",
                              "folder": folder,
                              "href": evidence_href(run_folder_base(run.side.run_dir, out_dir), folder)})
            row[which] = links
        rows.append(row)
    return rows


def _one(runs: Sequence[RepeatRun]) -> Any:
    """The side's identity when all its runs record one known model name and one known git
    sha (else None: the ``<side>_systems_differ`` warning, or the systems named unknown, say
    the rest)."""
    names = {r.side.identity.model_name for r in runs}
    shas = {r.side.identity.git_sha for r in runs}
    if len(names) != 1 or len(shas) != 1 or None in names or None in shas:
        return None
    return runs[0].side.identity


def side_notes(baseline: Sequence[RepeatRun], candidate: Sequence[RepeatRun]) -> list[str]:
    """What else differs between the sides, in words: the model and the code version (the
    single form's aspects, identity.differences), when each side's runs share them; or, when
    nothing differs in them nor in the measurement setup, that both sides are one system."""
    b, c = _one(baseline), _one(candidate)
    if b is None or c is None:
        return []
    differ = [a for a in differences(b, c) if a in ("model", "code")]
    notes = []
    if "model" in differ:
        notes.append(f"The sides use different models ({b.model_text} for the baseline, {c.model_text} for the "
                     "candidate): this compares two models, not two builds of one agent.")
    if "code" in differ:
        notes.append(f"The code versions differ ({b.git_sha} for the baseline, {c.git_sha} for the candidate)"
                     + (": this compares two builds of the agent on one model." if "model" not in differ else "."))
    if not differ and not differs_among(r.side.identity.setup for r in (*baseline, *candidate)):
        notes.append("Same model and code version on both sides, measured the same way: both sides are runs of one "
                     "system, so the differences below are run-to-run variation plus whatever the manifests do not "
                     "record.")
    return notes


def single_pair_text(kind: str, pooled: Mapping[str, Any], single: Mapping[str, Any] | None) -> str:
    """`` One run per side ... would have given [..], x wide against y pooled.``, or '' where
    either interval is missing or comes from no variation (a zero-width interval there is
    the want of any spread to estimate from, not precision, and the table says so)."""
    if single is None or any(s["ci95"]["lower"] is None or no_variation(s) for s in (pooled, single)):
        return ""
    width = pooled["ci95"]["upper"] - pooled["ci95"]["lower"]
    single_width = single["ci95"]["upper"] - single["ci95"]["lower"]
    return (f" One run per side (the first of each) would have given "
            f"{fmt_interval(kind, single['ci95']['lower'], single['ci95']['upper'])}, "
            f"{fmt_change(kind, single_width, signed=False)} wide against {fmt_change(kind, width, signed=False)} "
            "pooled.")
