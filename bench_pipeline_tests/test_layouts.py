"""The runner's layout read as the flat one (run-directory.md "The runner's layout"): each
mapping of bench_pipeline.layouts on values in memory."""

from __future__ import annotations

import pytest

from bench_pipeline.layouts import (
    NOT_REGULAR_FILE,
    OUTSIDE_RUN_FOLDER,
    REJUDGED_RESULTS,
    RESULTS,
    manifest_view,
    map_artifact_dir,
    rejudged_refusal,
    results_file_name,
    results_in,
    results_refusal,
    row_view,
    runner_finished,
    suite_view,
    trace_call,
)

# --- rows ----------------------------------------------------------------------------------


def test_a_field_is_read_from_metrics_when_the_key_is_there_else_from_the_top_level():
    row = {"task_id": "t", "attempt": 1, "status": "failed", "success": True, "failure_class": "agent",
           "metrics": {"success": False, "agent_eligible": False, "failure_class": "environment",
                       "quality_score": None, "llm_calls": 3}}
    view = row_view(row)
    assert (view["success"], view["agent_eligible"], view["failure_class"]) == (False, False, "environment")
    assert "quality_score" in view and view["quality_score"] is None  # present in metrics, even null (R6)
    assert view["status"] == "failed" and view["llm_calls"] == 3
    assert view["metrics"] is row["metrics"]
    assert row["success"] is True and "agent_eligible" not in row  # the row itself is not changed


def test_the_rows_identity_is_read_at_the_top_level_only():
    view = row_view({"task_id": "t", "attempt": 2, "metrics": {"task_id": "other", "attempt": 9, "metrics": 1}})
    assert (view["task_id"], view["attempt"], view["metrics"]) == ("t", 2, {"task_id": "other", "attempt": 9,
                                                                             "metrics": 1})


@pytest.mark.parametrize("metrics", [None, {}, [1], "x"])
def test_a_row_without_a_metrics_object_is_read_as_it_is(metrics):
    row = {"task_id": "t", "success": True, "metrics": metrics}
    assert row_view(row) is row


def test_rubric_spec_items_get_their_requirement_from_check_else_description():
    row = {"task_id": "t", "rubric_spec": [{"id": "r1", "check": "Wi-Fi is on"}, {"id": "r2", "description": "d"},
                                           {"id": "r3", "requirement": "own", "check": "ignored"}, "junk",
                                           {"id": "r4"}]}
    assert row_view(row)["rubric_spec"] == [
        {"id": "r1", "requirement": "Wi-Fi is on"},
        {"id": "r2", "requirement": "d"},
        {"id": "r3", "requirement": "own", "check": "ignored"}, "junk", {"id": "r4"}]
    assert row_view({"rubric_spec": [{"id": "r", "check": "c", "description": "kept", "weight": 2}]})[
        "rubric_spec"] == [{"id": "r", "requirement": "c", "description": "kept", "weight": 2}]


def test_state_checks_are_named_by_their_path():
    row = {"environment_state_assertions": [{"path": "wifi.enabled", "expected": True, "actual": True, "passed": True},
                                            {"id": "own", "path": "kept"}, "junk"]}
    assert row_view(row)["environment_state_assertions"] == [
        {"id": "wifi.enabled", "expected": True, "actual": True, "passed": True}, {"id": "own", "path": "kept"}, "junk"]


def test_row_view_is_idempotent():
    row = {"task_id": "t", "metrics": {"success": True}, "rubric_spec": [{"id": "r", "check": "c"}]}
    assert row_view(row_view(row)) == row_view(row)


# --- manifest ------------------------------------------------------------------------------

