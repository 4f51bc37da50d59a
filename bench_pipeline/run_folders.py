"""Finding run folders under a runs root: which are ready, and which changed (run-directory.md).

A run folder is a folder holding results.jsonl. It is ready (run-directory.md, "Run folder
and readiness") when manifest.json has a status: ``completed`` or ``aborted`` (any other
status, ``running``, is not ready, whatever else the folder holds). Without a status (the
runner's manifest has none, and neither have legacy runs; nor has a manifest.json that is
not valid JSON, whose run is taken for a legacy run: ``waiting_reason``) it is ready at once
when the runner's own end-of-run outputs are there (``layouts.RUNNER_DONE_FILES``:
metrics.json or summary.md beside results.jsonl), else once its results file has been quiet
for ``quiet_seconds``.

The results file is results.jsonl, or the runner's re-judged copy results.rejudged.jsonl
when that is a regular file beside it (``layouts.results_file_name``): the quiet time is
measured from the file read. A run's fingerprint covers manifest.json, suite.json,
results.jsonl and, when present, results.rejudged.jsonl (size and modification time), so a
re-judged run (results rewritten, or the re-judged copy written, changed or removed) is
noticed and processed again; a run without a re-judged copy keeps the fingerprint it had
before that copy was part of it. A folder holding results.rejudged.jsonl but no
results.jsonl is no run folder (not yet: the spec's copy is written *beside* results.jsonl,
and a bucket being filled may show it first); it is found once results.jsonl is there.

A runs root in a bucket (``s3://...``, ``gs://...``, object_store/) is found the same way
from listing pages alone: the fingerprint from each object's size, ETag and last-modified,
the quiet time from the results file's last-modified, the runner's outputs from the same
listing (``LISTED_FILES``). Only a run whose manifest.json is new or changed has it read
(``manifest_status`` keeps each status by the object's version), so a tick over unchanged
runs costs the listing and nothing per run.

A runs root that cannot be listed (a missing bucket, no credentials, no network, a folder
that cannot be read) is a ``RunsRootError`` with the reason, never an empty runs root; a
local folder that does not exist yet holds no run. Once runs processed from it are known, a
runs root that does not exist or holds no run folder at all is an error too (``scan``), not
every run removed.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import object_store
from .artifacts import MISSING, UNREADABLE, JsonFile, loads_json, read_json_file
from .layouts import REJUDGED_RESULTS, RESULTS, RUNNER_DONE_FILES, results_file_name, results_in, runner_finished

READY_STATUSES = ("completed", "aborted")
#: The top files of a run the stages read, whose versions make its fingerprint; the
#: re-judged copy counts only when present (``fingerprint``).
FINGERPRINT_FILES = ("manifest.json", "suite.json", RESULTS, REJUDGED_RESULTS)
#: What a runs root's listing keeps of each run: FINGERPRINT_FILES and the runner's
#: end-of-run outputs (readiness without a manifest status).
LISTED_FILES = FINGERPRINT_FILES + RUNNER_DONE_FILES


@dataclass(frozen=True)
class RunFolder:
    """A candidate run folder and its current fingerprint."""

    run_id: str
    path: str  # a local folder, or the run's URL in a bucket
    fingerprint: str
    results_mtime: float
    manifest_version: str | None = None  # in a bucket: manifest.json's object version
    #: in a bucket: the listing's {file name: ObjectInfo} of LISTED_FILES
    objects: dict = field(default=None, compare=False, hash=False)  # type: ignore[assignment]


class RunsRootError(OSError):
    """A runs root that cannot be listed: its location and the reason."""

    def __init__(self, root: str, reason: str) -> None:
        super().__init__(str(reason))
        self.root, self.reason = root, reason

    def __reduce__(self):
        return type(self), (self.root, self.reason)

    def __str__(self) -> str:
        return f"the runs root {self.root} cannot be listed: {self.reason}"


class EmptyRunsRootError(RunsRootError):
    """A runs root that was listed and holds no run folder while runs processed from it are
    known (``scan``): an empty mount point, a bucket prefix with a typo."""

    def __str__(self) -> str:
        return f"the runs root {self.root} holds no run folder: {self.reason}"


def _digest(versions: dict[str, str], mtimes: dict[str, float]) -> tuple[str, float] | None:
    """(fingerprint, the read results file's mtime) from the version and mtime of each of
    FINGERPRINT_FILES present; None without results.jsonl. An absent file is ``-``, but an
    absent re-judged copy adds nothing, so that a run without one keeps the fingerprint it
    had before the copy was part of it (no run is processed again for that alone)."""
    if RESULTS not in versions:
        return None
    parts = [f"{name}:{versions.get(name, '-')}" for name in FINGERPRINT_FILES
             if name != REJUDGED_RESULTS or name in versions]
    read = results_in(versions)
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:16], mtimes[read]  # type: ignore[index]


def fingerprint(path: str) -> tuple[str, float] | None:
    """(fingerprint, mtime of the results file read), None when results.jsonl does not exist
    (a local run folder; ``object_fingerprint`` for one in a bucket). The results file read
    is results.rejudged.jsonl when it is a regular file in the run folder, as
    ``layouts.results_file_name`` decides; four ``stat`` calls, nothing read."""
    versions: dict[str, str] = {}
    mtimes: dict[str, float] = {}
    for name in FINGERPRINT_FILES:
        try:
            st = os.stat(os.path.join(path, name))
        except OSError:
            continue
        if name == REJUDGED_RESULTS and results_file_name(os.path.realpath(path)) != REJUDGED_RESULTS:
            continue  # not the run's results (a folder, a symlink out of the run): not part of the run
        versions[name] = f"{st.st_size}:{st.st_mtime_ns}"
        mtimes[name] = st.st_mtime
    return _digest(versions, mtimes)


def object_fingerprint(files: dict[str, object_store.ObjectInfo]) -> tuple[str, float] | None:
    """``fingerprint`` of a run in a bucket from its listing (``{file name: ObjectInfo}``):
    each file's size, ETag and last-modified; None without results.jsonl. The quiet time
    is the read results file's last-modified (0 when the listing has none)."""
    versions: dict[str, str] = {}
    mtimes: dict[str, float] = {}
    for name in FINGERPRINT_FILES:
        info = files.get(name)
        if info is not None:
            versions[name] = info.version
            mtimes[name] = info.modified if info.modified is not None else 0.0
    return _digest(versions, mtimes)


#: What a user who removed every run on purpose does (EmptyRunsRootError).
EVERY_RUN_REMOVED = ("if every run was removed on purpose, delete the runs' partitions (in the UI: an asset's page, "
                     "Delete partitions) or start from a new instance (an empty DAGSTER_HOME)")


def check_not_emptied(runs_root: str, found: list[RunFolder], known: int) -> None:
    """EmptyRunsRootError when ``runs_root`` holds no run folder while ``known`` runs
    processed from it are known; nothing otherwise. An empty mount point, a bucket prefix
    with a typo or a listing that came back empty would otherwise read as every run removed:
    each would leave the catalog, its system and its suite page at once."""
    if known and not found:
        raise EmptyRunsRootError(runs_root, f"{known} run(s) processed before are known: none is removed; check "
                                            f"BENCH_RUNS_ROOT (an empty mount point? a bucket prefix with a typo?); "
                                            f"{EVERY_RUN_REMOVED}")


def check_runs_root(runs_root: str, known: int) -> None:
    """RunsRootError when ``runs_root`` is a local folder that does not exist while ``known``
    runs processed from it are known (``scan``); nothing otherwise."""
    if known and not object_store.is_remote(runs_root) and not os.path.isdir(runs_root):
        raise RunsRootError(runs_root, f"no such folder, and {known} run(s) processed before are known: none "
                                       "is removed; check BENCH_RUNS_ROOT (a missing mount point?); "
                                       f"{EVERY_RUN_REMOVED}")


def scan(runs_root: str, not_runs: list[str] | None = None, known: int = 0) -> list[RunFolder]:
    """Every sub-folder of ``runs_root`` holding a results.jsonl, sorted by name; RunsRootError
    when the runs root cannot be listed. With ``not_runs``, the names of the other folders
    (hidden ones aside: no results.jsonl, so not a run, or not one yet) are added to it,
    found on the way at no extra cost: in a bucket, those the listing shows, i.e. holding one
    of LISTED_FILES but no results.jsonl.

    A local runs root that does not exist holds no run (not made yet), unless ``known`` runs
    were processed before (the partitions of the instance): then it is a RunsRootError too. A
    mistyped BENCH_RUNS_ROOT, or a missing mount point, would otherwise read as every run's folder
    gone, and each would leave the catalog, its system and its suite page. So is a runs root,
    local or in a bucket, that holds no run folder while runs are known
    (``check_not_emptied``): a run removed is a run folder gone from a runs root that still
    holds others."""
    if object_store.is_remote(runs_root):
        found = scan_bucket(runs_root, not_runs)
        check_not_emptied(runs_root, found, known)
        return found
    found = []
    try:
        entries = list(os.scandir(runs_root))
    except FileNotFoundError:
        check_runs_root(runs_root, known)
        return []  # not made yet: no run
    except OSError as exc:
        raise RunsRootError(runs_root, exc.strerror or str(exc)) from exc
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        fp = fingerprint(entry.path)
        if fp is not None:
            found.append(RunFolder(entry.name, entry.path, fp[0], fp[1]))
        elif not_runs is not None:
            not_runs.append(entry.name)
    if not_runs is not None:
        not_runs.sort()
    check_not_emptied(runs_root, found, known)
    return sorted(found, key=lambda r: r.run_id)


def refused_names(folders: list[RunFolder]) -> dict[str, str]:
    """{folder name: why it cannot be a run id} for the run folders whose name is no usable
    partition key (``resources.settings.safe_partition_key``: too long for the stored files'
    names, or the name of a cross-run folder of the output root); the main command and the
    sensor say so and leave them."""
    from .resources.settings import safe_partition_key

    refused = {}
    for folder in folders:
        try:
            safe_partition_key(folder.run_id)
        except ValueError as exc:
            refused[folder.run_id] = str(exc)
    return refused


def not_runs_note(names: list[str]) -> str:
    """What the main command and the sensor say of the folders of a runs root that are not run
    folders (``scan``'s ``not_runs``)."""
    listed = ", ".join(names[:10]) + (" ..." if len(names) > 10 else "")
    return f"no results.jsonl, so not a run folder (or not one yet), skipped ({len(names)}): {listed}"


def scan_bucket(runs_root: str, not_runs: list[str] | None = None) -> list[RunFolder]:
    """``scan`` of a runs root in a bucket, from listing pages (object_store.list_runs)."""
    root = object_store.normalize(runs_root)
    try:
        listed = object_store.list_runs(root, LISTED_FILES)
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
        elif not_runs is not None:
            not_runs.append(run_id)
    if not_runs is not None:
        not_runs.sort()
    return sorted(found, key=lambda r: r.run_id)


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


# --- Runs in a bucket read through the local cache ---------------------------------------

#: The artifact files the stages read in an attempt's folder (attempt_metrics.derive_attempt),
#: in any folder below the run's (``tasks/<task>``, ``tasks/<task>/attempt-<n>``, the runner's
#: ``tasks/<task>/attempt_<n>``, or wherever a row's artifact_dir points); with
#: FINGERPRINT_FILES at the top (the re-judged copy included), what a run's local copy holds
#: (screenshots, judge.json, the runner's metrics.json and other evidence stay in the bucket,
#: where the reports link to them; the copy still has every folder of the run's objects,
#: object_store.mirror, so an attempt folder is found as in the bucket).
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
