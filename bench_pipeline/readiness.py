"""Which run folders are ready to be processed (run-directory.md, "Run folder and readiness").

A run folder (run_folders.py) is ready when manifest.json has a status: ``completed`` or
``aborted`` (any other status, ``running``, is not ready, whatever else the folder holds).
Without a status (the runner's manifest has none, and neither have legacy runs; nor has a
manifest.json that is not valid JSON, whose run is taken for a legacy run:
``waiting_reason``) it is ready at once when the runner's own end-of-run outputs are there
(``layouts.RUNNER_DONE_FILES``: metrics.json or summary.md beside results.jsonl), else once
its results file has been quiet for ``quiet_seconds``.

In a bucket, only a run whose manifest.json is new or changed has it read (``manifest_status``
keeps each status by the object's version; ``read_statuses`` reads the new ones in one
batch), and the runner's outputs come from the runs root's listing.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from . import object_store
from .artifacts import MISSING, UNREADABLE, JsonFile, loads_json, read_json_file
from .layouts import RUNNER_DONE_FILES, runner_finished
from .run_folders import RunFolder

READY_STATUSES = ("completed", "aborted")


def _status_of(data: bytes) -> str | None:
    try:
        manifest = loads_json(data)  # as the run is read: NaN or a long integer elsewhere leaves the status
    except ValueError:
        return None
    return _status_in(manifest)


def _status_in(manifest: object) -> str | None:
    """A parsed manifest's ``status`` when it is a text, else None."""
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
        manifest = _local_manifest(path)
        return _status_in(manifest.value) if manifest.available else None
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
    """run-directory.md readiness: a manifest status decides (``completed``/``aborted``: ready;
    any other: not ready); without one, the runner's metrics.json or summary.md in the run
    folder makes it ready at once (``runner_done``); else a results file quiet for
    ``quiet_seconds``. A run in a bucket whose manifest.json cannot be read this time is not
    ready (asked again next time)."""
    try:
        status = manifest_status(folder.path, folder.manifest_version)
    except UnreadableManifest:
        return False
    if status is not None:
        return status in READY_STATUSES
    if runner_done(folder):
        return True
    now = time.time() if now is None else now
    return now - folder.results_mtime >= quiet_seconds


def waiting_reason(folder: RunFolder, quiet_seconds: float) -> str:
    """Why ``folder`` is not ready (``is_ready`` said so), in words for the main command.

    A manifest.json that cannot be read as a JSON object has no status to say whether the
    run is finished: the run is then taken for a legacy run (one without a manifest status),
    ready once its results file has been quiet, so that a manifest caught half-written never
    passes for a finished run. Its report lists the broken manifest under data quality."""
    try:
        status = manifest_status(folder.path, folder.manifest_version)
    except UnreadableManifest as exc:
        return f"its manifest.json could not be read this time ({exc}); asked again next time"
    if status is not None:
        return f"manifest status {status!r}, not completed or aborted"
    quiet = f"ready once its results file has been quiet for BENCH_QUIET_SECONDS={quiet_seconds:g} s"
    problem = manifest_problem(folder.path)
    if problem is not None:
        return (f"its manifest.json is unreadable ({problem}): with no status to say whether the run is "
                f"finished, it is taken for a legacy run (no manifest status), {quiet}; its report will list "
                f"the broken manifest under data quality")
    return f"no manifest status and no runner's metrics.json or summary.md yet, {quiet}"


def _local_manifest(path: str) -> JsonFile:
    """A local run folder's manifest.json as the run reader reads it (never waiting on a FIFO
    or a device put in its place: ``artifacts.read_json_file``)."""
    return read_json_file(Path(path), None, "manifest.json")


def manifest_problem(path: str) -> str | None:
    """Why a run's manifest.json is not a readable JSON object (a read error, not valid JSON,
    not an object), or None: readable, or absent (a legacy run may have none). Asked only to
    explain a run that is not ready (``waiting_reason``, the main command): the sensor never asks."""
    if not object_store.is_remote(path):
        manifest = _local_manifest(path)
        if manifest.status == MISSING:
            return None
        if not manifest.available:
            return f"it cannot be read: {manifest.reason}" if manifest.status == UNREADABLE else manifest.reason
        return None if isinstance(manifest.value, dict) else "not a JSON object"
    try:
        data = object_store.read_bytes(object_store.join(path, "manifest.json"))
    except FileNotFoundError:
        return None
    except object_store.StoreError as exc:
        return f"it cannot be read: {exc}"
    except OSError as exc:
        return f"it cannot be read: {exc.strerror or exc}"
    try:
        manifest = loads_json(data)  # as a local manifest.json is read (read_json_file)
    except ValueError as exc:
        return f"not valid JSON: {exc}"
    return None if isinstance(manifest, dict) else "not a JSON object"


def runner_done(folder: RunFolder) -> bool:
    """Whether the runner's own end-of-run outputs (``layouts.RUNNER_DONE_FILES``) are in the
    run folder: in a bucket, from the runs root's listing (``RunFolder.objects``: nothing
    asked); on disk, a ``stat`` each (asked only of a new or changed run without a status)."""
    if folder.objects is not None:
        return runner_finished(folder.objects)
    if object_store.is_remote(folder.path):
        return False  # not from a listing: nothing known of its files
    return runner_finished({name for name in RUNNER_DONE_FILES if os.path.isfile(os.path.join(folder.path, name))})
