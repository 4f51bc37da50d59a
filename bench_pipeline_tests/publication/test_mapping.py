"""Pure mapping: ids, item bodies and their merge, score values, the run plan and bindings."""

from __future__ import annotations

import json
import math

from langfuse import Langfuse

from bench_pipeline.publication import mapping as m
from bench_pipeline_tests.support.publication_records import MANIFEST, SUITE_DEF, attempt, plan


# ------------------------------------------------------------------------------------ ids


def test_dataset_name_prefers_metrics_then_manifest_then_suite():
    assert m.dataset_name({"suite": "s1"}, MANIFEST, SUITE_DEF) == "s1"
    assert m.dataset_name({"suite": None}, {"suite": {"name": "from-manifest"}}, SUITE_DEF) == "from-manifest"
    assert m.dataset_name({"suite": None}, {"suite": "plain"}, {}) == "plain"
    assert m.dataset_name({"suite": None}, {}, {"name": "from-suite"}) == "from-suite"
    assert m.dataset_name({"suite": None}, {}, {}) == "unknown-suite"


def test_dataset_item_ids_are_deterministic_readable_and_bounded():
    assert m.dataset_item_id("android-core", "open_settings", 2) == "android-core:open_settings:2"
    assert m.dataset_item_id("android-core", "open_settings", 2) == m.dataset_item_id("android-core", "open_settings", 2)
    # ambiguous or long parts are hashed; the two hashed ids differ
    a, b = m.dataset_item_id("a:b", "c", 1), m.dataset_item_id("a", "b:c", 1)
    assert a != b and a.startswith("bench-item-") and ":" not in a
    long = m.dataset_item_id("s" * 200, "t" * 200, 1)
    assert len(long) <= 255 and long.startswith("bench-item-")
    assert m.dataset_item_id("s", "t\nx", 1).startswith("bench-item-")
    ids = {m.dataset_item_id("s", f"t{i}", n) for i in range(50) for n in (1, 2, 3)}
    assert len(ids) == 150


def test_experiment_id_matches_the_sdk_formula():
    ours = m.experiment_id("proj-1", "ds-9", "run-7")
    sdk = Langfuse._create_experiment_id(object(), project_id="proj-1", dataset_id="ds-9", run_name="run-7")
    assert ours == sdk and len(ours) == 16
    assert m.experiment_id("proj-1", "ds-9", "run-8") != ours


def test_trace_and_span_ids_are_stable_hex_and_distinct():
    args = ("android-core", "run-7", "android-core:open_settings:1")
    t, r, e = m.replay_trace_id(*args), m.replay_root_span_id(*args), m.evaluation_span_id(*args)
    assert len(t) == 32 and len(r) == 16 and len(e) == 16 and r != e
    assert all(c in "0123456789abcdef" for c in t + r + e)
    assert m.replay_trace_id("android-core", "run-8", args[2]) != t  # per run
    assert m.attempt_score_id(*args, "benchmark.success") != m.attempt_score_id(*args, "benchmark.status")
    assert m.run_score_id("android-core", "run-7", "x") == m.run_score_id("android-core", "run-7", "x")


def test_trace_url_and_trace_id_normalisation():
    assert m.trace_url("https://user:pw@lf.example/", "p1", "a" * 32) == f"https://lf.example/project/p1/traces/{'a' * 32}"
    assert m.trace_url(None, "p1", "a" * 32) is None and m.trace_url("https://x", None, "a" * 32) is None
    assert m.normalize_trace_id("4BF92F3577B34DA6A3CE929D0E0E4736") == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert m.normalize_trace_id("not-hex") is None and m.normalize_trace_id("0" * 32) is None


# ------------------------------------------------------------------------------------ scores


