"""`python -m bench_pipeline.ui [dg dev options]`: the Dagster UI that stops when asked.

What scripts/ui.sh runs: `dg dev` on the project (pyproject.toml's ``[tool.dg]``: webserver,
daemon, code server), stopped by SIGTERM, SIGINT or SIGHUP whoever started it. `dg dev` run
directly cannot be stopped when started in the background by a script or a service manager:
a non-interactive bash starts background jobs with SIGINT ignored, `dg dev` inherits that
(and maps SIGTERM to the same ignored handler), and so do the webserver and daemon it asks
to stop by interrupting themselves. Only SIGKILL of the whole group ends them.

This launcher:

- starts `dg dev` with SIGINT at its default (a handled signal is reset at exec, an ignored
  one is not), in a process group of its own, so that it gets exactly the one SIGINT the
  launcher forwards, not a second one from the terminal (Ctrl-C) or from a kill of the
  launcher's group;
- on the first SIGTERM, SIGINT or SIGHUP forwards SIGINT to `dg dev`, which stops the
  webserver, the daemon and the code server, and waits for all of them to exit;
- after STOP_TIMEOUT seconds (``BENCH_UI_STOP_TIMEOUT``), or on a second signal, kills
  whatever is left of that process group;
- on Linux, is the subreaper of everything below it (it reaps what outlives its parent) and
  makes `dg dev` receive SIGTERM if the launcher itself dies (even by SIGKILL).

Its exit code is `dg dev`'s (0 after a requested stop, 137 when it had to be killed).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

#: Seconds between the stop request and SIGKILL of what is left (`dg dev` itself waits
#: up to 60 s for its webserver and daemon; a clean stop takes a few seconds).
STOP_TIMEOUT = float(os.environ.get("BENCH_UI_STOP_TIMEOUT", "20"))
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER = 1, 36


def _prctl(option: int, value: int) -> None:
    """prctl(2) where there is one (Linux); elsewhere nothing."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
        except (OSError, AttributeError):
            pass


def dg_dev_command(args: list[str]) -> list[str]:
    """`dg dev` on the project (pyproject.toml's ``[tool.dg]``), from this interpreter's
    environment; ``args`` are its options (``-h HOST``, ``-p PORT``, ...)."""
    return [str(Path(sys.executable).with_name("dg")), "dev", *args]


def _reap() -> None:
    """Collect every exited child (ours, and orphans reparented to us as subreaper)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _group_alive(pgid: int) -> bool:
    _reap()
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _say(text: str) -> None:
    print(f"bench_pipeline.ui: {text}", file=sys.stderr, flush=True)


def run(command: list[str], stop_timeout: float = STOP_TIMEOUT) -> int:
    """Run ``command`` (in a process group of its own) until it exits or a stop signal
    arrives; then stop it and everything it started (see the module doc)."""
    requests: list[float] = []  # when each stop signal arrived
    child: subprocess.Popen | None = None

    def on_signal(signum: int, _frame) -> None:
        requests.append(time.monotonic())
        if child is None:
            return  # not started yet: stopped right after it starts
        if child.returncode is not None:  # `dg dev` is gone (its pid may be another's now)
            _kill_group(child.pid)  # what it left behind
        elif len(requests) == 1:
            _say(f"{signal.Signals(signum).name}: stopping the Dagster UI (webserver, daemon, code server) ...")
            _interrupt(child.pid)
        else:
            _say(f"{signal.Signals(signum).name} again: killing what is left")
            _kill_group(child.pid)

    # Handlers, not SIG_IGN: a handled signal is reset to its default in the child at exec.
    for sig in STOP_SIGNALS:
        signal.signal(sig, on_signal)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    parent = os.getpid()

    def die_with_launcher() -> None:  # in the child, before exec
        _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the launcher died before that took effect
            os._exit(1)

    child = subprocess.Popen(command, process_group=0, preexec_fn=die_with_launcher)
    if requests:
        _interrupt(child.pid)
    killed = False
    while True:
        try:
            code = child.wait(timeout=0.5)
            break
        except subprocess.TimeoutExpired:
            if requests and not killed and time.monotonic() > requests[0] + stop_timeout:
                killed = _stop_now(child.pid, stop_timeout)
    # `dg dev` has exited (asked to, or by itself): what it started must follow.
    deadline = time.monotonic() + 2 if killed else (requests[0] if requests else time.monotonic()) + stop_timeout
    while _group_alive(child.pid):
        if time.monotonic() > deadline:
            if killed:
                break  # SIGKILLed 2 s ago: nothing more to do
            killed = _stop_now(child.pid, stop_timeout)
            deadline = time.monotonic() + 2
        time.sleep(0.2)
    if requests:
        _say("stopped")
    return code if code >= 0 else 128 - code


def _stop_now(pgid: int, stop_timeout: float) -> bool:
    _say(f"processes of the Dagster UI still running {stop_timeout:.0f} s after the stop request: killing them")
    _kill_group(pgid)
    return True


def _interrupt(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGINT)
    except ProcessLookupError:
        pass


def main(argv: list[str] | None = None) -> int:
    return run(dg_dev_command(list(sys.argv[1:] if argv is None else argv)))


if __name__ == "__main__":
    sys.exit(main())
