"""file_lock.exclusive: one holder at a time, a waiter told once, the lock free again after."""

from __future__ import annotations

import threading
import time

from bench_pipeline.file_lock import exclusive


def test_a_second_holder_waits_for_the_first_and_is_told_once(tmp_path):
    path = tmp_path / "x.lock"
    events: list[str] = []
    with exclusive(path, lambda: events.append("never: nobody holds it")):
        waiter = threading.Thread(target=lambda: _hold(path, events))
        waiter.start()
        time.sleep(0.5)
        assert events == ["waiting"]  # told, and still waiting
        events.append("first ends")
    waiter.join(timeout=10)
    assert events == ["waiting", "first ends", "second holds"]
    with exclusive(path):  # free again, no waiting
        pass


def _hold(path, events: list[str]) -> None:
    with exclusive(path, lambda: events.append("waiting")):
        events.append("second holds")
