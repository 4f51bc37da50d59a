"""Run folders, outputs and other files in object storage (``s3://``, ``gs://``), through fsspec.

A *location* is a local path or a URL ``<scheme>://<bucket>/<key prefix>``; ``is_remote``
tells them apart (``s3:/bucket/key``, what ``pathlib`` makes of a URL, counts as the URL).
Credentials and the endpoint come from each SDK's own variables (for S3: ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_PROFILE``, ``AWS_REGION`` and
``AWS_ENDPOINT_URL``, so that any S3 API serves; for Google Cloud Storage
``GOOGLE_APPLICATION_CREDENTIALS`` and ``STORAGE_EMULATOR_HOST``), read by the client (s3fs /
gcsfs), never here. gs:// goes through gcsfs's JSON API client (``gcsfs.core.GCSFileSystem``),
and, as Google's own client does, with anonymous credentials when ``STORAGE_EMULATOR_HOST``
names an emulator.

The stages read and write local files only. This module is what stands between them and a
bucket:

- ``list_runs``: the run folders under a runs root with the metadata (size, ETag,
  last-modified) of the files named at the top of each (run_folders.LISTED_FILES:
  manifest.json, suite.json, results.jsonl, results.rejudged.jsonl and the runner's
  metrics.json and summary.md), from listing pages alone
  (on S3 one listing of the whole root whose delimiter ``/tasks/`` rolls each run's
  conventional artifact folder into one entry, so a page covers about 300 runs);
- ``mirror``: a folder of the bucket copied into the local cache
  (``$BENCH_CACHE/object-store/<scheme>/<bucket>/<key>``, default
  ``$BENCH_HOME/cache``), object by object, only what changed since the last copy (a small
  index beside the folder keeps each object's size, ETag and last-modified), in parallel;
  keys that cannot be a path inside the folder (``..`` or ``.`` segments, empty segments
  as in an absolute key, keys outside the folder's prefix) are refused with a located
  finding and never fetched;
- ``upload``: a local folder's files to a bucket folder, one PUT per object (an object
  appears whole or not at all: no reader sees a half-written metrics.json), metrics.json
  last so that a folder with metrics.json is complete;
- ``read_bytes``, ``read_objects``, ``write_bytes``, ``exists``: single objects.

Every failure is a ``StoreError`` naming the location and the reason (the bucket does not
exist, no credentials, the endpoint cannot be reached, access denied, the client is not
installed). Each call runs its client on an event-loop thread of its own that ends with
the call, so a process that forks after it (``bulk.can_fork``) has no thread left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import fcntl
import os
import posixpath
import re
import shutil
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

#: A URL: a scheme of two or more characters (``C:/`` is a Windows drive), one or two slashes.
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/{1,2}(.*)$", re.DOTALL)
LOCAL_SCHEMES = frozenset({"file", "local"})
#: The fsspec package each scheme needs (what a StoreError tells to install).
CLIENTS = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs", "abfs": "adlfs"}
#: The folder of the local cache whose sub-folders mirror buckets: <scheme>/<bucket>/<key>.
MIRROR = "object-store"
#: Requests in flight at once (BENCH_OBJECT_STORE_CONCURRENCY).
CONCURRENCY = int(os.environ.get("BENCH_OBJECT_STORE_CONCURRENCY", "32"))
#: Objects read per batch when mirroring (bounds the bytes held in memory at once).
BATCH = 256


# --- Locations ---------------------------------------------------------------------------

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


# --- Errors ------------------------------------------------------------------------------

class StoreError(OSError):
    """An object-store location that cannot be listed, read or written, with the reason."""

    def __init__(self, action: str, url: str, reason: str) -> None:
        super().__init__(f"cannot {action} {url}: {reason}")
        self.action, self.url, self.reason = action, url, reason

    def __reduce__(self):  # travels between processes as itself
        return StoreError, (self.action, self.url, self.reason)

    def __str__(self) -> str:
        return f"cannot {self.action} {self.url}: {self.reason}"


_CREDENTIAL_ERRORS = {"NoCredentialsError", "PartialCredentialsError", "NoAuthTokenError",
                      "CredentialRetrievalError", "DefaultCredentialsError", "RefreshError"}
_CONNECTION_ERRORS = {"EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError", "ConnectionClosedError",
                      "ClientConnectorError", "ClientConnectionError", "ServerDisconnectedError", "ClientOSError",
                      "ServerTimeoutError"}


def endpoint(scheme: str = "s3") -> str:
    """The endpoint a client talks to, as configured by the SDK's variables."""
    if scheme in ("s3", "s3a"):
        return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or "AWS S3 (the default)"
    return os.environ.get("STORAGE_EMULATOR_HOST") or "the default endpoint"


