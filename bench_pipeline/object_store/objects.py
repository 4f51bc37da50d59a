"""Single objects: read, read many in parallel, exists, write, delete; and ``upload``, a local
folder's files to a bucket folder, one PUT per object, metrics.json last."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .clients import CONCURRENCY, StoreError, _bucket_missing, _no_bucket, _path, _Session, reason, session
from .locations import join, normalize, split


def _read_kwargs(s: _Session) -> dict[str, Any]:
    # s3fs's cat_file asks for the size first (HEAD) unless it reads in one request
    return {"max_concurrency": 1} if hasattr(s.fs, "_call_s3") else {}


def read_bytes(url: str) -> bytes:
    """One object's bytes. FileNotFoundError when there is no such object (its bucket
    exists); StoreError for any other failure."""
    url = normalize(url)
    scheme, bucket, _ = split(url)
    try:
        with session(scheme) as s:
            try:
                return s.fs.cat_file(_path(url), **_read_kwargs(s))
            except FileNotFoundError as exc:
                if _bucket_missing(s, bucket):
                    raise _no_bucket(bucket) from exc
                raise
    except FileNotFoundError as exc:
        if "bucket" in str(exc).lower():
            raise StoreError("read", url, reason(exc, url)) from exc
        raise FileNotFoundError(f"{url}: no such object") from None
    except Exception as exc:  # noqa: BLE001
        raise StoreError("read", url, reason(exc, url)) from exc


def read_objects(urls: Iterable[str]) -> dict[str, bytes | None]:
    """``{url: bytes, or None for no such object}``, read in parallel (CONCURRENCY requests
    in flight); StoreError naming the first object that fails otherwise."""
    urls = [normalize(u) for u in urls]
    out: dict[str, bytes | None] = {}
    by_scheme: dict[str, list[str]] = {}
    for u in urls:
        by_scheme.setdefault(split(u)[0], []).append(u)
    for scheme, group in by_scheme.items():
        try:
            with session(scheme) as s:
                got = _read_all(s, [_path(u) for u in group])
                missing = {split(u)[1] for u, v in zip(group, got) if isinstance(v, FileNotFoundError)}
                gone = {b for b in sorted(missing) if _bucket_missing(s, b)}
                got = [_no_bucket(split(u)[1]) if isinstance(v, FileNotFoundError) and split(u)[1] in gone else v
                       for u, v in zip(group, got)]
        except Exception as exc:  # noqa: BLE001 - the client itself (not one object) failed
            raise StoreError("read", group[0], reason(exc, group[0])) from exc
        for u, value in zip(group, got):
            if isinstance(value, FileNotFoundError) and "bucket" not in str(value).lower():
                out[u] = None
            elif isinstance(value, BaseException):
                raise StoreError("read", u, reason(value, u)) from value
            else:
                out[u] = value
    return {u: out[u] for u in urls}


def _read_all(s: _Session, paths: list[str]) -> list[bytes | BaseException]:
    """Each path's bytes or the exception reading it raised, in order."""
    if getattr(s.fs, "async_impl", False):
        kwargs = _read_kwargs(s)

        async def gather() -> list:
            limit = asyncio.Semaphore(CONCURRENCY)

            async def one(path: str):
                async with limit:
                    return await s.fs._cat_file(path, **kwargs)

            return await asyncio.gather(*(one(p) for p in paths), return_exceptions=True)

        return s.run(gather())

    def one(path: str):
        try:
            return s.fs.cat_file(path)
        except Exception as exc:  # noqa: BLE001
            return exc

    with ThreadPoolExecutor(min(CONCURRENCY, max(1, len(paths)))) as pool:
        return list(pool.map(one, paths))


def exists(url: str) -> bool:
    """Whether an object exists (StoreError when that cannot be told)."""
    url = normalize(url)
    scheme, bucket, _ = split(url)
    try:
        with session(scheme) as s:
            try:
                s.fs.info(_path(url))
            except FileNotFoundError as exc:
                if _bucket_missing(s, bucket):
                    raise _no_bucket(bucket) from exc
                raise
            return True
    except FileNotFoundError as exc:
        if "bucket" in str(exc).lower():
            raise StoreError("read", url, reason(exc, url)) from exc
        return False
    except Exception as exc:  # noqa: BLE001
        raise StoreError("read", url, reason(exc, url)) from exc


def write_bytes(url: str, data: bytes) -> None:
    """One object, written in a single PUT (it appears whole or not at all)."""
    url = normalize(url)
    try:
        with session(split(url)[0]) as s:
            try:
                s.fs.pipe_file(_path(url), data)
            except FileNotFoundError as exc:  # a write finds no object missing: its bucket is
                if _bucket_missing(s, split(url)[1]):
                    raise _no_bucket(split(url)[1]) from exc
                raise
    except Exception as exc:  # noqa: BLE001
        raise StoreError("write", url, reason(exc, url)) from exc


def delete(url: str) -> None:
    """Remove one object (no error when it is already gone)."""
    url = normalize(url)
    try:
        with session(split(url)[0]) as s:
            s.fs.rm_file(_path(url))
    except FileNotFoundError:
        return
    except Exception as exc:  # noqa: BLE001
        raise StoreError("delete", url, reason(exc, url)) from exc


#: Uploaded after every other file of a folder, in this order: a folder with metrics.json
#: is complete (the baselines count a run as processed by it).
LAST = ("attempts.jsonl", "metrics.json")


def upload(local_dir: Path | str, url: str, names: Iterable[str] | None = None) -> list[str]:
    """Upload files of ``local_dir`` (``names``: paths relative to it, default every file
    below it) to the bucket folder ``url``: each one PUT, the others in parallel, then
    LAST in order. Returns the URLs written; StoreError naming the first that fails."""
    local_dir, url = Path(local_dir), normalize(url)
    if names is None:
        names = sorted(p.relative_to(local_dir).as_posix() for p in local_dir.rglob("*") if p.is_file())
    names = list(dict.fromkeys(names))
    first = [n for n in names if n not in LAST]
    last = [n for n in LAST if n in names]
    scheme = split(url)[0]
    written = []
    with session(scheme) as s:
        def put(name: str) -> str:
            target = join(url, name)
            try:
                try:
                    s.fs.put_file(str(local_dir / name), _path(target))
                except FileNotFoundError as exc:
                    if _bucket_missing(s, split(url)[1]):
                        raise _no_bucket(split(url)[1]) from exc
                    raise
            except Exception as exc:  # noqa: BLE001
                raise StoreError("write", target, reason(exc, target)) from exc
            return target

        if first:
            with ThreadPoolExecutor(min(CONCURRENCY, len(first))) as pool:
                written += list(pool.map(put, first))
        written += [put(name) for name in last]
    return written
