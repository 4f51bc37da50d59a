"""Finding run folders under a runs root: which are ready, and which changed (run-directory.md).

A run is ready when manifest.json has status ``completed`` or ``aborted``; a legacy run with
no status is ready once results.jsonl has been quiet for ``quiet_seconds``. A run's
fingerprint covers manifest.json, suite.json and results.jsonl (size and modification
time), so a re-judged run (results rewritten) is noticed and processed again.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass

import orjson

READY_STATUSES = ("completed", "aborted")
FINGERPRINT_FILES = ("manifest.json", "suite.json", "results.jsonl")


@dataclass(frozen=True)
class RunFolder:
    """A candidate run folder and its current fingerprint."""

    run_id: str
    path: str
    fingerprint: str
    results_mtime: float


def fingerprint(path: str) -> tuple[str, float] | None:
    """(fingerprint, results.jsonl mtime), None when results.jsonl does not exist."""
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


def scan(runs_root: str) -> list[RunFolder]:
    """Every sub-folder of ``runs_root`` holding a results.jsonl, sorted by name."""
    found = []
    try:
        entries = list(os.scandir(runs_root))
    except OSError:
        return []
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        fp = fingerprint(entry.path)
        if fp is not None:
            found.append(RunFolder(entry.name, entry.path, fp[0], fp[1]))
    return sorted(found, key=lambda r: r.run_id)


def manifest_status(path: str) -> str | None:
    """manifest.json's status, None when absent or unreadable (legacy run)."""
    try:
        with open(os.path.join(path, "manifest.json"), "rb") as fh:
            manifest = orjson.loads(fh.read())
    except (OSError, orjson.JSONDecodeError):
        return None
    status = manifest.get("status") if isinstance(manifest, dict) else None
    return status if isinstance(status, str) else None


def is_ready(folder: RunFolder, quiet_seconds: float, now: float | None = None) -> bool:
    """run-directory.md readiness: a final manifest status, or a quiet legacy run."""
    status = manifest_status(folder.path)
    if status is not None:
        return status in READY_STATUSES
    now = time.time() if now is None else now
    return now - folder.results_mtime >= quiet_seconds
