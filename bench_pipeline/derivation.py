"""Stage 2 over a whole run: its attempts derived in chunks, in this process and, on a large
run, in forked children (``bulk.fork_map``), and how many processes a run is worth."""

from __future__ import annotations

from typing import Callable, TypeVar

from .attempt_metrics import RunContext, derive_attempt
from .bulk import fork_map, gc_paused
from .run_reader import RawRun

T = TypeVar("T")

#: Below this many rows a run is derived in one process: forking costs more than it saves
#: (docs/benchmarks.md has the figures).
PARALLEL_MIN_ROWS = 500
_CHUNK_ROWS = 100


def workers_for(rows: int, workers: int) -> int:
    """The processes worth using for a run of ``rows`` rows: ``workers``, or 1 below
    PARALLEL_MIN_ROWS."""
    return workers if rows >= PARALLEL_MIN_ROWS else 1


@gc_paused()
def derive_chunks(
    raw: RawRun,
    then: Callable[[int, list[dict]], T],
    progress: Callable[[int, int], None] | None = None,
    workers: int = 1,
) -> list[T]:
    """Stage 2 in chunks: ``then(start, attempts)`` for each chunk of derived attempt rows.

    ``then`` runs in the process that derived the chunk: with ``workers`` > 1 and a large
    run, chunks are derived (and followed up) in this process and forked children, so
    per-attempt work after the derivation (encoding, rendering) is parallel too. ``start``
    is the chunk's first position in ``raw.rows``.
    """
    ctx = RunContext.of(raw)

    def derive_chunk(start: int, rows: list) -> T:
        return then(start, [derive_attempt(row, ctx) for row in rows])

    return fork_map(
        derive_chunk, raw.rows,
        workers=workers_for(len(raw.rows), workers),
        chunk_size=_CHUNK_ROWS, progress=progress,
    )
