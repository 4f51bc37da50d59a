"""The main command's Dagster runs, executed in its own process (``execute_in_process``): the
run config and console logger they share, the first error of a failed step, and the catalog
refresh (``execute_refresh``), which the main command runs here or in a process of its own
(refresh_process.py)."""

from __future__ import annotations

import logging
import os
import signal
import sys
from dataclasses import dataclass


def _say(message: str) -> None:
    print(message, flush=True)


#: Run config of this command's Dagster runs: the plain console logger below (the instance
#: keeps every event all the same).
RUN_CONFIG = {"loggers": {"console": {}}}
#: Tags of every Dagster run this command executes: not retried by the daemon's run retries
#: (deploy/dagster.local.yaml), which cannot launch a run executed in a process of its own (it
#: has no code location to launch from: the daemon would only log that it cannot) and need not
#: (the next main command processes again every run folder whose outputs are not current).
RUN_TAGS = {"dagster/max_retries": "0"}


def plain_console():
    """A Dagster logger that prints what the steps log (``context.log``), message only, once.

    It replaces Dagster's console logger for the runs of this command, which prints every
    line in Dagster's format (timestamp, job, run id, step) on top of this command's own.
    Dagster's events (records carrying a ``dagster_event``: step started, materialization,
    step failure, ...) are not printed: the step's own lines and this command's say what
    they mean, and the instance keeps them all (the UI shows them).
    """
    import logging

    import dagster as dg

    class StepLines(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            meta = getattr(record, "dagster_meta", None) or {}
            if meta.get("dagster_event") is None:
                _say(meta.get("orig_message", record.getMessage()))

    @dg.logger(description="What the steps log, message only (bench_pipeline.main).")
    def plain_console(_init_context) -> logging.Logger:
        logger = logging.Logger("bench_pipeline.main", logging.INFO)
        logger.addHandler(StepLines())
        return logger

    return plain_console


def step_error(result) -> str | None:
    """The first line of the first step error that does not name its runs (an error of the
    step itself, not of one run folder), or None."""
    for event in result.get_step_failure_events():
        data = event.step_failure_data
        if data.user_failure_data is not None and "failed_runs" in data.user_failure_data.metadata:
            continue
        error = data.error
        while error is not None and error.cause is not None:  # the user code's error, not Dagster's wrapper
            error = error.cause
        if error is not None:
            return (error.message.strip().splitlines() or ["unknown error"])[0]
    return None


def interrupted(result) -> bool:
    """Whether a Dagster run of this process stopped because the process was interrupted
    (SIGINT, or SIGTERM, which Dagster handles the same way): a step failure whose source
    is the interrupt, not the step's code."""
    return any(getattr(event.step_failure_data.error_source, "name", None) == "INTERRUPT"
               for event in result.get_step_failure_events())


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
        caught = b""
        while True:
            try:
                chunk = os.read(self._read, 512)
            except BlockingIOError:
                break
            if not chunk:
                break
            caught += chunk
        return signal.SIGINT in caught or signal.SIGTERM in caught

    def close(self) -> None:
        """The wakeup descriptor and the unraisable hook as they were before."""
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


@dataclass(frozen=True)
class Refreshed:
    """How a ``refresh_catalog`` run of this command ended (picklable: it may come from the
    early refresh's process)."""

    success: bool
    run_id: str  # "" when the refresh's process ended before saying which run it made
    error: str | None = None  # the first line of the failure


def execute_refresh(instance) -> Refreshed:
    """The ``refresh_catalog`` job executed in this process on ``instance``, its step lines
    printed as the per-run job's are."""
    from .definitions import defs

    result = defs.resolve_job_def("refresh_catalog").with_logger_defs({"console": plain_console()}).execute_in_process(
        instance=instance, raise_on_error=False, run_config=RUN_CONFIG, tags=RUN_TAGS,
    )
    return Refreshed(result.success, result.run_id,
                     None if result.success else step_error(result) or "the Dagster run failed")
