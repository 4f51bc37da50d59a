"""Bulk work over many small objects: pausing Python's cyclic garbage collector.

Deriving a large run creates millions of small dicts, lists and strings that all stay alive
until the stage ends. Each automatic collection walks every tracked object, so the cyclic
collector spends time in proportion to the heap on every pass and turns a linear stage into
a much slower one (measured in docs/benchmarks.md: about a third of the whole command).
The stages create no reference cycles worth collecting (plain dicts and lists freed by
reference counting), so automatic collection is paused while they run and restored after.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


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
