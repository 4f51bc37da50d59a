"""Stage 2 over a whole run in chunks, and how many processes a run is worth."""

from __future__ import annotations

from bench_pipeline.derivation import PARALLEL_MIN_ROWS, derive_chunks, workers_for
from bench_pipeline.run_reader import read_run

from .run_builder import make_run, row


def test_a_small_run_is_worth_one_process():
    assert PARALLEL_MIN_ROWS == 500
    assert workers_for(0, 4) == 1
    assert workers_for(PARALLEL_MIN_ROWS - 1, 4) == 1
    assert workers_for(PARALLEL_MIN_ROWS, 4) == 4
    assert workers_for(10 ** 6, 1) == 1


def test_each_chunk_is_followed_up_with_its_first_position(tmp_path, monkeypatch):
    """The rows are derived in chunks of _CHUNK_ROWS, each handed on with where it starts,
    in order; every row is derived once."""
    monkeypatch.setattr("bench_pipeline.derivation._CHUNK_ROWS", 2)
    raw = read_run(make_run(tmp_path, [row(f"t{i}", status="passed" if i % 2 else "failed") for i in range(5)]))
    chunks = derive_chunks(raw, lambda start, attempts: (start, [(a["task_id"], a["success"]) for a in attempts]))
    assert chunks == [(0, [("t0", False), ("t1", True)]), (2, [("t2", False), ("t3", True)]), (4, [("t4", False)])]


def test_progress_is_reported_per_chunk_up_to_the_total(tmp_path, monkeypatch):
    monkeypatch.setattr("bench_pipeline.derivation._CHUNK_ROWS", 2)
    raw = read_run(make_run(tmp_path, [row(f"t{i}") for i in range(3)]))
    seen: list[tuple[int, int]] = []
    derive_chunks(raw, lambda start, attempts: len(attempts), progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (3, 3) and all(total == 3 for _, total in seen)
