"""The report's "Within-run stability": repeated-runs.md "stability" over this run's
attempts alone, with the flaky tasks' attempts linked to their evidence."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...repeats import within_run_stability
from ...task_groups import ByAttempt, eligible_attempts
from ..format import attempt_no, fmt_int, fmt_pct, fmt_text
from .evidence import evidence_dir, evidence_href
from .limits import LIST_CAP

#: Why within-run stability is not run-to-run stability, in one sentence both reports show.
WITHIN_RUN_NOTE = ("These are attempts of one run, not independent runs: they share the run's day, device and "
                   "build, so the flakiness seen here is a lower bound on how much separate runs of this system "
                   "disagree.")


def has_repeats(k: Any) -> bool:
    """metrics_k of at least 2: each task was planned more than one attempt."""
    return isinstance(k, int) and not isinstance(k, bool) and k >= 2


def stability_view(k: Any, tasks: Mapping[str, ByAttempt], unsafe_lines: set[int],
                   evidence_base: str | None) -> dict[str, Any] | None:
    """repeated-runs.md "stability" over this run's attempts alone (``repeats.within_run_stability``),
    formatted, with each listed flaky task's eligible attempts linked to their evidence
    folders as the failed-task table links them; None unless metrics_k >= 2. ``tasks``: the
    run's task groups (task_facts), so the run is read once, whatever the number of rows."""
    if not has_repeats(k):
        return None
    s = within_run_stability(rec for by_attempt in tasks.values() for rec in by_attempt.values())
    flaky_rows = []
    for t in s["flaky_tasks"][:LIST_CAP]:
        by_attempt = tasks.get(t["task_id"], {})
        counted = eligible_attempts(by_attempt)
        links = []
        for rec in counted[:LIST_CAP]:
            folder, folder_text = evidence_dir(rec, unsafe_lines)
            outcome = rec.get("success")
            links.append({"attempt": attempt_no(rec),
                          "outcome": "success" if outcome is True else "failure" if outcome is False else "unknown",
                          "folder": folder, "folder_text": folder_text,
                          "href": evidence_href(evidence_base, folder)})
        flaky_rows.append({"task_id": t["task_id"], "attempts": fmt_int(t["attempts"]),
                           "successes": fmt_int(t["successes"]), "flip": t["flip"], "flip_text": fmt_pct(t["flip"]),
                           "links": links, "links_more": max(0, len(counted) - LIST_CAP)})
    classified = s["tasks_classified"]
    return {
        "k_text": fmt_text(k),
        "observed": fmt_int(len(tasks)),
        "classified": fmt_int(classified),
        "any_classified": classified > 0,
        "unclassified": fmt_int(len(tasks) - classified),
        "stable_pass": fmt_int(s["stable_pass"]),
        "stable_fail": fmt_int(s["stable_fail"]),
        "flaky": fmt_int(s["flaky"]),
        "flip_rate": fmt_pct(s["flip_rate"]),
        "flaky_tasks": flaky_rows,
        "flaky_more": max(0, s["flaky"] - LIST_CAP),
        "note": WITHIN_RUN_NOTE,
    }


