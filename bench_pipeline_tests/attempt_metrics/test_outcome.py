"""Outcome and eligibility of one results row (reference 2 and its legacy rules, R28) and the
failure-evidence rule (3.5, R3, R17): ``outcome`` on row objects and ``failure_evidence`` on
each source's first error, in memory."""

from __future__ import annotations

import pytest

from bench_pipeline.attempt_metrics import failure_evidence, outcome

from ..run_builder import row


# --- outcome and eligibility (reference 2, R28) ---------------------------------------------

RAW_NON_BOOLEAN = ["absent", None, "true", 1, 0, "passed"]


@pytest.mark.parametrize("raw_success", RAW_NON_BOOLEAN)
@pytest.mark.parametrize(("status", "derived"), [
    ("passed", True), ("failed", False), ("timeout", False), ("judge_error", None), ("skipped", None),
])
def test_non_boolean_success_is_derived_from_status(status, derived, raw_success):
    r = {"task_id": "t", "attempt": 1, "status": status, "agent_eligible": False}
    if raw_success != "absent":
        r["success"] = raw_success
    out = outcome(r)
    assert out["success"] is derived
    assert out["success_raw"] is None


@pytest.mark.parametrize("status", ["passed", "failed", "timeout", "judge_error", "skipped"])
@pytest.mark.parametrize("value", [True, False])
def test_boolean_success_is_kept(status, value):
    out = outcome(row("t", status=status, success=value, agent_eligible=True))
    assert out["success"] is value
    assert out["success_raw"] is value


@pytest.mark.parametrize("raw_eligible", ["absent", None, "true", 1])
@pytest.mark.parametrize(("status", "failure_class", "eligible"), [
    ("passed", None, True),
    ("failed", "agent", True),
    ("timeout", "agent", True),
    ("failed", "unknown", True),
    ("timeout", None, True),
    ("failed", "environment", False),
    ("failed", "evaluation", False),
    ("failed", "skipped", False),
    ("timeout", "environment", False),
    ("passed", "evaluation", False),
    ("judge_error", "evaluation", False),
    ("judge_error", None, False),
    ("skipped", "skipped", False),
    ("skipped", None, False),
    ("weird", None, False),
    (None, None, False),
])
def test_missing_eligibility_is_inferred(status, failure_class, eligible, raw_eligible):
    r = {"task_id": "t", "attempt": 1, "failure_class": failure_class}
    if status is not None:
        r["status"] = status
    if raw_eligible != "absent":
        r["agent_eligible"] = raw_eligible
    out = outcome(r)
    assert out["agent_eligible"] is eligible
    assert out["agent_eligible_raw"] is None


@pytest.mark.parametrize("status", ["passed", "failed", "timeout"])
def test_explicit_false_eligibility_always_excludes(status):
    out = outcome(row("t", status=status, agent_eligible=False, failure_class=None))
    assert out["agent_eligible"] is False
    assert out["agent_eligible_raw"] is False


def test_explicit_true_eligibility_is_authoritative():
    """The runner sets eligibility explicitly: do not rebuild it from status (reference 2)."""
    out = outcome(row("t", status="skipped", agent_eligible=True, failure_class="skipped"))
    assert out["agent_eligible"] is True
    assert out["agent_eligible_raw"] is True


def test_unlisted_failure_class_does_not_exclude_inferred_eligibility():
    assert outcome({"task_id": "t", "status": "failed", "failure_class": "network"})["agent_eligible"] is True


# --- failure evidence before success clearing (3.5, R3, R17) -------------------------------

@pytest.mark.parametrize(("history", "episode", "expected"), [
    # (reference, stage) of each file's first error; (None, None) = available without one;
    # None = unavailable
    (("history:1", "unknown"), ("episode:4", "device_execution"), ("device_execution", "episode:4", "derived")),
    (None, ("episode:4", "unknown"), ("unknown", "episode:4", "derived")),
    (("history:1", "device_execution"), (None, None), ("device_execution", "history:1", "derived")),
    (("history:1", "device_execution"), None, ("device_execution", "history:1", "derived")),
    ((None, None), (None, None), ("planning", None, "derived")),
    ((None, None), None, ("planning", None, "derived")),
    (None, (None, None), ("planning", "history:9", "recorded")),
    (None, None, ("planning", "history:9", "recorded")),
])
def test_failure_evidence_formula(history, episode, expected):
    assert failure_evidence("planning", "history:9", history, episode) == expected


@pytest.mark.parametrize("recorded_stage", ["setup", "evaluation"])
def test_failure_evidence_formula_keeps_outcome_stages(recorded_stage):
    assert failure_evidence(recorded_stage, None, ("history:1", "device_execution"), None) == (
        recorded_stage, "history:1", "derived")
    assert failure_evidence(recorded_stage, "episode:2", None, (None, None)) == (
        recorded_stage, "episode:2", "recorded")
