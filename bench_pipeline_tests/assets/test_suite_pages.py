"""The suite pages' parts (assets/suite_pages.py): what a page shows of each run's comparison,
read from its comparison.json only when that comparison changed. The pages as the refresh
writes them are tested with the systems (test_systems.py)."""

from __future__ import annotations

import json

from types import SimpleNamespace

from bench_pipeline.assets.suite_pages import keep_shown, shown_runs
from bench_pipeline.output_root import OutputRoot


def test_suite_runs_read_each_runs_gate_and_baseline(tmp_path):
    out = tmp_path / "reports"
    (out / "r2").mkdir(parents=True)
    (out / "r2" / "comparison.json").write_text(json.dumps({"baseline": {"run_id": "r1"}, "gate": {"result": "fail"}}))
    (out / "r2" / "report.html").write_text("x")
    (out / "r3").mkdir()
    (out / "r3" / "comparison.json").write_text("not json")
    rows = ["r1", "r2", "r3"]
    shown = shown_runs(rows, OutputRoot(str(out)), {})
    r1, r2 = shown["r1"], shown["r2"]
    assert (r1["gate"], r1["baseline"], r1["report"]) == (None, None, None)
    assert (r2["gate"], r2["baseline"], r2["report"]) == ("fail", "r1", str((out / "r2" / "report.html").absolute()))
    assert shown["r3"]["gate"] is None
    assert r2["gate_reasons"] == [] and r2["gate_mde80"] == {"first_attempt": None, "task_success": None}
    (out / "r2" / "comparison.json").write_text(json.dumps({
        "baseline": {"run_id": "r1"}, "first_attempt": {"mde80": 0.3}, "task_success": {"mde80": 0.2},
        "gate": {"result": "inconclusive", "reasons": ["task_success_below_margin"]}, "warnings": ["judge_differs"]}))
    r2 = shown_runs(rows, OutputRoot(str(out)), {})["r2"]
    assert (r2["gate"], r2["gate_reasons"]) == ("inconclusive", ["task_success_below_margin"])
    assert r2["gate_mde80"] == {"first_attempt": 0.3, "task_success": 0.2}
    assert r2["warnings"] == ["judge_differs"]  # the page says the comparison crossed setups


def test_a_run_not_compared_shows_why_as_its_comparison_recorded_it(tmp_path):
    """Without comparison.json, the reason its reports give is taken from its comparison's data
    version (ComparisonInputs.version's fourth item); none from a version of three items."""
    from bench_pipeline.comparison_inputs import ComparisonInputs

    out = tmp_path / "reports"
    for run_id in ("r1", "r2"):
        (out / run_id).mkdir(parents=True)
    why = "it is the pinned baseline of suite 'a'"
    versions = {"r1": ComparisonInputs("r1", "f1@v", None, None, "no baseline: ...", why).version(),
                "r2": '[null,null,"f2@v"]'}
    shown = shown_runs(["r1", "r2"], OutputRoot(str(out)), versions)
    assert (shown["r1"]["baseline"], shown["r1"]["not_compared"]) == (None, why)
    assert (shown["r2"]["baseline"], shown["r2"]["not_compared"]) == (None, None)


def test_what_a_page_shows_of_a_comparison_is_kept_while_its_version_is_unchanged(tmp_path):
    """keep_shown: a run's kept text is used while its comparison's data version is the one it
    was read at (a known one), read again otherwise; the runs' state records both, in catalog order."""
    out = tmp_path / "reports"
    (out / "r2").mkdir(parents=True)
    (out / "r2" / "comparison.json").write_text(json.dumps({"gate": {"result": "inconclusive"}}))
    kept_text = json.dumps({"gate": "pass"})

    def runs(comparisons):
        return SimpleNamespace(ids=["r1", "r2"], comparisons=comparisons, kept_position={"r2": 0}, state={},
                               kept={"run_id": ["r2"], "comparison_version": ["v1"], "shown": [kept_text]})

    held = runs({"r2": "v1"})
    texts = keep_shown(held, OutputRoot(str(out)))
    assert texts[1] == kept_text and json.loads(texts[0])["gate"] is None  # r1: nothing kept, read (no comparison)
    assert held.state == {"comparison_version": [None, "v1"], "shown": texts}
    for versions in ({"r2": "v2"}, {}):  # another version, or none known: read again
        assert json.loads(keep_shown(runs(versions), OutputRoot(str(out)))[1])["gate"] == "inconclusive"