RUNNER_MANIFEST = {
    "run_id": "2026-09-21_063528", "started_at": "2026-09-21T06:35:28Z", "finished_at": "2026-09-21T07:02:10Z",
    "git_sha": "4f2c9e1", "git_dirty": True, "agent_model": "agent-model-large",
    "judge_config": {"provider": "p", "model": "judge-model", "base_url": "http://judge"},
    "target_platform": "android-15", "suite_path": "suites/android-core.json", "suite_sha256": "ab12",
    "planned_task_attempts": [{"task_id": "a", "attempt": 1}, {"task_id": "a", "attempt": 2},
                              {"task_id": "b", "attempt": 1}, {"attempt": 1}, "junk"],
    "active_skills": ["calendar"], "metrics_k": 2, "totals": {"tasks": 2},
}


def test_the_runners_manifest_has_its_flat_equivalents():
    view = manifest_view(RUNNER_MANIFEST)
    assert view["code"] == {"git_sha": "4f2c9e1", "dirty": True}
    assert view["model"] == {"name": "agent-model-large"}
    assert view["judge"] == {"enabled": True, "model": "judge-model"}
    assert view["platform"] == {"device": None, "os": "android-15"}
    assert view["suite"] == {"name": "android-core", "version": "ab12"}
    assert view["planned"] == [{"task_id": "a", "attempts": 2}, {"task_id": "b", "attempts": 1}]
    assert "status" not in view  # never made up: readiness has its own rule
    assert {k: view[k] for k in RUNNER_MANIFEST} == RUNNER_MANIFEST  # every runner key kept


def test_a_judge_config_of_null_means_the_judge_was_off():
    assert manifest_view({"judge_config": None})["judge"] == {"enabled": False, "model": None}
    assert "judge" not in manifest_view({})


@pytest.mark.parametrize("model", ["", None, 3])
def test_an_empty_or_missing_agent_model_is_unknown(model):
    assert "model" not in manifest_view({"agent_model": model})


def test_flat_keys_win_over_the_runners():
    flat = {"code": {"git_sha": "x"}, "model": {"name": "m", "provider": "p"}, "judge": {"enabled": False},
            "platform": {"device": "d", "os": "o"}, "suite": {"name": "s", "version": "7"},
            "planned": [{"task_id": "z", "attempts": 3}]}
    assert manifest_view({**RUNNER_MANIFEST, **flat}) == {**RUNNER_MANIFEST, **flat}


def test_a_flat_manifest_is_read_as_it_is():
    flat = {"status": "completed", "code": {"git_sha": "x", "dirty": False}, "planned": []}
    assert manifest_view(flat) == flat


# --- suite ---------------------------------------------------------------------------------

def test_the_suite_source_has_its_flat_task_keys():
    suite = {"tasks": [{"id": "a", "category": "nav", "prompt": "p", "rubric": [{"id": "r1", "check": "c1"}],
                        "expected_recalled_memory_ids": ["m1"], "hard_assertions": {"must_complete_within_sec": 90},
                        "repeats": 2}, "junk"]}
    view = suite_view(suite)
    task = view["tasks"][0]
    assert task["rubric_spec"] == [{"id": "r1", "requirement": "c1"}]
    assert task["expected_memory_ids"] == ["m1"]
    assert task["timeout_s"] == 90
    assert task["repeats"] == 2 and task["rubric"] == [{"id": "r1", "check": "c1"}]
    assert view["tasks"][1] == "junk"
    assert "name" not in view  # the name falls back to the manifest's suite_path (R2)


def test_a_flat_suite_is_read_as_it_is():
    suite = {"name": "s", "version": "7", "tasks": [{"id": "a", "rubric_spec": [{"id": "r", "requirement": "q"}],
                                                     "expected_memory_ids": [], "timeout_s": 300}]}
    assert suite_view(suite) == suite


# --- artifact folders ----------------------------------------------------------------------

