"""The worker processes of the per-run step: every partition of a step processed by
``partition_work.process_partition`` in one of the step's worker processes, forked from a fork
server (a Dagster run process has threads, and forking it could copy a lock another thread
holds; the fork server is a fresh single-threaded process, and its workers may fork in turn,
``bulk.fork_map``, to derive a large run on every core). Each worker processes partitions one
after another until the step's are done, collecting the garbage of each before the next (a
fresh process per partition cost more than a small run's own work: measured in
docs/benchmarks.md). A run whose baseline is processed in the same step is
processed beside it and waits, before its comparison, for the baseline's stored values."""

from __future__ import annotations

import gc
import multiprocessing
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..bulk import default_workers, fork_server_context, start_worker
from ..derivation import PARALLEL_MIN_ROWS
from ..interrupts import stop_if_interrupted
from ..layouts import results_file_name
from .partition_work import STAGES, PartitionJob, PartitionOutcome, StagesStored, process_partition


def in_worker_processes(jobs: list[PartitionJob]) -> bool:
    """Whether the jobs are worth worker processes: more than one partition, or one run
    large enough to derive on several cores. A single small run is processed in the step's
    own process (the fork server's start-up, about 1.5 s, would cost more than it saves)."""
    return len(jobs) > 1 or _results_rows(jobs[0].run_dir) >= PARALLEL_MIN_ROWS


def _results_rows(run_dir: str) -> int:
    """The results file's line count (0 when unreadable: the stage itself reports why)."""
    try:
        with open(Path(run_dir) / results_file_name(run_dir), "rb") as fh:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
    except OSError:
        return 0


def run_partitions(jobs: list[PartitionJob], log: Callable[[str], None],
                   processes: int | None = None,
                   on_ready: Callable[[str], None] | None = None) -> Iterator[PartitionOutcome | StagesStored]:
    """Each job's outcome as soon as it is done (any order). Jobs run in up to ``processes``
    (default: one per core) worker processes, one partition at a time each, or in this
    process when ``in_worker_processes`` says they are not worth it. A job whose ``after``
    names another job of the list is processed beside it and compared once that one's stage
    values are stored (a run is compared with its baseline's stored values as this step makes
    them); in this process, after it. ``on_ready(key)`` is called in this process once a
    partition's metrics.json and attempts.jsonl are written (the step uploads outputs meant
    for a bucket there).

    In worker processes, a partition's ``StagesStored`` comes first, while it is still being
    published, then its PartitionOutcome; processed here, only the PartitionOutcome."""
    if not jobs:
        return
    ready = on_ready or (lambda key: None)
    if not in_worker_processes(jobs):
        for job in in_dependency_order(jobs):
            yield process_partition(job, log, lambda key=job.key: ready(key))
        return
    yield from _pooled(jobs, log, processes or default_workers(), ready)


def in_dependency_order(jobs: list[PartitionJob]) -> list[PartitionJob]:
    """``jobs`` with each one after the job its ``after`` names (when that is in the list),
    otherwise in their own order; a cycle of ``after`` links (possible only with pinned
    baselines) is broken in list order."""
    keys = {job.key for job in jobs}
    done: set[str] = set()
    ordered: list[PartitionJob] = []
    waiting = list(jobs)
    while waiting:
        ready = [job for job in waiting if job.after not in keys or job.after in done] or waiting[:1]
        for job in ready:
            ordered.append(job)
            done.add(job.key)
            waiting.remove(job)
    return ordered


_messages: Any = None  # a worker's queue of log lines for the step (set by _start_worker)
_stored: dict[str, Any] = {}  # a worker's view of the step's partitions: {key: Event set once stored}
_worked = False  # whether this worker has processed a partition already

#: The longest a worker waits for its baseline's values before comparing with what is stored
#: (a safeguard: the baseline was started first, and its event is set even when it fails; a
#: comparison made early is behind its inputs, and comparison_sensor makes it again).
BASELINE_WAIT_SECONDS = 3600
#: A wait for the baseline is said in the step's log once it has lasted this long (seconds):
#: a run processed beside its baseline usually waits a fraction of a second.
WAIT_SAID_AFTER = 5


def _start_worker(messages: Any, stored: dict[str, Any]) -> None:
    """A worker's start: the step's queue and events; what the fork server loaded is frozen
    (the collector never goes through it again: ``_work``'s collections stay small)."""
    global _messages, _stored
    _messages, _stored = messages, stored
    start_worker()
    gc.freeze()


def _worker_log(line: str) -> None:
    _messages.put(("log", line))


