"""scripts/ui.sh and its launcher (bench_pipeline/ui.py) stop on SIGTERM and SIGINT, however
they were started: the launcher restores SIGINT for `dg dev`, forwards the stop signal
and waits for everything it started, killing what is left after its timeout."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

from .support.network import free_port

ROOT = Path(__file__).resolve().parents[1]

#: A stand-in for `dg dev`: records how SIGINT reaches it, starts a process that ignores
#: every stop signal (as a stuck webserver would), and exits on KeyboardInterrupt without it.
STAND_IN = textwrap.dedent("""
    import json, os, signal, subprocess, sys, time
    stubborn = subprocess.Popen([sys.executable, "-c", "import signal, time\\n"
                                 "for s in (signal.SIGINT, signal.SIGTERM): signal.signal(s, signal.SIG_IGN)\\n"
                                 "time.sleep(600)"])
    with open(sys.argv[1] + ".tmp", "w") as fh:
        json.dump({"sigint_default": signal.getsignal(signal.SIGINT) is signal.default_int_handler,
                   "stubborn": stubborn.pid}, fh)
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    try:
        time.sleep(600)
    except KeyboardInterrupt:
        sys.exit(0)
""")


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not exited (a zombie has)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def _session(sid: int) -> list[int]:
    """The live (non-zombie) processes of session ``sid``."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(stat.parent.name))
    return pids


def _wait_until(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_launcher_started_with_sigint_ignored_stops_everything_it_started(tmp_path, stop):
    """Started as a background job of a non-interactive shell (SIGINT ignored), the launcher
    still gives its command a working SIGINT, forwards the stop signal, and kills what is
    left after its timeout."""
    state = tmp_path / "state.json"
    launcher = subprocess.Popen(
        [sys.executable, "-c", "import sys; from bench_pipeline.ui import run; "
         f"sys.exit(run([sys.executable, '-c', {STAND_IN!r}, {str(state)!r}], stop_timeout=1))"],
        cwd=ROOT, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        stderr=subprocess.PIPE, text=True,
    )
    try:
        assert _wait_until(state.exists, 30), "the command did not start"
        started = json.loads(state.read_text())
        assert started["sigint_default"], "the command inherited an ignored SIGINT"
        launcher.send_signal(stop)
        assert launcher.wait(timeout=15) == 0
        assert not _alive(started["stubborn"]), "the process that ignores stop signals outlived the launcher"
        assert f"{signal.Signals(stop).name}: stopping" in launcher.stderr.read()
    finally:
        if launcher.poll() is None:
            launcher.kill()
        if state.exists() and _alive(json.loads(state.read_text())["stubborn"]):
            os.kill(json.loads(state.read_text())["stubborn"], signal.SIGKILL)


def test_launcher_kills_a_command_that_does_not_stop_after_its_timeout():
    """A command that ignores the forwarded SIGINT is killed ``stop_timeout`` seconds after
    the stop request (exit code 128 + SIGKILL)."""
    hung = "import signal, sys, time; signal.signal(signal.SIGINT, signal.SIG_IGN); print(flush=True); time.sleep(600)"
    launcher = subprocess.Popen(
        [sys.executable, "-c", "import sys; from bench_pipeline.ui import run; "
         f"sys.exit(run([sys.executable, '-c', {hung!r}], stop_timeout=1))"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        launcher.stdout.readline()  # the command runs, SIGINT ignored
        asked = time.monotonic()
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(timeout=15) == 128 + signal.SIGKILL
        assert 1 <= time.monotonic() - asked < 10
        assert "still running 1 s after the stop request: killing them" in launcher.stderr.read()
    finally:
        if launcher.poll() is None:
            launcher.kill()


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_ui_script_in_the_background_stops_on_signal(tmp_path, stop):
    """`setsid scripts/ui.sh &` from a non-interactive bash, as a service manager starts it:
    once the webserver answers, one signal to the script's pid stops the webserver, the
    daemon, the code server and everything else of its session, and frees the port."""
    port = free_port()
    env = {**os.environ, "BENCH_HOME": str(tmp_path / "data"), "DAGSTER_HOME": str(tmp_path / "home")}
    for var in ("BENCH_RUNS_ROOT", "BENCH_OUTPUT_ROOT", "BENCH_STORAGE_BASE", "LANGFUSE_PUBLIC_KEY",
                "LANGFUSE_SECRET_KEY"):
        env.pop(var, None)
    # The premise: a background job of a non-interactive bash starts with SIGINT ignored.
    premise = subprocess.run(["bash", "-c", f"'{sys.executable}' -c 'import signal; "
                              "print(signal.getsignal(signal.SIGINT) == signal.SIG_IGN)' & wait"],
                             capture_output=True, text=True)
    assert premise.stdout.strip() == "True"
    log = tmp_path / "ui.log"
    started = subprocess.run(
        ["bash", "-c", f"setsid scripts/ui.sh -h 127.0.0.1 -p {port} > '{log}' 2>&1 < /dev/null & echo $!"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=30,
    )
    pid = int(started.stdout.strip())  # the session leader: its session holds everything it starts
    try:
        def answers() -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=5):
                    return True
            except OSError:
                return False

        assert _wait_until(answers, 180), "the webserver did not answer:\n" + log.read_text()[-3000:]
        assert len(_session(pid)) >= 5  # launcher, dg dev, webserver, daemon, code server(s)

        os.kill(pid, stop)
        assert _wait_until(lambda: not _session(pid), 30), (
            f"still running 30 s after {stop.name}: {_session(pid)}\n" + log.read_text()[-3000:])
        with pytest.raises(ConnectionRefusedError):  # nothing listens on the port any more
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
        with socket.socket() as s:  # and a restarted webserver can bind it (as uvicorn does)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))
        assert "bench_pipeline.ui: stopped" in log.read_text()
    finally:
        for leftover in _session(pid):  # only this test's own session
            try:
                os.kill(leftover, signal.SIGKILL)
            except ProcessLookupError:
                pass
