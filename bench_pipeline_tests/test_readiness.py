"""Which run folders are ready (readiness.py): a manifest status decides, else the runner's
own outputs, else a quiet results file; why a run is not ready; manifests read once per
version in a bucket (moto's server)."""

from __future__ import annotations

import os
import time

from bench_pipeline import object_store, readiness
from bench_pipeline.readiness import is_ready, manifest_status, ready_folders
from bench_pipeline.run_folders import RunFolder, fingerprint, scan

from .run_builder import RUNNER_MANIFEST, make_run, put_run, row, write_json


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


def test_a_status_beside_values_orjson_refuses_is_still_the_status(tmp_path):
    """NaN or an integer beyond 64 bits elsewhere in manifest.json: the reader keeps the file
    (artifacts.loads_json), so readiness reads its status too (a running run is not ready)."""
    for name, extra in (("nan", "NaN"), ("big", "1" + "0" * 400), ("long", "9" * 5000)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "manifest.json").write_text('{"status": "running", "x": ' + extra + "}")
        assert manifest_status(str(tmp_path / name)) == "running", name
        assert not is_ready(RunFolder(name, str(tmp_path / name), "fp", results_mtime=0.0),
                            quiet_seconds=0, now=10.0 ** 9)


def test_why_a_run_is_not_ready_an_unreadable_manifest_named(tmp_path):
    """The main command says why each run is left for later; a manifest.json that is not
    valid JSON has no status, so its run is taken for a legacy run, and the reason says so."""
    root = tmp_path / "runs"
    make_run(root, [row("t")], run_id="running", manifest={"status": "running"})
    make_run(root, [row("t")], run_id="legacy", manifest={"schema_version": 1})
    broken = make_run(root, [row("t")], run_id="broken")
    (broken / "manifest.json").write_text('{"status": "completed",')  # cut short
    listed = make_run(root, [row("t")], run_id="a-list")
    (listed / "manifest.json").write_text("[]")
    folders = {f.run_id: f for f in scan(str(root))}
    assert ready_folders(list(folders.values()), 300) == set()
    reasons = {run_id: readiness.waiting_reason(folder, 300) for run_id, folder in folders.items()}
    assert reasons["running"] == "manifest status 'running', not completed or aborted"
    quiet = "ready once its results file has been quiet for BENCH_QUIET_SECONDS=300 s"
    assert reasons["legacy"] == f"no manifest status and no runner's metrics.json or summary.md yet, {quiet}"
    assert reasons["broken"].startswith("its manifest.json is unreadable (not valid JSON (")
    assert reasons["broken"].endswith(
        f"): with no status to say whether the run is finished, it is taken for a legacy run (no manifest "
        f"status), {quiet}; its report will list the broken manifest under data quality")
    assert reasons["a-list"].startswith("its manifest.json is unreadable (not a JSON object): ")
    assert readiness.manifest_problem(str(tmp_path / "no-manifest")) is None  # a legacy run may have none


def test_a_manifest_that_is_a_fifo_is_never_waited_on(tmp_path):
    """A FIFO in place of manifest.json (nothing ever writes to it) would block a plain read
    forever, and with it the sensor's tick: it is a file that cannot be read."""
    run = make_run(tmp_path / "runs", [row("t")], run_id="fifo")
    (run / "manifest.json").unlink()
    os.mkfifo(run / "manifest.json")
    assert readiness.manifest_status(str(run)) is None
    assert readiness.manifest_problem(str(run)) == "it cannot be read: not a regular file"


def test_a_legacy_run_in_a_bucket_is_quiet_from_its_last_modified(bucket, tmp_path):
    put_run(bucket, "legacy", [row("t")], manifest={"schema_version": 1})
    (folder,) = scan(bucket.url("runs"))
    assert folder.path == bucket.url("runs/legacy")
    assert abs(folder.results_mtime - time.time()) < 120  # results.jsonl's last-modified
    assert not is_ready(folder, 60, now=folder.results_mtime + 30)
    assert is_ready(folder, 60, now=folder.results_mtime + 61)


def test_a_status_in_a_bucket_beside_values_orjson_refuses_is_still_the_status(bucket):
    """As on disk: NaN or a long integer elsewhere in a bucket's manifest.json leaves its status."""
    put_run(bucket, "r", [row("t")])
    bucket.put("runs/r/manifest.json", '{"status": "running", "x": NaN, "y": ' + "9" * 5000 + "}")
    (folder,) = scan(bucket.url("runs"))
    assert manifest_status(folder.path, folder.manifest_version) == "running"
    assert not is_ready(folder, 0, now=10.0 ** 9)


