"""Folders of a bucket copied into the local cache, object by object and only what changed since
the last copy; keys that cannot be a path inside the folder are refused with a located finding."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from ..file_lock import exclusive
from ..jsonio import short_name, write_atomic
from .clients import CONCURRENCY, StoreError, _path, reason, session
from .listings import Listing, ObjectInfo, list_objects
from .locations import join, mirror_path, normalize, split
from .objects import _read_kwargs, read_objects


def unsafe_key(relative: str) -> str | None:
    """Why a key (relative to its folder) cannot be a path inside the folder's local copy,
    None when it can (run-directory.md's rule for ``artifact_dir``, applied to keys)."""
    if relative.startswith("/"):
        return "an absolute key (it starts with '/' after the folder's prefix)"
    parts = relative.split("/")
    if "" in parts:
        return "an empty path segment ('//')"
    if any(p in (".", "..") for p in parts):
        return "a '.' or '..' path segment, which would leave the run folder"
    if "\x00" in relative:
        return "a NUL character"
    if any(len(p.encode("utf-8")) > 255 for p in parts):
        return "a path segment longer than a file name may be"
    return None


@dataclass
class Mirrored:
    """A bucket folder's local copy: ``local`` (read it as the folder), the listing it was
    made from, the keys fetched this time and how many were reused from the cache, and the
    refused keys as data_quality ``run_files`` findings (``{"file", "status", "reason"}``)."""

    url: str
    local: Path
    listing: Listing
    fetched: list[str] = field(default_factory=list)
    reused: int = 0
    refused: list[dict] = field(default_factory=list)


def _index_path(local: Path) -> Path:
    """The copy's index beside it (a run id can be 247 bytes long: the name is bounded)."""
    return local.parent / f".{short_name(local.name)}.objects.json"


def _write_index(local: Path, index: dict) -> None:
    write_atomic(_index_path(local), orjson.dumps(index, option=orjson.OPT_SORT_KEYS))


@contextlib.contextmanager
def _locked(local: Path) -> Iterator[None]:
    """One process at a time fills a folder's copy (others wait, then reuse it)."""
    local.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(local.parent / f".{short_name(local.name)}.lock"):
        yield


def refusals(url: str, listing: Listing) -> tuple[dict[str, ObjectInfo], list[dict]]:
    """The listing's objects that can be copied (by relative key) and a located finding for
    each refused key (unsafe, outside the prefix, or both an object and a folder), sorted by key."""
    scheme, bucket, key = split(url)
    refused: list[dict] = []
    safe: dict[str, ObjectInfo] = {}
    for rel, info in listing.objects.items():
        if rel.endswith("/") and info.size == 0 and unsafe_key(rel[:-1]) is None:
            continue  # a "folder" marker object, as consoles create: nothing to copy
        why = unsafe_key(rel)
        if why is not None:
            refused.append({"file": rel, "status": "refused",
                            "reason": f"object {url}/{rel}: {why}; not fetched"})
        else:
            safe[rel] = info
    folders = {"/".join(rel.split("/")[:i]) for rel in safe for i in range(1, rel.count("/") + 1)}
    for rel in sorted(set(safe) & folders):
        del safe[rel]
        refused.append({"file": rel, "status": "refused",
                        "reason": f"object {url}/{rel}: both an object and a folder of objects; not fetched"})
    prefix = f"{key}/" if key else ""
    for full in listing.outside:
        refused.append({"file": full, "status": "refused",
                        "reason": f"object {scheme}://{bucket}/{full}: not under the folder's prefix {prefix!r}; "
                                  "not fetched"})
    return safe, sorted(refused, key=lambda r: r["file"])


def mirror(url: str, *, wanted: Callable[[str], bool] | None = None, listing: Listing | None = None,
           prune: bool = True, local: Path | None = None) -> Mirrored:
    """Copy the bucket folder ``url`` into its local copy (``mirror_path``), fetching only the
    objects whose size, ETag or last-modified changed since the copy was made, in parallel.

    ``wanted(relative key)``: which objects to copy (default all); ``listing``: the objects
    when already listed (default: list the folder); ``prune``: remove local files that are
    not wanted objects any more (a deleted or refused object is then missing locally, as
    on disk), and folders that hold no object any more. An object deleted between the
    listing and its read is missing. StoreError names the first object that cannot be
    read, with the reason.

    The copy has every folder that holds an object that can be copied, wanted or not, so
    that whether a folder exists reads the same in the copy as in the bucket (the runner's
    ``tasks/<task>/attempt_<n>`` is looked for before the flat convention, artifacts.py,
    also when it holds none of the wanted files).
    """
    url = normalize(url)
    local = local if local is not None else mirror_path(url)
    listing = listing if listing is not None else list_objects(url)
    safe, refused = refusals(url, listing)
    selected = {rel: info for rel, info in safe.items() if wanted is None or wanted(rel)}
    result = Mirrored(url, local, listing, refused=refused)
    with _locked(local):
        index_path = _index_path(local)
        try:
            index = orjson.loads(index_path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            index = {}
        index = index if isinstance(index, dict) else {}
        stale = [rel for rel, info in selected.items()
                 if index.get(rel) != info.version or not (local / rel).is_file()]
        result.reused = len(selected) - len(stale)
        gone = _fetch(url, local, stale)
        for rel in stale:
            if rel in gone:
                index.pop(rel, None)
                with contextlib.suppress(FileNotFoundError):
                    (local / rel).unlink()
            else:
                index[rel] = selected[rel].version
                result.fetched.append(rel)
        present = set(safe) - gone
        folders = {rel.rsplit("/", 1)[0] for rel in present if "/" in rel}
        folders |= {"/".join(f.split("/")[:i]) for f in folders for i in range(1, f.count("/") + 1)}
        if prune:
            keep = set(selected) - gone
            for path in sorted(local.rglob("*"), reverse=True) if local.is_dir() else ():
                rel = path.relative_to(local).as_posix()
                if path.is_dir() and not path.is_symlink():
                    if rel not in folders:
                        with contextlib.suppress(OSError):
                            path.rmdir()  # only when empty
                elif rel not in keep:
                    path.unlink()
            index = {rel: v for rel, v in index.items() if rel in keep}
        local.mkdir(parents=True, exist_ok=True)
        for rel in sorted(folders):
            with contextlib.suppress(OSError):  # a local file in its way (prune=False): left as it is
                (local / rel).mkdir(exist_ok=True)
        _write_index(local, index)
    return result


def _fetch(url: str, local: Path, rels: list[str]) -> set[str]:
    """Read ``url/rel`` into ``local/rel`` for each rel, CONCURRENCY at a time in one client,
    each file written as soon as it arrives and atomically (a partial file never takes the
    place of one); returns the rels that no longer exist. StoreError names the first object
    that cannot be read."""
    gone: set[str] = set()
    if not rels:
        return gone

    def place(rel: str, data: bytes) -> None:
        target = local / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, data)

    scheme = split(url)[0]
    urls = [join(url, rel) for rel in rels]
    try:
        with session(scheme) as s:
            if getattr(s.fs, "async_impl", False):
                kwargs = _read_kwargs(s)

                async def gather() -> list:
                    limit = asyncio.Semaphore(CONCURRENCY)

                    async def one(rel: str, target_url: str):
                        async with limit:
                            try:
                                data = await s.fs._cat_file(_path(target_url), **kwargs)
                            except Exception as exc:  # noqa: BLE001 - returned, raised below
                                return exc
                        place(rel, data)
                        return None

                    return await asyncio.gather(*(one(r, u) for r, u in zip(rels, urls)))

                errors = s.run(gather())
            else:
                got = read_objects(urls)
                errors = []
                for rel, u in zip(rels, urls):
                    data = got[normalize(u)]
                    errors.append(FileNotFoundError(u) if data is None else place(rel, data))
    except Exception as exc:  # noqa: BLE001 - the client itself failed
        raise StoreError("read", urls[0], reason(exc, urls[0])) from exc
    for rel, u, error in zip(rels, urls, errors):
        if isinstance(error, FileNotFoundError) and "bucket" not in str(error).lower():
            gone.add(rel)
        elif isinstance(error, BaseException):
            raise StoreError("read", u, reason(error, u)) from error
    return gone


def remove_tree(path: Path) -> None:
    """Remove a local staging folder (and its empty unique parents), ignoring what is gone."""
    shutil.rmtree(path, ignore_errors=True)


def mirror_files(folders: Iterable[tuple[str, Mapping[str, ObjectInfo | None]]]) -> dict[str, Path]:
    """Named files of many bucket folders copied into their local copies at once: ``folders``
    gives each folder's URL with ``{relative key: info}`` from a listing already made (info
    None: the listing has no such object, so the copy must not have it either). Only files
    whose version changed are read, all of them in one parallel batch. Returns ``{url:
    local copy}``; the copies' other files are left as they are."""
    plans: list[tuple[str, Path, dict[str, ObjectInfo | None], dict, list[str]]] = []
    for url, files in folders:
        url = normalize(url)
        local = mirror_path(url)
        wanted = {rel: info for rel, info in files.items() if unsafe_key(rel) is None}
        try:
            index = orjson.loads(_index_path(local).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            index = {}
        index = index if isinstance(index, dict) else {}
        stale = [rel for rel, info in wanted.items()
                 if (info is None and (rel in index or (local / rel).exists()))
                 or (info is not None and (index.get(rel) != info.version or not (local / rel).is_file()))]
        plans.append((url, local, wanted, index, stale))
    todo = [(url, local, rel) for url, local, wanted, _, stale in plans for rel in stale if wanted[rel] is not None]
    got = read_objects([join(url, rel) for url, _, rel in todo]) if todo else {}
    for url, local, wanted, index, stale in plans:
        if not stale:
            continue
        with _locked(local):
            for rel in stale:
                data = got.get(normalize(join(url, rel))) if wanted[rel] is not None else None
                target = local / rel
                if data is None:
                    index.pop(rel, None)
                    with contextlib.suppress(FileNotFoundError):
                        target.unlink()
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(target, data)
                index[rel] = wanted[rel].version  # type: ignore[union-attr]
            _write_index(local, index)
    return {url: local for url, local, _, _, _ in plans}