def test_attempt_scores_types_and_omission_of_unavailable_values():
    scores = {name: (value, dtype) for name, value, dtype in m.attempt_score_values(attempt())}
    assert scores["benchmark.status"] == ("failed", "CATEGORICAL")
    assert scores["benchmark.failure_class"] == ("agent", "CATEGORICAL")
    assert scores["benchmark.first_failure_stage"] == ("device_execution", "CATEGORICAL")
    assert scores["benchmark.success"] == (0, "BOOLEAN") and scores["benchmark.agent_eligible"] == (1, "BOOLEAN")
    assert scores["benchmark.success_raw"] == (0, "BOOLEAN")
    assert scores["benchmark.recovery_attempted"] == (0, "BOOLEAN")
    assert scores["benchmark.expected_recalled_memory_match"] == (1, "BOOLEAN")
    assert scores["benchmark.quality_score"] == (0.0, "NUMERIC")  # a recorded zero is sent
    assert scores["benchmark.device_execution_ms"] == (0, "NUMERIC")
    assert scores["benchmark.setup_ms"] == (30.5, "NUMERIC")
    assert scores["benchmark.rubric_pass_rate"] == (0.75, "NUMERIC")
    for absent in ("retry_count", "cost_usd", "replan_count", "recovery_succeeded", "agent_eligible_raw",
                   "expected_answer_match", "failure_event_ref", "run_id", "task_id", "line", "category"):
        assert f"benchmark.{absent}" not in scores
    assert not any(isinstance(v, bool) for v, _ in scores.values())


def test_rubric_pass_rate_only_with_a_nonzero_stored_total():
    names = lambda rec: {n for n, _, _ in m.attempt_score_values(rec)}
    assert "benchmark.rubric_pass_rate" not in names(attempt(rubric_total=0, rubric_pass_count=0))
    assert "benchmark.rubric_pass_rate" not in names(attempt(rubric_total=None))
    assert "benchmark.rubric_pass_rate" not in names(attempt(rubric_pass_count=None))
    zero = {n: v for n, v, _ in m.attempt_score_values(attempt(rubric_pass_count=0, rubric_total=4, quality_score=1))}
    assert zero["benchmark.rubric_pass_rate"] == 0.0 and zero["benchmark.quality_score"] == 1  # --no-judge case


def test_booleans_and_non_finite_values_are_never_numbers():
    rec = attempt(llm_calls=True, task_wall_ms=float("nan"), status=None, success="yes")
    names = {n for n, _, _ in m.attempt_score_values(rec)}
    assert not {"benchmark.llm_calls", "benchmark.task_wall_ms", "benchmark.status", "benchmark.success"} & names


