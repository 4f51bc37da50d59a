"""bench_pipeline/object_store/: locations, and listing, copying and uploading against a
real S3 API (moto's server on loopback, ``conftest.s3_server``) with s3fs."""

from __future__ import annotations

import json
import threading

import pytest

from bench_pipeline import object_store as store


# --- Locations (pure) ----------------------------------------------------------------------

def test_locations():
    assert store.is_remote("s3://bucket/runs") and store.is_remote("gs://b") and store.is_remote("s3:/bucket/runs")
    assert not store.is_remote("/data/runs") and not store.is_remote("runs") and not store.is_remote("C:/runs")
    assert not store.is_remote("file:///data/runs")
    assert store.normalize("s3:/bucket/runs/") == "s3://bucket/runs"  # what pathlib makes of a URL
    assert store.normalize("S3://bucket//runs//") == "s3://bucket//runs"
    assert store.split("s3://bucket/a/b/") == ("s3", "bucket", "a/b")
    assert store.split("s3://bucket") == ("s3", "bucket", "")
    assert store.join("s3://bucket/runs/", "r1", "manifest.json") == "s3://bucket/runs/r1/manifest.json"
    assert store.join("/data/runs", "r1") == "/data/runs/r1"


def test_local_copies_name_their_objects(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    copy = store.mirror_path("s3://bench/runs/r1")
    assert copy == tmp_path / "cache" / "object-store" / "s3" / "bench" / "runs" / "r1"
    assert store.url_of(copy) == "s3://bench/runs/r1"
    assert store.url_of(copy / "tasks" / "a") == "s3://bench/runs/r1/tasks/a"
    assert store.url_of(store.mirror_path("s3://bench")) == "s3://bench"
    staged = store.staging_root()
    assert store.url_of(store.mirror_path("gs://b/reports/r1", staged)) == "gs://b/reports/r1"
    assert store.url_of(tmp_path / "runs" / "r1") is None
    assert store.location_text(copy / "metrics.json") == "s3://bench/runs/r1/metrics.json"
    assert store.location_text(tmp_path / "x") == str(tmp_path / "x")


def test_links_between_local_and_bucket_folders(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    runs, reports = tmp_path / "runs" / "r1", tmp_path / "reports" / "r1"
    assert store.relative_link(runs, reports) == "../../runs/r1"  # both local: relative, as always
    assert store.relative_link(reports, reports) == ""
    # one bucket: the keys' relative path, the same as the same layout on disk
    run_copy = store.mirror_path("s3://bench/runs/r1")
    staged = store.mirror_path("s3://bench/reports/r1", store.staging_root())
    assert store.relative_link(run_copy, staged) == "../../runs/r1"
    assert store.relative_link(store.mirror_path("s3://bench/reports/r1"), staged) == ""
    # other buckets, or a bucket run and local reports: the run's URL
    assert store.relative_link(run_copy, store.mirror_path("s3://other/reports/r1", store.staging_root())) == \
        "s3://bench/runs/r1"
    assert store.relative_link(run_copy, reports) == "s3://bench/runs/r1"
    # a local run linked from a report in a bucket: its file URI
    assert store.relative_link(runs, staged) == runs.resolve().as_uri()


def test_unsafe_keys():
    assert store.unsafe_key("tasks/a/history.json") is None
    assert "absolute" in store.unsafe_key("/etc/passwd")
    assert "empty path segment" in store.unsafe_key("tasks//history.json")
    assert "'..'" in store.unsafe_key("tasks/../../etc/passwd")
    assert "'..'" in store.unsafe_key("./results.jsonl")
    assert "NUL" in store.unsafe_key("a\x00b")


def test_errors_say_why():
    assert "the bucket 'nope' does not exist" in store.reason(FileNotFoundError("The specified bucket does not exist"),
                                                              "s3://nope/runs")
    error = store.StoreError("list", "s3://nope/runs", "the bucket 'nope' does not exist")
    assert str(error) == "cannot list s3://nope/runs: the bucket 'nope' does not exist"
    import pickle

    assert str(pickle.loads(pickle.dumps(error))) == str(error)
    assert "not installed" in store.reason(ImportError("No module named 's3fs'"), "s3://b/k")
    assert "access denied" in store.reason(PermissionError("Access Denied"), "s3://b/k")
    assert "cannot reach the object store" in store.reason(ConnectionRefusedError("refused"), "s3://b/k")


# --- Against the S3 API ----------------------------------------------------------------------

def _threads_after(call):
    before = threading.active_count()
    result = call()
    assert threading.active_count() == before, "an object-store call left a thread behind"
    return result


def test_list_runs_reads_three_files_per_run_from_listing_pages(bucket):
    for run in ("r1", "r2", "tasks"):
        bucket.put(f"runs/{run}/manifest.json", '{"status": "completed"}')
        bucket.put(f"runs/{run}/results.jsonl", "{}\n")
        bucket.put(f"runs/{run}/tasks/a/history.json", "[]")
        bucket.put(f"runs/{run}/tasks/a/attempt-2/trace.json", "{}")
    bucket.put("runs/r2/suite.json", "{}")
    bucket.put("runs/r2/elsewhere/trace.json", "{}")
    bucket.put("runs/loose.txt", "x")
    runs = _threads_after(lambda: store.list_runs(bucket.url("runs"), ("manifest.json", "suite.json", "results.jsonl")))
    assert sorted(runs) == ["r1", "r2", "tasks"]
    assert sorted(runs["r2"]) == ["manifest.json", "results.jsonl", "suite.json"]
    info = runs["r1"]["results.jsonl"]
    assert info.size == 3 and info.etag and info.modified is not None
    # the same object listed at the run level carries the same metadata
    assert store.list_objects(bucket.url("runs/r1")).objects["results.jsonl"] == info
    assert store.list_runs(bucket.url("nothing-here"), ("results.jsonl",)) == {}


def test_a_root_that_cannot_be_listed_is_an_error_with_the_reason(bucket, monkeypatch):
    with pytest.raises(store.StoreError, match=r"cannot list s3://no-such-bucket-x/runs: the bucket 'no-such-bucket-x' "
                                               "does not exist"):
        store.list_runs("s3://no-such-bucket-x/runs", ("results.jsonl",))
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    with pytest.raises(store.StoreError, match=r"no credentials .*AWS_ACCESS_KEY_ID"):
        store.list_runs(bucket.url("runs"), ("results.jsonl",))


def test_reading_single_objects(bucket):
    bucket.put("a/one.json", b"1")
    bucket.put("a/two.json", b"22")
    assert store.read_bytes(bucket.url("a/one.json")) == b"1"
    with pytest.raises(FileNotFoundError):
        store.read_bytes(bucket.url("a/missing.json"))
    got = _threads_after(lambda: store.read_objects([bucket.url("a/two.json"), bucket.url("a/missing.json")]))
    assert got == {bucket.url("a/two.json"): b"22", bucket.url("a/missing.json"): None}
    assert store.exists(bucket.url("a/one.json")) and not store.exists(bucket.url("a/none"))
    store.write_bytes(bucket.url("b/new.json"), b"{}")
    assert bucket.get("b/new.json") == b"{}"
    with pytest.raises(store.StoreError, match="does not exist"):
        store.read_bytes("s3://no-such-bucket-x/a")


def test_mirror_copies_what_changed_and_refuses_unsafe_keys(bucket, tmp_path):
    bucket.put("runs/r1/results.jsonl", "{}\n")
    bucket.put("runs/r1/tasks/a/history.json", "[]")
    bucket.put("runs/r1/tasks/a/pre.png", b"\x89PNG")
    bucket.put("runs/r1/tasks/../../../escape.json", "{}")
    bucket.put("runs/r1//etc/passwd", "x")
    bucket.put("runs/r1/tasks/b", "a file ...")
    bucket.put("runs/r1/tasks/b/history.json", "... and a folder")
    bucket.put("runs/r1/folder/", b"")  # a console's folder marker
    url = bucket.url("runs/r1")
    wanted = lambda key: not key.endswith(".png")  # noqa: E731
    first = _threads_after(lambda: store.mirror(url, wanted=wanted))
    assert first.local == store.mirror_path(url)
    assert sorted(first.fetched) == ["results.jsonl", "tasks/a/history.json", "tasks/b/history.json"]
    files = sorted(p.relative_to(first.local).as_posix() for p in first.local.rglob("*") if p.is_file())
    assert files == ["results.jsonl", "tasks/a/history.json", "tasks/b/history.json"]
    assert [(r["file"], r["status"]) for r in first.refused] == [
        ("/etc/passwd", "refused"), ("tasks/../../../escape.json", "refused"), ("tasks/b", "refused")]
    assert all(f"object {url}/" in r["reason"] and r["reason"].endswith("not fetched") for r in first.refused)
    assert not any(p.name == "escape.json" for p in (tmp_path / "cache").rglob("*"))  # never outside the copy

    again = store.mirror(url, wanted=wanted)
    assert again.fetched == [] and again.reused == 3  # nothing changed: nothing read

    bucket.put("runs/r1/results.jsonl", "{}\n{}\n")  # re-judged
    bucket.server.client().delete_object(Bucket=bucket.name, Key="runs/r1/tasks/a/history.json")
    third = store.mirror(url, wanted=wanted)
    assert third.fetched == ["results.jsonl"] and third.reused == 1
    assert (third.local / "results.jsonl").read_text() == "{}\n{}\n"
    assert not (third.local / "tasks" / "a" / "history.json").exists()  # gone from the bucket, gone here


def test_mirror_of_chosen_files_keeps_the_others(bucket):
    bucket.put("runs/r1/manifest.json", "{}")
    bucket.put("runs/r1/suite.json", "{}")
    bucket.put("runs/r1/results.jsonl", "{}\n")
    url = bucket.url("runs/r1")
    store.mirror(url)
    listing = store.Listing({"manifest.json": store.list_objects(url).objects["manifest.json"]})
    partial = store.mirror(url, listing=listing, prune=False)
    assert partial.fetched == [] and partial.reused == 1
    assert (partial.local / "results.jsonl").is_file()


def test_upload_writes_each_file_once_and_metrics_last(bucket, tmp_path, monkeypatch):
    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    for name in ("metrics.json", "attempts.jsonl", "report.html", "summary.md", "sub/x.json"):
        (out / name).write_text(name)
    order = []
    real = store._Session.fs.fget

    def recording(self):
        fs = real(self)
        put = fs.put_file
        if not getattr(put, "recording", False):
            def put_file(lpath, rpath, **kw):
                order.append(rpath.rsplit("/", 1)[-1])
                return put(lpath, rpath, **kw)
            put_file.recording = True
            fs.put_file = put_file
        return fs

    monkeypatch.setattr(store._Session, "fs", property(recording))
    written = _threads_after(lambda: store.upload(out, bucket.url("reports/r1")))
    assert sorted(written) == sorted(bucket.url(f"reports/r1/{n}") for n in
                                     ("metrics.json", "attempts.jsonl", "report.html", "summary.md", "sub/x.json"))
    assert order[-2:] == ["attempts.jsonl", "metrics.json"]
    assert bucket.get("reports/r1/sub/x.json") == b"sub/x.json"
    assert sorted(bucket.keys("reports/")) == sorted(f"reports/r1/{n}" for n in
                                                     ("metrics.json", "attempts.jsonl", "report.html", "summary.md",
                                                      "sub/x.json"))
    with pytest.raises(store.StoreError, match="cannot write s3://no-such-bucket-x/r1/"):
        store.upload(out, "s3://no-such-bucket-x/r1", ["summary.md"])


def test_mirror_files_reads_only_what_changed_and_drops_what_is_gone(bucket, monkeypatch):
    bucket.put("runs/a/manifest.json", "{}")
    bucket.put("runs/b/manifest.json", "{}")
    listed = store.list_runs(bucket.url("runs"), ("manifest.json", "suite.json"))
    folders = [(bucket.url(f"runs/{r}"), {"manifest.json": listed[r]["manifest.json"], "suite.json": None})
               for r in ("a", "b")]
    copies = store.mirror_files(folders)
    assert all((copies[store.normalize(u)] / "manifest.json").is_file() for u, _ in folders)
    reads = []
    real = store.read_objects
    # replaced where mirror_files reads it (the package only hands the name on)
    monkeypatch.setattr("bench_pipeline.object_store.copies.read_objects",
                        lambda urls: reads.extend(urls) or real(urls))
    store.mirror_files(folders)
    assert reads == []  # nothing changed: nothing read
    bucket.put("runs/b/manifest.json", '{"status": "completed"}')
    listed = store.list_runs(bucket.url("runs"), ("manifest.json",))
    store.mirror_files([(bucket.url("runs/b"), {"manifest.json": listed["b"]["manifest.json"]}),
                        (bucket.url("runs/a"), {"manifest.json": None})])
    assert reads == [bucket.url("runs/b/manifest.json")]
    assert not (copies[bucket.url("runs/a")] / "manifest.json").exists()
    assert json.loads((copies[bucket.url("runs/b")] / "manifest.json").read_text()) == {"status": "completed"}


def test_mirror_keeps_the_folders_of_objects_it_does_not_copy(bucket):
    """Whether a folder exists reads the same in the copy as in the bucket (the runner's
    attempt_<n> folder is looked for first, artifacts.py), also when none of its objects is
    wanted; a folder whose objects are all gone is pruned."""
    bucket.put("runs/r1/results.jsonl", "{}\n")
    bucket.put("runs/r1/tasks/a/attempt_1/history.json", "[]")
    bucket.put("runs/r1/tasks/a/attempt_2/pre.jpg", b"\xff\xd8")
    url = bucket.url("runs/r1")
    wanted = lambda key: not key.endswith(".jpg")  # noqa: E731
    first = store.mirror(url, wanted=wanted)
    folders = sorted(p.relative_to(first.local).as_posix() for p in first.local.rglob("*") if p.is_dir())
    assert folders == ["tasks", "tasks/a", "tasks/a/attempt_1", "tasks/a/attempt_2"]
    assert not (first.local / "tasks" / "a" / "attempt_2" / "pre.jpg").exists()
    bucket.server.client().delete_object(Bucket=bucket.name, Key="runs/r1/tasks/a/attempt_2/pre.jpg")
    again = store.mirror(url, wanted=wanted)
    assert again.fetched == [] and not (again.local / "tasks" / "a" / "attempt_2").exists()
    assert (again.local / "tasks" / "a" / "attempt_1" / "history.json").is_file()


@pytest.mark.parametrize("length", [247, 255])
def test_a_folder_with_a_name_of_up_to_255_bytes_is_copied(bucket, length):
    """A run id may be 247 bytes long (and a folder refused for its name is still listed): the
    copy's index, lock and temporary files beside it keep their names under 255 bytes, and
    its files keep theirs. Before, ``.<name>.objects.json.tmp-<pid>`` was too long and every
    main command over such a runs root failed."""
    name = "r" * length
    bucket.put(f"runs/{name}/manifest.json", "{}")
    bucket.put(f"runs/{name}/results.jsonl", "{}\n")
    url = bucket.url(f"runs/{name}")
    copy = store.mirror(url)
    assert sorted(copy.fetched) == ["manifest.json", "results.jsonl"] and copy.local.name == name
    assert all(len(p.name.encode()) <= 255 for p in copy.local.parent.iterdir())
    assert store.mirror(url).reused == 2  # its index found again: nothing read
    listed = store.list_runs(bucket.url("runs"), ("manifest.json",))
    copies = store.mirror_files([(url, {"manifest.json": listed[name]["manifest.json"]})])
    assert (copies[store.normalize(url)] / "manifest.json").read_text() == "{}"
