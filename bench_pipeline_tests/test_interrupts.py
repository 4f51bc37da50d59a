"""Ctrl-C and SIGTERM in the main command's process: noticed whoever handled them, and raised
in a step that would otherwise go on."""

from __future__ import annotations

import os
import signal

from bench_pipeline.interrupts import Interrupts, stop_if_interrupted


def _swallow(_signo, _frame) -> None:
    """What Dagster's ``capture_interrupts`` handler does at the end of a run: note, forget."""


def test_a_signal_a_handler_swallowed_is_still_received_once():
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        with Interrupts() as interrupts:
            assert not interrupts.received()
            signal.signal(signal.SIGINT, _swallow)
            os.kill(os.getpid(), signal.SIGINT)
            assert interrupts.received()
            assert not interrupts.received()  # each signal read once
            signal.signal(signal.SIGTERM, _swallow)
            os.kill(os.getpid(), signal.SIGTERM)
            assert interrupts.received()
    finally:
        signal.signal(signal.SIGINT, before[0])
        signal.signal(signal.SIGTERM, before[1])
    assert signal.set_wakeup_fd(-1) == -1  # the wakeup descriptor given back as it was



def test_an_interrupt_swallowed_on_its_way_stops_a_step_and_is_still_received():
    """A Ctrl-C some handler swallowed (a finalizer, a library logging it) is raised by
    ``stop_if_interrupted`` as Dagster raises one in a step, and the command still receives
    it afterwards (to say what was not done); once received, nothing more is raised."""
    import dagster as dg
    import pytest

    before = signal.getsignal(signal.SIGINT)
    try:
        with Interrupts() as interrupts:
            stop_if_interrupted()  # nothing arrived: goes on
            signal.signal(signal.SIGINT, _swallow)
            os.kill(os.getpid(), signal.SIGINT)
            with pytest.raises(dg.DagsterExecutionInterruptedError):
                stop_if_interrupted()
            with pytest.raises(dg.DagsterExecutionInterruptedError):  # until the command has received it
                stop_if_interrupted()
            assert interrupts.received()
            stop_if_interrupted()
            assert not interrupts.received()
        os.kill(os.getpid(), signal.SIGINT)  # no Interrupts open (a Dagster run of the daemon's): Dagster's handling only
        stop_if_interrupted()
    finally:
        signal.signal(signal.SIGINT, before)

def test_sigterm_is_handled_as_ctrl_c_unless_it_was_ignored():
    before = signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        with Interrupts():
            assert signal.getsignal(signal.SIGTERM) is signal.default_int_handler
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # started so by its parent: left so
        with Interrupts():
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, before)


class _RaisesWhenCollected:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __del__(self) -> None:
        raise self.exc


def test_an_interrupt_raised_in_a_finalizer_is_not_reported_as_an_error_but_others_are(monkeypatch):
    """Python reports an exception a finalizer raises ("Exception ignored in ...", with its
    traceback) and goes on: for an interrupt, which the command notices by its signal, that
    report is left out; any other is reported as before."""
    reported = []
    monkeypatch.setattr("sys.unraisablehook", lambda unraisable: reported.append(type(unraisable.exc_value)))
    import dagster as dg

    with Interrupts():
        _RaisesWhenCollected(KeyboardInterrupt())
        _RaisesWhenCollected(dg.DagsterExecutionInterruptedError())
        _RaisesWhenCollected(ValueError("a real error"))
    assert reported == [ValueError]
    _RaisesWhenCollected(KeyboardInterrupt())  # the hook given back: reported again
    assert reported == [ValueError, KeyboardInterrupt]


def test_sigterm_left_ignored_by_dagster_is_handled_again_after_a_run():
    """In a shell's background job SIGINT is ignored; Dagster, ending a run, hands SIGTERM the
    handler SIGINT had: ignored. ``received`` (called after each Dagster run) sets it back,
    so that ``kill`` still stops the command."""
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        with Interrupts() as interrupts:
            signal.signal(signal.SIGTERM, signal.getsignal(signal.SIGINT))  # dagster's setup_interrupt_handlers
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
            assert not interrupts.received()
            assert signal.getsignal(signal.SIGTERM) is signal.default_int_handler
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # Ctrl-C left as the shell set it
    finally:
        signal.signal(signal.SIGINT, before[0])
        signal.signal(signal.SIGTERM, before[1])


def test_a_library_logging_an_interrupt_it_raises_again_prints_nothing(caplog):
    """SQLAlchemy logs an exception raised while it closes a connection ("Exception closing
    connection", with its traceback) and raises it again: an interrupt is acted upon, so
    its record is left out; any other error's record is kept."""
    import logging

    library = logging.getLogger("sqlalchemy.pool.impl.NullPool")
    with Interrupts():
        for exc in (KeyboardInterrupt(), ValueError("a real error")):
            try:
                raise exc
            except BaseException:
                library.error("Exception closing connection %r", "conn", exc_info=True)
    library.error("after", exc_info=(KeyboardInterrupt, KeyboardInterrupt(), None))  # the filter is gone
    assert [(r.getMessage(), r.exc_info[0].__name__) for r in caplog.records] == [
        ("Exception closing connection 'conn'", "ValueError"), ("after", "KeyboardInterrupt")]