def reason(exc: BaseException, url: str) -> str:
    """A person's sentence for why ``url`` could not be used."""
    scheme, bucket, _ = split(url)
    names = {c.__name__ for c in type(exc).__mro__}
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, ImportError) or (isinstance(exc, ValueError) and "Protocol not known" in text):
        package = CLIENTS.get(scheme, f"an fsspec package for {scheme}://")
        return f"the {scheme}:// client is not installed ({text}); install {package} (pip install '.[k8s]')"
    if names & _CREDENTIAL_ERRORS:
        how = ("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or give the pod a role"
               if scheme in ("s3", "s3a") else "set GOOGLE_APPLICATION_CREDENTIALS or give the pod a service account")
        return f"no credentials ({text}): {how}"
    if isinstance(exc, FileNotFoundError) and "bucket" in text.lower():
        return f"the bucket {bucket!r} does not exist ({text})"
    if isinstance(exc, PermissionError) or (type(exc) is OSError and text.startswith("Forbidden")):
        return f"access denied ({text})"  # gcsfs's 403: an OSError "Forbidden: <path>"
    if names & _CONNECTION_ERRORS or isinstance(exc, (ConnectionError, TimeoutError)):
        return f"cannot reach the object store at {endpoint(scheme)} ({text})"
    return f"{type(exc).__name__}: {text}"


# --- Clients -----------------------------------------------------------------------------

class _Session:
    """A filesystem client on an event loop of its own (see the module doc)."""

    def __init__(self, scheme: str) -> None:
        self.scheme = scheme
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="bench-object-store", daemon=True)
        self.thread.start()
        self._fs: Any = None

    @property
    def fs(self) -> Any:
        if self._fs is None:
            import fsspec

            cls = fsspec.get_filesystem_class(self.scheme)
            kwargs: dict[str, Any] = {"skip_instance_cache": True, "use_listings_cache": False}
            if self.scheme in ("gs", "gcs"):
                cls, extra = _gcs_client()
                kwargs.update(extra)
            if getattr(cls, "async_impl", False):
                kwargs.update(loop=self.loop, asynchronous=False)
            self._fs = cls(**kwargs)
        return self._fs

    @property
    def s3(self) -> bool:
        return self._fs is not None and hasattr(self._fs, "_call_s3")

    def run(self, coroutine) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def close(self) -> None:
        fs, self._fs = self._fs, None
        client = getattr(fs, "_s3", None)
        if client is not None:  # an s3fs client: close its HTTP session on its own loop
            with contextlib.suppress(Exception):
                self.run(client.__aexit__(None, None, None))
        http = getattr(fs, "_session", None) if client is None else None
        if http is not None and not getattr(http, "closed", True):  # gcsfs's aiohttp session
            with contextlib.suppress(Exception):
                self.run(http.close())
        with contextlib.suppress(Exception):  # the threads of name lookups and file reads
            self.run(self.loop.shutdown_default_executor())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


def _gcs_client() -> tuple[type, dict[str, Any]]:
    """gcsfs's JSON API filesystem and its arguments. Not the class gcsfs registers by default
    (``ExtendedGcsFileSystem``, GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT): that one first asks the
    Storage Control API (gRPC, whose threads outlive the call, see ``bulk.can_fork``) for
    every bucket's layout, which only zonal buckets need. With ``STORAGE_EMULATOR_HOST`` set,
    anonymous credentials, as google-cloud-storage uses with an emulator (no look-up of this
    machine's credentials or metadata server)."""
    from gcsfs.core import GCSFileSystem

    emulator = os.environ.get("STORAGE_EMULATOR_HOST", "") not in ("", "default")
    return GCSFileSystem, ({"token": "anon"} if emulator else {})


def storage_path(location: str) -> Any:
    """The ``UPath`` of a location as the IO managers store frames under it (BENCH_STORAGE_BASE).
    For gs://, gcsfs's JSON API client with the arguments of ``_gcs_client``, registered as
    fsspec's ``gs``/``gcs`` implementation, so that the frames go through the same client as
    every other gs:// call here (and no Storage Control thread outlives a call)."""
    from upath import UPath

    if is_remote(location) and split(normalize(location))[0] in ("gs", "gcs"):
        import fsspec

        cls, options = _gcs_client()
        for protocol in ("gs", "gcs"):
            fsspec.register_implementation(protocol, cls, clobber=True)
        return UPath(normalize(location), **options)
    return UPath(location)


def _bucket_missing(s: _Session, bucket: str) -> bool:
    """Whether ``bucket`` does not exist, asked of a client whose "not found" does not say
    whether the bucket or the object is missing (gcsfs: a 404 for either); False on S3, whose
    errors say it."""
    if s.s3:
        return False
    try:
        return not s.fs.exists(bucket)
    except Exception:  # noqa: BLE001 - the original error is the one to report
        return False


def _no_bucket(bucket: str) -> FileNotFoundError:
    return FileNotFoundError(f"The specified bucket {bucket} does not exist")


_local = threading.local()


@contextlib.contextmanager
def session(scheme: str) -> Iterator[_Session]:
    """The client for ``scheme`` for the block: the calls inside it share one client (and
    its connections); a nested call reuses the outer block's."""
    current = getattr(_local, "sessions", None)
    if current is None:
        current = _local.sessions = {}
    if scheme in current:
        yield current[scheme]
        return
    opened = current[scheme] = _Session(scheme)
    try:
        yield opened
    finally:
        del current[scheme]
        opened.close()


