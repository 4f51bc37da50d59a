"""manifest.json values of the wrong type that change a run's numbers or its place among the
suite's runs: located findings of ``data_quality.run_files``.

What is read stays as the readings prescribe (R26: a ``metrics_k`` that is not a positive
integer counts as absent, ``planned`` entries without a string ``task_id`` and a positive
integer ``attempts`` are not counted; a ``started_at`` that is not a string is unknown, and
an unknown start sorts before every dated run when a baseline is chosen). This module says
where that happened, so that a manifest written wrongly is told from one that recorded
nothing. Both layouts (run-directory.md): the flat ``planned`` and the runner's
``planned_task_attempts``; ``metrics_k`` and ``started_at`` have one name in both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .attempt_metrics.invalid_values import value_text
from .layouts import counts_as_planned_attempt
from .run_reader import counts_as_planned, is_positive_int

#: How many entry positions a finding about a planned list names.
NAMED_ENTRIES = 10


def manifest_findings(manifest: Mapping[str, Any]) -> list[dict]:
    """``run_files`` entries (``{file, status, reason}``) for the manifest's values of the
    wrong type; ``manifest``: the manifest as read, its runner keys kept (layouts.manifest_view
    only adds the flat ones)."""
    reasons = []
    k = manifest.get("metrics_k")
    if k is not None and not is_positive_int(k):
        reasons.append(f"metrics_k is not a positive integer ({value_text(k)}): k is taken from the planned attempts, "
                       "else the observed ones (R26)")
    started = manifest.get("started_at")
    if started is not None and not isinstance(started, str):
        reasons.append(f"started_at is not a string ({value_text(started)}): the run's start is unknown, and a run "
                       "without one comes before every dated run of its suite when a baseline is chosen")
    if "planned_task_attempts" in manifest:  # the runner's list (``planned`` is made from it)
        reasons += _planned(manifest["planned_task_attempts"], "planned_task_attempts", counts_as_planned_attempt,
                            "a string task_id")
    elif "planned" in manifest:
        reasons += _planned(manifest["planned"], "planned", counts_as_planned,
                            "a string task_id and a positive integer attempts")
    return [{"file": "manifest.json", "status": "available", "reason": reason} for reason in reasons]


def _planned(value: Any, key: str, counted: Callable[[object], bool], needs: str) -> list[str]:
    """Why the planned list ``key`` is not counted, or which of its entries are not."""
    if value is None:
        return []
    if not isinstance(value, list):
        return [f"{key} is not a list ({value_text(value)}): the planned attempts, and which of them are missing, "
                "are unknown"]
    bad = [i for i, entry in enumerate(value) if not counted(entry)]
    if not bad:
        return []
    named = ", ".join(str(i) for i in bad[:NAMED_ENTRIES]) + (f" and {len(bad) - NAMED_ENTRIES} more"
                                                               if len(bad) > NAMED_ENTRIES else "")
    return [f"{len(bad)} of the {len(value)} {key} entries are not objects with {needs}, and are not counted as "
            f"planned (R26): entries {named} (from 0)"]
