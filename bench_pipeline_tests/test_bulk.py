import gc
import os

import pytest

from bench_pipeline.bulk import gc_paused


def test_gc_paused_disables_inside_and_restores_after():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # only the outermost block re-enables
    assert gc.isenabled()


def test_gc_paused_restores_after_an_exception_and_keeps_a_disabled_collector_disabled():
    with pytest.raises(ValueError):
        with gc_paused():
            raise ValueError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_gc_paused_works_as_a_decorator():
    @gc_paused()
    def state() -> bool:
        return gc.isenabled()

    assert state() is False
    assert gc.isenabled()


def _square_chunk(start: int, chunk: list[int]) -> list[tuple[int, int]]:
    return [(start + i, x * x) for i, x in enumerate(chunk)]


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_fork_map_keeps_chunk_order_and_reports_progress(workers):
    from bench_pipeline.bulk import fork_map

    seen: list[tuple[int, int]] = []
    chunks = fork_map(_square_chunk, list(range(23)), workers=workers, chunk_size=5,
                      progress=lambda done, total: seen.append((done, total)))
    assert [len(c) for c in chunks] == [5, 5, 5, 5, 3]
    assert [pair for chunk in chunks for pair in chunk] == [(i, i * i) for i in range(23)]
    # One report per chunk, in completion order: done counts grow to the total.
    assert len(seen) == 5 and seen[-1] == (23, 23)
    assert all(a[0] < b[0] for a, b in zip(seen, seen[1:]))


def test_fork_map_children_take_chunks_too():
    """With slow chunks, forked children compute some of them (their pids differ)."""
    import os
    import time

    from bench_pipeline.bulk import fork_map

    def whose(start: int, chunk: list[int]) -> int:
        time.sleep(0.05)
        return os.getpid()

    pids = fork_map(whose, list(range(40)), workers=3, chunk_size=2)
    assert len(pids) == 20 and os.getpid() in pids and len(set(pids)) >= 2


def test_fork_map_runs_closures_over_local_state_and_handles_no_items():
    from bench_pipeline.bulk import fork_map

    offset = 100  # a closure: handed to forked workers without pickling

    def add(start: int, chunk: list[int]) -> list[int]:
        return [x + offset for x in chunk]

    assert fork_map(add, [1, 2, 3, 4], workers=2, chunk_size=2) == [[101, 102], [103, 104]]
    assert fork_map(add, [], workers=2, chunk_size=2) == []


def test_fork_map_reraises_an_error_raised_in_a_child():
    import os

    from bench_pipeline.bulk import fork_map

    parent = os.getpid()

    def fail_in_child(start: int, chunk: list[int]) -> list[int]:
        if os.getpid() != parent:
            raise ValueError(f"bad chunk at {start}")
        import time
        time.sleep(0.05)  # leave chunks for the child
        return chunk

    with pytest.raises(ValueError, match="bad chunk at"):
        fork_map(fail_in_child, list(range(20)), workers=2, chunk_size=2)


def test_fork_map_reports_a_child_that_dies():
    import os

    from bench_pipeline.bulk import fork_map

    parent = os.getpid()

    def die_in_child(start: int, chunk: list[int]) -> list[int]:
        if os.getpid() != parent:
            os._exit(3)
        import time
        time.sleep(0.05)
        return chunk

    with pytest.raises(RuntimeError, match="ended without returning"):
        fork_map(die_in_child, list(range(20)), workers=2, chunk_size=2)


def test_fork_map_error_in_this_process_stops_the_children():
    from bench_pipeline.bulk import fork_map

    def fail_first(start: int, chunk: list[int]) -> list[int]:
        if start == 0:
            raise KeyError("first chunk")
        import time
        time.sleep(0.05)
        return chunk

    with pytest.raises(KeyError):
        fork_map(fail_first, list(range(20)), workers=2, chunk_size=2)


def test_the_workers_message_queue_starts_no_thread():
    """A per-run worker sends its log lines through the fork server context's SimpleQueue: a
    Queue would start a feeder thread on the first message, after which the worker could no
    longer fork (bulk.can_fork) and would process a large run on one core."""
    import threading

    from bench_pipeline.bulk import can_fork, fork_server_context

    messages = fork_server_context().SimpleQueue()
    before = threading.active_count()
    messages.put("attempts derived: 100/10000")
    assert threading.active_count() == before
    assert messages.get() == "attempts derived: 100/10000"
    assert can_fork() == (before == 1)


