"""What a run counts for its reports (bench_pipeline/reports/view/facts.py)."""

from bench_pipeline.reports.view.facts import attempt_facts, task_facts


def rec(line, task_id, attempt, status, eligible, success, success_raw=None, trace="available", recorded=()):
    return {"line": line, "task_id": task_id, "attempt": attempt, "status": status, "agent_eligible": eligible,
            "success": success, "success_raw": success_raw, "failure_class": None, "category": None,
            "evidence": {"trace_artifact": {"status": trace}},
            "provenance": {f: "recorded" for f in recorded} | {"llm_calls": "derived"}}


ROWS = [rec(1, "A", 1, "passed", True, True, success_raw=True),
        rec(2, "A", 2, "passed", True, True, trace="missing", recorded=("tool_calls",)),
        rec(3, "B", 1, "judge_error", True, None),
        rec(4, "B", 1, "skipped", False, None, trace="missing")]  # a later duplicate of B#1


def test_attempt_facts_count_every_row():
    facts = attempt_facts([*ROWS, "not a record"])
    assert (facts["n_attempts"], facts["ineligible"], facts["eligible_unknown"]) == (4, 1, 1)
    assert facts["status_counts"] == {"passed": 2, "judge_error": 1, "skipped": 1}
    assert facts["trace_status"] == [("available", 2), ("missing", 2)]
    assert (facts["recorded_attempts"], facts["recorded_fields"]) == (1, [("tool_calls", 1)])
    passed = next(r for r in facts["exclusions"] if r["status"] == "passed")
    assert passed["outcome"] == "1 success, 1 success (from status; raw unknown)"


def test_task_facts_group_with_the_later_line_winning():
    facts = task_facts(ROWS, {"A": {"attempts": 2}}, 2)
    assert facts["tasks"]["B"][1]["line"] == 4
    assert [r["task_id"] for r in facts["task_rows"]] == ["A", "B"]
    assert facts["task_exclusions"]["pass_at_1"] == [("B", "attempt 1 ineligible (skipped/n/a)")]
