"""gs:// runs roots, output roots and storage bases against a GCS JSON API emulator on loopback
(``conftest.gcs_server``, gcp-storage-emulator) with the real client (gcsfs): listing runs,
mirroring a run (unsafe keys refused), single objects, a missing bucket, the s3-only lock,
and one run processed from the bucket into the bucket with the same outputs, byte for byte,
as the same run processed from a local folder."""

from __future__ import annotations

import shutil
import threading
import uuid

import dagster as dg
import pytest

from bench_pipeline import object_store as store
from bench_pipeline.generator import generate_runs
from bench_pipeline.resources import PipelineSettings
from standins.gcs_server import GcsBucket, GcsServer

from .support.bucket_pipeline import (LANGFUSE, local_files, normalized, process_requests, refresh_catalog,
                                      resources_for, tick)

NAMES = ("manifest.json", "suite.json", "results.jsonl")


@pytest.fixture()
def gcs_bucket(gcs_server: GcsServer, tmp_path, monkeypatch) -> GcsBucket:
    """A new bucket on the emulator; the test's local cache under its tmp_path (BENCH_CACHE)."""
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    return gcs_server.create_bucket(f"bench-{uuid.uuid4().hex[:12]}")


def _threads_after(call):
    before = threading.active_count()
    result = call()
    assert threading.active_count() == before, "an object-store call left a thread behind"
    return result


def test_list_runs_finds_the_run_folders_of_a_gs_root(gcs_bucket):
    for run in ("r1", "r2"):
        gcs_bucket.put(f"runs/{run}/manifest.json", '{"status": "completed"}')
        gcs_bucket.put(f"runs/{run}/results.jsonl", "{}\n")
        gcs_bucket.put(f"runs/{run}/tasks/a/history.json", "[]")
    gcs_bucket.put("runs/r2/suite.json", "{}")
    gcs_bucket.put("runs/r2/elsewhere/manifest.json", "{}")  # not a direct child: not the run's
    gcs_bucket.put("runs/loose.txt", "x")
    runs = _threads_after(lambda: store.list_runs(gcs_bucket.url("runs"), NAMES))
    assert sorted(runs) == ["r1", "r2"]
    assert sorted(runs["r1"]) == ["manifest.json", "results.jsonl"]
    assert sorted(runs["r2"]) == ["manifest.json", "results.jsonl", "suite.json"]
    info = runs["r1"]["results.jsonl"]
    resource = gcs_bucket.info("runs/r1/results.jsonl")
    assert info.size == 3 and info.etag == resource["etag"] and info.modified is not None
    assert store.list_objects(gcs_bucket.url("runs/r1")).objects["results.jsonl"] == info
    assert store.list_runs(gcs_bucket.url("nothing-here"), NAMES) == {}  # an empty prefix: no runs
    gcs_bucket.put("runs/r1/results.jsonl", "{}\n{}\n")  # rewritten: a new version token
    again = store.list_runs(gcs_bucket.url("runs"), NAMES)["r1"]["results.jsonl"]
    assert again.size == 6 and again.version != info.version


def test_mirror_copies_a_run_and_refuses_unsafe_keys(gcs_bucket, tmp_path):
    gcs_bucket.put("runs/r1/results.jsonl", "{}\n")
    gcs_bucket.put("runs/r1/tasks/a/history.json", "[]")
    gcs_bucket.put("runs/r1/tasks/../../../escape.json", "{}")
    gcs_bucket.put("runs/r1//etc/passwd", "x")
    url = gcs_bucket.url("runs/r1")
    first = _threads_after(lambda: store.mirror(url))
    assert first.local == tmp_path / "cache" / "object-store" / "gs" / gcs_bucket.name / "runs" / "r1"
    assert sorted(first.fetched) == ["results.jsonl", "tasks/a/history.json"]
    assert (first.local / "tasks" / "a" / "history.json").read_text() == "[]"
    assert [(r["file"], r["status"]) for r in first.refused] == [
        ("/etc/passwd", "refused"), ("tasks/../../../escape.json", "refused")]
    assert f"object {url}/tasks/../../../escape.json: a '.' or '..' path segment" in first.refused[1]["reason"]
    assert not any(p.name == "escape.json" for p in (tmp_path / "cache").rglob("*"))
    again = store.mirror(url)
    assert again.fetched == [] and again.reused == 2  # nothing changed: nothing read
    gcs_bucket.put("runs/r1/results.jsonl", "{}\n{}\n")
    third = store.mirror(url)
    assert third.fetched == ["results.jsonl"] and (third.local / "results.jsonl").read_text() == "{}\n{}\n"


