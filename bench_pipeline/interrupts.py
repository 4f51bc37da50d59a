"""Ctrl-C (SIGINT) and SIGTERM in the main command's process: every one noticed, whoever
handles it (``Interrupts``), and a long step's loop stopped by one that was not raised
(``stop_if_interrupted``)."""

from __future__ import annotations

import logging
import os
import signal
import sys

#: The main command's Interrupts while it is open (None in any other process: a Dagster run
#: launched by the daemon, a worker), for ``stop_if_interrupted``.
_open: Interrupts | None = None


class Interrupts:
    """Every Ctrl-C (SIGINT) or SIGTERM this process receives, noticed whoever handles it.

    Dagster handles both during its runs, and one that arrives while it records the end of a
    run whose step is done is taken by Dagster, which completes the run and forgets the
    signal (dagster/_utils/interrupts.py: ``capture_interrupts`` clears its flag on exit), so
    the command went on as if nothing had been asked. The interpreter writes the number of
    every signal it catches to its wakeup file descriptor (``signal.set_wakeup_fd``), whatever
    Python handler is installed: the command reads there after each Dagster run whether it
    must stop. Made in the main thread; SIGTERM is then handled as Ctrl-C outside Dagster's
    runs too (unless it was ignored by whoever started the process), as Dagster does inside.
    Dagster leaves SIGTERM handled as it found SIGINT (dagster/_utils/interrupts.py,
    ``setup_interrupt_handlers``): in a shell's background job, where SIGINT is ignored, that
    left SIGTERM ignored after the first Dagster run, and ``kill`` no longer stopped the
    command; ``received`` sets it back.

    An interrupt raised while the interpreter runs a finalizer (a garbage-collected object's
    cleanup, such as multiprocessing's) is not raised further: Python prints it as "Exception
    ignored in ..." with a traceback and goes on. Such an interrupt is noticed here as any
    other, so the traceback is left out (``_unraisable``); other unraisable errors are printed
    as before. The same holds for a library that catches the interrupt only to log it with
    its traceback and raise it again (SQLAlchemy closing a SQLite connection of Dagster's
    instance: "Exception closing connection ..."): such a record is left out of what the
    process prints (``_InterruptRecords``, on the handlers of the root logger and Python's
    last-resort handler, which print the records of loggers without handlers of their own).
    An interrupt swallowed so inside a step would let the step go on with every run it was
    given: the per-run step's wait loop asks ``stop_if_interrupted`` (below), which raises it.
    """

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        self._previous = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        self._previous_hook = sys.unraisablehook
        sys.unraisablehook = self._unraisable
        self._term_ignored = signal.getsignal(signal.SIGTERM) is signal.SIG_IGN  # by whoever started us
        self._handle_sigterm()
        self._filter = _InterruptRecords()
        self._handlers = [*logging.getLogger().handlers, *([logging.lastResort] if logging.lastResort else [])]
        for handler in self._handlers:
            handler.addFilter(self._filter)
        self._noticed = False  # a Ctrl-C or SIGTERM read from the wakeup descriptor, not yet reported
        global _open
        _open = self

    def _handle_sigterm(self) -> None:
        """SIGTERM as Ctrl-C (``default_int_handler``), unless it was ignored from the start."""
        if not self._term_ignored and signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, signal.SIG_IGN):
            signal.signal(signal.SIGTERM, signal.default_int_handler)

    def _unraisable(self, unraisable) -> None:
        if not _is_interrupt(unraisable.exc_value):
            self._previous_hook(unraisable)

    def received(self) -> bool:
        """Whether a Ctrl-C or SIGTERM arrived since the last call (after a Dagster run: SIGTERM
        handled again, when Dagster left it ignored)."""
        self._handle_sigterm()
        noticed = self.pending()
        self._noticed = False
        return noticed

    def pending(self) -> bool:
        """Whether a Ctrl-C or SIGTERM arrived since the last ``received``, which still reports it."""
        while True:
            try:
                chunk = os.read(self._read, 512)
            except BlockingIOError:
                break
            if not chunk:
                break
            self._noticed = self._noticed or signal.SIGINT in chunk or signal.SIGTERM in chunk
        return self._noticed

    def close(self) -> None:
        """The wakeup descriptor and the unraisable hook as they were before."""
        global _open
        _open = None
        signal.set_wakeup_fd(self._previous)
        sys.unraisablehook = self._previous_hook
        for handler in self._handlers:
            handler.removeFilter(self._filter)
        os.close(self._read)
        os.close(self._write)

    def __enter__(self) -> "Interrupts":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _InterruptRecords(logging.Filter):
    """Leaves out a log record that carries an interrupt as its exception (``Interrupts``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and _is_interrupt(record.exc_info[1]))


def _is_interrupt(exc: BaseException | None) -> bool:
    """Ctrl-C as Python raises it (KeyboardInterrupt) or as Dagster does during a step."""
    if isinstance(exc, KeyboardInterrupt):
        return True
    import dagster as dg

    return isinstance(exc, dg.DagsterExecutionInterruptedError)


def stop_if_interrupted() -> None:
    """Raise Dagster's interrupt (``DagsterExecutionInterruptedError``, what its handler raises
    in a step) when the main command's Interrupts has noticed a Ctrl-C or SIGTERM that it has
    not yet reported: one swallowed on its way (a finalizer, a library that logged it, Dagster
    taking it while it records an event) would otherwise let a step go on with every run it
    was given. A long step's wait loop calls it (partition_pool.py); in a process without the
    main command's Interrupts it does nothing (Dagster's own handling holds there)."""
    if _open is not None and _open.pending():
        import dagster as dg

        raise dg.DagsterExecutionInterruptedError()
