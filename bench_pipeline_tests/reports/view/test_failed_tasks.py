"""Failed tasks and their evidence (bench_pipeline/reports/view/failed_tasks.py)."""

from bench_pipeline.reports.view.failed_tasks import attempt_note, failed_tasks


def test_attempt_note_takes_the_most_telling_line():
    assert attempt_note({"evidence": {"errors": {"agent_error": "tap\nfailed"}}}) == "agent_error: tap failed"
    # the judge's error is the row's judge_error (judge.json is not read), before any verdict
    assert attempt_note({"evidence": {"errors": {"judge_error": "HTTP 503"},
                                      "rubric": [{"id": "r1", "verdict": "no", "reason": "why"}]}}) == "judge_error: HTTP 503"
    assert attempt_note({"evidence": {"hard_assertion_failures": [{"id": "h", "requirement": "r", "actual": 3}]}}) == (
        "hard assertion h: r (actual: 3)")
    assert attempt_note({"evidence": {"expected_answer_match": False}}) == "expected answer did not match"
    assert attempt_note({"evidence": {"rubric": [{"id": "r1", "verdict": "no", "reason": "why"}]}}) == "rubric r1: no (why)"
    assert attempt_note({"evidence": {}, "failure_event_ref": "history:3"}) == "failure event at history:3"
    assert attempt_note({}) == ""


def row(task_id, passed, records):
    return {"task_id": task_id, "category": None, "n_passed_status": passed, "records": records,
            "has_nonpass": passed < len(records)}


def rec(attempt, status, eligible=True, success=None):
    return {"attempt": attempt, "line": attempt, "status": status, "agent_eligible": eligible, "success": success,
            "evidence": {"dir": f"t/{attempt}"}}


def test_failed_tasks_order_and_attempt_rows():
    rows = [row("ok", 1, [rec(1, "passed", success=True)]),
            row("half", 1, [rec(1, "passed", success=True), rec(2, "failed", success=False)]),
            row("none", 0, [rec(1, "failed", success=False)])]
    listed = failed_tasks(rows, 3, set(), "base")
    assert [(t.task_id, t.passed, t.n, t.eligible_failed) for t in listed] == [("none", 0, 1, 1), ("half", 1, 2, 1)]
    attempts = listed[1].attempts  # attempt 3 (k = 3) is missing: a placeholder row
    assert [(a["attempt"], a["status"], a["missing"]) for a in attempts] == [
        (1, "passed", False), (2, "failed", False), (3, None, True)]
    assert attempts[1]["href"] == "base/t/2/" and attempts[1]["eligible"] == "yes"
