"""Finding run folders under a runs root: which are ready, and which changed (run-directory.md).

A run is ready when manifest.json has status ``completed`` or ``aborted``; a legacy run with
no status is ready once results.jsonl has been quiet for ``quiet_seconds``. A run's
fingerprint covers manifest.json, suite.json and results.jsonl (size and modification
time), so a re-judged run (results rewritten) is noticed and processed again.

A runs root in a bucket (``s3://...``, ``gs://...``, object_store.py) is found the same way
from listing pages alone: the fingerprint from each object's size, ETag and last-modified,
the quiet time from results.jsonl's last-modified. Only a run whose manifest.json is new or
changed has it read (``manifest_status`` keeps each status by the object's version), so a
tick over unchanged runs costs the listing and nothing per run.

A runs root that cannot be listed (a missing bucket, no credentials, no network, a folder
that cannot be read) is a ``RunsRootError`` with the reason, never an empty runs root; a
local folder that does not exist yet holds no run.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from . import object_store

READY_STATUSES = ("completed", "aborted")
FINGERPRINT_FILES = ("manifest.json", "suite.json", "results.jsonl")


@dataclass(frozen=True)
class RunFolder:
    """A candidate run folder and its current fingerprint."""

    run_id: str
    path: str  # a local folder, or the run's URL in a bucket
    fingerprint: str
    results_mtime: float
    manifest_version: str | None = None  # in a bucket: manifest.json's object version
    #: in a bucket: the listing's {file name: ObjectInfo} of FINGERPRINT_FILES
    objects: dict = field(default=None, compare=False, hash=False)  # type: ignore[assignment]


class RunsRootError(OSError):
    """A runs root that cannot be listed: its location and the reason."""

    def __init__(self, root: str, reason: str) -> None:
        super().__init__(f"the runs root {root} cannot be listed: {reason}")
        self.root, self.reason = root, reason

    def __reduce__(self):
        return RunsRootError, (self.root, self.reason)

    def __str__(self) -> str:
        return f"the runs root {self.root} cannot be listed: {self.reason}"


def fingerprint(path: str) -> tuple[str, float] | None:
    """(fingerprint, results.jsonl mtime), None when results.jsonl does not exist (a local
    run folder; ``object_fingerprint`` for one in a bucket)."""
    parts = []
    results_mtime = None
    for name in FINGERPRINT_FILES:
        try:
            st = os.stat(os.path.join(path, name))
        except OSError:
            parts.append(f"{name}:-")
            continue
        parts.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
        if name == "results.jsonl":
            results_mtime = st.st_mtime
    if results_mtime is None:
        return None
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:16], results_mtime


def object_fingerprint(files: dict[str, object_store.ObjectInfo]) -> tuple[str, float] | None:
    """``fingerprint`` of a run in a bucket from its listing (``{file name: ObjectInfo}``):
    each file's size, ETag and last-modified; None without results.jsonl."""
    parts = []
    results_mtime = None
    for name in FINGERPRINT_FILES:
        info = files.get(name)
        if info is None:
            parts.append(f"{name}:-")
            continue
        parts.append(f"{name}:{info.version}")
        if name == "results.jsonl":
            results_mtime = info.modified if info.modified is not None else 0.0
    if results_mtime is None:
        return None
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:16], results_mtime


def scan(runs_root: str) -> list[RunFolder]:
    """Every sub-folder of ``runs_root`` holding a results.jsonl, sorted by name; RunsRootError
    when the runs root cannot be listed."""
    if object_store.is_remote(runs_root):
        return scan_bucket(runs_root)
    found = []
    try:
        entries = list(os.scandir(runs_root))
    except FileNotFoundError:
        return []  # not made yet: no run
    except OSError as exc:
        raise RunsRootError(runs_root, exc.strerror or str(exc)) from exc
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        fp = fingerprint(entry.path)
        if fp is not None:
            found.append(RunFolder(entry.name, entry.path, fp[0], fp[1]))
    return sorted(found, key=lambda r: r.run_id)


def scan_bucket(runs_root: str) -> list[RunFolder]:
    """``scan`` of a runs root in a bucket, from listing pages (object_store.list_runs)."""
    root = object_store.normalize(runs_root)
    try:
        listed = object_store.list_runs(root, FINGERPRINT_FILES)
    except object_store.StoreError as exc:
        raise RunsRootError(root, exc.reason) from exc
    found = []
    for run_id, files in listed.items():
        if run_id.startswith("."):
            continue
        fp = object_fingerprint(files)
        if fp is not None:
            manifest = files.get("manifest.json")
            found.append(RunFolder(run_id, object_store.join(root, run_id), fp[0], fp[1],
                                   manifest.version if manifest is not None else "-", files))
    return sorted(found, key=lambda r: r.run_id)


def _status_of(data: bytes) -> str | None:
    try:
        manifest = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    status = manifest.get("status") if isinstance(manifest, dict) else None
    return status if isinstance(status, str) else None


#: In a bucket: manifest.json's status by (run URL, object version); a version is never
#: rewritten, so an entry never goes stale. Bounded: cleared when it grows past the limit.
_STATUSES: dict[tuple[str, str], str | None] = {}
_STATUSES_LIMIT = 200_000


class UnreadableManifest(Exception):
    """A manifest.json in a bucket that could not be read this time (not: does not exist)."""


