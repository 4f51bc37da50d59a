"""The run-folder sensor over a runs root in a bucket (moto's S3 server, s3fs), and a runs
root that cannot be listed: an error with the reason, never "no ready run folders"."""

from __future__ import annotations

import json

import dagster as dg
import pytest

from bench_pipeline import object_store
from bench_pipeline.partitions import runs_partitions
from bench_pipeline.resources import PipelineSettings
from bench_pipeline.run_folders import RunsRootError
from bench_pipeline.sensors.run_folder_sensor import GONE, NOT_RUNS, evaluate_run_folders

from ..dagster_helpers import tick_run_folder_sensor
from ..run_builder import put_run, row


def bucket_settings(bucket, tmp_path, quiet_seconds: int = 300) -> PipelineSettings:
    return PipelineSettings(runs_root=bucket.url("runs"), output_root=bucket.url("reports"),
                            storage_base=str(tmp_path / "storage"), quiet_seconds=quiet_seconds)


class Requests:
    """Counts the object-store calls a tick makes."""

    def __init__(self, monkeypatch):
        self.listings, self.reads = 0, []
        list_runs, read_bytes, read_objects = object_store.list_runs, object_store.read_bytes, object_store.read_objects

        def counted_list(*a, **k):
            self.listings += 1
            return list_runs(*a, **k)

        def counted_read(url):
            self.reads.append(url)
            return read_bytes(url)

        def counted_reads(urls):
            urls = list(urls)
            self.reads.extend(urls)
            return read_objects(urls)

        monkeypatch.setattr(object_store, "list_runs", counted_list)
        monkeypatch.setattr(object_store, "read_bytes", counted_read)
        monkeypatch.setattr(object_store, "read_objects", counted_reads)


def test_new_not_ready_changed_and_deleted_runs_in_a_bucket(bucket, tmp_path, monkeypatch):
    settings = bucket_settings(bucket, tmp_path, quiet_seconds=3600)
    put_run(bucket, "run-a", [row("t")])
    put_run(bucket, "run-b", [row("t")], manifest={"status": "running"})
    put_run(bucket, "run-legacy", [row("t")], manifest={})  # no status, just written
    bucket.put("runs/not-a-run/notes.txt", "x")
    bucket.put("runs/half-uploaded/manifest.json", "{}")  # no results.jsonl: not a run (yet)
    requests = Requests(monkeypatch)
    with dg.instance_for_test() as instance:
        resources = {"settings": settings}
        first = tick_run_folder_sensor(instance, resources)
        assert [r.partition_key for r in first.run_requests] == ["run-a"]
        assert instance.get_dynamic_partitions(runs_partitions.name) == ["run-a"]
        assert requests.listings == 1 and len(requests.reads) == 3  # each new run's manifest, once (one batch)
        # the folders the listing shows without results.jsonl, named once (notes.txt is not listed)
        assert json.loads(first.cursor)[NOT_RUNS] == ["half-uploaded"]

        # Nothing changed: one listing, no object read at all.
        requests.listings, requests.reads = 0, []
        second = tick_run_folder_sensor(instance, resources, first.cursor)
        assert second.run_requests == [] and json.loads(second.cursor) == json.loads(first.cursor)
        assert requests.listings == 1 and requests.reads == []

        # run-b completes (its manifest is read again: a new version); run-a is re-judged.
        requests.reads = []
        bucket.put("runs/run-b/manifest.json", json.dumps({"status": "completed"}))
        bucket.put("runs/run-a/results.jsonl", json.dumps(row("t")) + "\n" + json.dumps(row("u")) + "\n")
        third = tick_run_folder_sensor(instance, resources, second.cursor)
        requested = {r.partition_key: r for r in third.run_requests}
        assert set(requested) == {"run-a", "run-b"}
        assert requested["run-a"].tags["bench/trigger"] == "changed"
        assert requested["run-b"].tags["bench/trigger"] == "new"
        assert requested["run-a"].run_key != first.run_requests[0].run_key
        # run-a's manifest.json did not change: its status comes from the cache
        assert requests.reads == [bucket.url("runs/run-b/manifest.json")]

        # run-b is deleted: its partition goes, the cursor keeps its entry aside.
        client = bucket.server.client()
        for key in bucket.keys("runs/run-b/"):
            client.delete_object(Bucket=bucket.name, Key=key)
        fourth = tick_run_folder_sensor(instance, resources, third.cursor)
        assert fourth.run_requests == []
        assert instance.get_dynamic_partitions(runs_partitions.name) == ["run-a"]
        assert set(json.loads(fourth.cursor)) == {"run-a", NOT_RUNS, GONE}
        assert set(json.loads(fourth.cursor)[GONE]) == {"run-b"}


