"""The pipeline run as the daemon runs it, for the tests that process the same runs from local
folders and from a bucket (s3://, gs://) and compare the outputs byte for byte."""

from __future__ import annotations

import json
import re
from pathlib import Path

import dagster as dg

from bench_pipeline.assets import per_run_assets
from bench_pipeline.definitions import defs
from bench_pipeline.resources import JsonIOManagerFactory, LangfuseResource, ParquetIOManagerFactory, PipelineSettings

from ..dagster_helpers import tick_run_folder_sensor

LANGFUSE = ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY")


def resources_for(settings: PipelineSettings) -> dict:
    """The resources of the per-run job and the catalog refresh, Langfuse unconfigured."""
    return {"settings": settings, "langfuse": LangfuseResource(),
            "parquet_io_manager": ParquetIOManagerFactory(settings=settings),
            "json_io_manager": JsonIOManagerFactory(settings=settings)}


def tick(instance, settings, cursor=None):
    """One sensor tick with its partition requests applied, as the daemon does."""
    return tick_run_folder_sensor(instance, {"settings": settings}, cursor)


def process_requests(instance, resources, result) -> list[str]:
    """Each of a tick's run requests as the daemon launches it (one partition or a range); the
    partitions done (their last materialization carries ``run_seconds``: the publication's, or
    the reports' of a run compared again from its stored values)."""
    done = []
    for request in result.run_requests:
        kwargs = {"partition_key": request.partition_key} if request.partition_key else {"tags": request.tags}
        outcome = dg.materialize(per_run_assets, instance=instance, resources=resources, raise_on_error=False,
                                 **kwargs)
        assert outcome.success, [e.step_failure_data.error.message for e in outcome.get_step_failure_events()]
        done += [e.materialization.partition for e in outcome.get_asset_materialization_events()
                 if "run_seconds" in e.materialization.metadata]
    return sorted(done)


def refresh_catalog(instance, resources) -> None:
    job = defs.resolve_job_def("refresh_catalog")
    outcome = job.execute_in_process(instance=instance, resources=resources, raise_on_error=False)
    assert outcome.success, [e.step_failure_data.error.message for e in outcome.get_step_failure_events()]


def normalized(files: dict[str, bytes], name: str) -> bytes:
    """A file's bytes with what differs between any two processings masked: its run's
    generated_at stamp (metrics.json's, wherever the reports repeat it), the times the
    outbox stamps at publication, and the data versions a comparison records (a run
    folder's fingerprint: from file times on disk, from ETags in a bucket)."""
    data = files[name]
    run = name.split("/", 1)[0]
    if f"{run}/metrics.json" in files:
        stamp = json.loads(files[f"{run}/metrics.json"])["generated_at"]
        data = data.replace(stamp.encode(), b"<generated_at>")
    data = re.sub(rb'"data_version": ?"[^"]*"', rb'"data_version": "<version>"', data)
    if name.endswith("langfuse_outbox.jsonl"):
        data = re.sub(rb'"(start|end)TimeUnixNano":"\d+"', rb'"\1TimeUnixNano":"<t>"', data)
        data = re.sub(rb'"timestamp":"[0-9T:.-]+Z","type"', rb'"timestamp":"<t>","type"', data)
    return data


def local_files(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` (dot files aside) by relative path."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.startswith(".")}
