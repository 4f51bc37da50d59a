"""The fsspec clients (s3fs, gcsfs), each call on an event-loop thread of its own that ends with
the call, and every failure as a ``StoreError`` naming the location and the reason."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..jsonio import write_atomic
from .locations import CLIENTS, is_remote, normalize, split


#: Requests in flight at once (BENCH_OBJECT_STORE_CONCURRENCY).
CONCURRENCY = int(os.environ.get("BENCH_OBJECT_STORE_CONCURRENCY", "32"))


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


def write_whole(path: Any, data: bytes) -> None:
    """Write ``data`` to a place under a ``storage_path`` so that no reader ever sees half of
    it: a local file through a temporary file and a rename (``jsonio.write_atomic``); an object
    in a bucket with one put (a store replaces an object whole). A reader of a stored value
    (the next run's comparison, the catalog refresh, the UI) may come at any moment."""
    if is_remote(str(path)):
        path.write_bytes(data)
        return
    target = Path(str(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, data)


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
