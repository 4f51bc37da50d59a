"""Which comparisons are behind their inputs (bench_pipeline.comparison_inputs), on values in
memory: a baseline processed again, a late run, a pin added, changed or removed, a baseline's
folder gone; and waiting while a run it needs is being processed."""

from __future__ import annotations

import pytest

from bench_pipeline.baselines import RunInfo
from bench_pipeline.comparison_inputs import ComparisonInputs, comparisons_behind

RUNS = [RunInfo("r1", "s", "2026-01-01T00:00:00Z", True), RunInfo("r2", "s", "2026-01-02T00:00:00Z", True),
        RunInfo("r3", "s", "2026-01-03T00:00:00Z", True)]
VERSIONS = {"r1": "a1@f", "r2": "a2@f", "r3": "a3@f"}


#: Why r1, the first run of suite s, is not compared (what its reports say).
FIRST = "no earlier processed run of suite 's' was measured with its setup (judge unknown, platform unknown)"


def _recorded(run_id: str, baseline: str | None, version: str | None,
              not_compared: str | None = None) -> ComparisonInputs:
    """Inputs as a run_comparison materialization's data version records them."""
    made = ComparisonInputs(run_id, VERSIONS[run_id], baseline, version, "the latest earlier run of the suite",
                            not_compared)
    return ComparisonInputs.from_version(run_id, made.version())


def _up_to_date() -> dict[str, ComparisonInputs]:
    return {"r1": _recorded("r1", None, None, FIRST), "r2": _recorded("r2", "r1", "a1@f"),
            "r3": _recorded("r3", "r2", "a2@f")}


def test_the_version_records_why_a_run_is_not_compared_and_only_then():
    alone = ComparisonInputs("r1", "a1@f", None, None, "no baseline: ...", FIRST)
    assert alone.version() == '[null,null,"a1@f","' + FIRST.replace("'", "'") + '"]'
    assert ComparisonInputs.from_version("r1", alone.version()) == ComparisonInputs("r1", "a1@f", None, None, "",
                                                                                    FIRST)
    compared = ComparisonInputs("r2", "a2@f", "r1", "a1@f", "the latest earlier run of the suite", "ignored")
    assert compared.version() == '["r1","a1@f","a2@f"]'  # as before the reports said why
    old = ComparisonInputs.from_version("r1", '[null,null,"a1@f"]')
    assert old == ComparisonInputs("r1", "a1@f", None, None, "", None)
    assert ComparisonInputs.from_version("r1", '[null,null,"a1@f",1]') is None
    assert ComparisonInputs.from_version("r1", '[null,null,"a1@f",null]') is None
    assert ComparisonInputs.from_version("r1", '[null,null]') is None


def test_a_run_not_compared_whose_reports_do_not_say_why_is_behind_once():
    recorded = {**_up_to_date(), "r1": _recorded("r1", None, None)}  # made before the reports said why
    (behind,) = comparisons_behind(RUNS, {}, recorded, VERSIONS, VERSIONS)
    assert (behind.run_id, behind.baseline, behind.baseline_version) == ("r1", None, None)
    assert behind.why == f"not compared, its reports not saying why; now not compared because {FIRST}"


def test_a_run_still_not_compared_for_another_reason_is_behind():
    pinned = {**_up_to_date(), "r2": _recorded("r2", "r1", "a1@f"), "r3": _recorded("r3", "r1", "a1@f"),
              "r1": _recorded("r1", None, None, "it is the pinned baseline of suite 's'")}
    assert comparisons_behind(RUNS, {"s": "r1"}, pinned, VERSIONS, VERSIONS) == []
    behind = comparisons_behind(RUNS, {"s": "r9"}, pinned, VERSIONS, VERSIONS)  # a pin not processed
    assert [(b.run_id, b.baseline) for b in behind] == [("r1", None), ("r2", None), ("r3", None)]
    assert behind[0].why == ("not compared because it is the pinned baseline of suite 's'; now not compared "
                             "because the pinned baseline 'r9' of suite 's' is no run folder under the runs root (its "
                             "folder was deleted, or the pins file names it wrongly)")


def test_comparisons_that_follow_their_inputs_are_not_behind():
    assert comparisons_behind(RUNS, {}, _up_to_date(), VERSIONS, VERSIONS) == []


def test_a_baseline_processed_again_puts_its_successor_behind_and_nothing_else():
    stored = {**VERSIONS, "r2": "b2@f"}  # r2 re-judged and processed again
    (behind,) = comparisons_behind(RUNS, {}, _up_to_date(), stored, stored)
    assert (behind.run_id, behind.baseline, behind.baseline_version) == ("r3", "r2", "b2@f")
    assert behind.why == "its baseline 'r2' was processed again since (now data version b2@f)"


