"""Finding run folders under a runs root, and which changed (run-directory.md); which of them
are ready is readiness.py.

A run folder is a folder holding results.jsonl. The results file is results.jsonl, or the
runner's re-judged copy results.rejudged.jsonl when that is a regular file beside it
(``layouts.results_file_name``): the quiet time (readiness.py) is measured from the file read. A run's fingerprint covers manifest.json, suite.json,
results.jsonl and, when present, results.rejudged.jsonl (size and modification time), so a
re-judged run (results rewritten, or the re-judged copy written, changed or removed) is
noticed and processed again; a run without a re-judged copy keeps the fingerprint it had
before that copy was part of it. A folder holding results.rejudged.jsonl but no
results.jsonl is no run folder (not yet: the spec's copy is written *beside* results.jsonl,
and a bucket being filled may show it first); it is found once results.jsonl is there.

A runs root in a bucket (``s3://...``, ``gs://...``, object_store/) is found the same way
from listing pages alone: the fingerprint from each object's size, ETag and last-modified,
the quiet time from the results file's last-modified, the runner's outputs from the same
listing (``LISTED_FILES``), so a tick over unchanged runs costs the listing and nothing per
run.

A runs root that cannot be listed (a missing bucket, no credentials, no network, a folder
that cannot be read) is a ``RunsRootError`` with the reason, never an empty runs root; a
local folder that does not exist yet holds no run. Once runs processed from it are known, a
runs root that does not exist or holds no run folder at all is an error too (``scan``), not
every run removed.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from . import object_store
from .layouts import REJUDGED_RESULTS, RESULTS, RUNNER_DONE_FILES, results_file_name, results_in

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
