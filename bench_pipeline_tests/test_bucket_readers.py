"""What reads or writes files beside the stages, with its files in a bucket (moto's S3
server): the files a run's copy holds, the baselines' run index and pins file, and the output
root as the cross-run assets read and write it."""

from __future__ import annotations

import json

import pytest

from bench_pipeline import object_store, run_folders
from bench_pipeline.baselines import load_pins, pins_file, run_index
from bench_pipeline.output_root import OutputRoot

from .run_builder import make_run, row


def test_a_runs_copy_holds_exactly_the_files_the_stages_read(tmp_path, monkeypatch):
    """run_folders.read_by_stages names every file attempt_metrics.derive_attempt opens."""
    import bench_pipeline.attempt_metrics.assemble as attempt_metrics
    from bench_pipeline.pipeline import process_run

    opened = set()
    real = attempt_metrics._read_artifact
    monkeypatch.setattr(attempt_metrics, "_read_artifact",
                        lambda ctx, folder, name: opened.add(name) or real(ctx, folder, name))
    run = make_run(tmp_path, [row("a")], artifacts={"tasks/a": {"history.json": [], "pre.png": b"x"}})
    process_run(run)
    assert opened == set(run_folders.ARTIFACT_FILES)
    assert run_folders.read_by_stages("results.jsonl") and run_folders.read_by_stages("tasks/a/attempt-2/trace.json")
    assert not run_folders.read_by_stages("tasks/a/pre.png") and not run_folders.read_by_stages("notes/results.jsonl")
    assert not run_folders.read_by_stages("history.json")  # at the top it is no attempt's


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
    bucket.put("config/baselines.json", json.dumps({"suite-x": "r1", "bad": 3}))
    assert load_pins(pins_file()) == {"suite-x": "r1"}
    with pytest.raises(object_store.StoreError, match="does not exist"):
        load_pins("s3://no-such-bucket-for-bench/baselines.json")  # a pin silently lost would change comparisons


def test_the_output_root_in_a_bucket_reads_through_copies_and_writes_through_staging(bucket):
    bucket.put("reports/r1/metrics.json", "{}")
    bucket.put("reports/r1/report.html", "<html>")
    bucket.put("reports/_systems/sys-1/repeats.json", "{}")
    root = OutputRoot(bucket.url("reports"))
    assert root.has("r1", "report.html") and not root.has("r2", "report.html")
    local = root.fetch(["r1", "r2"], ("metrics.json", "comparison.json"))
    assert (local / "r1" / "metrics.json").read_text() == "{}" and not (local / "r1" / "comparison.json").exists()
    assert not (local / "r1" / "report.html").exists()  # its existence came from the listing alone
    assert (root.fetch(["sys-1"], ("repeats.json",), "_systems") / "sys-1" / "repeats.json").is_file()
    page = root.staged() / "_suites" / "s" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text("<p>")
    assert object_store.location_text(root.read_side(page)) == bucket.url("reports/_suites/s/index.html")
    staged = root.staged()
    assert root.publish() == [bucket.url("reports/_suites/s/index.html")]
    assert bucket.get("reports/_suites/s/index.html") == b"<p>" and not staged.exists()
    local_root = OutputRoot("/tmp/not-used")
    assert local_root.staged() == local_root.local and local_root.publish() == []


def test_mirror_files_reads_only_what_changed_and_drops_what_is_gone(bucket):
    bucket.put("runs/a/manifest.json", "{}")
    bucket.put("runs/b/manifest.json", "{}")
    listed = object_store.list_runs(bucket.url("runs"), ("manifest.json", "suite.json"))
    folders = [(bucket.url(f"runs/{r}"), {"manifest.json": listed[r]["manifest.json"], "suite.json": None})
               for r in ("a", "b")]
    copies = object_store.mirror_files(folders)
    assert all((copies[object_store.normalize(u)] / "manifest.json").is_file() for u, _ in folders)
    reads = []
    real = object_store.read_objects
    object_store.read_objects = lambda urls: reads.extend(urls) or real(urls)
    try:
        object_store.mirror_files(folders)
        assert reads == []  # nothing changed: nothing read
        bucket.put("runs/b/manifest.json", '{"status": "completed"}')
        listed = object_store.list_runs(bucket.url("runs"), ("manifest.json",))
        object_store.mirror_files([(bucket.url("runs/b"), {"manifest.json": listed["b"]["manifest.json"]}),
                                   (bucket.url("runs/a"), {"manifest.json": None})])
        assert reads == [bucket.url("runs/b/manifest.json")]
    finally:
        object_store.read_objects = real
    assert not (copies[bucket.url("runs/a")] / "manifest.json").exists()
    assert json.loads((copies[bucket.url("runs/b")] / "manifest.json").read_text()) == {"status": "completed"}
