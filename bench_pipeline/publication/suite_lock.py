"""One publication at a time per (Langfuse target, suite) on this machine.

The Dataset Items of a suite are shared by every run of it, and the publisher merges each
run's items into what the items hold (read, merge, write: ``mapping.merge_item``). Two
publications of one suite at the same moment (a sensor's run and a backfill's, two
``bench-pipeline process --publish``) would each merge into the state before the other's
writes, and the later write would drop what the earlier one added. An exclusive ``flock`` on a
file named after the target and the suite makes the second wait for the first; the kernel
releases it when a process ends, however it ends.

The lock files live in ``BENCH_LOCK_DIR``, by default ``<temp dir>/bench_pipeline-locks``: every
process of one machine (Dagster's workers, the command line) meets there; processes on several
machines meet where it is a folder they share (the Kubernetes values put it on the reports
volume; NFS serves ``flock`` as a byte-range lock).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

POLL_SECONDS = 0.2


class LockError(Exception):
    """The lock could not be taken: held by another publication for longer than allowed, or
    its file cannot be made."""


def lock_dir() -> Path:
    return Path(os.environ.get("BENCH_LOCK_DIR") or Path(tempfile.gettempdir()) / "bench_pipeline-locks")


def lock_path(target: str, suite: str) -> Path:
    digest = hashlib.sha256(f"{target}\n{suite}".encode()).hexdigest()[:20]
    return lock_dir() / f"langfuse-suite-{digest}.lock"


@contextlib.contextmanager
def suite_lock(target: str, suite: str, *, timeout: float, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold the (target, suite) lock for the block; ``on_wait()`` is called once when another
    holder makes this one wait; LockError after ``timeout`` seconds of waiting."""
    path = lock_path(target, suite)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path, "a+b")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise LockError(f"cannot make the publication lock {path} ({exc}); set BENCH_LOCK_DIR to a "
                        f"writable folder") from None
    with handle:
        deadline = None
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if deadline is None:
                    deadline = time.monotonic() + timeout
                    if on_wait is not None:
                        on_wait()
                if time.monotonic() >= deadline:
                    raise LockError(f"another publication of suite {suite!r} to this Langfuse server held "
                                      f"{path} for more than {timeout:.0f} s") from None
                time.sleep(POLL_SECONDS)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