def _wait_stored(candidate: str, key: str) -> None:
    """Wait until partition ``key`` of this step (``candidate``'s baseline) has its values
    stored (or has ended)."""
    if _stored[key].wait(WAIT_SAID_AFTER):
        return
    _worker_log(f"{candidate}: waiting for its baseline {key}'s values to be stored, to compare with them")
    if not _stored[key].wait(BASELINE_WAIT_SECONDS):
        _worker_log(f"{candidate}: baseline {key} not stored after {BASELINE_WAIT_SECONDS} s; comparing with its "
                    "values as stored now")


def _work(job: PartitionJob) -> PartitionOutcome:
    """A worker's job: one partition. Its messages to the step (log lines, outputs ready,
    stages stored) go through the queue, from this process or from the child it forks.

    The previous partition's garbage (never collected while it ran: bulk.gc_paused) is
    collected first; a worker's last partition leaves its garbage to the process's end, as
    the command line does (a collection after a large run is not free: docs/benchmarks.md)."""
    global _worked
    if _worked:
        gc.collect()
    _worked = True
    return process_partition(job, _worker_log, lambda: _messages.put(("ready", job.key)),
                             lambda early: _said_stored(job.key, early),
                             lambda baseline: _wait_stored(job.key, baseline))


def _said_stored(key: str, early: StagesStored) -> None:
    """Tell the step that partition ``key``'s stage values are stored, and a worker waiting to
    compare with them that it can go on: at once, not once the step has read the message (the
    step is busy recording other partitions' events, and a chain of runs of one suite would
    otherwise advance at the step's pace)."""
    _messages.put(("stored", early))
    _stored[key].set()


def side_by_side(jobs: list[PartitionJob]) -> list[PartitionJob]:
    """``jobs`` in dependency order, each with ``after`` kept only when it names a job before
    it (a cycle of pinned baselines is broken in list order): started in this order, every
    job a worker waits for was started before it, so none waits for ever."""
    ordered, seen = [], set()
    for job in in_dependency_order(jobs):
        ordered.append(job if job.after is None or job.after in seen else replace(job, after=None))
        seen.add(job.key)
    return ordered


def _pooled(jobs: list[PartitionJob], log: Callable[[str], None], processes: int,
            ready: Callable[[str], None]) -> Iterator[PartitionOutcome | StagesStored]:
    """Every job started at once, in ``side_by_side`` order: a run processed beside its
    baseline derives its stages at the same time and waits only to be compared."""
    context = fork_server_context()
    # A SimpleQueue writes from the calling thread: a Queue would start a feeder thread in the
    # worker, which then could no longer fork for its large run (bulk.can_fork).
    messages = context.SimpleQueue()
    stored = {job.key: context.Event() for job in jobs}
    before = set(multiprocessing.active_children())
    pool = ProcessPoolExecutor(min(processes, len(jobs)), mp_context=context, initializer=_start_worker,
                               initargs=(messages, stored))
    # Even split of the cores: a worker forks for a large run only when it has cores to itself.
    per_job = max(1, processes // min(processes, len(jobs)))
    futures = {pool.submit(_work, replace(job, workers=per_job)): job for job in side_by_side(jobs)}
    workers = [p for p in multiprocessing.active_children() if p not in before]  # started by the submissions
    finished = False
    try:
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            stop_if_interrupted()  # a Ctrl-C swallowed on its way to this loop stops it all the same
            early = _drain(messages, log, ready)
            for value in early:
                stored[value.outcome.key].set()
            yield from early  # before the outcomes: a partition's are sent before it ends
            for future in done:
                job = futures[future]
                stored[job.key].set()  # ended, stored or not: a run compared with it goes on
                try:
                    yield future.result()
                except BrokenProcessPool as exc:
                    yield PartitionOutcome(job.key, job.fingerprint, failed_stage=STAGES[0],
                                           error=f"{job.run_dir}: the worker process processing it died ({exc})")
        yield from _drain(messages, log, ready)
        finished = True
    finally:
        if not finished:  # interrupted (Ctrl-C, a terminated Dagster run) or left early: the
            for event in stored.values():  # partitions under way are abandoned (every file is
                event.set()  # written whole or not at all) and their workers killed, not waited
            for worker in workers:  # for: one may wait for a baseline, or to send its messages to
                worker.kill()  # a queue no one reads any more (SIGKILL: SIGTERM may be ignored)
        pool.shutdown(wait=finished, cancel_futures=True)


def _drain(messages: Any, log: Callable[[str], None], on_ready: Callable[[str], None]) -> list[StagesStored]:
    """Log the workers' lines and hand on the partitions whose outputs became ready; returns
    the partitions' stages stored since the last call, in the order they came."""
    stored = []
    while not messages.empty():
        kind, value = messages.get()
        if kind == "ready":
            on_ready(value)
        elif kind == "stored":
            stored.append(value)
        else:
            log(value)
    return stored
