"""manifest.json values of the wrong type that change a run's numbers or its order among the
suite's runs: located findings, while what is read stays as R26 prescribes."""

from __future__ import annotations

from bench_pipeline.layouts import manifest_view
from bench_pipeline.manifest_values import manifest_findings
from bench_pipeline.pipeline import run_stages

from .run_builder import make_run, row


def reasons(manifest: dict) -> list[str]:
    found = manifest_findings(manifest_view(manifest))
    assert all((f["file"], f["status"]) == ("manifest.json", "available") for f in found)
    return [f["reason"] for f in found]


def test_a_manifest_of_the_types_run_directory_md_gives_has_no_finding():
    assert reasons({"metrics_k": 3, "started_at": "2026-11-28T10:00:00Z",
                    "planned": [{"task_id": "a", "attempts": 3}]}) == []
    assert reasons({"planned_task_attempts": [{"task_id": "a", "attempt": 1}, {"task_id": "a", "attempt": 2}]}) == []
    assert reasons({}) == [] and reasons({"metrics_k": None, "started_at": None, "planned": None}) == []


def test_each_wrong_value_is_named_with_what_was_read_instead():
    assert reasons({"metrics_k": "2", "started_at": 12, "planned": {"a": 3}}) == [
        'metrics_k is not a positive integer ("2"): k is taken from the planned attempts, else the observed ones (R26)',
        "started_at is not a string (12): the run's start is unknown, and a run without one comes before every "
        "dated run of its suite when a baseline is chosen",
        "planned is not a list (an object of 1 key): the planned attempts, and which of them are missing, are unknown",
    ]
    for k, shown in ((0, "0"), (True, "true"), (2.0, "2.0")):
        assert reasons({"metrics_k": k}) == [f"metrics_k is not a positive integer ({shown}): k is taken from the "
                                             "planned attempts, else the observed ones (R26)"]


def test_planned_entries_not_counted_are_named_by_position_in_either_layout():
    flat = {"planned": [{"task_id": "a", "attempts": 2}, {"task_id": 5, "attempts": 2}, "b",
                        {"task_id": "c", "attempts": "2"}]}
    assert reasons(flat) == ["3 of the 4 planned entries are not objects with a string task_id and a positive "
                             "integer attempts, and are not counted as planned (R26): entries 1, 2, 3 (from 0)"]
    runner = {"planned_task_attempts": [{"task_id": "a", "attempt": 1}, {"task": "b"}] + [7] * 11}
    assert reasons(runner) == ["12 of the 13 planned_task_attempts entries are not objects with a string task_id, "
                               "and are not counted as planned (R26): entries 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 2 "
                               "more (from 0)"]


def test_a_run_with_a_wrong_metrics_k_is_processed_with_the_finding_and_r26_s_k(tmp_path):
    manifest = {"status": "completed", "metrics_k": "3", "planned": [{"task_id": "t", "attempts": 2}]}
    metrics = run_stages(make_run(tmp_path, [row("t", 1), row("t", 2)], manifest=manifest)).processed.metrics
    assert metrics["coverage"]["metrics_k"] == 2  # from the planned attempts (R26)
    assert [f["reason"] for f in metrics["data_quality"]["run_files"]] == [
        'metrics_k is not a positive integer ("3"): k is taken from the planned attempts, else the observed ones (R26)']
