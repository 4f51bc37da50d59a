"""Finding run folders: fingerprints, readiness, the files the stages read, scanning a
runs root on disk or in a bucket (moto's server)."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import time

import pytest

from bench_pipeline import object_store, run_folders
from bench_pipeline.object_store import ObjectInfo
from bench_pipeline.run_folders import (
    RunFolder,
    RunsRootError,
    fingerprint,
    is_ready,
    local_run_files,
    manifest_status,
    object_fingerprint,
    read_by_stages,
    ready_folders,
    scan,
)

from .run_builder import make_run, put_run, row, write_json


def test_object_fingerprint_hashes_the_three_files_versions_and_needs_results():
    files = {"manifest.json": ObjectInfo(10, "e1", 100.0), "results.jsonl": ObjectInfo(5, None, 200.5)}
    expected = hashlib.sha1(b"manifest.json:10:e1:100.000000|suite.json:-|results.jsonl:5:-:200.500000").hexdigest()
    assert object_fingerprint(files) == (expected[:16], 200.5)
    assert object_fingerprint({"results.jsonl": ObjectInfo(5)})[1] == 0.0  # no last-modified
    assert object_fingerprint({"manifest.json": ObjectInfo(10)}) is None
    changed = {**files, "results.jsonl": ObjectInfo(5, "e2", 200.5)}
    assert object_fingerprint(changed)[0] != expected[:16]


def test_read_by_stages_names_the_top_files_and_each_attempts_artifacts():
    assert [read_by_stages(k) for k in ("results.jsonl", "manifest.json", "suite.json")] == [True, True, True]
    assert read_by_stages("tasks/a/attempt-2/trace.json") and read_by_stages("tasks/a/history.json")
    assert not read_by_stages("tasks/a/pre.png") and not read_by_stages("notes/results.jsonl")
    assert not read_by_stages("history.json")  # at the top it is no attempt's


def test_a_quiet_legacy_run_is_ready_and_a_final_status_decides_otherwise(tmp_path):
    legacy = RunFolder("legacy", str(tmp_path / "legacy"), "fp", results_mtime=1000.0)
    assert is_ready(legacy, quiet_seconds=60, now=1060.0) and not is_ready(legacy, quiet_seconds=60, now=1059.0)
    for status, ready in (("completed", True), ("aborted", True), ("running", False)):
        write_json(tmp_path / status / "manifest.json", {"status": status})
        folder = RunFolder(status, str(tmp_path / status), "fp", results_mtime=0.0)
        assert is_ready(folder, quiet_seconds=10 ** 9, now=1.0) is ready
        assert manifest_status(folder.path) == status
    assert ready_folders([legacy], quiet_seconds=60, now=1060.0) == {"legacy"}


def test_manifest_status_of_a_missing_unreadable_or_odd_manifest_is_none(tmp_path):
    assert manifest_status(str(tmp_path / "none")) is None
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "manifest.json").write_text("{not json")
    assert manifest_status(str(tmp_path / "bad")) is None
    write_json(tmp_path / "list" / "manifest.json", ["completed"])
    assert manifest_status(str(tmp_path / "list")) is None
    write_json(tmp_path / "number" / "manifest.json", {"status": 3})
    assert manifest_status(str(tmp_path / "number")) is None


def test_scan_finds_sub_folders_with_results_sorted_and_notices_a_rewrite(tmp_path):
    root = tmp_path / "runs"
    make_run(root, [row("a")], run_id="r2")
    make_run(root, [row("a")], run_id="r1")
    (root / "no-results").mkdir()
    make_run(root, [row("a")], run_id=".hidden")
    (root / "a-file").write_text("x")
    found = scan(str(root))
    assert [f.run_id for f in found] == ["r1", "r2"]
    assert found[0].path == str(root / "r1") and found[0].manifest_version is None
    before = fingerprint(str(root / "r1"))
    assert before[0] == found[0].fingerprint
    results = root / "r1" / "results.jsonl"
    results.write_text(results.read_text() + "\n")
    os.utime(results, ns=(1, 10 ** 18))
    after = fingerprint(str(root / "r1"))
    assert after[0] != before[0] and after[1] == 10 ** 9
    assert fingerprint(str(root / "no-results")) is None
    assert scan(str(tmp_path / "not-made-yet")) == []


def test_a_local_runs_root_that_cannot_be_listed_is_an_error_with_the_reason(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunsRootError) as err:
        scan(str(tmp_path / "file"))
    assert str(err.value) == f"the runs root {tmp_path / 'file'} cannot be listed: Not a directory"
    again = pickle.loads(pickle.dumps(err.value))  # crosses process boundaries intact
    assert (again.root, again.reason) == (str(tmp_path / "file"), "Not a directory")


def test_local_run_files_of_a_local_root_are_the_run_folders(tmp_path):
    assert local_run_files(str(tmp_path), ["r1", "r2"]) == {"r1": tmp_path / "r1", "r2": tmp_path / "r2"}


def test_a_runs_copy_holds_exactly_the_files_the_stages_read(tmp_path, monkeypatch):
    """run_folders.read_by_stages names every file attempt_metrics.derive_attempt opens."""
    import bench_pipeline.attempt_metrics.assemble as attempt_metrics
    from bench_pipeline.pipeline import run_stages

    opened = set()
    real = attempt_metrics._read_artifact
    monkeypatch.setattr(attempt_metrics, "_read_artifact",
                        lambda ctx, folder, name: opened.add(name) or real(ctx, folder, name))
    run = make_run(tmp_path, [row("a")], artifacts={"tasks/a": {"history.json": [], "pre.png": b"x"}})
    run_stages(run).processed
    assert opened == set(run_folders.ARTIFACT_FILES)
    assert run_folders.read_by_stages("results.jsonl") and run_folders.read_by_stages("tasks/a/attempt-2/trace.json")
    assert not run_folders.read_by_stages("tasks/a/pre.png") and not run_folders.read_by_stages("notes/results.jsonl")
    assert not run_folders.read_by_stages("history.json")  # at the top it is no attempt's


def test_a_legacy_run_in_a_bucket_is_quiet_from_its_last_modified(bucket, tmp_path):
    put_run(bucket, "legacy", [row("t")], manifest={"schema_version": 1})
    (folder,) = scan(bucket.url("runs"))
    assert folder.path == bucket.url("runs/legacy")
    assert abs(folder.results_mtime - time.time()) < 120  # results.jsonl's last-modified
    assert not is_ready(folder, 60, now=folder.results_mtime + 30)
    assert is_ready(folder, 60, now=folder.results_mtime + 61)


def test_the_fingerprint_follows_size_etag_and_last_modified(bucket):
    put_run(bucket, "r", [row("t")])
    (before,) = scan(bucket.url("runs"))
    bucket.put("runs/r/tasks/t/history.json", "[1]")  # an artifact: not part of the fingerprint
    assert scan(bucket.url("runs"))[0].fingerprint == before.fingerprint
    time.sleep(1.1)  # last-modified has whole seconds
    bucket.put("runs/r/suite.json", json.dumps({"name": "suite-x", "tasks": []}))  # same bytes, rewritten
    assert scan(bucket.url("runs"))[0].fingerprint != before.fingerprint


def test_a_local_runs_root_that_cannot_be_listed_is_an_error(tmp_path):
    assert scan(str(tmp_path / "not-made-yet")) == []  # a folder not made yet holds no run
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(RunsRootError, match="a-file cannot be listed: Not a directory"):
        scan(str(tmp_path / "a-file"))


def test_status_cache_is_by_object_version(monkeypatch):
    reads = []
    monkeypatch.setattr(object_store, "read_bytes", lambda url: reads.append(url) or b'{"status": "running"}')
    assert run_folders.manifest_status("s3://b/runs/x", "1:e:1") == "running"
    assert run_folders.manifest_status("s3://b/runs/x", "1:e:1") == "running"
    assert len(reads) == 1
    assert run_folders.manifest_status("s3://b/runs/x", "2:f:2") == "running" and len(reads) == 2
    assert run_folders.manifest_status("s3://b/runs/x", "-") is None and len(reads) == 2  # listed: no manifest
