"""An attempt's outcome: status, success and eligibility after the legacy rules (reference 2,
run-directory.md), and the failure stage and event reference (3.1 step 4, 3.5, R3, R17)."""

from __future__ import annotations

from ..vocabulary import FAILED_STATUSES, INELIGIBLE_CLASSES, INFERRED_ELIGIBLE_STATUSES


def outcome(row: dict) -> dict:
    """status, raw and effective success/eligibility, class (reference 2, R28).

    A non-Boolean success is derived from status (passed -> true, failed/timeout -> false,
    else unknown). A non-Boolean eligibility is inferred: eligible exactly when status is
    passed, failed or timeout and the class is not environment, evaluation or skipped.
    """
    status = row.get("status") if isinstance(row.get("status"), str) else None
    failure_class = row.get("failure_class") if isinstance(row.get("failure_class"), str) else None
    success_raw = row.get("success") if isinstance(row.get("success"), bool) else None
    eligible_raw = row.get("agent_eligible") if isinstance(row.get("agent_eligible"), bool) else None
    if success_raw is not None:
        success = success_raw
    elif status == "passed":
        success = True
    elif status in FAILED_STATUSES:
        success = False
    else:
        success = None
    if eligible_raw is not None:
        eligible = eligible_raw
    else:
        eligible = status in INFERRED_ELIGIBLE_STATUSES and failure_class not in INELIGIBLE_CLASSES
    return {
        "status": status,
        "success_raw": success_raw,
        "success": success,
        "agent_eligible_raw": eligible_raw,
        "agent_eligible": eligible,
        "failure_class": failure_class,
    }


def failure_evidence(
    recorded_stage: str | None,
    recorded_ref: str | None,
    history_error: tuple[str | None, str | None] | None,
    episode_error: tuple[str | None, str | None] | None,
) -> tuple[str | None, str | None, str]:
    """(first_failure_stage, failure_event_ref, provenance) before success clearing (3.5, R3, R17).

    ``history_error`` / ``episode_error`` are the (reference, stage) of the file's first
    error, ``(None, None)`` when the file is available without one, and None when the file
    is unavailable. The sources are taken one by one, as R3 takes them: an episode error
    supplies the reference; else an available history.json supplies its own (its first
    error, or null); else (history.json unavailable and no episode error, even when
    episode.json is available) the recorded stage and reference stand, with provenance
    ``recorded``. An episode without error events says nothing about history's errors, so
    it never clears a recorded reference. With a derived reference the stage is the
    recorded label when it is setup or evaluation (outcome handling), else the evidence's
    stage, else the recorded label.
    """
    if episode_error is not None and episode_error[0] is not None:
        ref, evidence_stage = episode_error
    elif history_error is not None:
        ref, evidence_stage = history_error
    else:
        return recorded_stage, recorded_ref, "recorded"
    if recorded_stage in ("setup", "evaluation"):
        return recorded_stage, ref, "derived"
    return (evidence_stage if evidence_stage is not None else recorded_stage), ref, "derived"
