"""Bulk work over many small objects: pausing the cyclic garbage collector, forking workers.

Deriving a large run creates millions of small dicts, lists and strings that all stay alive
until the stage ends. Each automatic collection walks every tracked object, so the cyclic
collector spends time in proportion to the heap on every pass and turns a linear stage into
a much slower one (measured in docs/benchmarks.md: about a third of the whole command).
The stages create no reference cycles worth collecting (plain dicts and lists freed by
reference counting), so automatic collection is paused while they run and restored after.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause automatic cyclic garbage collection inside the block; restore it after.

    Nested use is safe: only the outermost block re-enables collection, and only when it
    was enabled on entry. Reference counting still frees objects as usual.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# --- Chunks of a large list in forked worker processes ---------------------------------

#: The work of the current fork_map call, inherited by forked workers (never pickled, so
#: closures and large read-only inputs cost nothing to hand over).
_FORK_STATE: tuple[Callable[[int, Sequence[Any]], Any], Sequence[Any]] | None = None


def _worker_init() -> None:
    """Default SIGTERM/SIGINT in workers: a parent's handlers (Dagster, test runners) must
    not keep a worker alive when the pool shuts down."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _run_chunk(bounds: tuple[int, int]) -> Any:
    func, items = _FORK_STATE
    return func(bounds[0], items[bounds[0]:bounds[1]])


def default_workers() -> int:
    """Worker processes for large runs: the machine's cores, at most 8."""
    return max(1, min(os.cpu_count() or 1, 8))


def fork_map(
    func: Callable[[int, Sequence[T]], R],
    items: Sequence[T],
    *,
    workers: int = 1,
    chunk_size: int = 500,
    progress: Callable[[int, int], None] | None = None,
) -> list[R]:
    """``[func(start, items[start:start + chunk_size]) for each chunk]``, in order.

    With ``workers`` > 1, more than one chunk and a platform that can fork, the chunks are
    computed in that many forked processes (each result is pickled back); otherwise in this
    process. ``func`` must be a pure function of its chunk and of state that exists before
    the call. ``progress(done, total)`` is called after each chunk.
    """
    global _FORK_STATE
    total = len(items)
    bounds = [(start, min(start + chunk_size, total)) for start in range(0, total, chunk_size)]
    results: list[R] = []
    if workers <= 1 or len(bounds) <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        for start, end in bounds:
            results.append(func(start, items[start:end]))
            if progress is not None:
                progress(end, total)
        return results
    _FORK_STATE = (func, items)
    try:
        with multiprocessing.get_context("fork").Pool(min(workers, len(bounds)), initializer=_worker_init) as pool:
            for (_, end), result in zip(bounds, pool.imap(_run_chunk, bounds)):
                results.append(result)
                if progress is not None:
                    progress(end, total)
            pool.close()  # let workers finish on their own instead of being terminated
            pool.join()
    finally:
        _FORK_STATE = None
    return results
