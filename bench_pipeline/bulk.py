"""Bulk work over many small objects: pausing the cyclic garbage collector, forking workers.

Deriving a large run creates millions of small dicts, lists and strings that all stay alive
until the stage ends. Each automatic collection walks every tracked object, so the cyclic
collector spends time in proportion to the heap on every pass and turns a linear stage into
a much slower one (measured in docs/benchmarks.md: about a third of the whole command).
The stages create no reference cycles worth collecting (plain dicts and lists freed by
reference counting), so automatic collection is paused while they run and restored after.

``fork_map`` spreads chunks of a list over this process and forked children (large runs).
Forking hands the inputs over for free; only results travel back, pickled. It forks only
where that is safe (``can_fork``) and otherwise does the same work in this process.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import queue
import signal
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar

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

def default_workers() -> int:
    """Processes for large runs (this one included): the machine's cores, at most 8."""
    return max(1, min(os.cpu_count() or 1, 8))


def can_fork() -> bool:
    """Whether forking this process is safe: the platform forks and no other Python thread
    runs here (a fork copies only the calling thread, so a lock another thread holds, in
    logging or an event writer, would stay locked in the child forever). A Dagster run
    process has such threads; the per-partition worker processes it starts
    (``assets.partition_pool``) have only the one that waits, in a system call, for the end
    of the process that started them (``start_worker``), and may fork."""
    others = [t for t in threading.enumerate() if t is not threading.current_thread()]
    # a worker's PARENT_WATCH thread only waits in a system call, holding no lock
    return "fork" in multiprocessing.get_all_start_methods() and all(t.name == PARENT_WATCH for t in others)


def fork_map(
    func: Callable[[int, Sequence[T]], R],
    items: Sequence[T],
    *,
    workers: int = 1,
    chunk_size: int = 500,
    progress: Callable[[int, int], None] | None = None,
) -> list[R]:
    """``[func(start, items[start:start + chunk_size]) for each chunk]``, in chunk order.

    With ``workers`` > 1, more than one chunk and a process that can fork (``can_fork``), this process
    and ``workers - 1`` forked children take chunks from a shared counter until none is
    left; the first chunk is always this process's. This process's own results need no
    pickling; a child's are pickled back through a queue. ``func`` and ``items`` reach the
    children by fork, so closures over large
    read-only state cost nothing to hand over; ``func`` must not depend on anything that
    changes during the call. ``progress(done_items, total)`` follows each finished chunk.
    A child's exception is raised here; a child that dies is a RuntimeError.
    """
    total = len(items)
    bounds = [(start, min(start + chunk_size, total)) for start in range(0, total, chunk_size)]
    if workers <= 1 or len(bounds) <= 1 or not can_fork():
        results = []
        for start, end in bounds:
            results.append(func(start, items[start:end]))
            if progress is not None:
                progress(end, total)
        return results
    return _ForkMap(func, items, bounds, min(workers, len(bounds)) - 1, progress).run()


class _ForkMap:
    """One parallel fork_map call: the shared chunk counter, the children, the results."""

    def __init__(self, func: Callable, items: Sequence, bounds: list[tuple[int, int]], children: int,
                 progress: Callable[[int, int], None] | None) -> None:
        ctx = multiprocessing.get_context("fork")
        self.func, self.items, self.bounds, self.progress = func, items, bounds, progress
        self.next_chunk = ctx.Value("q", 0)
        self.queue = ctx.Queue()
        self.results: list[Any] = [None] * len(bounds)
        self.pending = len(bounds)
        self.done_items = 0
        # Not daemonic: a child may itself fork_map. Every child is joined (or terminated) in run().
        self.children = [ctx.Process(target=self._child) for _ in range(children)]

    def _claim(self) -> int | None:
        with self.next_chunk.get_lock():
            k = self.next_chunk.value
            if k >= len(self.bounds):
                return None
            self.next_chunk.value = k + 1
            return k

    def _compute(self, k: int) -> Any:
        start, end = self.bounds[k]
        return self.func(start, self.items[start:end])

    def _child(self) -> None:
        # Default SIGTERM/SIGINT: a parent's handlers (Dagster, test runners) must not keep
        # a child alive when it is told to stop; and it ends with its parent (a killed worker:
        # its queue's feeder may be blocked on a full pipe no one reads any more)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        exit_with_parent()
        k = None
        try:
            while (k := self._claim()) is not None:
                self.queue.put((k, self._compute(k), None))
        except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
            self.queue.put((k, None, _picklable(exc)))

    def _take(self, message: tuple[int, Any, BaseException | None]) -> None:
        k, result, error = message
        if error is not None:
            raise error
        self.results[k] = result
        self.pending -= 1
        start, end = self.bounds[k]
        self.done_items += end - start
        if self.progress is not None:
            self.progress(self.done_items, len(self.items))

    def run(self) -> list[Any]:
        k = self._claim()  # the first chunk is always this process's own
        for child in self.children:
            child.start()
        try:
            while k is not None:
                result = self._compute(k)
                self._take((k, result, None))
                while True:  # collect what the children finished meanwhile
                    try:
                        self._take(self.queue.get_nowait())
                    except queue.Empty:
                        break
                k = self._claim()
            while self.pending:
                try:
                    self._take(self.queue.get(timeout=0.5))
                except queue.Empty:
                    if not any(child.is_alive() for child in self.children) and self.queue.empty():
                        codes = [child.exitcode for child in self.children]
                        raise RuntimeError(f"a worker process ended without returning its chunk (exit codes {codes})")
        finally:
            for child in self.children:
                if self.pending and child.is_alive():
                    child.terminate()
                child.join()
        return self.results