def test_run_scores_flatten_rename_and_omit_nulls():
    metrics = {
        "suite": "android-core", "run_id": "run-7", "schema_version": 1,
        "capability": {
            "pass_at_1": {"value": 0.5, "successes": 1, "eligible_tasks": 2, "total_tasks": 2,
                          "ci95": {"lower": 0.09, "upper": 0.91}},
            "pass_at_k": {"value": None, "successes": 0, "eligible_tasks": 0, "total_tasks": 2,
                          "ci95": {"lower": None, "upper": None}},
            "first_success_attempt": {"mean": 1.5, "p50": 1.5, "count": 2},
        },
        "coverage": {"pass_at_1": 1.0, "metrics_k": 2, "planned_attempts": None},
        "failures": {"class": {"agent": 3, "environment": 0}, "stage": {"unknown": 1}},
        "diagnostics": {"failure_stage_coverage": None},
        "category": {"navigation": {"pass_rate": 0.5, "rubric_pass_rate": None, "attempts": 2}},
        "observations": {"obs.1": {"pass_rate": 1.0, "passed_tasks": 1, "observed_tasks": 1}},
        "efficiency": {"cost_usd": {"count": 0, "sum": None, "mean": None, "p50": None, "p90": None, "p95": None}},
        "reliability": {"tool_errors": {"count": 2, "sum": 1, "mean": 0.5, "p50": 0.5, "p90": 0.9, "p95": 0.95}},
        "cost_to_first_success": {"task_wall_ms": {"count": 1, "mean": 5000.0, "p50": 5000.0}},
        "aggregate": {"tasks": 4}, "data_quality": {"bad_rows": []},
    }
    scores = dict(m.run_score_values(metrics))
    assert scores["capability.pass_at_1"] == 0.5
    assert scores["capability.pass_at_1.ci95_lower"] == 0.09 and scores["capability.pass_at_1.ci95_upper"] == 0.91
    assert scores["capability.pass_at_1.successes"] == 1
    assert scores["capability.pass_at_k.total_tasks"] == 2 and "capability.pass_at_k" not in scores
    assert "capability.pass_at_k.ci95_lower" not in scores
    assert scores["capability.first_success_attempt.mean"] == 1.5
    assert scores["coverage.metrics_k"] == 2 and "coverage.planned_attempts" not in scores
    assert scores["failures.class.environment"] == 0 and scores["failures.stage.unknown"] == 1
    assert "diagnostics.failure_stage_coverage" not in scores
    assert scores["category.navigation.pass_rate"] == 0.5 and "category.navigation.rubric_pass_rate" not in scores
    assert scores["observations.obs.1.pass_rate"] == 1.0
    assert scores["efficiency.cost_usd.count"] == 0 and "efficiency.cost_usd.mean" not in scores
    assert scores["reliability.tool_errors.p95"] == 0.95
    assert scores["cost_to_first_success.task_wall_ms.p50"] == 5000.0
    assert not any(k.startswith(("aggregate", "data_quality", "schema", "run_id")) for k in scores)
    assert not any(k.endswith(".value") or ".ci95." in k for k in scores)
    assert all(math.isfinite(v) for v in scores.values())


def test_run_scores_carry_the_grouped_interval_and_the_estimators_under_their_own_names():
    """comparison.md's two metrics.json additions become run scores named for what they are:
    ``uncertainty.`` beside (not instead of) capability's Wilson bounds, ``estimators.``
    apart from the observed fixed-k values."""
    metrics = {
        "capability": {"attempt_success_rate": {"value": 5 / 7, "ci95": {"lower": 0.36, "upper": 0.92}},
                       "pass_at_k": {"value": 1.0}},
        "uncertainty": {"attempt_success_rate": {
            "value": 5 / 7, "tasks": 4, "attempts": 7, "se_simple": 0.1707, "se_clustered": 0.1258,
            "ci95": {"lower": 0.4677, "upper": 0.9609}, "design_effect": 0.5429}},
        "estimators": {"pass_at_k_unbiased": {"value": 1.0, "tasks": 3, "k": 2},
                       "pass_pow_k_unbiased": {"value": None, "tasks": 0, "k": None}},
    }
    scores = dict(m.run_score_values(metrics))
    assert scores["uncertainty.attempt_success_rate"] == 5 / 7
    assert scores["uncertainty.attempt_success_rate.ci95_lower"] == 0.4677
    assert scores["uncertainty.attempt_success_rate.ci95_upper"] == 0.9609
    assert scores["uncertainty.attempt_success_rate.se_clustered"] == 0.1258
    assert scores["uncertainty.attempt_success_rate.se_simple"] == 0.1707
    assert scores["uncertainty.attempt_success_rate.design_effect"] == 0.5429
    assert (scores["uncertainty.attempt_success_rate.tasks"], scores["uncertainty.attempt_success_rate.attempts"]) == (4, 7)
    assert scores["capability.attempt_success_rate.ci95_lower"] == 0.36  # the Wilson bound stays as it is
    assert scores["estimators.pass_at_k_unbiased"] == 1.0 and scores["capability.pass_at_k"] == 1.0
    assert (scores["estimators.pass_at_k_unbiased.tasks"], scores["estimators.pass_at_k_unbiased.k"]) == (3, 2)
    # an estimate with no qualifying task is omitted, never sent as 0; its count is a number
    assert "estimators.pass_pow_k_unbiased" not in scores and "estimators.pass_pow_k_unbiased.k" not in scores
    assert scores["estimators.pass_pow_k_unbiased.tasks"] == 0


