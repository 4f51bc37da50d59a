"""`python -m bench_pipeline_tests.support.sleeping_run`: one Dagster run, on the instance of
$DAGSTER_HOME, executed in this process, whose only step sleeps until the process is killed:
a run under way whose process a test can kill (as kill -9, the out-of-memory killer or a
reboot end a run worker)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg

ROOT = Path(__file__).resolve().parents[2]
#: This module as the code location of Dagster's command line (`dagster-daemon run`, `dagster job launch`).
LOCATION = ["-m", "bench_pipeline_tests.support.sleeping_run"]


@dg.op
def wait_to_be_killed() -> None:
    time.sleep(600)


@dg.job(tags={"dagster/partition": "run-0001"})
def sleeping() -> None:
    wait_to_be_killed()


def local_home(path: Path) -> Path:
    """A local instance as scripts/instance.sh makes it (deploy/dagster.local.yaml in
    DAGSTER_HOME), opened once before any other process opens it, as the scripts do (the main
    command, `--prepare-ui` before the UI's processes start). The first opening of a SQLite
    instance creates its databases and stamps their schema version; processes that first open
    a new instance at the same time (here: the test and the runs it starts) can each stamp it,
    which leaves it unusable ("Version table 'alembic_version' has more than one head
    present", dagster-io/dagster#27390)."""
    path.mkdir(parents=True)
    shutil.copy(ROOT / "deploy" / "dagster.local.yaml", path / "dagster.yaml")
    with dg.DagsterInstance.from_config(str(path)):
        pass
    return path


#: Tags for the sleeping run on top of the job's (JSON), e.g. the catalog refresh's.
TAGS_VARIABLE = "SLEEPING_RUN_TAGS"


def start_sleeping_run(home: Path, tags: dict[str, str] | None = None) -> subprocess.Popen:
    env = {**os.environ, "DAGSTER_HOME": str(home), "PYTHONPATH": str(ROOT), TAGS_VARIABLE: json.dumps(tags or {})}
    return subprocess.Popen([sys.executable, "-m", "bench_pipeline_tests.support.sleeping_run"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def start_daemon(home: Path) -> subprocess.Popen:
    """`dagster-daemon run` on the instance of ``home``, with this module as its code location
    (the job ``sleeping``), in a session of its own for ``stop_daemon``."""
    env = {**os.environ, "DAGSTER_HOME": str(home), "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([str(Path(sys.executable).parent / "dagster-daemon"), "run", *LOCATION], cwd=ROOT,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def stop_daemon(daemon: subprocess.Popen) -> None:
    """Stop the daemon and the processes it started (its code server) as Ctrl-C would."""
    if daemon.poll() is None:
        os.killpg(daemon.pid, signal.SIGTERM)
        daemon.wait(timeout=60)


def wait_until_started(instance: dg.DagsterInstance, count: int, timeout: float = 90) -> list[dg.DagsterRun]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
        if len(runs) >= count:
            return list(runs)
        time.sleep(0.2)
    raise AssertionError(f"{count} run(s) did not start in {timeout}s")


def killed(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


if __name__ == "__main__":
    with dg.DagsterInstance.get() as instance:
        sleeping.execute_in_process(instance=instance, tags=json.loads(os.environ.get(TAGS_VARIABLE) or "{}"))