def test_a_baseline_being_processed_is_waited_for():
    current = {**VERSIONS, "r2": "b2@f"}  # r2's folder changed, its stages not yet processed again
    assert comparisons_behind(RUNS, {}, _up_to_date(), VERSIONS, current) == []


def test_a_candidate_being_processed_is_left_to_its_own_processing():
    stored = {**VERSIONS, "r1": "b1@f"}
    current = {**stored, "r2": "b2@f"}  # r2 changed too: its own processing compares it again
    assert comparisons_behind(RUNS, {}, _up_to_date(), stored, current) == []


def test_a_late_run_becomes_the_baseline_of_the_next_run():
    late = RunInfo("r0", "s", "2026-01-02T12:00:00Z", True)
    runs = [late, *RUNS]
    versions = {**VERSIONS, "r0": "a0@f"}
    behind = comparisons_behind(runs, {}, _up_to_date(), versions, versions)
    assert [(b.run_id, b.baseline, b.baseline_version) for b in behind] == [("r3", "r0", "a0@f")]
    assert behind[0].why == "compared with 'r2', now with 'r0' (the latest earlier run of the suite)"


def test_a_pin_added_changed_and_removed():
    behind = comparisons_behind(RUNS, {"s": "r1"}, _up_to_date(), VERSIONS, VERSIONS)
    # r2 already is; r1 is the pin itself, and its reports now say so
    assert [(b.run_id, b.baseline) for b in behind] == [("r1", None), ("r3", "r1")]
    assert behind[0].why == (f"not compared because {FIRST}; now not compared because it is the pinned baseline "
                             "of suite 's'")
    assert behind[1].why == "compared with 'r2', now with 'r1' (pinned for suite 's')"
    pinned = {**_up_to_date(), "r3": _recorded("r3", "r1", "a1@f")}
    behind = comparisons_behind(RUNS, {"s": "r2"}, pinned, VERSIONS, VERSIONS)  # changed
    assert [(b.run_id, b.baseline) for b in behind] == [("r1", "r2"), ("r2", None), ("r3", "r2")]
    assert behind[1].why.startswith("compared with 'r1', now no baseline: this run is the pinned baseline")
    assert behind[0].why == "compared with nothing, now with 'r2' (pinned for suite 's')"
    assert [(b.run_id, b.baseline) for b in comparisons_behind(RUNS, {}, pinned, VERSIONS, VERSIONS)] == [
        ("r3", "r2")]  # removed: the rule again


def test_a_baseline_whose_folder_is_gone():
    runs = [RUNS[0], RUNS[2]]  # r2's folder deleted
    (behind,) = comparisons_behind(runs, {}, _up_to_date(), VERSIONS, VERSIONS)
    assert (behind.run_id, behind.baseline) == ("r3", "r1")
    assert behind.why == ("compared with 'r2' (its folder is gone), now with 'r1' (the latest earlier run "
                          "of the suite)")
    (behind,) = comparisons_behind([RUNS[1]], {}, _up_to_date(), VERSIONS, VERSIONS)  # r1 gone: r2 has none
    assert (behind.run_id, behind.baseline) == ("r2", None)
    assert behind.why.startswith("compared with 'r1' (its folder 'r1' is gone), now no baseline: ")


def test_a_run_never_compared_is_left_to_its_own_processing():
    recorded = {k: v for k, v in _up_to_date().items() if k != "r3"}
    stored = {**VERSIONS, "r2": "b2@f"}
    assert comparisons_behind(RUNS, {}, recorded, stored, stored) == []


@pytest.mark.parametrize("text", ["70bdcf22a358fedb@2026-12-05.1", "", "{not json", "[1, 2, 3]", "[null]",
                                  '["a", "b", "c", "d"]'])
def test_other_data_versions_record_no_inputs(text):
    assert ComparisonInputs.from_version("r", text) is None


def test_a_data_version_records_any_run_id():
    inputs = ComparisonInputs("r:3", "v@f", 'odd "run" | id', None, "")
    assert ComparisonInputs.from_version("r:3", inputs.version()) == inputs


def test_inputs_are_recorded_for_comparison_json():
    inputs = ComparisonInputs("r3", "a3@f", "r2", "a2@f", "the latest earlier run of the suite")
    assert inputs.record() == {"candidate": {"run_id": "r3", "data_version": "a3@f"},
                               "baseline": {"run_id": "r2", "data_version": "a2@f"},
                               "baseline_choice": "the latest earlier run of the suite"}
