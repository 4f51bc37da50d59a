"""How long from a new run folder becoming ready to its report.html, with the UI running?

Starts `scripts/ui.sh` (webserver, daemon and code server through `dg dev`) on
127.0.0.1 and a free port, with a Dagster instance and data folders of its own under the
work folder (a fresh DAGSTER_HOME: scripts/instance.sh seeds it with
deploy/dagster.local.yaml, as for a user). Once the UI answers and the sample runs it
starts with are processed, each round:

1. waits until nothing is queued or running and the catalog refresh that follows each run
   is done (so that every round starts from an idle instance), then a random 0-5 s more
   (the sensor daemon loops every 5 s: a run lands at any point of its loop);
2. writes one small run (12 tasks x 3 attempts) into the runs root with the generator,
   which writes manifest.json (status completed) last: that moment is the start;
3. waits for the run's report.html; the end is its modification time.

With ``--bucket`` the runs root, the output root and the storage base are in a bucket
(``s3://latency/runs``, ``s3://latency/reports``, ``s3://latency/storage``) on moto's S3
server on loopback (standins/moto_server.py, a process of its own), the setup the Helm
chart defaults to: the run is written to a local folder by the generator and uploaded as a
runner uploads it, every object in parallel and manifest.json last (the start is the end of
that PUT); the end is the moment report.html's object is first seen in the bucket (polled
every 0.1 s). Target <= 30 s.

Each round prints the total and where the time went, from the Dagster run's events:
``sensor`` (manifest written -> run created by the sensor's tick), ``queue`` (created ->
dequeued by the run coordinator), ``launch`` (dequeued -> the run process executing: a
new Python process that imports Dagster and the definitions), ``step`` (-> the step
starts) and ``work`` (step start -> report.html written), and on disk ``page`` (report.html ->
the suite page listing the run: the catalog sensor's refresh). Then the median and range.

With ``--catalog DIR`` the UI starts on a catalog already processed (a work folder of
``refresh_benchmark.py``, e.g. its ``n2000``: ``dagster_home`` and ``data`` processed by
``python -m bench_pipeline.main`` at the current formula version, else the sensor begins by
processing every run again), used in place: the rounds' runs are added to it, named by the
moment the benchmark started, and the suite page that lists them is that catalog's.

    .venv/bin/python benchmarks/latency_benchmark.py [--rounds 7] [--bucket] [--workdir DIR] [--keep]
    .venv/bin/python benchmarks/latency_benchmark.py --catalog /tmp/rb/n2000 [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

from compiled import compile_package

ROOT = Path(__file__).resolve().parents[1]
PHASES = ("sensor", "submit", "queue", "launch", "step", "work")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ui_env(workdir: Path, extra: dict[str, str] | None = None) -> dict:
    """The environment of a user's shell, with the instance and data under ``workdir``
    (and ``extra``: the bucket's roots and the S3 SDK's variables)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGFUSE_", "BENCH_", "DAGSTER_", "AWS_"))}
    env.update({"DAGSTER_HOME": str(workdir / "dagster_home"), "BENCH_HOME": str(workdir / "data")})
    env.update(extra or {})
    return env


