"""Baseline choice: the latest earlier processed run of the suite, or the pinned one."""

from __future__ import annotations

import json

import pytest

from bench_pipeline import object_store
from bench_pipeline.baselines import (
    Baseline, PinsError, RunInfo, as_processed, choose_baseline, load_pins, pins_file, run_index,
)

from .run_builder import make_run, row


def info(run_id, suite="s", started="2026-11-02T00:00:00Z", processed=True):
    return RunInfo(run_id, suite, started, processed)


RUNS = [
    info("r1", started="2026-11-01T00:00:00Z"),
    info("r2", started="2026-11-02T00:00:00Z"),
    info("r2b", started="2026-11-02T00:00:00Z"),  # same start: the run id orders them
    info("r3", started="2026-11-03T00:00:00Z", processed=False),
    info("other", suite="t", started="2026-11-02T12:00:00Z"),
    info("undated", started=None),
]


def test_default_is_the_latest_earlier_processed_run_of_the_suite():
    assert choose_baseline(info("c", started="2026-11-04T00:00:00Z"), RUNS, {}).run_id == "r2b"  # r3 unprocessed
    assert choose_baseline(RUNS[2], RUNS, {}).run_id == "r2"  # same started_at, earlier id
    assert choose_baseline(RUNS[1], RUNS, {}).run_id == "r1"
    assert choose_baseline(RUNS[0], RUNS, {}).run_id == "undated"  # undated sorts first
    first = choose_baseline(RUNS[5], RUNS, {})
    assert first.run_id is None
    assert first.reason.startswith(
        "no baseline: none of the 4 other run(s) of suite 's' is an earlier processed run than this one "
        "('undated', no started_at): 'r1', 'r2', 'r2b': started later; 'r3': not processed yet. "
        "To compare with one of them, pin it in the baselines file")
    only = choose_baseline(RUNS[4], RUNS, {})  # the only run of suite t
    assert only == Baseline(None, "no baseline: no other run of suite 't' was found",
                            "no earlier processed run of suite 't' was measured with its setup "
                            "(judge unknown, platform unknown)")
    # what the reports say names no other run: it stays true while the suite's runs come and go
    assert first.not_compared == ("no earlier processed run of suite 's' was measured with its setup "
                                  "(judge unknown, platform unknown)")


def test_a_tie_on_started_at_is_named_with_the_rule_that_breaks_it():
    """A new run started at the same time as the suite's processed runs, whose id sorts first,
    has no baseline; the reason names those runs and why none counts, and how to pin."""
    runs = [info("run-b"), info("run-c"), info("run-d"), info("run-a")]
    reason = choose_baseline(runs[3], runs, {}).reason
    assert reason == (
        "no baseline: none of the 3 other run(s) of suite 's' is an earlier processed run than this one "
        "('run-a', started_at 2026-11-02T00:00:00Z): 'run-b', 'run-c', 'run-d': the same started_at "
        "2026-11-02T00:00:00Z, and a run id that sorts after this run's (ties are broken by run id). "
        "To compare with one of them, pin it in the baselines file ({\"s\": \"<run id>\"}, docs/operations.md)")
    many = [info(f"run-{i}") for i in range(1, 9)] + [info("run-0")]
    assert "'run-5' and 3 more: the same started_at" in choose_baseline(many[-1], many, {}).reason


def test_a_pinned_baseline_wins_but_never_for_itself_or_unprocessed():
    pins = {"s": "r1"}
    assert choose_baseline(RUNS[2], RUNS, pins) == Baseline("r1", "pinned for suite 's'")
    assert choose_baseline(RUNS[5], RUNS, pins).run_id == "r1"  # later or earlier alike
    assert choose_baseline(RUNS[0], RUNS, pins).run_id is None  # r1 itself
    assert choose_baseline(RUNS[0], RUNS, pins).not_compared == "it is the pinned baseline of suite 's'"
    assert "has not been processed" in choose_baseline(RUNS[1], RUNS, {"s": "r3"}).reason
    assert choose_baseline(RUNS[1], RUNS, {"s": "r3"}).not_compared == (
        "the pinned baseline 'r3' of suite 's' has not been processed")
    assert choose_baseline(RUNS[1], RUNS, {"s": "gone"}).not_compared == (
        "the pinned baseline 'gone' of suite 's' is no run folder under the runs root (its folder was deleted, "
        "or the pins file names it wrongly)")
    assert choose_baseline(RUNS[2], RUNS, pins).not_compared is None  # compared
    assert choose_baseline(RUNS[4], RUNS, pins).run_id is None  # another suite's pin does not apply
    # a run of another suite, pinned: used as it is, and the reason (the console's line) says so
    assert choose_baseline(RUNS[1], RUNS, {"s": "other"}) == Baseline(
        "other", "pinned for suite 's', a run of another suite ('t'): the comparison's warnings say so")


def test_unknown_suite_has_no_baseline():
    assert choose_baseline(info("c", suite=None), RUNS, {}) == Baseline(
        None, "no baseline: the run's suite is unknown", "its suite is unknown")


