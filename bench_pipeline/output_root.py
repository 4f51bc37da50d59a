"""The output root as the cross-run assets read and write it: a local folder, or a bucket.

Reading: each run's files (metrics.json, attempts.jsonl, comparison.json, ...) are read
from a local folder: the output root itself, or the local copies of a bucket's objects
(object_store.mirror_files: one listing of the output root, only changed objects fetched).
Existence (a run's report.html, for a link) comes from that listing, without a read.

Writing: new files (the systems' repeats, the suite pages) go to a local folder: the output
root itself, or a staging folder that ``publish`` uploads, one PUT per object, and removes.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from . import object_store

#: The file names a listing of the output root keeps (each run's, each system's, each suite's).
LISTED = ("metrics.json", "attempts.jsonl", "comparison.json", "report.html", "summary.md", "repeats.json",
          "repeats.md", "index.html")


class OutputRoot:
    """One output root (``location``: a path or a URL) for reading and writing (module doc)."""

    def __init__(self, location: str) -> None:
        self.remote = object_store.is_remote(location)
        self.location = object_store.normalize(location) if self.remote else str(location)
        #: where files are read from: the folder itself, or the root of the local copies
        self.local = object_store.mirror_path(self.location) if self.remote else Path(location)
        self._listed: dict[str, dict[str, dict]] = {}
        self._staged: Path | None = None

    def url(self, *parts: str) -> str:
        """A location below the output root (a path or a URL)."""
        return object_store.join(self.location, *parts)

    def _listing(self, folder: str) -> dict[str, dict]:
        """``{sub-folder: {file name: ObjectInfo}}`` of ``folder`` ("" for the root), listed once."""
        if folder not in self._listed:
            self._listed[folder] = object_store.list_runs(self.url(folder) if folder else self.location, LISTED)
        return self._listed[folder]

    def has(self, name: str, file: str, folder: str = "") -> bool:
        """Whether ``<folder>/<name>/<file>`` exists (for a bucket: from the listing)."""
        if not self.remote:
            return (self.local / folder / name / file).is_file()
        return file in self._listing(folder).get(name, {})

    def folders_with(self, file: str, folder: str) -> list[str]:
        """The sub-folders of ``folder`` that hold ``file`` (one of LISTED), sorted."""
        if self.remote:
            return sorted(name for name, files in self._listing(folder).items() if file in files)
        base = self.local / folder
        return sorted(p.parent.name for p in base.glob(f"*/{file}")) if base.is_dir() else []

    def remove(self, folder: str, name: str, files: Iterable[str]) -> None:
        """Remove ``<folder>/<name>/<file>`` for each of ``files`` (those already gone are
        no error), then the local folder ``<folder>/<name>`` when it is left empty; for a
        bucket, its objects and their local copies."""
        base = self.local / folder / name
        for file in files:
            if self.remote:
                object_store.delete(self.url(folder, name, file))
            (base / file).unlink(missing_ok=True)
        try:
            base.rmdir()
        except OSError:  # not empty (a file of someone else's), or not there
            pass

    def fetch(self, names: Iterable[str], files: Iterable[str], folder: str = "") -> Path:
        """The local folder holding ``<folder>/<name>/<file>`` for each name and file, as the
        output root has them (for a bucket: brought up to date, only changed objects read);
        returns the local ``<folder>``."""
        base = self.local / folder if folder else self.local
        if self.remote:
            listing, files = self._listing(folder), tuple(files)
            wanted = [(self.url(folder, name) if folder else self.url(name),
                       {f: listing.get(name, {}).get(f) for f in files}) for name in names]
            if wanted:
                object_store.mirror_files(wanted)
        return base

    def staged(self) -> Path:
        """The local folder new files are written into: the output root itself, or its staging
        copy (made on first use)."""
        if not self.remote:
            return self.local
        if self._staged is None:
            self._staged = object_store.mirror_path(self.location, object_store.staging_root())
            self._staged.mkdir(parents=True, exist_ok=True)
        return self._staged

    def read_side(self, path: Path) -> Path:
        """A staged file's path as read later (its local copy's place): what metadata and
        links name (object_store.location_text gives its URL)."""
        if self._staged is None:
            return path
        return self.local / Path(path).relative_to(self._staged)

    def publish(self) -> list[str]:
        """Upload what was staged (nothing for a local root) and remove the staging folder;
        returns the objects written. StoreError names the first that fails."""
        if self._staged is None:
            return []
        staged, self._staged = self._staged, None
        try:
            return object_store.upload(staged, self.location)
        finally:
            parts = staged.parts
            object_store.remove_tree(Path(*parts[:parts.index(object_store.MIRROR)]))
