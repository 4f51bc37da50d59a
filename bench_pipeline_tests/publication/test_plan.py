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


RUNNER_MANIFEST = {
    "run_id": "run-7", "started_at": "2026-11-28T10:00:00Z", "finished_at": "2026-11-28T11:02:13Z",
    "active_skills": ["calendar"], "git_sha": "4f2c9e1", "git_dirty": False, "agent_model": "m",
    "judge_config": {"provider": "example", "model": "j", "base_url": "https://judge.example/v1",
                     "api_key": "sk-should-not-leak"},
    "target_platform": "android-15", "suite_path": "suites/core_suite.json", "suite_sha256": "ab" * 32,
    "suite_snapshot_path": "/Users/x/bench/runs/run-7/suite.json",
    "planned_task_attempts": [{"task_id": "open_settings", "attempt": 1}, {"task_id": "open_settings", "attempt": 2},
                              {"task_id": "pick_option", "attempt": 1}],
    "totals": {"passed": 1}, "selected_task_ids": ["open_settings", "pick_option"],
    "agent_url": "http://127.0.0.1:8100", "environment_url": "http://127.0.0.1:8200", "mock_environment": True,
    "judge_prompt_version": "jp-4", "metrics_schema_version": 2,
}
RUNNER_SUITE = {"name": "android-core", "tasks": [
    {"id": "open_settings", "category": "navigation", "prompt": "Open the Wi-Fi settings.",
     "description_for_judge": "Wi-Fi settings", "rubric": [{"id": "r1", "check": "Wi-Fi page visible"}],
     "expected_answer": None, "expected_recalled_memory_ids": ["m1"],
     "hard_assertions": {"must_complete_within_sec": 300}},
]}


def test_manifest_facts_of_a_runner_manifest():
    """The runner's flat keys as the flat facts (layouts.manifest_view), plus the runner's own
    descriptive keys; never its judge key, its paths or service addresses, totals or lists."""
    facts = manifest_facts(RUNNER_MANIFEST, {"formula_version": "f1", "schema_version": 1})
    assert "should-not-leak" not in json.dumps(facts)
    assert facts == {
        "run_id": "run-7", "started_at": "2026-11-28T10:00:00Z", "finished_at": "2026-11-28T11:02:13Z",
        "code": {"git_sha": "4f2c9e1", "dirty": False},
        "suite": {"name": "core_suite", "version": "ab" * 32},
        "model": {"name": "m"}, "judge": {"enabled": True, "model": "j"},
        "platform": {"device": None, "os": "android-15"}, "active_skills": ["calendar"],
        "judge_config": {"provider": "example", "model": "j", "base_url": "https://judge.example/v1"},
        "judge_prompt_version": "jp-4", "mock_environment": True, "suite_path": "suites/core_suite.json",
        "planned_tasks": 2, "planned_attempts": 3,
        "formula_version": "f1", "metrics_schema_version": 1, "publisher": "bench_pipeline.publication",
    }
    off = manifest_facts({**RUNNER_MANIFEST, "judge_config": None})
    assert off["judge"] == {"enabled": False, "model": None} and off["judge_config"] is None


def test_urls_in_the_facts_keep_no_credentials():
    facts = manifest_facts({"judge_config": {"base_url": "https://user:sk-should-not-leak@judge.example:8443/v1"
                                                         "?api-key=should-not-leak#frag"},
                            "model": {"endpoint": "HTTPS://Api.Example/v1"}, "run_id": "http://x?token=should-not-leak"})
    assert "should-not-leak" not in json.dumps(facts)
    assert facts["judge_config"] == {"base_url": "https://judge.example:8443/v1"}
    assert facts["model"] == {"endpoint": "HTTPS://Api.Example/v1"}  # nothing to remove: as written
    assert facts["run_id"] == "http://x"


def test_a_runner_layout_plan_reads_the_raw_files_as_the_viewed_ones():
    """plan_run given the runner's manifest and suite.json as written, or as run_reader views
    them: the same items, version (suite_sha256) and facts; the rubric in the flat words."""
    from bench_pipeline.layouts import manifest_view, suite_view
    from bench_pipeline.publication.plan import plan_run

    records = [attempt(evidence={"rubric_spec": [{"id": "r1", "check": "Wi-Fi page visible"}]}),
               attempt("not_in_suite", 1, evidence={"rubric_spec": [{"id": "x", "check": "X shown"}]})]
    raw = plan_run(run_id="run-7", metrics={"suite": None}, attempts=records, manifest=RUNNER_MANIFEST,
                   suite_def=RUNNER_SUITE)
    viewed = plan_run(run_id="run-7", metrics={"suite": "android-core"}, attempts=records,
                      manifest=manifest_view(RUNNER_MANIFEST), suite_def=suite_view(RUNNER_SUITE))
    assert raw.suite == viewed.suite == "android-core"
    assert [a.item for a in raw.attempts] == [a.item for a in viewed.attempts]
    assert raw.experiment_metadata == viewed.experiment_metadata
    assert raw.experiment_metadata["suite"] == {"name": "android-core", "version": "ab" * 32}  # not core_suite
    first, orphan = (a.item for a in raw.attempts)
    assert first["expectedOutput"] == {"expected_answer": None,
                                       "rubric_spec": [{"id": "r1", "requirement": "Wi-Fi page visible"}]}
    assert first["metadata"]["expected_memory_ids"] == ["m1"] and first["metadata"]["suite_version"] == "ab" * 32
    assert orphan["expectedOutput"]["rubric_spec"] == [{"id": "x", "requirement": "X shown"}]
    assert raw.provenance == {"run_id": "run-7", "run_started_at": "2026-11-28T10:00:00.000Z", "suite_version": "ab" * 32}