@contextlib.contextmanager
def shared(*locations: object) -> Iterator[None]:
    """One client per scheme of the locations that are in a bucket, for the block: the
    calls made inside it (in this thread) share it instead of each starting its own."""
    with contextlib.ExitStack() as stack:
        for scheme in sorted({split(str(loc))[0] for loc in locations if is_remote(loc)}):
            stack.enter_context(session(scheme))
        yield


def _path(url: str) -> str:
    """The client's path of a URL: ``<bucket>/<key>``."""
    _, bucket, key = split(url)
    return f"{bucket}/{key}" if key else bucket


# --- Object metadata and listings -------------------------------------------------------

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


# --- Single objects ----------------------------------------------------------------------

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


# --- Folders copied into the local cache --------------------------------------------------

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
    return local.parent / f".{local.name}.objects.json"


@contextlib.contextmanager
def _locked(local: Path) -> Iterator[None]:
    """One process at a time fills a folder's copy (others wait, then reuse it)."""
    local.parent.mkdir(parents=True, exist_ok=True)
    with open(local.parent / f".{local.name}.lock", "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


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
        tmp = index_path.with_name(index_path.name + f".tmp-{os.getpid()}")
        tmp.write_bytes(orjson.dumps(index, option=orjson.OPT_SORT_KEYS))
        os.replace(tmp, index_path)
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
        tmp = target.with_name(f".{target.name}.part-{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, target)

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
                tmp = target.with_name(f".{target.name}.part-{os.getpid()}")
                tmp.write_bytes(data)
                os.replace(tmp, target)
                index[rel] = wanted[rel].version  # type: ignore[union-attr]
            index_path = _index_path(local)
            tmp = index_path.with_name(index_path.name + f".tmp-{os.getpid()}")
            tmp.write_bytes(orjson.dumps(index, option=orjson.OPT_SORT_KEYS))
            os.replace(tmp, index_path)
    return {url: local for url, local, _, _, _ in plans}


# --- Conditional writes (a lock held in a bucket) ------------------------------------------

def _s3_error_code(exc: BaseException) -> str | None:
    """The S3 error code behind an exception (s3fs translates the client's errors)."""
    while exc is not None:
        response = getattr(exc, "response", None)
        if isinstance(response, dict) and isinstance(response.get("Error"), dict):
            return response["Error"].get("Code")
        exc = exc.__cause__ or exc.__context__
    return None


def _s3_only(s: _Session, url: str) -> None:
    if not hasattr(s.fs, "_call_s3"):
        raise StoreError("lock", url, f"the publication lock needs conditional writes (create only if absent), "
                                      f"implemented for s3:// only, not {split(url)[0]}://: use an s3:// folder or "
                                      f"a local folder every publisher shares")


def create_exclusive(url: str, data: bytes) -> str | None:
    """Write the object only if there is none yet (one PUT with ``If-None-Match: *``):
    its ETag, or None when another exists (S3 answers 412 to every later writer)."""
    url = normalize(url)
    _, bucket, key = split(url)
    try:
        with session(split(url)[0]) as s:
            _s3_only(s, url)
            return str(s.fs.call_s3("put_object", Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")["ETag"])
    except StoreError:
        raise
    except Exception as exc:  # noqa: BLE001
        if isinstance(exc, FileExistsError) or _s3_error_code(exc) in ("PreconditionFailed", "ConditionalRequestConflict"):
            return None
        raise StoreError("write", url, reason(exc, url)) from exc


def read_with_etag(url: str) -> tuple[bytes, str] | None:
    """An object's bytes and ETag from one GET; None when there is no such object."""
    url = normalize(url)
    _, bucket, key = split(url)
    try:
        with session(split(url)[0]) as s:
            _s3_only(s, url)

            async def get() -> tuple[bytes, str]:
                response = await s.fs._call_s3("get_object", Bucket=bucket, Key=key)
                body = response["Body"]
                try:
                    return await body.read(), str(response["ETag"])
                finally:
                    body.close()

            return s.run(get())
    except StoreError:
        raise
    except Exception as exc:  # noqa: BLE001
        if (isinstance(exc, FileNotFoundError) and "bucket" not in str(exc).lower()) or _s3_error_code(exc) == "NoSuchKey":
            return None
        raise StoreError("read", url, reason(exc, url)) from exc


def delete_if_unchanged(url: str, etag: str) -> bool:
    """Delete the object only if its ETag is still ``etag`` (``If-Match``): whether this call
    deleted it (False: it changed or is gone)."""
    url = normalize(url)
    _, bucket, key = split(url)
    try:
        with session(split(url)[0]) as s:
            _s3_only(s, url)
            s.fs.call_s3("delete_object", Bucket=bucket, Key=key, IfMatch=etag)
            return True
    except StoreError:
        raise
    except Exception as exc:  # noqa: BLE001
        if isinstance(exc, FileNotFoundError) or _s3_error_code(exc) in ("PreconditionFailed", "NoSuchKey",
                                                                           "ConditionalRequestConflict"):
            return False
        raise StoreError("delete", url, reason(exc, url)) from exc
