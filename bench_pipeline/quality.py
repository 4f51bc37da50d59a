"""Data-quality findings that need both recorded rows and derived attempts (asset checks).

Pure functions; the Dagster asset checks in ``assets/checks.py`` call them.
"""

from __future__ import annotations

from .attempt_metrics import HISTORY_FIELDS, recorded_number
from .run_reader import RawRun


def recorded_vs_derived(raw: RawRun, attempts: list[dict]) -> list[dict]:
    """Attempts whose recorded history-derived numbers disagree with the derived ones.

    Only fields derived from an available history (provenance ``derived``) and recorded
    as a number are compared; a recorded null is not a disagreement.
    """
    by_line = {r.line: r.data for r in raw.rows}
    found = []
    for a in attempts:
        row = by_line.get(a["line"])
        if row is None:
            continue
        fields = {}
        for f in HISTORY_FIELDS:
            if a["provenance"].get(f) != "derived":
                continue
            recorded = recorded_number(row, f)
            if recorded is not None and recorded != a[f]:
                fields[f] = {"recorded": recorded, "derived": a[f]}
        if fields:
            found.append({"line": a["line"], "task_id": a["task_id"], "attempt": a["attempt"], "fields": fields})
    return found
