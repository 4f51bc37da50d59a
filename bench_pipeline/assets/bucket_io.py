"""The per-run step's side of a runs root or an output root in a bucket (object_store/).

The stages see local folders only (one composition, ``pipeline.run_stages``):

- ``prepare``: before the stages, each run in a bucket is copied into the local cache
  (``run_folders.fetch_run``: only the files the stages read, only those changed since the
  last copy, several runs at once; of a run whose stages are current, compared again from its
  stored values, only manifest.json and suite.json); its refused keys travel with the job as data_quality
  findings, and a run whose objects cannot be read gets ``source_error`` (it fails alone,
  with the key and the reason). Each output folder in a bucket gets a fresh local staging
  folder holding its previous publication record (so a re-publication sends only what is
  missing). A baseline is compared with from its stored stage values (in the storage base),
  never from its output folder.
- ``Delivery``: once a partition's files are written (``run_partitions``' ``on_ready``) the
  step uploads them, one PUT per object, metrics.json last; after the partition, what its
  publication wrote. A failed upload fails the partition at the first stage whose files
  are missing, naming the object and the reason. Staging folders go at the end of the step.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from .. import object_store
from ..outputs import COMPARISON_FILES
from ..publication.record import RECORD_NAME
from ..run_folders import RunFolder, fetch_run, local_run_files, object_fingerprint_of
from .partition_work import STAGES, PartitionJob, PartitionOutcome

#: Runs copied at once (each copy has its own requests in flight, object_store.CONCURRENCY).
RUNS_AT_ONCE = 4
#: The stages whose values live in the storage base, not in the output folder.
FRAME_STAGES = STAGES[:3]


def prepare(jobs: list[PartitionJob], runs_root: str, output_root: str, folders: list[RunFolder]) -> list[PartitionJob]:
    """The jobs with their runs and output folders made local (see the module doc).
    ``folders``: the runs root's scan."""
    if object_store.is_remote(output_root):
        jobs = _stage_outputs(jobs)
    if object_store.is_remote(runs_root):
        jobs = _fetch_runs(jobs, runs_root, folders)
    return jobs


def _fetch_runs(jobs: list[PartitionJob], runs_root: str, folders: list[RunFolder]) -> list[PartitionJob]:
    def fetch(job: PartitionJob) -> PartitionJob:
        try:
            copy = fetch_run(job.run_dir)
        except object_store.StoreError as exc:
            return replace(job, source_error=f"{job.run_dir}: the run's objects cannot be read: {exc}")
        fp = object_fingerprint_of(copy)
        return replace(job, run_dir=str(copy.local), fingerprint=fp[0] if fp else None, run_files=tuple(copy.refused))

    # A run whose stages are current (``stored_stages``) is compared from its stored values:
    # only its manifest.json and suite.json are needed, as for a baseline.
    with ThreadPoolExecutor(min(RUNS_AT_ONCE, len(jobs)) or 1) as pool:
        fetched = {j.key: j for j in pool.map(fetch, [j for j in jobs if not j.stored_stages])}
    # The baselines' run folders, for the reports' links and the baseline's identity: their
    # manifest.json and suite.json (already copied for the baselines' index: nothing read).
    listed = {f.run_id for f in folders}
    wanted = {j.baseline for j in jobs if j.baseline and j.baseline in listed}
    wanted |= {j.key for j in jobs if j.stored_stages and j.key in listed}
    copies = local_run_files(runs_root, sorted(wanted), folders=folders) if wanted else {}
    out = []
    for job in jobs:
        job = fetched.get(job.key) or (replace(job, run_dir=str(copies[job.key])) if job.key in copies else job)
        out.append(replace(job, baseline_run_dir=str(copies[job.baseline])) if job.baseline in copies else job)
    return out


def _stage_outputs(jobs: list[PartitionJob]) -> list[PartitionJob]:
    root = object_store.staging_root()
    staged = {job.key: object_store.mirror_path(job.out_dir, root) for job in jobs}
    records = object_store.read_objects([object_store.join(job.out_dir, RECORD_NAME) for job in jobs])
    out: list[PartitionJob] = []
    for job in jobs:
        folder = staged[job.key]
        folder.mkdir(parents=True, exist_ok=True)
        record = records[object_store.normalize(object_store.join(job.out_dir, RECORD_NAME))]
        if record is not None:
            (folder / RECORD_NAME).write_bytes(record)
        out.append(replace(job, out_dir=str(folder)))
    return out


