"""One publication per (Langfuse target, suite) at a time (publication/suite_lock.py)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

import pytest

from bench_pipeline.publication import suite_lock as suite_lock_module
from bench_pipeline.publication.suite_lock import LockError, lock_path, suite_lock


@pytest.fixture(autouse=True)
def _lock_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_LOCK_DIR", str(tmp_path / "locks"))


def test_the_second_holder_waits_for_the_first_and_is_told_once():
    order: list[str] = []
    waits: list[str] = []
    held = threading.Event()

    def first() -> None:
        with suite_lock("target", "suite", timeout=10):
            held.set()
            time.sleep(0.3)
            order.append("first released")

    thread = threading.Thread(target=first)
    thread.start()
    held.wait(5)
    with suite_lock("target", "suite", timeout=10, on_wait=lambda: waits.append("waiting")):
        order.append("second holds")
    thread.join()
    assert order == ["first released", "second holds"] and waits == ["waiting"]


def test_other_suites_and_targets_do_not_wait():
    with suite_lock("target", "suite", timeout=10):
        for target, suite in (("target", "other suite"), ("other target", "suite")):
            with suite_lock(target, suite, timeout=0.1, on_wait=lambda: pytest.fail("waited")):
                pass
    assert lock_path("target", "suite") != lock_path("target", "other suite")


def test_a_lock_held_too_long_is_an_error_naming_the_suite():
    with suite_lock("target", "suite", timeout=10):
        started = time.monotonic()
        with pytest.raises(LockError, match="another publication of suite 'suite'"):
            with suite_lock("target", "suite", timeout=0.3):
                pass
        assert 0.25 <= time.monotonic() - started < 5


@pytest.fixture
def default_folder(tmp_path, monkeypatch):
    """No BENCH_LOCK_DIR: the default folder, under a temporary folder of the test's own."""
    monkeypatch.delenv("BENCH_LOCK_DIR")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    return tmp_path / "tmp" / "bench_pipeline-locks"


def test_the_lock_file_is_removed_when_its_holder_is_done(default_folder):
    path = lock_path("target", "suite")
    assert path.parent == default_folder
    with suite_lock("target", "suite", timeout=10):
        assert path.is_file()
        with suite_lock("target", "other suite", timeout=10):
            assert len(list(path.parent.iterdir())) == 2
    assert list(path.parent.iterdir()) == []
    with pytest.raises(RuntimeError), suite_lock("target", "suite", timeout=10):
        raise RuntimeError("the publication failed")
    assert not path.exists()


def test_a_folder_bench_lock_dir_names_keeps_its_files():
    """It may be shared over NFS, where the check behind the removal cannot be trusted."""
    with suite_lock("target", "suite", timeout=10):
        pass
    assert lock_path("target", "suite").is_file()
    with suite_lock("target", "suite", timeout=10, on_wait=lambda: pytest.fail("waited")):
        pass


def test_a_file_left_by_a_holder_that_died_is_taken_at_once_and_removed(default_folder):
    path = lock_path("target", "suite")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")  # the kernel released the lock with the process; the file stayed
    with suite_lock("target", "suite", timeout=10, on_wait=lambda: pytest.fail("waited")):
        pass
    assert not path.exists()


def test_a_waiter_that_got_a_removed_file_takes_the_new_one(default_folder, monkeypatch):
    """A waiter opened the lock's file, then its holder removed it and let it go: the waiter's
    flock succeeds on a file no one else can find. It must not count as the lock: the waiter
    takes the file now at the path (the one a newcomer would lock) instead."""
    path = lock_path("target", "suite")
    path.parent.mkdir(parents=True)
    stale = open(path, "a+b")  # noqa: SIM115 - closed by suite_lock
    path.unlink()  # as its holder does when done
    opened = []

    def open_stale_first(p):
        opened.append(p)
        return stale if len(opened) == 1 else real_open(p)

    real_open = suite_lock_module._open_lock_file
    monkeypatch.setattr(suite_lock_module, "_open_lock_file", open_stale_first)
    with suite_lock("target", "suite", timeout=10):
        assert len(opened) == 2 and stale.closed  # the removed file let go, the path's new one held
        with open(path, "a+b") as newcomer, pytest.raises(BlockingIOError):
            fcntl.flock(newcomer.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: a newcomer waits
    assert not path.exists()


#: Takes the lock ROUNDS times, each time checking that no other process is inside (a marker
#: file created exclusively) and adding one to a counter file by read, pause, write.
CONTENDER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from bench_pipeline.publication import suite_lock as m
    m.POLL_SECONDS = 0.001
    folder, rounds = Path(sys.argv[1]), int(sys.argv[2])
    for _ in range(rounds):
        with m.suite_lock("target", "suite", timeout=60):
            marker = os.open(folder / "inside", os.O_CREAT | os.O_EXCL | os.O_WRONLY)  # fails if another is inside
            count = int((folder / "counter").read_text())
            time.sleep(0.002)
            (folder / "counter").write_text(str(count + 1))
            os.close(marker)
            os.unlink(folder / "inside")
""")


def test_processes_contending_for_the_lock_hold_it_one_at_a_time(default_folder, tmp_path):
    """Several processes taking and releasing the lock as fast as they can (each release
    removes its file while others wait on it): never two inside at once, no update lost, and
    no file left."""
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "counter").write_text("0")
    processes, rounds = 4, 40
    env = {k: v for k, v in os.environ.items() if k != "BENCH_LOCK_DIR"} | {"TMPDIR": str(default_folder.parent)}
    running = [subprocess.Popen([sys.executable, "-c", CONTENDER, str(shared), str(rounds)], env=env,
                                stderr=subprocess.PIPE, text=True) for _ in range(processes)]
    errors = [p.communicate(timeout=120)[1] for p in running]
    assert [p.returncode for p in running] == [0] * processes, errors
    assert int((shared / "counter").read_text()) == processes * rounds
    assert list(default_folder.iterdir()) == []


def test_a_lock_in_a_bucket_is_one_object_held_by_one_publisher(bucket, monkeypatch):
    """BENCH_LOCK_DIR in a bucket (moto's S3 server): the second holder waits, a lock held too
    long is an error, a dead holder's lock is taken once its lease is over, and a holder only
    ever removes its own."""
    import json

    monkeypatch.setenv("BENCH_LOCK_DIR", bucket.url("locks"))
    path = lock_path("target", "suite")
    assert path.startswith(bucket.url("locks/langfuse-suite-"))
    key = path.removeprefix(bucket.url() + "/")
    with suite_lock("target", "suite", timeout=10):
        assert json.loads(bucket.get(key))["expires_at"] > time.time()
        waits = []
        with pytest.raises(LockError, match="another publication of suite 'suite'"):
            with suite_lock("target", "suite", timeout=0.3, on_wait=lambda: waits.append(1)):
                pass
        assert waits == [1]
        with suite_lock("target", "other suite", timeout=0.1, on_wait=lambda: pytest.fail("waited")):
            pass
    assert bucket.keys("locks/") == []  # released
    bucket.put(key, json.dumps({"holder": "dead:1", "expires_at": time.time() - 1}))  # left by a dead holder
    with suite_lock("target", "suite", timeout=5, on_wait=lambda: pytest.fail("waited for a dead holder")):
        assert json.loads(bucket.get(key))["holder"] != "dead:1"
        bucket.put(key, json.dumps({"holder": "someone else", "expires_at": time.time() + 60}))
    assert json.loads(bucket.get(key))["holder"] == "someone else"  # not removed by the earlier holder
