"""Finding run folders: fingerprints, the files the stages read, scanning a runs root on
disk or in a bucket (moto's server), a runs root that cannot be listed or was emptied. Which
of them are ready: test_readiness.py."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import time

import pytest

from bench_pipeline import object_store, run_folders
from bench_pipeline.object_store import ObjectInfo
from bench_pipeline.readiness import is_ready, ready_folders
from bench_pipeline.run_folders import (
    EmptyRunsRootError,
    RunsRootError,
    fingerprint,
    local_run_files,
    object_fingerprint,
    read_by_stages,
    scan,
)

from .run_builder import RUNNER_MANIFEST, make_run, put_run, row


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
    not_runs: list[str] = []  # the folders that are not runs, found on the way (hidden ones aside)
    assert [f.run_id for f in scan(str(root), not_runs)] == ["r1", "r2"] and not_runs == ["no-results"]


def test_a_local_runs_root_that_cannot_be_listed_is_an_error_with_the_reason(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunsRootError) as err:
        scan(str(tmp_path / "file"))
    assert str(err.value) == f"the runs root {tmp_path / 'file'} cannot be listed: Not a directory"
    again = pickle.loads(pickle.dumps(err.value))  # crosses process boundaries intact
    assert (again.root, again.reason) == (str(tmp_path / "file"), "Not a directory")


def test_a_local_runs_root_that_does_not_exist_is_empty_until_runs_processed_from_it_are_known(tmp_path):
    """Not made yet, it holds no run; once runs were processed (``known``), a missing folder
    (a mistyped BENCH_RUNS_ROOT, a missing mount point) is an error, not every run gone."""
    missing = tmp_path / "no-such-runs"
    assert scan(str(missing)) == [] and scan(str(missing), known=0) == []
    with pytest.raises(RunsRootError) as err:
        scan(str(missing), known=3)
    assert str(err.value) == (f"the runs root {missing} cannot be listed: no such folder, and 3 run(s) processed "
                              "before are known: none is removed; check BENCH_RUNS_ROOT (a missing mount point?); "
                              "if every run was removed on purpose, delete the runs' partitions (in the UI: an "
                              "asset's page, Delete partitions) or start from a new instance (an empty DAGSTER_HOME)")


def test_a_runs_root_that_holds_no_run_folder_while_runs_are_known_is_an_error(tmp_path):
    """An empty mount point (or a root holding only folders that are not runs) once runs were
    processed from it is an error that removes nothing, not every run removed at once; before
    any run is known it is an empty runs root. One run folder left is a root whose other runs
    were removed."""
    root = tmp_path / "runs"
    (root / "notes").mkdir(parents=True)  # not a run: no results.jsonl
    not_runs: list[str] = []
    assert scan(str(root), not_runs) == [] and not_runs == ["notes"]
    with pytest.raises(EmptyRunsRootError) as err:
        scan(str(root), known=2)
    assert isinstance(err.value, RunsRootError)  # stops the main command and the sensor's tick alike
    assert str(err.value) == (f"the runs root {root} holds no run folder: 2 run(s) processed before are known: "
                              "none is removed; check BENCH_RUNS_ROOT (an empty mount point? a bucket prefix with a "
                              "typo?); if every run was removed on purpose, delete the runs' partitions (in the UI: "
                              "an asset's page, Delete partitions) or start from a new instance (an empty "
                              "DAGSTER_HOME)")
    again = pickle.loads(pickle.dumps(err.value))  # crosses process boundaries as what it is
    assert type(again) is EmptyRunsRootError and str(again) == str(err.value)
    make_run(root, [row("t")], run_id="run-a")
    assert [f.run_id for f in scan(str(root), known=2)] == ["run-a"]


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


def _rejudged(run, text: str, mtime_ns: int | None = None):
    path = run / "results.rejudged.jsonl"
    path.write_text(text)
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


def test_the_rejudged_copy_changes_the_fingerprint_and_gives_the_quiet_time(tmp_path):
    run = make_run(tmp_path / "runs", [row("t")], run_id="r", manifest=RUNNER_MANIFEST)
    os.utime(run / "results.jsonl", ns=(10 ** 18, 10 ** 18))
    plain = fingerprint(str(run))
    # without a re-judged copy the fingerprint is the one it has always been (no run is
    # processed again only because the copy became part of it)
    parts = [f"{n}:{os.stat(run / n).st_size}:{os.stat(run / n).st_mtime_ns}"
             for n in ("manifest.json", "suite.json", "results.jsonl")]
    assert plain == (hashlib.sha1("|".join(parts).encode()).hexdigest()[:16], 10 ** 9)

    path = _rejudged(run, json.dumps(row("t", status="failed")) + "\n", 2 * 10 ** 18)
    appeared = fingerprint(str(run))
    assert appeared[0] != plain[0] and appeared[1] == 2 * 10 ** 9  # quiet time: the file read
    assert scan(str(tmp_path / "runs"))[0].fingerprint == appeared[0]
    path.write_text(json.dumps(row("t", status="passed")) + "\n")  # re-judged again: changed
    os.utime(path, ns=(3 * 10 ** 18, 3 * 10 ** 18))
    changed = fingerprint(str(run))
    assert changed[0] not in (plain[0], appeared[0]) and changed[1] == 3 * 10 ** 9
    path.unlink()  # removed: results.jsonl is the run's results again
    assert fingerprint(str(run)) == plain
    path.mkdir()  # not a regular file: not the run's results (layouts.results_file_name)
    assert fingerprint(str(run)) == plain

    legacy = make_run(tmp_path / "runs", [row("t")], run_id="legacy", manifest={"schema_version": 1})
    os.utime(legacy / "results.jsonl", ns=(10 ** 18, 10 ** 18))
    _rejudged(legacy, json.dumps(row("t")) + "\n")  # just written
    folder = next(f for f in scan(str(tmp_path / "runs")) if f.run_id == "legacy")
    assert not is_ready(folder, quiet_seconds=60, now=time.time())  # quiet from the re-judged copy
    assert is_ready(folder, quiet_seconds=60, now=time.time() + 61)


def test_a_folder_with_only_a_rejudged_copy_is_no_run_until_results_jsonl_is_there(tmp_path):
    run = make_run(tmp_path / "runs", [row("t")], run_id="only-rejudged", manifest=RUNNER_MANIFEST)
    os.replace(run / "results.jsonl", run / "results.rejudged.jsonl")
    (run / "metrics.json").write_text("{}")
    assert fingerprint(str(run)) is None and scan(str(tmp_path / "runs")) == []
    files = {"manifest.json": ObjectInfo(10, "e1", 100.0), "results.rejudged.jsonl": ObjectInfo(5, "e2", 200.0),
             "metrics.json": ObjectInfo(2, "e3", 300.0)}
    assert object_fingerprint(files) is None
    (run / "results.jsonl").write_text(json.dumps(row("t")) + "\n")
    assert [f.run_id for f in scan(str(tmp_path / "runs"))] == ["only-rejudged"]


def test_object_fingerprint_covers_the_rejudged_copy_when_present():
    files = {"manifest.json": ObjectInfo(10, "e1", 100.0), "results.jsonl": ObjectInfo(5, None, 200.5)}
    plain = object_fingerprint(files)
    runner = object_fingerprint({**files, "metrics.json": ObjectInfo(3, "m", 300.0)})
    assert runner == plain  # the runner's outputs are not part of it
    rejudged = {**files, "results.rejudged.jsonl": ObjectInfo(7, "e9", 400.25)}
    expected = hashlib.sha1(b"manifest.json:10:e1:100.000000|suite.json:-|results.jsonl:5:-:200.500000|"
                            b"results.rejudged.jsonl:7:e9:400.250000").hexdigest()
    assert object_fingerprint(rejudged) == (expected[:16], 400.25)
    changed = {**rejudged, "results.rejudged.jsonl": ObjectInfo(7, "e10", 400.25)}
    assert object_fingerprint(changed)[0] not in (expected[:16], plain[0])
    assert object_fingerprint({**files, "results.rejudged.jsonl": ObjectInfo(7)})[1] == 0.0  # no last-modified


def test_a_runs_copy_holds_the_rejudged_copy_and_the_runners_attempt_files():
    assert read_by_stages("results.rejudged.jsonl")
    for name in ("history.json", "episode.json", "trace.json"):
        assert read_by_stages(f"tasks/find_item_011/attempt_2/{name}") and read_by_stages(f"tasks/t/{name}")
    for key in ("metrics.json", "summary.md", "report.html", "tasks/t/attempt_1/judge.json",
                "tasks/t/attempt_1/pre.jpg", "tasks/t/attempt_1/environment_state.json",
                "tasks/t/attempt_1/setup.json"):
        assert not read_by_stages(key), key


def _put_runner_run(bucket, run_id: str, *, done: tuple[str, ...] = ("metrics.json", "summary.md"),
                    manifest: dict | None = None) -> None:
    put_run(bucket, run_id, [row("t", artifact_dir=f"/Users/x/bench/runs/{run_id}/tasks/t/attempt_1"),
                             row("t", 2, artifact_dir=f"/Users/x/bench/runs/{run_id}/tasks/t/attempt_2")],
            manifest=RUNNER_MANIFEST if manifest is None else manifest)
    for name in done:
        bucket.put(f"runs/{run_id}/{name}", "{}")


def test_readiness_in_a_bucket_comes_from_the_listing_without_a_request_per_run(bucket, monkeypatch):
    _put_runner_run(bucket, "with-metrics", done=("metrics.json",))
    _put_runner_run(bucket, "with-summary", done=("summary.md", "report.html"))
    _put_runner_run(bucket, "with-neither", done=())
    _put_runner_run(bucket, "running", done=("metrics.json",), manifest={**RUNNER_MANIFEST, "status": "running"})
    bucket.put("runs/with-neither/tasks/t/attempt_1/metrics.json", "{}")  # not the runner's: not at the top
    reads = []
    real = object_store.read_objects
    monkeypatch.setattr(object_store, "read_objects", lambda urls: reads.extend(urls) or real(urls))
    monkeypatch.setattr(object_store, "read_bytes", lambda url: pytest.fail(f"read alone: {url}"))
    folders = {f.run_id: f for f in scan(bucket.url("runs"))}
    assert sorted(folders) == ["running", "with-metrics", "with-neither", "with-summary"]
    assert set(folders["with-metrics"].objects) == {"manifest.json", "suite.json", "results.jsonl", "metrics.json"}
    now = max(f.results_mtime for f in folders.values()) + 1
    assert ready_folders(list(folders.values()), quiet_seconds=3600, now=now) == {"with-metrics", "with-summary"}
    assert sorted(reads) == sorted(bucket.url(f"runs/{r}/manifest.json") for r in folders)  # the manifests, once
    assert ready_folders(list(folders.values()), quiet_seconds=3600, now=now) == {"with-metrics", "with-summary"}
    assert len(reads) == 4  # asked again: nothing read (statuses kept by version)
    neither = folders["with-neither"]
    assert is_ready(neither, 60, now=neither.results_mtime + 61)
    assert not is_ready(neither, 60, now=neither.results_mtime)


def test_the_rejudged_copy_in_a_bucket_changes_the_fingerprint(bucket):
    _put_runner_run(bucket, "r")
    (plain,) = scan(bucket.url("runs"))
    bucket.put("runs/r/results.rejudged.jsonl", json.dumps(row("t", status="failed")) + "\n")
    (appeared,) = scan(bucket.url("runs"))
    assert appeared.fingerprint != plain.fingerprint
    assert appeared.results_mtime == appeared.objects["results.rejudged.jsonl"].modified
    bucket.put("runs/r/results.rejudged.jsonl", json.dumps(row("t", status="passed")) + "\n")  # re-judged again
    (changed,) = scan(bucket.url("runs"))
    assert changed.fingerprint not in (plain.fingerprint, appeared.fingerprint)
    bucket.server.client().delete_object(Bucket=bucket.name, Key="runs/r/results.rejudged.jsonl")
    assert scan(bucket.url("runs"))[0].fingerprint == plain.fingerprint
    bucket.put("runs/r/tasks/t/attempt_1/results.rejudged.jsonl", "{}\n")  # not at the top: not the run's
    assert scan(bucket.url("runs"))[0].fingerprint == plain.fingerprint


def test_a_runner_run_in_a_bucket_is_copied_with_its_rejudged_copy_and_attempt_folders(bucket):
    _put_runner_run(bucket, "r")
    for n in (1, 2):
        for name in ("history.json", "episode.json", "trace.json"):
            bucket.put(f"runs/r/tasks/t/attempt_{n}/{name}", "{}")
        for name in ("judge.json", "pre.jpg", "post.jpg", "environment_state.json"):
            bucket.put(f"runs/r/tasks/t/attempt_{n}/{name}", "x")
    bucket.put("runs/r/tasks/u/attempt_3/pre.jpg", "x")  # an attempt folder with no file the stages read
    bucket.put("runs/r/results.rejudged.jsonl", json.dumps(row("t", status="failed")) + "\n")
    copy = run_folders.fetch_run(bucket.url("runs/r"))
    files = sorted(p.relative_to(copy.local).as_posix() for p in copy.local.rglob("*") if p.is_file())
    assert files == ["manifest.json", "results.jsonl", "results.rejudged.jsonl", "suite.json",
                     *(f"tasks/t/attempt_{n}/{name}" for n in (1, 2) for name in ("episode.json", "history.json",
                                                                                 "trace.json")),
                     "tasks/t/history.json"]  # put_run's flat one
    assert (copy.local / "tasks" / "u" / "attempt_3").is_dir()  # found as in the bucket (artifacts.py)
    (listed,) = scan(bucket.url("runs"))
    assert run_folders.object_fingerprint_of(copy) == (listed.fingerprint, listed.results_mtime)

    from bench_pipeline.artifacts import resolve_artifact_dir

    real = os.path.realpath(copy.local)
    assert resolve_artifact_dir(copy.local, real, None, "u", 3).relative == "tasks/u/attempt_3"
    # the re-judged copy removed: gone from the local copy too, and the fingerprint follows
    bucket.server.client().delete_object(Bucket=bucket.name, Key="runs/r/results.rejudged.jsonl")
    bucket.server.client().delete_object(Bucket=bucket.name, Key="runs/r/tasks/u/attempt_3/pre.jpg")
    again = run_folders.fetch_run(bucket.url("runs/r"))
    assert again.fetched == [] and not (again.local / "results.rejudged.jsonl").exists()
    assert not (again.local / "tasks" / "u").exists()  # no object left in it: pruned, as the bucket shows
    assert run_folders.object_fingerprint_of(again)[0] == scan(bucket.url("runs"))[0].fingerprint != listed.fingerprint


@pytest.fixture()
def gcs_bucket(gcs_server, tmp_path, monkeypatch):
    """A new bucket on the GCS emulator (conftest.gcs_server); the local cache under tmp_path."""
    import uuid

    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    return gcs_server.create_bucket(f"bench-{uuid.uuid4().hex[:12]}")


def test_a_runner_run_in_a_gs_root_readiness_and_rejudged_copy(gcs_bucket):
    for run_id, done in (("done", ("summary.md",)), ("writing", ())):
        gcs_bucket.put(f"runs/{run_id}/manifest.json", json.dumps(RUNNER_MANIFEST))
        gcs_bucket.put(f"runs/{run_id}/results.jsonl", json.dumps(row("t")) + "\n")
        gcs_bucket.put(f"runs/{run_id}/tasks/t/attempt_1/history.json", "[]")
        for name in done:
            gcs_bucket.put(f"runs/{run_id}/{name}", "# run\n")
    folders = {f.run_id: f for f in scan(gcs_bucket.url("runs"))}
    now = max(f.results_mtime for f in folders.values()) + 1
    assert ready_folders(list(folders.values()), quiet_seconds=3600, now=now) == {"done"}
    gcs_bucket.put("runs/done/results.rejudged.jsonl", json.dumps(row("t", status="failed")) + "\n")
    appeared = {f.run_id: f for f in scan(gcs_bucket.url("runs"))}
    assert appeared["done"].fingerprint != folders["done"].fingerprint
    assert appeared["writing"].fingerprint == folders["writing"].fingerprint
    gcs_bucket.put("runs/done/results.rejudged.jsonl", json.dumps(row("t", status="passed")) + "\n")
    assert scan(gcs_bucket.url("runs"))[0].fingerprint not in (folders["done"].fingerprint,
                                                                appeared["done"].fingerprint)
    copy = run_folders.fetch_run(gcs_bucket.url("runs/done"))
    assert (copy.local / "results.rejudged.jsonl").read_text() == json.dumps(row("t", status="passed")) + "\n"
    assert (copy.local / "tasks" / "t" / "attempt_1" / "history.json").is_file()
    assert not (copy.local / "summary.md").exists()
