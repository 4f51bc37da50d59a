"""How fast is the Dagster path, the one users run, against the command line on the same runs?

Two measurements, each side by side in every round (--repeat rounds, 3 by default; every
figure is the median of the rounds with their range, never the best), on this machine:

  large:    one 10,000-attempt run (2,000 tasks x 5 attempts, ~80 history messages each):
            `bench-pipeline process --publish` (outbox) against the `process_run` job as
            `python -m bench_pipeline.main` runs it (a fresh Dagster instance, start-up and
            the catalog refresh included). Wall clock, where the job's time went (from its
            Dagster runs) and, in one more round of each not timed, the peak memory of the
            whole process tree (sampled every 50 ms: the sampler's CPU would slow the timed
            rounds, see ``timed``).
  backfill: N small runs (12 tasks x 3 repeats; 40 by default, --runs 1000 for the large
            figure): a `bench-pipeline process` loop over them against an asset backfill of
            every partition as a user runs it: the Dagster daemon already running (sensors
            stopped), then scripts/backfill.sh at a random point of the backfill daemon's
            30 s loop. Reported: from scripts/backfill.sh to the last report and to the
            backfill marked done, and the parts: the launch, the daemon's loop until it
            submits the runs, their start (planned events, queue, a new run process), the
            runs themselves (first start to last end, the figure compared with the loop) and
            the wait until the daemon marks it done, and how busy the machine's cores were
            during the runs (run it on a quiet machine). --partitions-per-run N sets
            BENCH_PARTITIONS_PER_RUN for the backfill. Then the cross-run refresh the catalog
            sensor requests after a backfill (the refresh_catalog job: catalog, trends, every
            system's repeats, the suite pages), three rounds, against the runs' time.

The package's bytecode is compiled first, as an installation has it (compiled.py).

    .venv/bin/python benchmarks/dagster_benchmark.py [--workdir DIR] [--repeat N] [--runs N] [--only large|backfill]
                                                     [--partitions-per-run N]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from compiled import compile_package

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CLI = [sys.executable, "-m", "bench_pipeline.cli"]


class TreePeak:
    """The peak memory of a process and all its descendants, sampled every 50 ms: the sum of
    their proportional set sizes (PSS: a page shared by forked processes counts once in
    all), and the largest single process's resident set (RSS)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.total, self.single = pid, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _tree(self) -> list[int]:
        children: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    fields = fh.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry))
        found, todo = [], [self.pid]
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo.extend(children.get(pid, []))
        return found

    def _run(self) -> None:
        while not self._stop.is_set():
            pss, rss = [], []
            for pid in self._tree():
                try:
                    with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
                        fields = dict(line.split(b":", 1) for line in fh.read().splitlines()[1:])
                    pss.append(int(fields[b"Pss"].split()[0]) * 1024)
                    rss.append(int(fields[b"Rss"].split()[0]) * 1024)
                except (OSError, KeyError, ValueError):
                    pass
            self.total = max(self.total, sum(pss))
            self.single = max(self.single, max(rss, default=0))
            self._stop.wait(0.05)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


class CoresBusy:
    """The machine's CPU time, sampled every 0.5 s from /proc/stat (every process, not only
    the measured ones: run on a quiet machine), to tell how busy the cores were in a window."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float, float]] = []  # (time, busy seconds, all seconds)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        tick = os.sysconf("SC_CLK_TCK")
        while not self._stop.is_set():
            with open("/proc/stat") as fh:
                values = [int(v) for v in fh.readline().split()[1:]]
            idle = values[3] + values[4]  # idle and iowait
            self.samples.append((time.time(), (sum(values) - idle) / tick, sum(values) / tick))
            self._stop.wait(0.5)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def share(self, start: float, end: float) -> float:
        """The share of all cores' time spent busy between ``start`` and ``end`` (epoch seconds)."""
        inside = [s for s in self.samples if start <= s[0] <= end]
        if len(inside) < 2:
            return float("nan")
        return (inside[-1][1] - inside[0][1]) / (inside[-1][2] - inside[0][2])


def timed(cmd: list[str], env: dict, log: Path, sample_memory: bool = False) -> tuple[float, TreePeak | None]:
    """Run ``cmd`` to the end; seconds and, with ``sample_memory``, its tree's memory peak.

    The timed rounds do not sample: reading every process's smaps_rollup 20 times a second
    takes CPU from the measured processes on a 2-core machine, and more from the job (main
    process, fork server, worker and its forked helpers) than from the one-process command
    (measured: +0.5 s on the job, +0.15 s on the command). Memory has rounds of its own."""
    started = time.perf_counter()
    with open(log, "wb") as out:
        child = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        peak = TreePeak(child.pid) if sample_memory else None
        code = child.wait()
    if peak is not None:
        peak.stop()
    if code != 0:
        raise SystemExit(f"{' '.join(cmd)} failed (exit {code}); see {log}")
    return time.perf_counter() - started, peak


