"""One publication per (Langfuse target, suite) at a time (publication/suite_lock.py)."""

from __future__ import annotations

import threading
import time

import pytest

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
