"""Pure run plan: item bodies, duplicates, experiment facts, the definitions' provenance."""

from __future__ import annotations

import json

from bench_pipeline.publication.plan import manifest_facts

from .builders import MANIFEST, attempt, plan


def test_items_carry_prompt_expected_answer_and_rubric():
    p = plan([attempt(), attempt("pick_option", 2), attempt("not_in_suite", 1, evidence={"rubric_spec": [{"id": "x"}]})])
    items = {a.item_id: a.item for a in p.attempts}
    first = items["android-core:open_settings:1"]
    assert first["datasetName"] == "android-core" and "status" not in first  # an existing item keeps its own
    assert first["input"] == {"prompt": "Open the Wi-Fi settings.", "task_id": "open_settings", "attempt": 1}
    assert first["expectedOutput"] == {"expected_answer": None,
                                       "rubric_spec": [{"id": "r1", "requirement": "Wi-Fi page visible"}]}
    assert first["metadata"]["suite_version"] == "7" and first["metadata"]["category"] == "navigation"
    assert items["android-core:pick_option:2"]["expectedOutput"]["expected_answer"] == "B"
    orphan = items["android-core:not_in_suite:1"]
    assert orphan["input"]["prompt"] is None and orphan["expectedOutput"]["rubric_spec"] == [{"id": "x"}]
    assert orphan["metadata"]["in_suite_definition"] is False and orphan["metadata"]["suite_version"] is None
    assert first["metadata"]["definition_source"] == {"run_id": "run-7", "run_started_at": "2026-11-28T10:00:00.000Z",
                                                      "suite_version": "7", "in_suite_definition": True}


def test_duplicate_task_attempts_keep_the_later_line():
    p = plan([attempt(line=1, status="failed"), attempt(line=2, status="passed")])
    assert len(p.attempts) == 1 and p.attempts[0].line == 2
    assert p.duplicates == [{"task_id": "open_settings", "attempt": 1, "line": 1}]


def test_manifest_facts_never_carry_secrets():
    facts = manifest_facts(MANIFEST, {"formula_version": "f1", "schema_version": 1})
    text = json.dumps(facts)
    assert "should-not-leak" not in text
    assert facts["model"] == {"provider": "example", "name": "m", "max_tokens": 4096}
    assert facts["judge"] == {"enabled": True, "model": "j"}
    assert facts["planned_attempts"] == 4 and facts["formula_version"] == "f1"
    assert "planned" not in facts


def test_manifest_facts_count_the_plan_as_coverage_does():
    """planned_tasks/planned_attempts in the experiment metadata are the distinct valid
    planned tasks and (task, attempt) pairs, the same count as coverage.planned_attempts
    (R26, R32): invalid entries are not planned, a repeated task is counted once."""
    planned = [{"task_id": "a", "attempts": 2}, {"task_id": "a", "attempts": 3}, {"task_id": "b", "attempts": -5},
               {"task_id": "c", "attempts": 1e308}, {"task_id": "d", "attempts": 10 ** 12}, "x"]
    facts = manifest_facts({"planned": planned})
    assert (facts["planned_tasks"], facts["planned_attempts"]) == (2, 3 + 10 ** 12)
    assert "planned_attempts" not in manifest_facts({"planned": "not a list"})
    assert manifest_facts({"planned": []})["planned_attempts"] == 0


def test_the_run_start_is_the_definitions_provenance():
    assert plan().provenance == {"run_id": "run-7", "run_started_at": "2026-11-28T10:00:00.000Z", "suite_version": "7"}
    from_attempts = plan([attempt(), attempt(n=2, evidence={"started_at": "2026-11-28T09:05:00+01:00"})], manifest={})
    assert from_attempts.provenance["run_started_at"] == "2026-11-28T08:05:00.000Z"  # the earliest attempt
    assert plan([attempt(evidence={"started_at": None})], manifest={}).provenance["run_started_at"] is None