def test_a_bucket_that_cannot_be_listed_fails_the_tick_with_the_reason(bucket, tmp_path, monkeypatch):
    settings = PipelineSettings(runs_root="s3://no-such-bucket-for-bench/runs", output_root=str(tmp_path / "o"),
                                storage_base=str(tmp_path / "s"))
    with pytest.raises(RunsRootError, match=r"the runs root s3://no-such-bucket-for-bench/runs cannot be listed: "
                                            r"the bucket 'no-such-bucket-for-bench' does not exist"):
        evaluate_run_folders(settings, None, [])
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    with pytest.raises(RunsRootError, match=r"cannot be listed: no credentials .*AWS_ACCESS_KEY_ID"):
        evaluate_run_folders(bucket_settings(bucket, tmp_path), None, [])


def test_a_bucket_prefix_that_holds_no_run_while_runs_are_known_removes_none(bucket, tmp_path):
    """BENCH_RUNS_ROOT given a prefix with a typo (it lists fine, and holds nothing) once runs
    were processed from the right one: the tick fails with the reason, no partition removed."""
    from bench_pipeline.run_folders import EmptyRunsRootError

    put_run(bucket, "run-a", [row("t")])
    with dg.instance_for_test() as instance:
        first = tick_run_folder_sensor(instance, {"settings": bucket_settings(bucket, tmp_path)})
        assert instance.get_dynamic_partitions(runs_partitions.name) == ["run-a"]
        typo = PipelineSettings(runs_root=bucket.url("rnus"), output_root=bucket.url("reports"),
                                storage_base=str(tmp_path / "storage"))
        with pytest.raises(EmptyRunsRootError, match=r"the runs root s3://.*/rnus holds no run folder: 1 run\(s\) "
                                                     r"processed before are known: none is removed"):
            tick_run_folder_sensor(instance, {"settings": typo}, first.cursor)
        assert instance.get_dynamic_partitions(runs_partitions.name) == ["run-a"]


def test_a_manifest_that_cannot_be_read_leaves_its_run_for_a_later_tick(bucket, tmp_path, monkeypatch):
    put_run(bucket, "r", [row("t")])

    def unreadable(url):
        raise object_store.StoreError("read", url, "access denied (test)")

    def unreadable_batch(urls):
        unreadable(list(urls)[0])

    monkeypatch.setattr(object_store, "read_bytes", unreadable)
    monkeypatch.setattr(object_store, "read_objects", unreadable_batch)
    result = evaluate_run_folders(bucket_settings(bucket, tmp_path), None, [])
    assert result.run_requests == [] and "1 not ready" in result.skip_reason.skip_message
    monkeypatch.undo()
    assert [r.partition_key for r in evaluate_run_folders(bucket_settings(bucket, tmp_path), None, []).run_requests] \
        == ["r"]


def test_a_runner_run_in_a_bucket_is_ready_by_its_metrics_and_requested_again_when_rejudged(
        bucket, tmp_path, monkeypatch):
    """The runner's manifest has no status: its metrics.json (or summary.md), seen in the
    listing, makes the run ready at once; results.rejudged.jsonl appearing or changing is
    a change, seen in the listing too: no request per run beyond a new manifest's read."""
    settings = bucket_settings(bucket, tmp_path, quiet_seconds=3600)
    manifest = {"run_id": "r", "agent_model": "agent-model-large", "judge_config": None}
    put_run(bucket, "runner", [row("t")], manifest=manifest)
    bucket.put("runs/runner/metrics.json", "{}")
    put_run(bucket, "runner-writing", [row("t")], manifest=manifest)  # no metrics.json yet
    requests = Requests(monkeypatch)
    with dg.instance_for_test() as instance:
        resources = {"settings": settings}
        first = tick_run_folder_sensor(instance, resources)
        assert [r.partition_key for r in first.run_requests] == ["runner"]
        assert requests.listings == 1
        assert sorted(requests.reads) == [bucket.url("runs/runner-writing/manifest.json"),
                                          bucket.url("runs/runner/manifest.json")]

        requests.listings, requests.reads = 0, []
        bucket.put("runs/runner/results.rejudged.jsonl", json.dumps(row("t", status="failed")) + "\n")
        second = tick_run_folder_sensor(instance, resources, first.cursor)
        assert [r.partition_key for r in second.run_requests] == ["runner"]
        assert second.run_requests[0].tags["bench/trigger"] == "changed"
        assert second.run_requests[0].run_key != first.run_requests[0].run_key
        assert requests.listings == 1 and requests.reads == []  # the statuses kept by version

        bucket.put("runs/runner/results.rejudged.jsonl", json.dumps(row("t", status="passed")) + "\n")
        bucket.put("runs/runner-writing/summary.md", "# run\n")
        third = tick_run_folder_sensor(instance, resources, second.cursor)
        assert sorted(r.partition_key for r in third.run_requests) == ["runner", "runner-writing"]
        assert requests.reads == []
        assert tick_run_folder_sensor(instance, resources, third.cursor).run_requests == []