# ------------------------------------------------------------------------------------ plan and payloads


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
    facts = m.manifest_facts(MANIFEST, {"formula_version": "f1", "schema_version": 1})
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
    facts = m.manifest_facts({"planned": planned})
    assert (facts["planned_tasks"], facts["planned_attempts"]) == (2, 3 + 10 ** 12)
    assert "planned_attempts" not in m.manifest_facts({"planned": "not a list"})
    assert m.manifest_facts({"planned": []})["planned_attempts"] == 0


def test_the_run_start_is_the_definitions_provenance():
    assert plan().provenance == {"run_id": "run-7", "run_started_at": "2026-11-28T10:00:00.000Z", "suite_version": "7"}
    from_attempts = plan([attempt(), attempt(n=2, evidence={"started_at": "2026-11-28T09:05:00+01:00"})], manifest={})
    assert from_attempts.provenance["run_started_at"] == "2026-11-28T08:05:00.000Z"  # the earliest attempt
    assert plan([attempt(evidence={"started_at": None})], manifest={}).provenance["run_started_at"] is None


def test_bindings_for_the_three_execution_trace_statuses():
    p = plan([attempt(), attempt(n=2, evidence={"episode_id": None}),
              attempt(n=3, evidence={"trace_id": None})])
    known, no_episode, no_trace = p.attempts
    available = m.decide_binding(known, "00000000000000aa")
    assert (available.mode, available.status) == (m.EXECUTION_TRACE, m.AVAILABLE)
    assert available.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736" and available.parent_span_id == "00000000000000aa"
    pending = m.decide_binding(known, None)
    assert (pending.mode, pending.status, pending.trace_id) == (m.REPLAY, m.PENDING_OR_MISSING, known.replay_trace_id)
    assert m.decide_binding(no_episode, "00000000000000aa").status == m.NO_EPISODE
    assert no_episode.execution_trace_id is None
    assert m.decide_binding(no_trace, None).status == m.PENDING_OR_MISSING
    assert available.observation_id == pending.observation_id == known.evaluation_span_id


def body_of(p, item_id):
    item = next(a.item for a in p.attempts if a.item_id == item_id)
    return {k: item[k] for k in ("input", "expectedOutput", "metadata")}


def run_plan(run_id, started, suite_def=SUITE_DEF, attempts=None):
    manifest = {**MANIFEST, "run_id": run_id, "started_at": started}
    return m.plan_run(run_id=run_id, metrics={"suite": "android-core"}, attempts=attempts or [attempt()],
                      manifest=manifest, suite_def=suite_def)


ITEM = "android-core:open_settings:1"


def test_a_new_item_is_created_as_this_run_knows_it():
    ours = run_plan("r1", "2026-11-01T00:00:00Z").attempts[0].item
    merge = m.merge_item(None, ours)
    assert merge.outcome == "created" and merge.body["input"]["prompt"] == "Open the Wi-Fi settings."


def test_a_run_without_the_task_never_replaces_what_the_item_holds():
    full = body_of(run_plan("r1", "2026-11-01T00:00:00Z"), ITEM)
    bare = run_plan("r3", "2026-11-03T00:00:00Z", suite_def={**SUITE_DEF, "tasks": SUITE_DEF["tasks"][1:]})
    merge = m.merge_item(full, bare.attempts[0].item)
    assert (merge.body, merge.outcome, merge.conflicts) == (None, "unchanged", [])  # nothing to send


def test_a_later_definition_fills_in_what_was_unknown():
    bare = run_plan("r1", "2026-11-01T00:00:00Z", suite_def={**SUITE_DEF, "tasks": []}).attempts[0].item
    created = m.merge_item(None, bare).body
    assert created["input"]["prompt"] is None and created["expectedOutput"]["rubric_spec"] is None
    later = run_plan("r2", "2026-11-02T00:00:00Z").attempts[0].item
    merge = m.merge_item(created, later)
    assert merge.outcome == "filled" and merge.body["input"]["prompt"] == "Open the Wi-Fi settings."
    assert merge.body["metadata"]["definition_source"]["run_id"] == "r2"
    assert merge.body["metadata"]["in_suite_definition"] is True and merge.body["metadata"]["suite_version"] == "7"