def _picklable(exc: BaseException) -> BaseException:
    """The exception itself when it can travel between processes, else a RuntimeError with its text."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - any pickling failure
        text = "".join(traceback.format_exception(exc))
        return RuntimeError(f"worker process failed:\n{text}")


def exit_now(code: int) -> NoReturn:
    """End this process as a normal exit does, without freeing its objects one by one.

    A processed large run is millions of small objects; freeing them at interpreter shutdown
    takes a noticeable part of a second (about 0.35 s after a 10,000-attempt run) for memory
    the operating system reclaims at once. The caller has written and closed every output;
    here the standard streams are flushed and the exit handlers run as at a normal exit
    (the Langfuse SDK flushes there; multiprocessing removes its fork server's folder),
    then the process ends (``os._exit``)."""
    import atexit
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    # A child process still alive now is abandoned work (an interrupted step's workers, whose
    # pool was never shut down): killed (SIGTERM may be ignored, inherited so from whoever
    # started the command), not waited for by multiprocessing's exit handler.
    for child in multiprocessing.active_children():
        child.kill()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


# --- Worker processes started from a fork server ----------------------------------------

def start_worker() -> None:
    """A worker's start (the initializer of every pool of fork-server workers).

    Ctrl-C (SIGINT, sent to the terminal's whole process group) is left to the main process,
    which stops its workers itself (``exit_now``); a worker would otherwise die printing a
    traceback of its own. SIGTERM still ends it.

    The worker ends at once when the process that started it ends without stopping it (killed
    with SIGKILL, by the kernel's out-of-memory killer, ...). A pool's idle workers wait for
    work on a queue whose writing end each of them holds too, so they would wait forever; and
    each holds the fork server's "alive" pipe, so the fork server would stay too (about
    300 MB a process with the preloaded modules). ``exit_with_parent``; the children a worker
    forks for a large run (``fork_map``) do the same with the worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_with_parent()


def exit_with_parent() -> None:
    """End this process (a multiprocessing child: a pool's worker, a ``fork_map`` child) at
    once when the process that started it ends, from a thread of its own (``PARENT_WATCH``)
    waiting for the sentinel multiprocessing gives every child."""
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_when_ended, args=(parent.sentinel,), name=PARENT_WATCH, daemon=True).start()


#: The name of a worker's thread that waits for the end of the process that started it.
PARENT_WATCH = "bench-parent-watch"


def _exit_when_ended(sentinel: int) -> None:
    """Wait until ``sentinel`` is ready (its process ended), then end this process."""
    from multiprocessing.connection import wait

    wait([sentinel])
    os._exit(1)


#: The module a fork server loads before it forks workers for the per-run Dagster step
#: (assets/worker_preload.py). Named here, in a module that imports nothing heavy, so that
#: the main command can start the fork server before it imports Dagster.
WORKER_PRELOAD = "bench_pipeline.assets.worker_preload"


def fork_server_context(also_preload: tuple[str, ...] = ()) -> multiprocessing.context.BaseContext:
    """The ``forkserver`` start method, its server loading WORKER_PRELOAD (and ``also_preload``
    when this call starts it): workers are forked from that fresh single-threaded process,
    never from the (threaded) process asking."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([WORKER_PRELOAD, *also_preload])
    return context


def start_fork_server(also_preload: tuple[str, ...] = ()) -> None:
    """Start the fork server now: it loads WORKER_PRELOAD and ``also_preload`` in its own
    process, on another core, while this one goes on (the first worker then starts without
    waiting for it)."""
    import multiprocessing.forkserver

    fork_server_context(also_preload)
    multiprocessing.forkserver.ensure_running()
