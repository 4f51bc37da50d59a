"""assets/bucket_io.py: outputs staged for a bucket are uploaded as a partition's files are
written, and a failed upload fails the partition at the first stage whose files are missing.
Its job is files: the staging folders are in tmp_path, and the upload is recorded instead of
sent (object_store/'s own tests send it to a bucket)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench_pipeline import object_store
from bench_pipeline.assets import bucket_io
from bench_pipeline.assets.bucket_io import FRAME_STAGES, Delivery, prepare
from bench_pipeline.assets.partition_work import STAGES, PartitionJob, PartitionOutcome
from bench_pipeline.publication.settings import LangfuseSettings

NO_LANGFUSE = LangfuseSettings(None, None, None)


def job(key: str, out_dir: Path | str) -> PartitionJob:
    return PartitionJob(key=key, run_dir=f"/runs/{key}", out_dir=str(out_dir), storage_base="/storage",
                        langfuse=NO_LANGFUSE, fingerprint="fp")


def staged(tmp_path: Path, key: str) -> Path:
    """A staging folder standing for s3://bucket/reports/<key> (object_store.url_of reads it)."""
    folder = tmp_path / "staging" / "1-abc" / object_store.MIRROR / "s3" / "bucket" / "reports" / key
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def deleted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    gone: list[str] = []
    monkeypatch.setattr(bucket_io.object_store, "delete", gone.append)
    return gone


@pytest.fixture
def uploads(monkeypatch: pytest.MonkeyPatch, deleted: list[str]) -> list[tuple[str, str, list[str]]]:
    sent: list[tuple[str, str, list[str]]] = []
    monkeypatch.setattr(bucket_io.object_store, "upload",
                        lambda local, url, names: sent.append((str(local), url, sorted(names))) or [])
    return sent


def test_a_run_without_a_comparison_now_has_an_earlier_one_removed_from_the_bucket(
        tmp_path: Path, uploads: list, deleted: list[str]) -> None:
    compared, alone = staged(tmp_path, "r1"), staged(tmp_path, "r2")
    for folder in (compared, alone):
        (folder / "metrics.json").write_text("{}")
    (compared / "comparison.json").write_text("{}")
    delivery = Delivery([job("r1", compared), job("r2", alone)])
    delivery.ready("r1")
    delivery.ready("r2")
    assert deleted == ["s3://bucket/reports/r2/comparison.json", "s3://bucket/reports/r2/comparison.md"]


def outcome(key: str) -> PartitionOutcome:
    return PartitionOutcome(key=key, fingerprint="fp", materialized={stage: {"n": 1} for stage in STAGES})


def test_the_frame_stages_are_the_first_three() -> None:
    assert FRAME_STAGES == ("raw_results", "attempt_metrics", "task_groups")


def test_local_roots_need_no_preparation_and_nothing_is_delivered(tmp_path: Path, uploads: list) -> None:
    jobs = [job("r1", tmp_path / "out" / "r1")]
    assert prepare(jobs, str(tmp_path / "runs"), str(tmp_path / "out"), []) == jobs
    delivery = Delivery(jobs)
    assert delivery.jobs == {}
    delivery.ready("r1")
    done = outcome("r1")
    assert delivery.finish(done) is done and uploads == []


def test_what_changed_is_uploaded_once_and_hidden_files_never(tmp_path: Path, uploads: list) -> None:
    folder = staged(tmp_path, "r1")
    (folder / "langfuse_publication.json").write_text("{}")  # there before the step: not sent again
    delivery = Delivery([job("r1", folder)])
    (folder / "metrics.json").write_text("{}")
    (folder / ".metrics.json.tmp").write_text("")
    delivery.ready("r1")
    assert uploads == [(str(folder), "s3://bucket/reports/r1", ["metrics.json"])]
    (folder / "langfuse_outbox.jsonl").write_text("{}\n")
    done = outcome("r1")
    assert delivery.finish(done) is done
    assert uploads[-1] == (str(folder), "s3://bucket/reports/r1", ["langfuse_outbox.jsonl"])
    assert delivery.finish(done) is done and len(uploads) == 2  # nothing changed since


def test_a_failed_upload_of_the_outputs_fails_the_partition_at_capability_aggregates(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(local, url, names):
        raise object_store.StoreError("write", url + "/metrics.json", "denied")

    monkeypatch.setattr(bucket_io.object_store, "upload", refuse)
    folder = staged(tmp_path, "r1")
    delivery = Delivery([job("r1", folder)])
    (folder / "metrics.json").write_text("{}")
    delivery.ready("r1")
    failed = delivery.finish(outcome("r1"))
    assert failed.failed_stage == "capability_aggregates"
    assert list(failed.materialized) == list(FRAME_STAGES)  # their values are in the storage base
    assert failed.error == ("s3://bucket/reports/r1: the outputs cannot be uploaded: "
                            "cannot write s3://bucket/reports/r1/metrics.json: denied")


def test_a_failed_upload_of_the_publication_fails_only_the_last_stage(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uploads: list) -> None:
    folder = staged(tmp_path, "r1")
    delivery = Delivery([job("r1", folder)])
    (folder / "metrics.json").write_text("{}")
    delivery.ready("r1")

    def refuse(local, url, names):
        raise object_store.StoreError("write", url, "denied")

    monkeypatch.setattr(bucket_io.object_store, "upload", refuse)
    (folder / "langfuse_outbox.jsonl").write_text("{}\n")
    failed = delivery.finish(outcome("r1"))
    assert failed.failed_stage == "langfuse_publication" and list(failed.materialized) == list(STAGES[:-1])
    # a partition that failed already keeps its own error
    (folder / "langfuse_outbox.jsonl").write_text("{}\n{}\n")
    os.utime(folder / "langfuse_outbox.jsonl", ns=(1, 1))
    broken = PartitionOutcome(key="r1", fingerprint="fp", failed_stage="reports", error="its own")
    assert delivery.finish(broken) is broken


def test_a_partition_never_ready_is_not_uploaded_after(tmp_path: Path, uploads: list) -> None:
    folder = staged(tmp_path, "r1")
    delivery = Delivery([job("r1", folder)])
    (folder / "metrics.json").write_text("{}")
    done = outcome("r1")
    assert delivery.finish(done) is done and uploads == []


def test_close_removes_the_unique_staging_root(tmp_path: Path) -> None:
    folder = staged(tmp_path, "r1")
    (folder / "metrics.json").write_text("{}")
    Delivery([job("r1", folder)]).close()
    assert not (tmp_path / "staging" / "1-abc").exists() and (tmp_path / "staging").is_dir()