def base_env(workdir: Path, name: str) -> dict:
    """A fresh, offline environment: its own Dagster instance and output folders."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGFUSE_", "BENCH_", "DAGSTER_"))}
    home = workdir / name / "dagster_home"
    shutil.rmtree(workdir / name, ignore_errors=True)
    home.mkdir(parents=True)
    shutil.copy(ROOT / "deploy" / "dagster.local.yaml", home / "dagster.yaml")
    env.update({"DAGSTER_HOME": str(home), "BENCH_HOME": str(workdir / name / "data")})
    return env


def generate(root: Path, runs: int, tasks: int, repeats: int, messages: int) -> Path:
    from bench_pipeline.generator import generate_runs

    target = root / f"runs-{runs}x{tasks}x{repeats}x{messages}"
    if not (target / ".complete").exists():
        shutil.rmtree(target, ignore_errors=True)
        print(f"generating {runs} run(s) of {tasks} tasks x {repeats} attempts ...", file=sys.stderr, flush=True)
        generate_runs(target, runs=runs, seed=2026, tasks=tasks, repeats=repeats, history_messages=messages,
                      edge_cases=False)
        (target / ".complete").touch()
    return target


def warm(root: Path) -> None:
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            with open(os.path.join(dirpath, name), "rb") as fh:
                fh.read()


def mib(n: int) -> str:
    return f"{n / 2 ** 20:.0f} MiB"


# --- large: one 10,000-attempt run ------------------------------------------------------

def spread(values: list[float], unit: str = "s", digits: int = 1) -> str:
    """``median (range min-max)``: what every figure of this benchmark reports."""
    return (f"median {statistics.median(values):.{digits}f}{unit} "
            f"(range {min(values):.{digits}f}-{max(values):.{digits}f}{unit}, {len(values)} rounds)")


def job_phases(env: dict, started: float, ended: float) -> dict[str, float]:
    """Where the main command's time went, from its Dagster runs in the instance: start-up
    (process start to the first run's start), the process_run runs, the refresh_catalog run,
    and the rest (between and after the runs: the command's own work and exit)."""
    import dagster as dg

    instance = dg.DagsterInstance.from_config(env["DAGSTER_HOME"])
    records = sorted(instance.get_run_records(), key=lambda r: r.start_time or 0)
    per_run = [r for r in records if r.dagster_run.job_name == "process_run" and r.start_time and r.end_time]
    catalog = [r for r in records if r.dagster_run.job_name == "refresh_catalog" and r.start_time and r.end_time]
    phases = {"start-up": (per_run[0].start_time if per_run else ended) - started,
              "process_run": sum(r.end_time - r.start_time for r in per_run),
              "refresh_catalog": sum(r.end_time - r.start_time for r in catalog)}
    phases["rest"] = (ended - started) - sum(phases.values())
    return phases


def measure_large(workdir: Path, repeat: int) -> None:
    runs_root = generate(workdir, 1, 2000, 5, 80)
    run = next(p for p in runs_root.iterdir() if p.is_dir())
    warm(run)
    cli_cmd = [*CLI, "process", str(run), "--output-dir", str(workdir / "cli" / "out"), "--publish"]
    job_cmd = [sys.executable, "-m", "bench_pipeline.main", "--no-samples"]

    def job_env() -> dict:
        env = base_env(workdir, "job")
        env["BENCH_RUNS_ROOT"] = str(runs_root)
        return env

    cli, job, ratios = [], [], []
    phases: dict[str, list[float]] = {}
    for round_no in range(1, repeat + 1):
        cli.append(timed(cli_cmd, base_env(workdir, "cli"), workdir / "cli.log")[0])
        env = job_env()
        started = time.time()
        seconds = timed(job_cmd, env, workdir / "job.log")[0]
        job.append(seconds)
        ratios.append(seconds / cli[-1])
        split = job_phases(env, started, started + seconds)
        for name, value in split.items():
            phases.setdefault(name, []).append(value)
        print(f"round {round_no}/{repeat}: process --publish {cli[-1]:.1f}s, process_run job {seconds:.1f}s "
              f"({', '.join(f'{k} {v:.1f}s' for k, v in split.items())}), ratio {ratios[-1]:.2f}, "
              f"load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
    # One more round of each with the memory sampler, for the peaks only (not timed).
    cli_peak = timed(cli_cmd, base_env(workdir, "cli"), workdir / "cli.log", sample_memory=True)[1]
    job_peak = timed(job_cmd, job_env(), workdir / "job.log", sample_memory=True)[1]
    for label, got, peak in (("bench-pipeline process --publish", cli, cli_peak),
                             ("process_run job (bench_pipeline.main)", job, job_peak)):
        print(f"{label}: {spread(got)}, peak memory (a separate sampled round) {mib(peak.total)} "
              f"(PSS of the process tree), {mib(peak.single)} (RSS of the largest process)")
    for name, values in phases.items():
        print(f"  job {name}: {spread(values)}")
    ratio = statistics.median(job) / statistics.median(cli)
    print(f"10,000-attempt run: process_run job / process --publish = {ratio:.2f} (ratio of the medians; "
          f"per round {min(ratios):.2f}-{max(ratios):.2f}; target <= 1.5)")


# --- backfill: many small runs ------------------------------------------------------------

def wait_for_backfill(instance, timeout: float):
    """Poll the instance until its one backfill is done; the backfill and its runs."""
    import dagster as dg

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        backfills = instance.get_backfills()
        if backfills and backfills[0].status.value.startswith(("COMPLETED", "FAILED", "CANCELED")):
            runs = instance.get_run_records(dg.RunsFilter(tags={"dagster/backfill": backfills[0].backfill_id}))
            return backfills[0], runs
        time.sleep(0.5)
    raise SystemExit("the backfill did not finish in time")


def loop_seconds(workdir: Path, folders: list[Path]) -> float:
    env = base_env(workdir, "loop")
    started = time.perf_counter()
    for folder in folders:
        subprocess.run([*CLI, "process", str(folder), "--output-dir", str(workdir / "loop" / "out" / folder.name)],
                       cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def daemon_ready(instance, timeout: float = 120) -> None:
    """Until every daemon of the instance has sent a heartbeat (its loops run)."""
    deadline = time.monotonic() + timeout
    needed = set(instance.get_required_daemon_types())
    while time.monotonic() < deadline:
        if needed <= set(instance.get_daemon_heartbeats()):
            return
        time.sleep(0.5)
    raise SystemExit("the daemon did not start")


def one_backfill(workdir: Path, runs_root: Path, folders: list[Path],
                 partitions_per_run: int | None = None) -> tuple[dict[str, float], dict]:
    """One backfill as a user runs it: the daemon already running (sensors stopped), then
    scripts/backfill.sh; returns its phases (seconds) and the environment of its instance.
    ``partitions_per_run`` sets BENCH_PARTITIONS_PER_RUN for the daemon and its runs."""
    import dagster as dg

    env = base_env(workdir, "backfill")
    env["BENCH_RUNS_ROOT"] = str(runs_root)
    if partitions_per_run:
        env["BENCH_PARTITIONS_PER_RUN"] = str(partitions_per_run)
    add = ("import os, sys, dagster as dg\nfrom bench_pipeline.partitions import runs_partitions\n"
           "dg.DagsterInstance.get().add_dynamic_partitions(runs_partitions.name, sorted(sys.argv[1:]))")
    subprocess.run([sys.executable, "-c", add, *(f.name for f in folders)], env=env, cwd=ROOT, check=True)
    for sensor in ("run_folder_sensor", "catalog_sensor"):
        subprocess.run([str(BIN / "dagster"), "sensor", "stop", "-w", "workspace.yaml", sensor], env=env, cwd=ROOT,
                       check=True, capture_output=True)
    instance = dg.DagsterInstance.from_config(env["DAGSTER_HOME"])
    daemon = subprocess.Popen([str(BIN / "dagster-daemon"), "run", "-w", "workspace.yaml"], env=env, cwd=ROOT,
                              stdout=open(workdir / "daemon.log", "wb"), stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        daemon_ready(instance)
        # The backfill daemon loops every 30 s from its start: a user's backfill lands anywhere in it.
        time.sleep(random.uniform(0, 30))
        busy = CoresBusy()
        started = time.time()
        subprocess.run(["bash", "scripts/backfill.sh"], env=env, cwd=ROOT, check=True, capture_output=True)
        launched = time.time()
        backfill, runs = wait_for_backfill(instance, timeout=3600)
        busy.stop()
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        daemon.wait(timeout=60)
    if not backfill.status.value == "COMPLETED_SUCCESS":
        raise SystemExit(f"the backfill ended {backfill.status.value}; see {workdir / 'daemon.log'}")
    first = min(runs, key=lambda r: r.start_time)
    created = min(r.create_timestamp.timestamp() for r in runs)  # the daemon's first look submitted it
    last_end = max(r.end_time for r in runs)
    phases = {
        "launch": launched - started,  # scripts/backfill.sh
        "daemon loop": created - backfill.backfill_timestamp,  # until the backfill daemon's next look (30 s loop)
        "start": first.start_time - created,  # its runs submitted (planned events), dequeued, launched
        "runs": last_end - first.start_time,  # first run start to last run end
        "marked done": backfill.backfill_end_timestamp - last_end,  # the daemon's next look again
        "to last report": last_end - started,
        "to done": backfill.backfill_end_timestamp - started,
        "dagster runs": len(runs),
        "cores busy": busy.share(first.start_time, last_end),  # during the runs
    }
    return phases, env


def measure_backfill(workdir: Path, runs: int, rounds: int, partitions_per_run: int | None = None) -> None:
    runs_root = generate(workdir, runs, 12, 3, 30)
    folders = sorted(p for p in runs_root.iterdir() if p.is_dir())
    warm(runs_root)
    loops: list[float] = []
    phases: dict[str, list[float]] = {}
    env = None
    for round_no in range(1, rounds + 1):
        loops.append(loop_seconds(workdir, folders))
        split, env = one_backfill(workdir, runs_root, folders, partitions_per_run)
        for name, value in split.items():
            phases.setdefault(name, []).append(value)
        print(f"round {round_no}/{rounds}: {runs} runs, process loop {loops[-1]:.1f}s; backfill "
              + ", ".join(f"{v} Dagster runs" if k == "dagster runs" else f"cores busy {v:.0%}" if k == "cores busy"
                          else f"{k} {v:.1f}s" for k, v in split.items())
              + f", load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
    print(f"{runs} runs: bench-pipeline process loop {spread(loops)}")
    for name in ("to done", "to last report", "launch", "daemon loop", "start", "runs", "marked done"):
        print(f"{runs} runs: backfill {name}: {spread(phases[name])}")
    print(f"{runs} runs: the machine's cores busy during the backfill's runs: "
          f"{spread([100 * v for v in phases['cores busy']], unit='%', digits=0)}")
    ratio = statistics.median(phases["runs"]) / statistics.median(loops)
    print(f"{runs} runs: backfill runs (first run start to last run end) / process loop = {ratio:.2f} "
          f"(ratio of the medians; target <= 1.5)")
    submitted = [start + run for start, run in zip(phases["start"], phases["runs"])]
    print(f"{runs} runs: backfill from its runs' submission to the last run end {spread(submitted)} / process loop = "
          f"{statistics.median(submitted) / statistics.median(loops):.2f}")
    refreshes = measure_refresh(env, rounds=3)
    median = statistics.median(refreshes)
    print(f"{runs} runs: cross-run refresh (run_catalog, suite_trends, system_repeats, suite_pages) "
          f"{spread(refreshes)} = {median / statistics.median(phases['runs']):.1%} of the backfill's runs "
          f"(target <= 10%)")


REFRESH = (
    "import time, dagster as dg\n"
    "from bench_pipeline.definitions import defs\n"
    "job = defs.resolve_job_def('refresh_catalog')\n"
    "started = time.perf_counter()\n"
    "result = job.execute_in_process(instance=dg.DagsterInstance.get())\n"
    "assert result.success\n"
    "print(time.perf_counter() - started)\n"
)


def measure_refresh(env: dict, rounds: int) -> list[float]:
    """Seconds of the refresh_catalog job over the instance's processed runs (what the catalog
    sensor requests once a backfill is done), each round in a fresh process, the job's own
    work only (start-up and definitions loading excluded)."""
    seconds = []
    for _ in range(rounds):
        out = subprocess.run([sys.executable, "-c", REFRESH], env=env, cwd=ROOT, capture_output=True, text=True,
                             check=True)
        seconds.append(float(out.stdout.strip().splitlines()[-1]))
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=None, help="keep generated runs here between invocations")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of each measurement (medians and ranges)")
    parser.add_argument("--runs", type=int, default=40, help="small runs in the backfill measurement")
    parser.add_argument("--only", choices=("large", "backfill"), default=None)
    parser.add_argument("--partitions-per-run", type=int, default=None,
                        help="BENCH_PARTITIONS_PER_RUN for the backfill (default: the project's)")
    args = parser.parse_args()
    compile_package()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-dagster-"))
    workdir.mkdir(parents=True, exist_ok=True)
    if args.only in (None, "large"):
        measure_large(workdir, args.repeat)
    if args.only in (None, "backfill"):
        measure_backfill(workdir, args.runs, args.repeat, args.partitions_per_run)


if __name__ == "__main__":
    main()
