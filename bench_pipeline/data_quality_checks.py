"""The per-run data-quality checks (the asset checks of the stages) and the findings they
report, read from metrics.json's ``data_quality`` section and the run's rows.

"Data quality" is the run's input (bad or duplicate rows, missing attempts, unsafe or
invalid artifacts), not ``quality_score``, the judge's score of an attempt.

Pure functions; the Dagster wiring (``assets/checks.py``) turns their outcomes into asset
check results of the stage assets.
"""

from __future__ import annotations

from dataclasses import dataclass

from .attempt_metrics import recorded_number
from .run_reader import RawRun
from .vocabulary import HISTORY_FIELDS


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


@dataclass(frozen=True)
class CheckSpec:
    """One data-quality check of a run: its name, the stage asset it checks, what it looks for."""

    name: str
    asset: str
    description: str


@dataclass(frozen=True)
class CheckOutcome:
    """A check's result for one run. ``severity`` is ERROR when the run's numbers cannot be
    trusted as they are, WARN when the run stays measurable but deserves a look."""

    name: str
    passed: bool
    severity: str  # "ERROR" | "WARN"
    description: str
    count: int
    examples: list


#: Every per-run check, in the order the UI lists them.
CHECKS = (
    CheckSpec("no_bad_rows", "raw_results", "Lines of the results file (results.jsonl, or its re-judged copy) that are not usable rows (R27)."),
    CheckSpec("no_duplicate_rows", "raw_results", "Task/attempt pairs recorded on more than one line (R29, R33)."),
    CheckSpec("no_missing_attempts", "raw_results", "Attempts planned in the manifest but absent from the results file (R32)."),
    CheckSpec("no_unsafe_artifact_dirs", "attempt_metrics",
              "artifact_dir values refused as absolute or leaving the run folder (R5)."),
    CheckSpec("no_invalid_artifacts", "attempt_metrics", "history/episode/trace files that exist but cannot be used (R3)."),
    CheckSpec("no_invalid_values", "attempt_metrics",
              "Recorded values of another type than run-directory.md gives, read as unavailable (R3, R7, R42)."),
    CheckSpec("no_invalid_artifact_values", "attempt_metrics",
              "Values of history.json and episode.json that a formula reads, of the wrong type, read as absent (R36, R39, R42)."),
    CheckSpec("recorded_matches_derived", "attempt_metrics",
              "Recorded history-derived numbers that differ from the values derived from history.json."),
)

#: How many located findings a check result lists (the count is always complete).
EXAMPLES = 20


def _outcome(name: str, findings: list, severity: str, what: str, count: int | None = None) -> CheckOutcome:
    count = len(findings) if count is None else count
    return CheckOutcome(name, not findings, severity, f"{count} {what}" if findings else f"no {what}",
                        count, findings[:EXAMPLES])


def run_checks(raw: RawRun, attempts: list[dict], data_quality: dict) -> list[CheckOutcome]:
    """Every check of ``CHECKS`` for one processed run (``data_quality``: metrics.json's
    data_quality section), in that order.

    ERROR: duplicate task/attempt rows make task grouping depend on line order; an artifact
    folder pointing outside the run folder is a corrupted or hostile input; no usable row at
    all. WARN: bad lines, planned attempts missing, broken artifacts, recorded values of the
    wrong type (in the results file or the artifacts), recorded numbers disagreeing with the derived ones.
    """
    if raw.rows:
        bad_rows = _outcome("no_bad_rows", raw.bad_rows, "WARN", "bad rows")
    else:
        bad_rows = _outcome("no_bad_rows", [{"reason": f"no usable row in {raw.results_file}"}] + raw.bad_rows,
                            "ERROR", "usable rows missing")
    return [
        bad_rows,
        _outcome("no_duplicate_rows", raw.duplicate_rows, "ERROR", "duplicated task/attempt rows"),
        _outcome("no_missing_attempts", raw.missing_attempts or [], "WARN", "planned attempts missing",
                 count=raw.missing_count),
        _outcome("no_unsafe_artifact_dirs", data_quality["unsafe_artifact_dirs"], "ERROR", "unsafe artifact folders"),
        _outcome("no_invalid_artifacts", data_quality["invalid_artifacts"], "WARN", "invalid or unreadable artifacts"),
        _outcome("no_invalid_values", data_quality["invalid_values"], "WARN", "recorded values of the wrong type"),
        _outcome("no_invalid_artifact_values", data_quality["invalid_artifact_values"], "WARN",
                 "artifact values of the wrong type"),
        _outcome("recorded_matches_derived", recorded_vs_derived(raw, attempts), "WARN",
                 "attempts with recorded/derived disagreement"),
    ]