def test_a_changed_task_keeps_both_definitions_and_the_newer_run_wins():
    changed = {**SUITE_DEF, "version": "8",
               "tasks": [{**SUITE_DEF["tasks"][0], "prompt": "Open Wi-Fi."}, SUITE_DEF["tasks"][1]]}
    old = m.merge_item(None, run_plan("r1", "2026-11-01T00:00:00Z").attempts[0].item).body
    new_item = run_plan("r2", "2026-11-02T00:00:00Z", suite_def=changed).attempts[0].item
    merge = m.merge_item(old, new_item)
    assert (merge.outcome, merge.conflicts) == ("replaced", ["prompt"])
    assert merge.body["input"]["prompt"] == "Open Wi-Fi." and merge.body["metadata"]["suite_version"] == "8"
    (history,) = merge.body["metadata"]["definition_history"]
    assert (history["prompt"], history["run_id"], history["suite_version"]) == ("Open the Wi-Fi settings.", "r1", "7")
    # the older run published afterwards changes nothing: its definition is in the history already
    again = m.merge_item(merge.body, run_plan("r1", "2026-11-01T00:00:00Z").attempts[0].item)
    assert (again.body, again.outcome) == (None, "kept")
    # published in the other order, the result is the same
    first_new = m.merge_item(None, new_item).body
    older_after = m.merge_item(first_new, run_plan("r1", "2026-11-01T00:00:00Z").attempts[0].item)
    assert older_after.outcome == "kept" and older_after.body["input"]["prompt"] == "Open Wi-Fi."
    assert older_after.body["metadata"]["definition_history"][0]["prompt"] == "Open the Wi-Fi settings."


def test_keys_the_publisher_does_not_write_are_kept_and_foreign_items_left_alone():
    existing = body_of(run_plan("r1", "2026-11-01T00:00:00Z"), ITEM)
    existing["metadata"]["reviewed_by"] = "qa"
    existing["input"]["locale"] = "de"
    merge = m.merge_item(existing, run_plan("r2", "2026-11-02T00:00:00Z").attempts[0].item)
    assert merge.body is None  # the same definition: nothing to send, the keys stay
    changed = {**SUITE_DEF, "tasks": [{**SUITE_DEF["tasks"][0], "expected_answer": "on"}]}
    merge = m.merge_item(existing, run_plan("r2", "2026-11-02T00:00:00Z", suite_def=changed).attempts[0].item)
    assert merge.body["metadata"]["reviewed_by"] == "qa" and merge.body["input"]["locale"] == "de"
    assert merge.body["expectedOutput"]["expected_answer"] == "on"  # filled: it was null
    foreign = {"input": "free text", "expectedOutput": None, "metadata": None}
    assert m.merge_item(foreign, run_plan("r2", "2026-11-02T00:00:00Z").attempts[0].item).outcome == "foreign"


def test_a_suite_definition_beats_one_read_off_attempts():
    no_task = {**SUITE_DEF, "tasks": []}
    guessed = run_plan("r9", "2026-11-09T00:00:00Z", suite_def=no_task,
                       attempts=[attempt(evidence={"rubric_spec": [{"id": "guess"}]})]).attempts[0].item
    from_suite = m.merge_item(None, run_plan("r1", "2026-11-01T00:00:00Z").attempts[0].item).body
    merge = m.merge_item(from_suite, guessed)  # newer, but without the task in its suite.json
    assert merge.outcome == "kept" and merge.body["expectedOutput"]["rubric_spec"][0]["id"] == "r1"
    assert merge.body["metadata"]["definition_history"][0]["rubric_spec"] == [{"id": "guess"}]


# ------------------------------------------------------------------------------------ wire forms