def manifest_status(path: str, version: str | None = None) -> str | None:
    """manifest.json's status, None when absent or unreadable (legacy run). In a bucket,
    ``version`` (``RunFolder.manifest_version``) lets an unchanged manifest be answered
    without reading it again; UnreadableManifest when the object cannot be read."""
    if not object_store.is_remote(path):
        try:
            with open(os.path.join(path, "manifest.json"), "rb") as fh:
                return _status_of(fh.read())
        except OSError:
            return None
    key = (object_store.normalize(path), version or "")
    if version is not None and key in _STATUSES:
        return _STATUSES[key]
    if version == "-":  # the listing showed no manifest.json
        status = None
    else:
        try:
            status = _status_of(object_store.read_bytes(object_store.join(path, "manifest.json")))
        except FileNotFoundError:
            status = None
        except object_store.StoreError as exc:
            raise UnreadableManifest(str(exc)) from exc
    if version is not None:
        if len(_STATUSES) >= _STATUSES_LIMIT:
            _STATUSES.clear()
        _STATUSES[key] = status
    return status


def read_statuses(folders: list[RunFolder]) -> None:
    """Read, in one parallel batch, the manifest.json of each run in a bucket among ``folders``
    whose status is not known for its manifest's version, so that ``manifest_status`` (and
    ``is_ready``) answer them without a request each. An object that cannot be read is
    left out (``is_ready`` asks again, alone)."""
    todo = [f for f in folders if object_store.is_remote(f.path) and f.manifest_version not in (None, "-")
            and (object_store.normalize(f.path), f.manifest_version) not in _STATUSES]
    if not todo:
        return
    try:
        got = object_store.read_objects([object_store.join(f.path, "manifest.json") for f in todo])
    except object_store.StoreError:
        return
    if len(_STATUSES) + len(todo) >= _STATUSES_LIMIT:
        _STATUSES.clear()
    for folder in todo:
        data = got[object_store.normalize(object_store.join(folder.path, "manifest.json"))]
        _STATUSES[(object_store.normalize(folder.path), folder.manifest_version)] = (
            _status_of(data) if data is not None else None)


def ready_folders(folders: list[RunFolder], quiet_seconds: float, now: float | None = None) -> set[str]:
    """The run ids of ``folders`` that are ready (``is_ready``), with the manifests of runs in
    a bucket read in one batch (``read_statuses``)."""
    read_statuses(folders)
    return {f.run_id for f in folders if is_ready(f, quiet_seconds, now)}


def is_ready(folder: RunFolder, quiet_seconds: float, now: float | None = None) -> bool:
    """run-directory.md readiness: a final manifest status, or a quiet legacy run. A run in
    a bucket whose manifest.json cannot be read this time is not ready (asked again next time)."""
    try:
        status = manifest_status(folder.path, folder.manifest_version)
    except UnreadableManifest:
        return False
    if status is not None:
        return status in READY_STATUSES
    now = time.time() if now is None else now
    return now - folder.results_mtime >= quiet_seconds


# --- Runs in a bucket read through the local cache ---------------------------------------

#: The artifact files the stages read in an attempt's folder (attempt_metrics.derive_attempt);
#: with FINGERPRINT_FILES at the top, what a run's local copy holds (screenshots and other
#: evidence stay in the bucket, where the reports link to them).
ARTIFACT_FILES = ("history.json", "episode.json", "trace.json")


def read_by_stages(key: str) -> bool:
    """Whether a run folder's file (key relative to the folder) is one the stages read."""
    return key in FINGERPRINT_FILES if "/" not in key else key.rsplit("/", 1)[1] in ARTIFACT_FILES


def fetch_run(url: str) -> object_store.Mirrored:
    """A run folder in a bucket copied into the local cache (object_store.mirror): the files
    the stages read, only those changed since the last copy; unsafe keys refused (the
    result's ``refused``, data_quality run_files findings). StoreError names the object
    that could not be read."""
    return object_store.mirror(url, wanted=read_by_stages)


def object_fingerprint_of(mirrored: object_store.Mirrored) -> tuple[str, float] | None:
    """The fingerprint of a fetched run, from the listing it was copied from (the same as
    the sensor's from the runs root's listing)."""
    return object_fingerprint({n: mirrored.listing.objects[n] for n in FINGERPRINT_FILES
                               if n in mirrored.listing.objects})


def local_run_files(runs_root: str, run_ids: list[str], names: tuple[str, ...] = ("manifest.json", "suite.json"),
                    folders: list[RunFolder] | None = None) -> dict[str, Path]:
    """``{run id: a local folder holding the run's files ``names``}``: the run folder itself
    under a local runs root; for a runs root in a bucket, the run's local copy with those
    files brought up to date (only changed ones read, all in one batch; ``folders``: the
    runs root's ``scan`` when already made). A run not under the runs root gets a folder
    without them (its files read as missing)."""
    if not object_store.is_remote(runs_root):
        return {run_id: Path(runs_root) / run_id for run_id in run_ids}
    by_id = {f.run_id: f for f in (folders if folders is not None else scan(runs_root))}
    wanted = []
    for run_id in run_ids:
        listed = (by_id[run_id].objects or {}) if run_id in by_id else {}
        wanted.append((object_store.join(runs_root, run_id), {n: listed.get(n) for n in names}))
    copies = object_store.mirror_files(wanted)
    return {run_id: copies[object_store.normalize(url)] for run_id, (url, _) in zip(run_ids, wanted)}