#: A process that starts fork-server workers as the pools do (``start_worker``), has each
#: say whether it may fork (a large run's derivation forks from a worker), prints its fork
#: server's and workers' pids, then waits to be killed.
_POOL_THEN_WAIT = """
import json, multiprocessing, multiprocessing.forkserver, sys, time
from concurrent.futures import ProcessPoolExecutor
from bench_pipeline.bulk import can_fork, fork_server_context, start_worker

if __name__ == "__main__":
    pool = ProcessPoolExecutor(2, mp_context=fork_server_context(), initializer=start_worker)
    forks = [future.result() for future in [pool.submit(can_fork) for _ in range(4)]]
    workers = [p.pid for p in multiprocessing.active_children()]
    server = multiprocessing.forkserver._forkserver._forkserver_pid
    print(json.dumps({"forks": forks, "workers": workers, "server": server}), flush=True)
    time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[1][0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


def test_workers_and_their_fork_server_end_when_the_process_that_started_them_is_killed():
    """SIGKILL (or the out-of-memory killer) gives the main process no chance to stop its
    workers: they end by themselves within seconds, and the fork server with them, instead of
    waiting for work forever (each about 300 MB with the preloaded modules). The thread that
    waits for it does not stop a worker from forking."""
    import json
    import signal
    import subprocess
    import sys
    import time

    main = subprocess.Popen([sys.executable, "-c", _POOL_THEN_WAIT], stdout=subprocess.PIPE, text=True)
    try:
        started = json.loads(main.stdout.readline())
    finally:
        main.send_signal(signal.SIGKILL)
        main.wait()
    assert started["forks"] == [True] * 4
    assert len(started["workers"]) >= 1  # the pool starts a second one only when the first is busy
    pids = [*started["workers"], started["server"]]
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [pid for pid in pids if _alive(pid)] == []


#: As _POOL_THEN_WAIT, the worker busy with a large run: a ``fork_map`` whose children each
#: send back about 0.5 MB, more than a pipe holds, so that a child killed with nobody reading
#: would wait on its queue's feeder forever.
_POOL_FORKING = """
import json, multiprocessing, multiprocessing.forkserver, os, sys, time
from concurrent.futures import ProcessPoolExecutor
from bench_pipeline.bulk import fork_map, fork_server_context, start_worker

def chunk(start, items):
    time.sleep(3)
    return [os.urandom(1000) for _ in range(500)]

def large_run():
    return len(fork_map(chunk, list(range(4000)), workers=3, chunk_size=500))

if __name__ == "__main__":
    pool = ProcessPoolExecutor(1, mp_context=fork_server_context(), initializer=start_worker)
    pool.submit(large_run)
    time.sleep(1.5)
    workers = [p.pid for p in multiprocessing.active_children()]
    server = multiprocessing.forkserver._forkserver._forkserver_pid
    print(json.dumps({"workers": workers, "server": server}), flush=True)
    time.sleep(120)
"""


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    if int(fh.read().split(") ")[1].split()[1]) == pid:
                        found.append(int(entry))
            except (FileNotFoundError, ProcessLookupError):
                continue
    return found


def test_the_children_a_worker_forks_for_a_large_run_end_with_it_too(tmp_path):
    """Killed in the middle of a large run (the out-of-memory killer's usual moment), the main
    process leaves neither the worker nor the children it forked (``fork_map``) nor the fork
    server behind."""
    import json
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "large_run.py"
    script.write_text(_POOL_FORKING)
    main = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        started = json.loads(main.stdout.readline())
        (worker,) = started["workers"]
        forked = _children(worker)
    finally:
        main.send_signal(signal.SIGKILL)
        main.wait()
    assert len(forked) == 2  # workers=3: the worker itself and two children
    pids = [worker, *forked, started["server"]]
    deadline = time.monotonic() + 15
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [pid for pid in pids if _alive(pid)]
    for pid in left:  # not to leave them to the next test
        os.kill(pid, signal.SIGKILL)
    assert left == []
