"""Pure item merge: a run never erases what a shared Dataset Item holds."""

from __future__ import annotations

from bench_pipeline.publication.items import merge_item

from .builders import ITEM, SUITE_DEF, attempt, body_of, run_plan


def test_a_new_item_is_created_as_this_run_knows_it():
    ours = run_plan("r1", "2026-11-01T00:00:00Z").attempts[0].item
    merge = merge_item(None, ours)
    assert merge.outcome == "created" and merge.body["input"]["prompt"] == "Open the Wi-Fi settings."


def test_a_run_without_the_task_never_replaces_what_the_item_holds():
    full = body_of(run_plan("r1", "2026-11-01T00:00:00Z"), ITEM)
    bare = run_plan("r3", "2026-11-03T00:00:00Z", suite_def={**SUITE_DEF, "tasks": SUITE_DEF["tasks"][1:]})
    merge = merge_item(full, bare.attempts[0].item)
    assert (merge.body, merge.outcome, merge.conflicts) == (None, "unchanged", [])  # nothing to send


def test_a_later_definition_fills_in_what_was_unknown():
    bare = run_plan("r1", "2026-11-01T00:00:00Z", suite_def={**SUITE_DEF, "tasks": []}).attempts[0].item
    created = merge_item(None, bare).body
    assert created["input"]["prompt"] is None and created["expectedOutput"]["rubric_spec"] is None
    later = run_plan("r2", "2026-11-02T00:00:00Z").attempts[0].item
    merge = merge_item(created, later)
    assert merge.outcome == "filled" and merge.body["input"]["prompt"] == "Open the Wi-Fi settings."
    assert merge.body["metadata"]["definition_source"]["run_id"] == "r2"
    assert merge.body["metadata"]["in_suite_definition"] is True and merge.body["metadata"]["suite_version"] == "7"


def test_a_changed_task_keeps_both_definitions_and_the_newer_run_wins():
    changed = {**SUITE_DEF, "version": "8",
               "tasks": [{**SUITE_DEF["tasks"][0], "prompt": "Open Wi-Fi."}, SUITE_DEF["tasks"][1]]}
    old = merge_item(None, run_plan("r1", "2026-11-01T00:00:00Z").attempts[0].item).body
    new_item = run_plan("r2", "2026-11-02T00:00:00Z", suite_def=changed).attempts[0].item
    merge = merge_item(old, new_item)
    assert (merge.outcome, merge.conflicts) == ("replaced", ["prompt"])
    assert merge.body["input"]["prompt"] == "Open Wi-Fi." and merge.body["metadata"]["suite_version"] == "8"
    (history,) = merge.body["metadata"]["definition_history"]
    assert (history["prompt"], history["run_id"], history["suite_version"]) == ("Open the Wi-Fi settings.", "r1", "7")
    # the older run published afterwards changes nothing: its definition is in the history already
    again = merge_item(merge.body, run_plan("r1", "2026-11-01T00:00:00Z").attempts[0].item)
    assert (again.body, again.outcome) == (None, "kept")
    # published in the other order, the result is the same
    first_new = merge_item(None, new_item).body
    older_after = merge_item(first_new, run_plan("r1", "2026-11-01T00:00:00Z").attempts[0].item)
    assert older_after.outcome == "kept" and older_after.body["input"]["prompt"] == "Open Wi-Fi."
    assert older_after.body["metadata"]["definition_history"][0]["prompt"] == "Open the Wi-Fi settings."


def test_keys_the_publisher_does_not_write_are_kept_and_foreign_items_left_alone():
    existing = body_of(run_plan("r1", "2026-11-01T00:00:00Z"), ITEM)
    existing["metadata"]["reviewed_by"] = "qa"
    existing["input"]["locale"] = "de"
    merge = merge_item(existing, run_plan("r2", "2026-11-02T00:00:00Z").attempts[0].item)
    assert merge.body is None  # the same definition: nothing to send, the keys stay
    changed = {**SUITE_DEF, "tasks": [{**SUITE_DEF["tasks"][0], "expected_answer": "on"}]}
    merge = merge_item(existing, run_plan("r2", "2026-11-02T00:00:00Z", suite_def=changed).attempts[0].item)
    assert merge.body["metadata"]["reviewed_by"] == "qa" and merge.body["input"]["locale"] == "de"
    assert merge.body["expectedOutput"]["expected_answer"] == "on"  # filled: it was null
    foreign = {"input": "free text", "expectedOutput": None, "metadata": None}
    assert merge_item(foreign, run_plan("r2", "2026-11-02T00:00:00Z").attempts[0].item).outcome == "foreign"


def test_a_suite_definition_beats_one_read_off_attempts():
    no_task = {**SUITE_DEF, "tasks": []}
    guessed = run_plan("r9", "2026-11-09T00:00:00Z", suite_def=no_task,
                       attempts=[attempt(evidence={"rubric_spec": [{"id": "guess"}]})]).attempts[0].item
    from_suite = merge_item(None, run_plan("r1", "2026-11-01T00:00:00Z").attempts[0].item).body
    merge = merge_item(from_suite, guessed)  # newer, but without the task in its suite.json
    assert merge.outcome == "kept" and merge.body["expectedOutput"]["rubric_spec"][0]["id"] == "r1"
    assert merge.body["metadata"]["definition_history"][0]["rubric_spec"] == [{"id": "guess"}]


def test_a_rubric_specification_is_held_in_the_flat_layouts_words():
    """The runner's {id, check} is {id, requirement} in an item (layouts.rubric_items): the
    same item whichever layout the run was written in; other keys stay."""
    from bench_pipeline.publication.items import rubric_spec_items

    assert rubric_spec_items([{"id": "r1", "check": "A is shown"}]) == [{"id": "r1", "requirement": "A is shown"}]
    assert rubric_spec_items([{"id": "r1", "check": "A", "weight": 2}]) == [{"id": "r1", "requirement": "A", "weight": 2}]
    assert rubric_spec_items([{"id": "r1", "requirement": "E", "check": "F"}]) == [
        {"id": "r1", "requirement": "E", "check": "F"}]  # a requirement of its own is kept
    assert rubric_spec_items([{"id": "x"}, "odd"]) == [{"id": "x"}, "odd"]
    assert rubric_spec_items(None) is None and rubric_spec_items("text") == "text"