def test_run_index_reads_suite_start_and_whether_processed(tmp_path):
    make_run(tmp_path / "runs", [row("a")], run_id="r1",
             manifest={"status": "completed", "started_at": "2026-11-01T00:00:00Z", "suite": {"name": "m"}})
    make_run(tmp_path / "runs", [row("a")], run_id="r2", suite={"name": "from-suite-json", "tasks": []},
             manifest={"status": "completed"})
    (tmp_path / "out" / "r1").mkdir(parents=True)
    for name in ("metrics.json", "attempts.jsonl"):
        (tmp_path / "out" / "r1" / name).write_text("{}")
    index = {r.run_id: r for r in run_index(tmp_path / "runs", tmp_path / "out")}
    assert index["r1"].processed and not index["r2"].processed
    assert index["r1"].started_at == "2026-11-01T00:00:00Z" and index["r2"].started_at is None
    assert index["r2"].suite == "from-suite-json"


def test_pins_file(tmp_path):
    """No file: no pins. A file that does not hold pins is an error naming it: read as no pins,
    a typo would silently re-compare every run of the pinned suites with another baseline."""
    assert load_pins(tmp_path / "missing.json") == {}
    (tmp_path / "p.json").write_text(json.dumps({"s": "r1", "t": "r2"}))
    assert load_pins(tmp_path / "p.json") == {"s": "r1", "t": "r2"}
    for text, why in (('{"s": "r1",}', "is not valid JSON"), ("", "is not valid JSON"),
                      ('["r1"]', "is not a JSON object"), ('{"s": "r1", "bad": 3, "t": ["r2"]}',
                                                           "pins suite 'bad', 't' to something other than a run id")):
        (tmp_path / "p.json").write_text(text)
        with pytest.raises(PinsError, match=f"the pinned baselines file {tmp_path / 'p.json'} {why}"):
            load_pins(tmp_path / "p.json")
    (tmp_path / "p.json").unlink()
    (tmp_path / "p.json").mkdir()
    with pytest.raises(PinsError, match="cannot be read"):
        load_pins(tmp_path / "p.json")


def test_the_run_index_reads_manifests_through_copies_and_processed_from_one_listing(bucket, tmp_path):
    for run_id, started in (("r1", "2026-01-01T00:00:00Z"), ("r2", "2026-01-02T00:00:00Z")):
        make_run(tmp_path / "runs", [row("a")], run_id=run_id,
                 manifest={"status": "completed", "started_at": started}, suite={"name": "s", "tasks": []})
    bucket.upload_folder(tmp_path / "runs", "runs")
    bucket.put("reports/r1/metrics.json", "{}")
    bucket.put("reports/r1/attempts.jsonl", "")
    bucket.put("reports/r2/metrics.json", "{}")  # no attempts.jsonl: not processed
    index = run_index(bucket.url("runs"), bucket.url("reports"))
    assert [(r.run_id, r.suite, r.started_at, r.processed) for r in index] == [
        ("r1", "s", "2026-01-01T00:00:00Z", True), ("r2", "s", "2026-01-02T00:00:00Z", False)]
    assert (object_store.mirror_path(bucket.url("runs/r1")) / "manifest.json").is_file()
    # runs in the bucket, outputs on disk
    (tmp_path / "out" / "r2").mkdir(parents=True)
    for name in ("metrics.json", "attempts.jsonl"):
        (tmp_path / "out" / "r2" / name).write_text("")
    assert [r.processed for r in run_index(bucket.url("runs"), tmp_path / "out")] == [False, True]


def test_a_pins_file_in_a_bucket(bucket, monkeypatch):
    monkeypatch.setenv("BENCH_BASELINES", bucket.url("config/baselines.json"))
    assert pins_file() == bucket.url("config/baselines.json")
    assert load_pins(pins_file()) == {}  # no object: no pins
    bucket.put("config/baselines.json", json.dumps({"suite-x": "r1"}))
    assert load_pins(pins_file()) == {"suite-x": "r1"}
    bucket.put("config/baselines.json", '{"suite-x": "r1",}')
    with pytest.raises(PinsError, match="is not valid JSON"):
        load_pins(pins_file())
    with pytest.raises(object_store.StoreError, match="does not exist"):
        load_pins("s3://no-such-bucket-for-bench/baselines.json")  # a pin silently lost would change comparisons


# --- the same setup (comparison.md "The default baseline") ---------------------------------------

PIXEL = (True, "judge-a", "pixel-8", "android-15")
EMULATOR = (True, "judge-a", "emulator", "android-15")


