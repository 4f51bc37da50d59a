"""Locations: a local path or a URL ``<scheme>://<bucket>/<key prefix>``, told apart, normalised,
joined, shown, linked; where the local copies of bucket folders go."""

from __future__ import annotations

import os
import posixpath
import re
import uuid
from pathlib import Path


#: A URL: a scheme of two or more characters (``C:/`` is a Windows drive), one or two slashes.
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/{1,2}(.*)$", re.DOTALL)
LOCAL_SCHEMES = frozenset({"file", "local"})
#: The fsspec package each scheme needs (what a StoreError tells to install).
CLIENTS = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs", "abfs": "adlfs"}
#: The folder of the local cache whose sub-folders mirror buckets: <scheme>/<bucket>/<key>.
MIRROR = "object-store"


def is_remote(location: object) -> bool:
    """Whether ``location`` is an object-store URL (not a local path)."""
    match = _URL.match(str(location))
    return bool(match) and match.group(1).lower() not in LOCAL_SCHEMES


def normalize(location: object) -> str:
    """A URL as ``<scheme>://<bucket>/<key>`` without a trailing slash; a local path as given."""
    text = str(location)
    match = _URL.match(text)
    if not match or match.group(1).lower() in LOCAL_SCHEMES:
        return text
    return f"{match.group(1).lower()}://{match.group(2).strip('/')}"


def split(url: str) -> tuple[str, str, str]:
    """(scheme, bucket, key) of a URL; the key has no leading or trailing slash."""
    scheme, rest = normalize(url).split("://", 1)
    bucket, _, key = rest.partition("/")
    return scheme, bucket, key.strip("/")


def join(location: object, *parts: str) -> str:
    """``location`` with path segments appended (``/`` for a URL, the OS separator locally)."""
    if is_remote(location):
        return "/".join([normalize(location), *(p.strip("/") for p in parts if p)])
    return os.path.join(str(location), *parts)


def cache_root() -> Path:
    """The local cache: BENCH_CACHE, default $BENCH_HOME/cache (BENCH_HOME as in
    resources/settings.py, default ./.bench_data)."""
    configured = os.environ.get("BENCH_CACHE")
    if configured:
        return Path(configured).absolute()
    return Path(os.environ.get("BENCH_HOME", ".bench_data")).absolute() / "cache"


def mirror_path(url: str, root: Path | None = None) -> Path:
    """Where the local copy of a bucket folder lives: ``<root>/<scheme>/<bucket>/<key>``,
    the root by default ``cache_root()/object-store``. ``url_of`` reads it back."""
    scheme, bucket, key = split(url)
    root = root if root is not None else cache_root() / MIRROR
    return root.joinpath(scheme, bucket, *(key.split("/") if key else ()))


def staging_root() -> Path:
    """A new, unique local folder mirroring buckets (``.../object-store``) to write outputs
    into before they are uploaded: ``cache_root()/staging/<unique>/object-store``."""
    return cache_root() / "staging" / f"{os.getpid()}-{uuid.uuid4().hex[:12]}" / MIRROR


def url_of(path: object) -> str | None:
    """The URL a local mirror or staging path stands for (``mirror_path``, ``staging_root``),
    None for any other path. Reads the path alone: the same in every process."""
    parts = Path(os.path.abspath(str(path))).parts
    for i, part in enumerate(parts[:-2]):
        if part == MIRROR and parts[i + 1] in CLIENTS:
            rest = "/".join(parts[i + 3:])
            return f"{parts[i + 1]}://{parts[i + 2]}" + (f"/{rest}" if rest else "")
    return None


def location_text(path: object) -> str:
    """How a file or folder is named to a person: its URL when it is the local copy of an
    object (``url_of``), else its path."""
    return url_of(path) or str(path)


def relative_link(target: object, start: object) -> str:
    """The link from a file written in folder ``start`` to ``target`` (a run folder, a report):
    a relative path when both are local (``""`` for the same folder) or both in one bucket
    (from their keys, so that runs and reports sharing a bucket link exactly as the same
    layout on disk does); otherwise ``target``'s URL (``s3://...``), or its ``file://`` URI
    when only ``start`` is in a bucket."""
    t, s = url_of(target), url_of(start)
    if t is None and s is None:
        base = Path(os.path.relpath(Path(str(target)).resolve(), Path(str(start)).resolve())).as_posix()
        return "" if base == "." else base
    if t is not None and s is not None and split(t)[:2] == split(s)[:2]:
        base = posixpath.relpath("/" + split(t)[2], "/" + split(s)[2])
        return "" if base == "." else base
    if t is not None:
        return t
    return Path(str(target)).resolve().as_uri()
