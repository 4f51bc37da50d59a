"""Object metadata and listings: a bucket folder's objects, and the run folders under a runs
root with the metadata of the files at the top of each, from listing pages alone."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from .clients import CONCURRENCY, StoreError, _bucket_missing, _no_bucket, _path, _Session, reason, session
from .locations import normalize, split


@dataclass(frozen=True)
class ObjectInfo:
    """What a listing says of one object: size, ETag and last-modified (POSIX seconds)."""

    size: int
    etag: str | None = None
    modified: float | None = None

    @property
    def version(self) -> str:
        """One string that changes when the object is rewritten (the cache's and the
        fingerprints' token)."""
        modified = "-" if self.modified is None else f"{self.modified:.6f}"
        return f"{self.size}:{self.etag or '-'}:{modified}"

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> ObjectInfo:
        """From an s3 ``Contents`` entry or an fsspec ``detail=True`` entry."""
        size = entry.get("Size", entry.get("size")) or 0
        etag = entry.get("ETag") or entry.get("etag") or entry.get("md5Hash") or entry.get("generation")
        modified = entry.get("LastModified") or entry.get("updated") or entry.get("mtime") or entry.get("last_modified")
        return cls(int(size), str(etag).strip('"') if etag is not None else None, _seconds(modified))


def _seconds(value: Any) -> float | None:
    if isinstance(value, dt.datetime):
        return (value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)).timestamp()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return _seconds(dt.datetime.fromisoformat(value.replace("Z", "+00:00")))
    return None


@dataclass
class Listing:
    """The objects below a folder: ``objects`` by key relative to the folder; ``outside``:
    full keys the listing returned that are not below it (never fetched)."""

    objects: dict[str, ObjectInfo]
    outside: list[str] = field(default_factory=list)


def _s3_pages(s: _Session, bucket: str, prefix: str, delimiter: str | None = None) -> Iterator[dict]:
    """list_objects_v2's pages (1,000 keys each) through s3fs's client."""
    kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
    if delimiter:
        kwargs["Delimiter"] = delimiter
    while True:
        page = s.fs.call_s3("list_objects_v2", **kwargs)
        yield page
        if not page.get("IsTruncated"):
            return
        kwargs["ContinuationToken"] = page["NextContinuationToken"]


def list_objects(url: str) -> Listing:
    """Every object below the folder ``url`` (recursive); StoreError when it cannot be listed."""
    url = normalize(url)
    scheme, bucket, key = split(url)
    prefix = f"{key}/" if key else ""
    entries: list[tuple[str, ObjectInfo]] = []
    try:
        with session(scheme) as s:
            if hasattr(s.fs, "_call_s3"):
                for page in _s3_pages(s, bucket, prefix):
                    entries += [(c["Key"], ObjectInfo.of(c)) for c in page.get("Contents", [])]
            else:
                try:
                    found = s.fs.find(_path(url), detail=True)
                except FileNotFoundError:
                    found = {}
                if not found and _bucket_missing(s, bucket):
                    raise _no_bucket(bucket)
                entries += [(name.split("/", 1)[1] if "/" in name else "", ObjectInfo.of(d))
                            for name, d in found.items() if d.get("type", "file") == "file"]
    except StoreError:
        raise
    except Exception as exc:  # noqa: BLE001 - every client error becomes a located reason
        raise StoreError("list", url, reason(exc, url)) from exc
    listing = Listing({})
    for full, info in entries:
        if full.startswith(prefix) and len(full) > len(prefix):
            listing.objects[full[len(prefix):]] = info
        elif full != prefix:
            listing.outside.append(full)
    return listing


#: The delimiter of a runs-root listing on S3: each run's conventional artifact folder
#: (run-directory.md ``tasks/<task_id>/``) comes back as one entry instead of every file.
RUN_LISTING_DELIMITER = "/tasks/"


def list_runs(root: str, names: Iterable[str]) -> dict[str, dict[str, ObjectInfo]]:
    """``{folder name: {file name: info}}`` for every folder directly under ``root`` that
    holds at least one of ``names`` as a direct child; StoreError when ``root`` cannot be
    listed (a prefix that holds nothing is an empty runs root, as in any bucket)."""
    root = normalize(root)
    wanted = set(names)
    scheme, bucket, key = split(root)
    prefix = f"{key}/" if key else ""
    runs: dict[str, dict[str, ObjectInfo]] = {}

    def take(full: str, info: ObjectInfo) -> None:
        parts = full[len(prefix):].split("/") if full.startswith(prefix) else []
        if len(parts) == 2 and parts[0] and parts[1] in wanted:
            runs.setdefault(parts[0], {})[parts[1]] = info

    try:
        with session(scheme) as s:
            if hasattr(s.fs, "_call_s3"):
                for page in _s3_pages(s, bucket, prefix, RUN_LISTING_DELIMITER):
                    for c in page.get("Contents", []):
                        take(c["Key"], ObjectInfo.of(c))
            else:
                try:
                    top = s.fs.ls(_path(root), detail=True)
                except FileNotFoundError:  # gcsfs: nothing under the prefix, or no bucket
                    top = []
                if not top and _bucket_missing(s, bucket):
                    raise _no_bucket(bucket)
                folders = [d["name"] for d in top if d.get("type") == "directory"]

                def ls(folder: str) -> list[dict]:
                    try:
                        return s.fs.ls(folder, detail=True)
                    except FileNotFoundError:  # removed since the listing of the root
                        return []

                with ThreadPoolExecutor(min(CONCURRENCY, 16)) as pool:
                    for listed in pool.map(ls, folders):
                        for d in listed:
                            if d.get("type", "file") == "file":
                                take(d["name"].split("/", 1)[1], ObjectInfo.of(d))
    except StoreError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise StoreError("list", root, reason(exc, root)) from exc
    return runs