def test_the_default_baseline_has_the_same_setup_and_the_reason_names_the_others():
    """Two setups in one suite: each run is compared with the latest earlier run measured
    the same way; the first run of a setup has none, and its reason names the other setup's
    runs (and how to pin one)."""
    runs = [RunInfo("p1", "s", "2026-11-01T00:00:00Z", True, PIXEL),
            RunInfo("e1", "s", "2026-11-02T00:00:00Z", True, EMULATOR),
            RunInfo("p2", "s", "2026-11-03T00:00:00Z", True, PIXEL),
            RunInfo("e2", "s", "2026-11-04T00:00:00Z", True, EMULATOR)]
    assert choose_baseline(runs[2], runs, {}).run_id == "p1"  # not e1, though it is later
    assert choose_baseline(runs[3], runs, {}).run_id == "e1"  # not p2
    first = choose_baseline(runs[1], runs, {})
    assert first.run_id is None
    assert first.reason == (
        "no baseline: none of the 1 other run(s) of suite 's' is an earlier processed run than this one ('e1', "
        "started_at 2026-11-02T00:00:00Z): 'e2': started later. To compare with one of them, pin it in the baselines "
        "file ({\"s\": \"<run id>\"}, docs/operations.md). 2 run(s) of suite 's' were measured with another setup "
        "than this one's (judge judge-a, emulator / android-15) and are not compared with by default (the change of "
        "judge or platform would be mixed with the agent's): 'p1', 'p2' (judge judge-a, pixel-8 / android-15). To "
        "compare across setups anyway, pin one in the baselines file")
    alone = [runs[0], RunInfo("u1", "s", "2026-11-05T00:00:00Z", True, (False, None, "pixel-8", "android-15"))]
    reason = choose_baseline(alone[1], alone, {}).reason
    assert reason.startswith("no baseline: no other run of suite 's' was measured with this run's setup. 1 run(s) "
                             "of suite 's' were measured with another setup than this one's (no judge, pixel-8 / "
                             "android-15)")
    assert "'p1' (judge judge-a, pixel-8 / android-15)" in reason
    assert choose_baseline(alone[1], alone, {}).not_compared == (
        "no earlier processed run of suite 's' was measured with its setup (no judge, pixel-8 / android-15)")
    # unknown setup fields compare as null: runs that record no setup are one setup
    assert choose_baseline(info("c", started="2026-11-04T00:00:00Z"), RUNS, {}).run_id == "r2b"


def test_a_pinned_baseline_of_another_setup_is_used_as_it_is_with_warnings(tmp_path):
    """A pin is used whatever its setup: the reason says so, and the comparison's warnings say
    what differs (the run folders read by run_index, then compared by run_stages)."""
    from bench_pipeline.comparison import comparison_of
    from bench_pipeline.comparison_sides import side_from_output
    from bench_pipeline.pipeline import run_stages
    from bench_pipeline.reports import render_comparison_md

    judged = {"judge": {"enabled": True, "model": "judge-a"}, "platform": {"device": "pixel-8", "os": "android-15"}}
    for run_id, day, manifest in (("base", 1, judged),
                                  ("cand", 2, {"judge_config": None, "target_platform": "android-15"})):
        make_run(tmp_path / "runs", [row("a"), row("b", status="failed")], run_id=run_id,
                 manifest={"status": "completed", "started_at": f"2026-11-0{day}T00:00:00Z", **manifest},
                 suite={"name": "s", "tasks": []})
    run_stages(tmp_path / "runs" / "base", tmp_path / "out" / "base")
    index = {r.run_id: r for r in run_index(tmp_path / "runs", tmp_path / "out")}
    assert index["base"].setup == PIXEL and index["cand"].setup == (False, None, None, "android-15")
    assert choose_baseline(index["cand"], list(index.values()), {}).run_id is None  # another setup
    chosen = choose_baseline(index["cand"], list(index.values()), {"s": "base"})
    assert chosen == Baseline("base", "pinned for suite 's', measured with another setup (judge judge-a, pixel-8 / "
                                      "android-15; this run: no judge, device unknown / android-15): the comparison's "
                                      "warnings say what both recorded differently (a part one of them did not record "
                                      "is not compared)")
    run_stages(tmp_path / "runs" / "cand", tmp_path / "out" / "cand")
    comparison = comparison_of(side_from_output(tmp_path / "out" / "base", tmp_path / "runs" / "base"),
                               side_from_output(tmp_path / "out" / "cand", tmp_path / "runs" / "cand"))
    assert comparison.result["warnings"] == ["judge_differs"]  # the device is unknown in the candidate: no difference
    md = render_comparison_md(comparison)
    assert "| Judge (differs) | `judge judge-a` | `no judge` |" in md
    assert "a comparison across judges mixes the change of judge with the agent's" in md


def test_on_the_dagster_path_a_run_is_processed_when_its_values_are_stored_or_it_is_processed_now():
    runs = [RunInfo("a", "s", "1", True), RunInfo("b", "s", "2", True), RunInfo("c", "s", "3", False),
            RunInfo("d", "s", "4", False)]
    seen = as_processed(runs, stored={"a", "c"}, processing={"d"})
    # b's reports are written but its values are not stored (its processing failed); c's
    # values are stored but its reports are not there; d is processed in this step
    assert [(r.run_id, r.processed) for r in seen] == [("a", True), ("b", False), ("c", False), ("d", True)]
    assert choose_baseline(RunInfo("e", "s", "5", False), seen, {}).run_id == "d"
    assert choose_baseline(RunInfo("e", "s", "5", False), seen[:3], {}).run_id == "a"