def test_single_objects_and_uploads(gcs_bucket, tmp_path):
    gcs_bucket.put("a/one.json", b"1")
    assert store.read_bytes(gcs_bucket.url("a/one.json")) == b"1"
    with pytest.raises(FileNotFoundError, match="no such object"):
        store.read_bytes(gcs_bucket.url("a/missing.json"))
    got = _threads_after(lambda: store.read_objects([gcs_bucket.url("a/one.json"), gcs_bucket.url("a/missing.json")]))
    assert got == {gcs_bucket.url("a/one.json"): b"1", gcs_bucket.url("a/missing.json"): None}
    assert store.exists(gcs_bucket.url("a/one.json")) and not store.exists(gcs_bucket.url("a/none"))
    store.write_bytes(gcs_bucket.url("b/new.json"), b"{}")
    assert gcs_bucket.get("b/new.json") == b"{}"
    out = tmp_path / "out"
    out.mkdir()
    for name in ("metrics.json", "summary.md"):
        (out / name).write_text(name)
    written = _threads_after(lambda: store.upload(out, gcs_bucket.url("reports/r1")))
    assert written == [gcs_bucket.url("reports/r1/summary.md"), gcs_bucket.url("reports/r1/metrics.json")]
    assert gcs_bucket.get("reports/r1/metrics.json") == b"metrics.json"


def test_a_missing_bucket_is_named_and_locks_are_s3_only(gcs_server, gcs_bucket):
    missing = "the bucket 'no-such-bucket-g' does not exist"
    for call, action in ((lambda: store.list_runs("gs://no-such-bucket-g/runs", NAMES), "list"),
                         (lambda: store.list_objects("gs://no-such-bucket-g/runs/r1"), "list"),
                         (lambda: store.read_bytes("gs://no-such-bucket-g/a.json"), "read"),
                         (lambda: store.read_objects(["gs://no-such-bucket-g/a.json"]), "read"),
                         (lambda: store.exists("gs://no-such-bucket-g/a.json"), "read"),
                         (lambda: store.write_bytes("gs://no-such-bucket-g/a.json", b"{}"), "write")):
        with pytest.raises(store.StoreError) as caught:
            call()
        assert str(caught.value).startswith(f"cannot {action} gs://no-such-bucket-g/") and missing in str(caught.value)
    with pytest.raises(store.StoreError, match=r"cannot lock gs://.*/locks/x: the publication lock needs conditional "
                                               r"writes .* implemented for s3:// only, not gs://"):
        store.create_exclusive(gcs_bucket.url("locks/x"), b"{}")


def test_a_sensor_tick_on_a_missing_bucket_says_so(gcs_server, tmp_path):
    settings = PipelineSettings(runs_root="gs://no-such-bucket-g/runs", output_root=str(tmp_path / "o"),
                                storage_base=str(tmp_path / "s"))
    with dg.instance_for_test() as instance, pytest.raises(Exception) as caught:
        tick(instance, settings)
    text, error = "", caught.value
    while error is not None:  # the sensor's own error under Dagster's wrapper
        text, error = text + str(error), error.__cause__ or error.__context__
    assert "gs://no-such-bucket-g/runs cannot be listed: the bucket 'no-such-bucket-g' does not exist" in text
    assert "no ready run folders" not in text


@pytest.mark.slow
def test_a_run_in_gs_gives_the_same_outputs_as_on_disk(gcs_bucket, tmp_path, monkeypatch):
    for var in LANGFUSE:
        monkeypatch.delenv(var, raising=False)
    (run,) = generate_runs(tmp_path / "generated", runs=1, seed=7, tasks=6, repeats=2, history_messages=8)
    shutil.copytree(tmp_path / "generated", tmp_path / "local" / "runs")
    local = PipelineSettings(runs_root=str(tmp_path / "local" / "runs"), output_root=str(tmp_path / "local" / "reports"),
                             storage_base=str(tmp_path / "local" / "storage"), quiet_seconds=300)
    gcs_bucket.upload_folder(tmp_path / "generated", "runs")
    remote = PipelineSettings(runs_root=gcs_bucket.url("runs"), output_root=gcs_bucket.url("reports"),
                              storage_base=gcs_bucket.url("storage"), quiet_seconds=300)
    for settings in (local, remote):
        resources = resources_for(settings)
        with dg.instance_for_test() as instance:
            first = tick(instance, settings)
            assert process_requests(instance, resources, first) == [run.name]
            refresh_catalog(instance, resources)
            assert tick(instance, settings, first.cursor).run_requests == []  # nothing changed
    here = local_files(tmp_path / "local" / "reports")
    there = {k[len("reports/"):]: gcs_bucket.get(k) for k in gcs_bucket.keys("reports/")}
    assert sorted(here) == sorted(there) and f"{run.name}/metrics.json" in there
    for name in here:
        mine, theirs = normalized(here, name), normalized(there, name)
        if name.startswith("_suites/"):  # its compare command names the run folders
            mine = mine.replace(str(tmp_path / "local" / "runs").encode(), b"<runs>")
            theirs = theirs.replace(gcs_bucket.url("runs").encode(), b"<runs>")
        assert mine == theirs, name
    assert gcs_bucket.keys(f"storage/attempt_metrics/{run.name}")  # the frames in the bucket too
