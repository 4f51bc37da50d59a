"""One publication at a time per (Langfuse target, suite) on this machine.

The Dataset Items of a suite are shared by every run of it, and the publisher merges each
run's items into what the items hold (read, merge, write: ``items.merge_item``). Two
publications of one suite at the same moment (a sensor's run and a backfill's, two
``bench-pipeline process --publish``) would each merge into the state before the other's
writes, and the later write would drop what the earlier one added. An exclusive ``flock`` on a
file named after the target and the suite makes the second wait for the first; the kernel
releases it when a process ends, however it ends.

The lock files live in ``BENCH_LOCK_DIR``, by default ``<temp dir>/bench_pipeline-locks``: every
process of one machine (Dagster's workers, the command line) meets there; processes on several
machines meet where it is a folder they share (NFS serves ``flock`` as a byte-range lock).

In the default folder a holder removes its lock file when it is done, so the temporary folder
does not fill with one file per Langfuse target and suite ever published (every test's
stand-in server is a target of its own). It removes the file while it still holds the lock,
and whoever takes a lock checks that the file it holds is still the one at the lock's path (the
same device and inode) and starts again when not: a waiter that had the file open before it
was removed gets the lock on a file no other process can find any more, lets it go and takes
the lock on the path's new file (or waits for its holder). So at most one process ever holds
the lock on the file at the path, as before. A holder that dies leaves its file behind
(unlocked: the next holder takes it and removes it when done). A folder ``BENCH_LOCK_DIR``
names keeps its files (one per target and suite, as before): it may be shared over NFS, whose
clients may answer for a removed file from their caches, so there the check could not be
trusted.

``BENCH_LOCK_DIR`` may also be a bucket folder (``s3://bucket/locks``, what the Kubernetes values
use with the roots in a bucket): the lock is then an object created only if none exists (one
PUT with ``If-None-Match: *``, which S3 grants to one writer) and removed by its holder only
(``If-Match`` its ETag). The kernel cannot release it for a process that died, so a lock older
than ``BENCH_LOCK_LEASE_SECONDS`` (default an hour, far beyond any publication) is taken as
left by a dead holder and removed, again only if unchanged, by one waiter.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from .. import object_store

POLL_SECONDS = 0.2
#: How often a waiter asks again for a lock held in a bucket (each time one request).
OBJECT_POLL_SECONDS = 1.0


class LockError(Exception):
    """The lock could not be taken: held by another publication for longer than allowed, or
    its file cannot be made."""


def lock_dir() -> Path | str:
    configured = os.environ.get("BENCH_LOCK_DIR")
    if configured and object_store.is_remote(configured):
        return object_store.normalize(configured)
    return Path(configured or Path(tempfile.gettempdir()) / "bench_pipeline-locks")


def removes_its_files() -> bool:
    """Whether a holder removes its lock file when done: in the default folder, which is this
    machine's own, yes; in a folder ``BENCH_LOCK_DIR`` names, no (see the module doc)."""
    return not os.environ.get("BENCH_LOCK_DIR")


def lock_path(target: str, suite: str) -> Path | str:
    digest = hashlib.sha256(f"{target}\n{suite}".encode()).hexdigest()[:20]
    folder = lock_dir()
    name = f"langfuse-suite-{digest}.lock"
    return object_store.join(folder, name) if isinstance(folder, str) else folder / name


def lease_seconds() -> float:
    return float(os.environ.get("BENCH_LOCK_LEASE_SECONDS") or 3600)


@contextlib.contextmanager
def suite_lock(target: str, suite: str, *, timeout: float, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold the (target, suite) lock for the block; ``on_wait()`` is called once when another
    holder makes this one wait; LockError after ``timeout`` seconds of waiting. In the
    default folder the lock's file is removed when the block ends (see the module doc)."""
    path = lock_path(target, suite)
    if isinstance(path, str):
        with _object_lock(path, suite, timeout, on_wait):
            yield
        return
    deadline = None
    while True:
        handle = _open_lock_file(path)
        replaced = False
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            if _is_at(handle, path):
                break
            replaced = True  # its holder removed it before this one got it: take the new file
        except BlockingIOError:
            pass
        except OSError as exc:
            handle.close()
            if exc.errno != errno.ESTALE:  # ESTALE: removed on the NFS server by its holder
                raise LockError(f"cannot take the publication lock {path} ({exc}); set BENCH_LOCK_DIR to a "
                                f"folder where flock works") from None
        handle.close()
        if deadline is None:
            deadline = time.monotonic() + timeout
            if on_wait is not None:
                on_wait()
        if time.monotonic() >= deadline:
            if replaced:
                raise LockError(f"the publication lock {path} of suite {suite!r} was replaced each time it was "
                                f"taken, for {timeout:.0f} s; set BENCH_LOCK_DIR to a folder (whose lock files "
                                "are kept)") from None
            raise LockError(f"another publication of suite {suite!r} to this Langfuse server held "
                            f"{path} for more than {timeout:.0f} s") from None
        time.sleep(POLL_SECONDS)
    remove = removes_its_files()
    with handle:
        try:
            yield
        finally:
            if remove:
                with contextlib.suppress(OSError):  # removed while held; one that cannot be is taken again
                    path.unlink()
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _open_lock_file(path: Path) -> BinaryIO:
    """The lock's file at ``path``, created when missing (its folder too)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return open(path, "a+b")  # noqa: SIM115 - the caller closes it
    except OSError as exc:
        raise LockError(f"cannot make the publication lock {path} ({exc}); set BENCH_LOCK_DIR to a "
                        f"writable folder") from None


def _is_at(handle: BinaryIO, path: Path) -> bool:
    """Whether the open file is the one at ``path`` now (not removed, not replaced)."""
    try:
        held, there = os.fstat(handle.fileno()), os.stat(path)
    except OSError:
        return False
    return (held.st_dev, held.st_ino) == (there.st_dev, there.st_ino)


@contextlib.contextmanager
def _object_lock(url: str, suite: str, timeout: float, on_wait: Callable[[], None] | None) -> Iterator[None]:
    """``suite_lock`` held as an object in a bucket (see the module doc)."""
    deadline = None
    while True:
        body = json.dumps({"holder": f"{socket.gethostname()}:{os.getpid()}",
                           "expires_at": time.time() + lease_seconds()}).encode()
        try:
            etag = object_store.create_exclusive(url, body)
            if etag is not None:
                break
            held = object_store.read_with_etag(url)
            if held is not None and _expired(held[0]):
                object_store.delete_if_unchanged(url, held[1])  # a dead holder's: one waiter removes it
                continue
        except object_store.StoreError as exc:
            raise LockError(f"cannot take the publication lock {url} ({exc.reason}); set BENCH_LOCK_DIR to a "
                            "folder or bucket every publisher can write") from None
        if held is None:
            continue  # released meanwhile: try again at once
        if deadline is None:
            deadline = time.monotonic() + timeout
            if on_wait is not None:
                on_wait()
        if time.monotonic() >= deadline:
            raise LockError(f"another publication of suite {suite!r} to this Langfuse server held "
                            f"{url} for more than {timeout:.0f} s")
        time.sleep(min(OBJECT_POLL_SECONDS, max(0.05, deadline - time.monotonic())))
    try:
        yield
    finally:
        with contextlib.suppress(object_store.StoreError):  # not removed: it expires after its lease
            object_store.delete_if_unchanged(url, etag)


def _expired(data: bytes) -> bool:
    try:
        expires = json.loads(data).get("expires_at")
    except (ValueError, AttributeError):
        return True  # not a lock this code wrote: as good as none
    return not isinstance(expires, (int, float)) or expires < time.time()
