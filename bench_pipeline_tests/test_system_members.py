"""Which runs of a system are pooled (system_members.py, repeated-runs.md "Systems"): a copy
is one measurement, pooled once; a run without usable rows adds nothing and is named."""

from __future__ import annotations

import json
import os

from bench_pipeline.comparison_sides import make_side
from bench_pipeline.repeats import RepeatRun
from bench_pipeline.system_members import first_identical, given, pooled_members, results_digests, usable

from .run_builder import make_run, row


def run(run_id, outcomes):
    """A RepeatRun from {task: [True / False / None (ineligible)]}."""
    rows = [{"task_id": t, "attempt": n, "line": i, "success": o is True, "agent_eligible": o is not None,
             "quality_score": None, "task_wall_ms": None, "total_tokens": None, "cost_usd": None}
            for i, (t, n, o) in enumerate(((t, n, o) for t, os_ in outcomes.items()
                                           for n, o in enumerate(os_, start=1)), start=1)]
    return RepeatRun(make_side(rows, run_id=run_id, suite="s", metrics_k=1), None)


def test_a_copy_is_pooled_once_under_the_run_id_that_sorts_first():
    runs = [run("b", {"a": [True]}), run("a", {"a": [True]}), run("c", {"a": [False]}), run("d", {"a": [True]})]
    members = pooled_members(runs, {"a": "x", "b": "x", "c": "y", "d": None})  # d: no digest, never equal
    assert [r.run_id for r in members.pooled] == ["a", "c", "d"]  # in the given order, b left out
    assert members.same_results == {"b": "a"} and members.no_usable_rows == []
    assert members.notes() == ["b has the same results as a: counted once"]
    assert pooled_members(runs).pooled == runs  # without digests nothing is a copy


def test_a_run_without_usable_rows_is_left_out_and_named():
    empty, ineligible = run("e", {}), run("i", {"a": [None, None]})
    assert not usable(empty) and not usable(ineligible) and usable(run("u", {"a": [None, False]}))
    members = pooled_members([run("r", {"a": [True]}), empty, ineligible])
    assert [r.run_id for r in members.pooled] == ["r"] and members.no_usable_rows == ["e", "i"]
    assert members.notes()[0] == ("e has no usable rows (no eligible attempt): it is left out of the pooled values, "
                                  "the stability and the noise floor")
    assert members.left_out == {"e": "no usable rows (no eligible attempt): left out of the pooled values and the "
                                     "noise floor",
                                "i": "no usable rows (no eligible attempt): left out of the pooled values and the "
                                     "noise floor"}
    # nothing usable at all: every run stays (there is nothing to pool either way), still named
    alone = pooled_members([empty, ineligible])
    assert [r.run_id for r in alone.pooled] == ["e", "i"]
    assert alone.notes()[1].startswith("i has no usable rows (no eligible attempt): it adds nothing to the pooled "
                                       "values, the stability or the noise floor (its metrics_k still counts")
    # runs given explicitly are all pooled, as the specification's repeats.json says, and named
    assert given([run("r", {"a": [True]}), empty]).notes() == [
        "e has no usable rows (no eligible attempt): it adds nothing to the pooled values, the stability or the noise "
        "floor (its metrics_k still counts toward k, and its missing tasks against \"in every run\")"]


def test_only_results_files_of_equal_size_are_read_and_the_read_file_counts(tmp_path, monkeypatch):
    a = make_run(tmp_path, [row("t1")], run_id="a")
    b = make_run(tmp_path, [row("t1")], run_id="b")  # the same bytes
    c = make_run(tmp_path, [row("t1", status="failed")], run_id="c")  # another size
    d = make_run(tmp_path, [row("t2")], run_id="d")  # the same size as a and b, other bytes
    read = []
    real_open = open

    def counting(path, *args, **kwargs):
        read.append(os.path.basename(os.path.dirname(path)))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", counting)
    digests = results_digests({"a": a, "b": b, "c": c, "d": d})
    monkeypatch.undo()
    assert digests["a"] == digests["b"] != digests["d"] and digests["c"] is None
    assert sorted(read) == ["a", "b", "d"]  # c's size is its own: never read
    assert first_identical([c, a, d, b]) == (a, b, "results.jsonl")
    assert first_identical([a, c, d]) is None
    # the runner's re-judged copy is what a run reads: b re-judged differs from a
    (b / "results.rejudged.jsonl").write_text(json.dumps(row("t1", status="failed")) + "\n", encoding="utf-8")
    assert first_identical([a, b]) is None
    (a / "results.rejudged.jsonl").write_text(json.dumps(row("t1", status="failed")) + "\n", encoding="utf-8")
    assert first_identical([a, b]) == (a, b, "results.rejudged.jsonl")