def test_status_cache_is_by_object_version(monkeypatch):
    reads = []
    monkeypatch.setattr(object_store, "read_bytes", lambda url: reads.append(url) or b'{"status": "running"}')
    assert readiness.manifest_status("s3://b/runs/x", "1:e:1") == "running"
    assert readiness.manifest_status("s3://b/runs/x", "1:e:1") == "running"
    assert len(reads) == 1
    assert readiness.manifest_status("s3://b/runs/x", "2:f:2") == "running" and len(reads) == 2
    assert readiness.manifest_status("s3://b/runs/x", "-") is None and len(reads) == 2  # listed: no manifest


# --- The runner's layout: readiness without a status, the re-judged copy -------------------

#: The runner's manifest: flat keys, no status (run-directory.md "The runner's layout").


def _runner_runs(root):
    """Runner runs in each readiness case, just written (results.jsonl new)."""
    make_run(root, [row("t")], run_id="with-metrics", manifest=RUNNER_MANIFEST)
    (root / "with-metrics" / "metrics.json").write_text("{}")
    make_run(root, [row("t")], run_id="with-summary", manifest=RUNNER_MANIFEST)
    (root / "with-summary" / "summary.md").write_text("# run\n")
    make_run(root, [row("t")], run_id="with-neither", manifest=RUNNER_MANIFEST)  # crashed, or still writing
    make_run(root, [row("t")], run_id="running", manifest={**RUNNER_MANIFEST, "status": "running"})
    (root / "running" / "metrics.json").write_text("{}")
    make_run(root, [row("t")], run_id="no-manifest", manifest={})
    (root / "no-manifest" / "manifest.json").unlink()
    (root / "no-manifest" / "summary.md").write_text("# run\n")


def test_without_a_status_the_runners_metrics_or_summary_make_a_run_ready_at_once(tmp_path):
    root = tmp_path / "runs"
    _runner_runs(root)
    (root / "with-neither" / "metrics.json").mkdir()  # a folder of that name: not the runner's file
    folders = {f.run_id: f for f in scan(str(root))}
    now = max(f.results_mtime for f in folders.values()) + 1  # results written a second ago
    ready = {name: is_ready(f, quiet_seconds=3600, now=now) for name, f in folders.items()}
    assert ready == {"with-metrics": True, "with-summary": True, "with-neither": False,
                     "running": False,  # an explicit status decides, whatever the folder holds
                     "no-manifest": True}
    assert ready_folders(list(folders.values()), quiet_seconds=3600, now=now) == {
        "with-metrics", "with-summary", "no-manifest"}
    # with neither, the quiet rule of legacy runs
    neither = folders["with-neither"]
    assert is_ready(neither, quiet_seconds=60, now=neither.results_mtime + 61)
    assert not is_ready(neither, quiet_seconds=60, now=neither.results_mtime + 59)
    assert not is_ready(folders["running"], quiet_seconds=0, now=now + 10 ** 6)  # never, while running
    # the runner's outputs do not change what a run is, nor its fingerprint
    before = fingerprint(str(root / "with-neither"))
    (root / "with-neither" / "summary.md").write_text("# run\n")
    assert fingerprint(str(root / "with-neither")) == before
    assert is_ready(RunFolder("with-neither", str(root / "with-neither"), before[0], before[1]), 3600, now=now)


def test_a_status_still_decides_and_the_runners_outputs_are_only_stat_ed(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    _runner_runs(root)
    make_run(root, [row("t")], run_id="completed", manifest={"status": "completed"})
    make_run(root, [row("t")], run_id="aborted", manifest={"status": "aborted"})
    folders = scan(str(root))
    opened = []
    real_open, real_os_open = open, os.open
    monkeypatch.setattr("builtins.open", lambda path, *a, **k: opened.append(os.path.basename(path))
                        or real_open(path, *a, **k))
    monkeypatch.setattr(os, "open", lambda path, *a, **k: opened.append(os.path.basename(path))
                        or real_os_open(path, *a, **k))
    ready = ready_folders(folders, quiet_seconds=3600, now=time.time())
    assert ready == {"with-metrics", "with-summary", "no-manifest", "completed", "aborted"}
    assert set(opened) == {"manifest.json"}  # metrics.json and summary.md are never read