class UI:
    """scripts/ui.sh in a session of its own; stopped (and its session killed) on exit."""

    def __init__(self, workdir: Path, port: int, extra_env: dict[str, str] | None = None) -> None:
        self.port, self.log = port, workdir / "ui.log"
        self.process = subprocess.Popen(
            ["bash", "scripts/ui.sh", "-h", "127.0.0.1", "-p", str(port)], cwd=ROOT, env=ui_env(workdir, extra_env),
            stdout=open(self.log, "wb"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            # SIGINT at its default, as in a terminal: dg dev maps SIGTERM to SIGINT's handler, and a
            # benchmark started as a background job would hand it SIGINT ignored (deploy/README.md)
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )

    def answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/server_info", timeout=5):
                return True
        except OSError:
            return False

    def wait_ready(self, timeout: float) -> float:
        started = time.monotonic()
        while not self.answers():
            if self.process.poll() is not None or time.monotonic() - started > timeout:
                raise SystemExit("the UI did not start:\n" + self.log.read_text(errors="replace")[-3000:])
            time.sleep(0.5)
        return time.monotonic() - started

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # whatever is left of its own session
        except (ProcessLookupError, PermissionError):
            pass


def open_instance(workdir: Path):
    import dagster as dg

    return dg.DagsterInstance.from_config(str(workdir / "dagster_home"))


IN_FLIGHT = ("QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING")


def wait_idle(instance, timeout: float) -> bool:
    """Until no run is queued or under way and the catalog refresh is not behind (the catalog
    sensor's refresh after the last run is done). False after ``timeout``."""
    import dagster as dg

    from bench_pipeline.assets.cross_run import catalog_behind

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = instance.get_runs_count(dg.RunsFilter(statuses=[dg.DagsterRunStatus[s] for s in IN_FLIGHT]))
        if not busy and catalog_behind(instance) is None:
            return True
        time.sleep(0.5)
    return False


def wait_for(path: Path, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.is_file():
            return True
        time.sleep(0.05)
    return path.is_file()


def phases(instance, run_id: str, ready: float, done: float) -> dict[str, float] | None:
    """Seconds of each phase (PHASES) for the Dagster run of partition ``run_id``, from its
    events: created (its first event, written when the sensor's tick submits it), enqueued,
    starting (dequeued: the launcher asks the code server for a run process), start (that
    process executes the job) and the step's start."""
    import dagster as dg

    records = instance.get_run_records(dg.RunsFilter(tags={"dagster/partition": run_id}), limit=1)
    if not records:
        return None
    stamps: dict[str, float] = {}
    for event in instance.all_logs(records[0].dagster_run.run_id):
        kind = event.dagster_event.event_type_value if event.dagster_event else None
        stamps.setdefault("CREATED", event.timestamp)
        if kind in ("PIPELINE_ENQUEUED", "PIPELINE_STARTING", "PIPELINE_START", "STEP_START"):
            stamps.setdefault(kind, event.timestamp)
    order = ["CREATED", "PIPELINE_ENQUEUED", "PIPELINE_STARTING", "PIPELINE_START", "STEP_START"]
    if any(k not in stamps for k in order):
        return None
    times = [ready, *(stamps[k] for k in order), done]
    return {name: later - earlier for name, earlier, later in zip(PHASES, times, times[1:])}


def sensor_ticks(instance, name: str = "run_folder_sensor") -> tuple[list[float], list[float]]:
    """(seconds between consecutive ticks, seconds each tick took) of sensor ``name``."""
    from dagster._core.scheduler.instigation import InstigatorType

    for state in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR):
        if state.instigator_name == name:
            ticks = sorted(instance.get_ticks(state.instigator_origin_id, state.selector_id, limit=1000),
                           key=lambda t: t.timestamp)
            gaps = [b.timestamp - a.timestamp for a, b in zip(ticks, ticks[1:])]
            took = [t.end_timestamp - t.timestamp for t in ticks if t.end_timestamp]
            return gaps, took
    return [], []


#: Names the rounds' runs of one invocation apart from those of another (``--catalog``).
STARTED = time.strftime("%Y%m%dT%H%M%S")


def new_run(runs_root: Path, number: int) -> Path:
    """One small run (12 tasks x 3 attempts) written by the generator, manifest.json last."""
    from bench_pipeline.generator import generate_runs

    prefix = f"latency-{STARTED}-{number:02d}-"
    # started after every run already there (a catalog's, and an earlier invocation's rounds),
    # as a new run is: the latest of its suite, listed by its suite page and the baseline of
    # none. A minute of start time per second of the clock (the year 5600 or so today), one
    # second per round: a later invocation's runs all start after an earlier one's. (With the
    # clock's seconds modulo 10**8 and an hour per round, a second invocation's runs started
    # among the first one's: late runs, whose successors' comparisons were made again.)
    start = datetime(2200, 1, 1, tzinfo=timezone.utc) + timedelta(minutes=int(time.time()), seconds=number)
    generate_runs(runs_root, runs=1, seed=5000 + number, tasks=12, repeats=3, history_messages=30,
                  edge_cases=False, id_prefix=prefix, start=start)
    (run_dir,) = [p for p in runs_root.iterdir() if p.name.startswith(prefix)]
    return run_dir


def one_round(instance, runs_root: Path, reports: Path, number: int, timeout: float) -> tuple[float, dict | None]:
    run_dir = new_run(runs_root, number)
    ready = (run_dir / "manifest.json").stat().st_mtime
    report = reports / run_dir.name / "report.html"
    if not wait_for(report, timeout):
        raise SystemExit(f"round {number}: no report.html for {run_dir.name} within {timeout:.0f} s")
    done = report.stat().st_mtime
    parts = phases(instance, run_dir.name, ready, done)
    page = suite_page_with(reports, run_dir.name, done, timeout)
    if parts is not None and page is not None:
        parts["page"] = page - done  # report.html -> the suite page that lists the run
    return done - ready, parts


def suite_page_with(reports: Path, run_id: str, since: float, timeout: float) -> float | None:
    """When a suite page listing ``run_id`` was written (its modification time, at or after
    ``since``: the catalog sensor's refresh after the run); None after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for page in (reports / "_suites").glob("*/index.html"):
            try:
                written = page.stat().st_mtime
                if written >= since and run_id in page.read_text(encoding="utf-8", errors="replace"):
                    return written
            except OSError:
                continue
        time.sleep(0.2)
    return None


class BucketRoots:
    """The three roots in one bucket of moto's server, which runs until ``stop``."""

    name = "latency"

    def __init__(self, workdir: Path) -> None:
        sys.path.insert(0, str(ROOT))
        from standins.s3 import Bucket, S3Server, s3_environment, start_moto_server

        self.process, port = start_moto_server()
        self.bucket = Bucket(self.name, S3Server(port, s3_environment(port)))
        self.bucket.server.client().create_bucket(Bucket=self.name)
        self.staging = workdir / "upload"
        self.env = {**self.bucket.server.env, "BENCH_RUNS_ROOT": self.bucket.url("runs"),
                    "BENCH_OUTPUT_ROOT": self.bucket.url("reports"), "BENCH_STORAGE_BASE": self.bucket.url("storage")}

    def upload_run(self, run_dir: Path) -> float:
        """The run's objects as a runner uploads them (in parallel, manifest.json last); the
        time.time() at which the manifest's PUT returned."""
        key = f"runs/{run_dir.name}"
        manifest = run_dir / "manifest.json"
        body = manifest.read_bytes()
        manifest.unlink()
        self.bucket.upload_folder(run_dir, key)
        self.bucket.put(f"{key}/manifest.json", body)
        return time.time()

    def wait_report(self, run_id: str, timeout: float) -> float | None:
        """time.time() when ``reports/<run_id>/report.html`` is first seen; None after ``timeout``."""
        client, key = self.bucket.server.client(), f"reports/{run_id}/report.html"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if client.list_objects_v2(Bucket=self.name, Prefix=key).get("KeyCount"):
                return time.time()
            time.sleep(0.1)
        return None

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def bucket_round(instance, roots: BucketRoots, number: int, timeout: float) -> tuple[float, dict | None]:
    run_dir = new_run(roots.staging, number)
    ready = roots.upload_run(run_dir)
    done = roots.wait_report(run_dir.name, timeout)
    if done is None:
        raise SystemExit(f"round {number}: no report.html for {run_dir.name} in the bucket within {timeout:.0f} s")
    return done - ready, phases(instance, run_dir.name, ready, done)


def fmt(values: list[float], digits: int = 1) -> str:
    return (f"median {statistics.median(values):.{digits}f} s "
            f"(range {min(values):.{digits}f}-{max(values):.{digits}f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--workdir", type=Path, default=None, help="default: a new temporary folder")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (instance, runs, logs)")
    parser.add_argument("--timeout", type=float, default=180, help="seconds to wait for one report.html")
    parser.add_argument("--bucket", action="store_true",
                        help="runs root, output root and storage base in a bucket of moto's S3 server")
    parser.add_argument("--catalog", type=Path, default=None,
                        help="a work folder already processed (dagster_home, data), used in place")
    args = parser.parse_args()
    compile_package()
    if args.catalog is not None:
        if args.bucket or not (args.catalog / "dagster_home").is_dir():
            raise SystemExit("--catalog needs a processed work folder (dagster_home, data) on disk")
        workdir, args.keep = args.catalog, True
    else:
        workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-latency-"))
        shutil.rmtree(workdir, ignore_errors=True)
        workdir.mkdir(parents=True)
    runs_root, reports = workdir / "data" / "runs", workdir / "data" / "reports"
    roots = BucketRoots(workdir) if args.bucket else None
    target = 30 if args.bucket else 15
    ui = UI(workdir, free_port(), roots.env if roots else None)
    try:
        print(f"UI answered after {ui.wait_ready(240):.1f} s (127.0.0.1:{ui.port}, work folder {workdir})", flush=True)
        instance = open_instance(workdir)
        if not wait_idle(instance, 240):
            raise SystemExit("the sample runs were not processed:\n" + ui.log.read_text(errors="replace")[-3000:])
        totals, split = [], {p: [] for p in (*PHASES, "page")}
        for number in range(1, args.rounds + 1):
            if not wait_idle(instance, 180):
                print(f"round {number}: the instance did not become idle within 180 s; measuring anyway", flush=True)
            time.sleep(random.uniform(0, 5))
            load = os.getloadavg()[0]
            if roots:
                total, parts = bucket_round(instance, roots, number, args.timeout)
            else:
                total, parts = one_round(instance, runs_root, reports, number, args.timeout)
            totals.append(total)
            detail = ""
            if parts:
                for name, value in parts.items():
                    split[name].append(value)
                detail = " (" + ", ".join(f"{name} {value:.1f}" for name, value in parts.items()) + ")"
            print(f"round {number}/{args.rounds}: ready -> report.html {total:.1f} s{detail}, load {load:.1f}",
                  flush=True)
        where = "in the bucket" if roots else "on disk"
        print(f"new run -> report.html ({where}), {len(totals)} rounds: {fmt(totals)}; target <= {target} s")
        for name in (*PHASES, "page"):
            if split[name]:
                print(f"  {name:<6} {fmt(split[name])}")
        gaps, took = sensor_ticks(instance)
        if gaps:
            print(f"run_folder_sensor: {len(took)} ticks, every {fmt(gaps)}, each took {fmt(took, 2)}")
    finally:
        ui.stop()
        if roots:
            roots.stop()
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