@pytest.mark.parametrize(("recorded", "mapped"), [
    ("/Users/x/bench/runs/run-7/tasks/find_item_011", "tasks/find_item_011"),
    ("/Users/x/bench/runs/run-7/tasks/t/attempt_2", "tasks/t/attempt_2"),
    ("runs/run-7/tasks/t", "tasks/t"),                          # relative to the runner's working directory
    ("/data/run-7/x/run-7/tasks/t", "tasks/t"),                 # the last segment equal to the run's name
    ("/Users/x/bench/runs/renamed/tasks/t", "tasks/t"),         # renamed: from the last `tasks` segment
    ("/a/tasks/b/tasks/t", "tasks/t"),
    ("C:\\bench\\runs\\run-7\\tasks\\t", "tasks/t"),
    ("/Users/x/bench/runs/run-7", "."),
    ("tasks/t", "tasks/t"),                                     # the flat layout, as it is
    ("tasks/t/../u", "tasks/t/../u"),                           # normalized later, not here
    ("/srv/outside", "/srv/outside"),                           # nothing to map: refused later
    ("../elsewhere/tasks/t", "../elsewhere/tasks/t"),           # relative: as it is (refused later)
    ("/x/run-7/../../etc", "../../etc"),                        # still escapes: refused later
])
def test_the_runners_artifact_dir_is_mapped_into_the_run_folder(recorded, mapped):
    assert map_artifact_dir(recorded, "run-7") == mapped


# --- trace.json ----------------------------------------------------------------------------

def test_trace_calls_in_either_shape():
    assert trace_call({"step": 1, "tool": "tap", "input": {"x": 1}, "has_screenshot": False}) == {
        "name": "tap", "arguments": {"x": 1}}
    assert trace_call({"name": "tap", "arguments": {"x": 1}}) == {"name": "tap", "arguments": {"x": 1}}
    assert trace_call({"name": None, "tool": "ignored"}) == {"name": None, "arguments": None}
    assert trace_call({}) == {"name": None, "arguments": None}


# --- run folders ---------------------------------------------------------------------------

def test_a_regular_rejudged_copy_is_the_runs_results(tmp_path):
    assert results_file_name(str(tmp_path)) == RESULTS
    (tmp_path / REJUDGED_RESULTS).mkdir()  # not a regular file
    assert results_file_name(str(tmp_path)) == RESULTS
    (tmp_path / REJUDGED_RESULTS).rmdir()
    (tmp_path / REJUDGED_RESULTS).write_text("")
    assert results_file_name(str(tmp_path)) == REJUDGED_RESULTS


def test_a_results_file_linked_out_of_the_run_folder_is_refused(tmp_path):
    """R5's rule for an attempt's files holds for the results files too: a symlink resolving
    outside the run folder is not read (its rows would be another folder's); one inside is."""
    run, outside = tmp_path / "run", tmp_path / "outside.jsonl"
    run.mkdir()
    outside.write_text("")
    (run / "kept").mkdir()
    (run / "kept" / "r.jsonl").write_text("")
    real = str(run.resolve())
    (run / REJUDGED_RESULTS).symlink_to(outside)
    assert results_refusal(real, REJUDGED_RESULTS) == OUTSIDE_RUN_FOLDER == rejudged_refusal(real)
    assert results_file_name(real) == RESULTS
    (run / REJUDGED_RESULTS).unlink()
    (run / REJUDGED_RESULTS).symlink_to(run / "kept" / "r.jsonl")
    assert results_refusal(real, REJUDGED_RESULTS) is None and rejudged_refusal(real) is None
    assert results_file_name(real) == REJUDGED_RESULTS
    (run / REJUDGED_RESULTS).unlink()
    (run / REJUDGED_RESULTS).mkdir()
    assert rejudged_refusal(real) == NOT_REGULAR_FILE and results_file_name(real) == RESULTS
    assert results_refusal(real, RESULTS) == NOT_REGULAR_FILE  # not there at all


def test_results_and_the_runners_own_outputs_among_file_names():
    assert results_in({"results.jsonl", "results.rejudged.jsonl"}) == REJUDGED_RESULTS
    assert results_in({"results.jsonl"}) == RESULTS and results_in({"manifest.json"}) is None
    assert runner_finished({"results.jsonl", "summary.md"}) and runner_finished({"metrics.json": 1})
    assert not runner_finished({"results.jsonl", "manifest.json"})