def _stat(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


class Delivery:
    """Uploads the staged outputs of the step's partitions whose output folder is in a bucket."""

    def __init__(self, jobs: list[PartitionJob]) -> None:
        self.jobs = {j.key: j for j in jobs if object_store.url_of(j.out_dir) is not None}
        self.sent: dict[str, dict[str, tuple[int, int]]] = {key: self._files(job) for key, job in self.jobs.items()}
        self.ready_error: dict[str, str] = {}
        self.ready_done: set[str] = set()

    @staticmethod
    def _files(job: PartitionJob) -> dict[str, tuple[int, int]]:
        folder = Path(job.out_dir)
        return {p.relative_to(folder).as_posix(): _stat(p) for p in folder.rglob("*") if p.is_file()
                } if folder.is_dir() else {}

    def _send(self, key: str) -> str | None:
        """Upload what changed in the key's staging folder since the last upload; the error
        text when an object cannot be written."""
        job = self.jobs[key]
        now = self._files(job)
        changed = [rel for rel, st in now.items() if self.sent[key].get(rel) != st
                   and not os.path.basename(rel).startswith(".")]
        if not changed:
            return None
        try:
            object_store.upload(job.out_dir, object_store.url_of(job.out_dir), changed)
        except object_store.StoreError as exc:
            return f"{object_store.url_of(job.out_dir)}: the outputs cannot be uploaded: {exc}"
        self.sent[key].update({rel: now[rel] for rel in changed})
        return None

    def ready(self, key: str) -> None:
        """A partition's files are written: upload them (before a run compared with it starts);
        a run without a comparison now has an earlier one's files removed from the bucket."""
        if key not in self.jobs:
            return
        self.ready_done.add(key)
        error = self._send(key) or self._remove_stale_comparison(key)
        if error is not None:
            self.ready_error[key] = error

    def _remove_stale_comparison(self, key: str) -> str | None:
        job = self.jobs[key]
        if (Path(job.out_dir) / COMPARISON_FILES[0]).is_file():
            return None
        url = object_store.url_of(job.out_dir)
        try:
            for name in COMPARISON_FILES:
                object_store.delete(object_store.join(url, name))
        except object_store.StoreError as exc:
            return f"{url}: an earlier comparison cannot be removed: {exc}"
        return None

    def stored(self, outcome: PartitionOutcome) -> PartitionOutcome:
        """A partition's stages before the publication (``partition_work.StagesStored``),
        failed at the first stage whose files are not in the bucket when their upload failed."""
        key = outcome.key
        if key in self.jobs and key in self.ready_error:
            kept = {stage: meta for stage, meta in outcome.materialized.items() if stage in FRAME_STAGES}
            # its files are those of capability_aggregates on, or of a comparison made again
            failed = "run_comparison" if outcome.compared_only else STAGES[3]
            return replace(outcome, materialized=kept, failed_stage=failed, error=self.ready_error[key])
        return outcome

    def finish(self, outcome: PartitionOutcome) -> PartitionOutcome:
        """After a partition: upload what its publication wrote, and fail it at the first
        stage whose files are not in the bucket when an upload failed."""
        key = outcome.key
        if key not in self.jobs or key not in self.ready_done:
            return outcome
        if key in self.ready_error:
            return self.stored(outcome)
        error = self._send(key)
        if error is not None and outcome.error is None:
            kept = {stage: meta for stage, meta in outcome.materialized.items() if stage != STAGES[-1]}
            return replace(outcome, materialized=kept, failed_stage=STAGES[-1], error=error)
        return outcome

    def close(self) -> None:
        """Remove the step's staging folders."""
        roots = {Path(job.out_dir) for job in self.jobs.values()}
        for folder in roots:
            parts = folder.parts
            if object_store.MIRROR in parts:  # the unique staging root above the mirror layout
                object_store.remove_tree(Path(*parts[:parts.index(object_store.MIRROR)]))
