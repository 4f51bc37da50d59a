"""Fault injection for the Langfuse stand-in.

A fault applies to the next ``times`` requests whose path starts with ``path_prefix``
(and, when given, whose method matches and whose body has at least ``min_bytes`` bytes, e.g.
to spare the publisher's probe, which sends an empty batch).  Faults are checked in the order they were
added, after the request body has been read completely and before authentication,
like a proxy or load balancer in front of the real service would behave.

Kinds:

* ``status``  - answer ``status`` (500, 502, 503, 429, ...) with a JSON error body and,
  for 429 (or when ``retry_after`` is given), a ``Retry-After`` header.  Nothing is stored.
* ``delay``   - sleep ``seconds`` and then handle the request normally (the write is
  applied even if the client has given up waiting: a timed-out request may still land,
  exactly like on a real server).
* ``drop``    - close the socket without sending any response.  With
  ``after_processing=True`` the request is handled (stored) first and only the response
  is lost ("committed but unacknowledged"), the classic cause of duplicates on retry.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import List, Optional


@dataclass
class Fault:
    kind: str  # "status" | "delay" | "drop"
    path_prefix: str
    remaining: int
    method: Optional[str] = None
    status: int = 500
    retry_after: Optional[float] = None
    seconds: float = 0.0
    after_processing: bool = False
    min_bytes: int = 0
    fired: int = 0

    def matches(self, method: str, path: str, size: int = 0) -> bool:
        if self.remaining <= 0 or size < self.min_bytes:
            return False
        if self.method is not None and self.method.upper() != method.upper():
            return False
        return path.startswith(self.path_prefix)


@dataclass
class FiredFault:
    kind: str
    method: str
    path: str
    status: Optional[int]


@dataclass
class FaultPlan:
    """Queue of injected faults; see the module docstring for semantics."""

    _faults: List[Fault] = field(default_factory=list)
    history: List[FiredFault] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # ------------------------------------------------------------------ builders
    def add(self, fault: Fault) -> Fault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def fail(
        self, path_prefix: str, status: int = 500, times: int = 1, method: Optional[str] = None,
        retry_after: Optional[float] = None, min_bytes: int = 0,
    ) -> Fault:
        """Answer ``status`` to the next ``times`` matching requests."""
        return self.add(Fault("status", path_prefix, times, method, status=status, retry_after=retry_after,
                              min_bytes=min_bytes))

    def rate_limit(
        self, path_prefix: str, times: int = 1, retry_after: float = 1, method: Optional[str] = None,
        min_bytes: int = 0,
    ) -> Fault:
        """Answer 429 with ``Retry-After: <retry_after>`` to the next ``times`` matching requests."""
        return self.add(Fault("status", path_prefix, times, method, status=429, retry_after=retry_after,
                              min_bytes=min_bytes))

    def delay(
        self, path_prefix: str, seconds: float, times: int = 1, method: Optional[str] = None, min_bytes: int = 0,
    ) -> Fault:
        """Sleep ``seconds`` before handling the next ``times`` matching requests."""
        return self.add(Fault("delay", path_prefix, times, method, seconds=seconds, min_bytes=min_bytes))

    def drop(
        self, path_prefix: str, times: int = 1, method: Optional[str] = None, after_processing: bool = False,
        min_bytes: int = 0,
    ) -> Fault:
        """Close the connection without a response (optionally after storing the request)."""
        return self.add(Fault("drop", path_prefix, times, method, after_processing=after_processing,
                              min_bytes=min_bytes))

    # ------------------------------------------------------------------ state
    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def pending(self) -> List[Fault]:
        with self._lock:
            return [f for f in self._faults if f.remaining > 0]

    def take(self, method: str, path: str, size: int = 0) -> Optional[Fault]:
        """Consume and return the first fault matching this request (body of ``size`` bytes), if any."""
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, path, size):
                    fault.remaining -= 1
                    fault.fired += 1
                    self.history.append(
                        FiredFault(fault.kind, method, path, fault.status if fault.kind == "status" else None)
                    )
                    return fault
        return None
