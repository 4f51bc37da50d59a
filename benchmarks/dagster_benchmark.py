"""How fast is the Dagster path, the one users run, against the command line on the same runs?

Two measurements, each side by side in one invocation, on this machine:

  large:    one 10,000-attempt run (2,000 tasks x 5 attempts, ~80 history messages each):
            `bench-pipeline process --publish` (outbox) against the `process_run` job as
            `python -m bench_pipeline.main` runs it (a fresh Dagster instance, start-up
            included). Wall clock and peak memory of the whole process tree (sampled).
  backfill: N small runs (12 tasks x 3 repeats; 40 by default, --runs 1000 for the large
            figure): a `bench-pipeline process` loop over them against an asset backfill of
            every partition run by the Dagster daemon (scripts/backfill.sh; sensors
            stopped), measured from the start of the backfill's first run to the end of its
            last. The daemon's own wait before it submits anything is printed beside it.
            Then the cross-run refresh the catalog sensor requests after a backfill (the
            refresh_catalog job: catalog, trends, every system's repeats, the suite pages),
            three rounds, against the backfill's time.

    .venv/bin/python benchmarks/dagster_benchmark.py [--workdir DIR] [--repeat N] [--runs N] [--only large|backfill]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

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


def timed(cmd: list[str], env: dict, log: Path) -> tuple[float, TreePeak]:
    """Run ``cmd`` to the end; seconds and its tree's memory peak."""
    started = time.perf_counter()
    with open(log, "wb") as out:
        child = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        peak = TreePeak(child.pid)
        code = child.wait()
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
    from bench_pipeline.generate import generate_runs

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

def measure_large(workdir: Path, repeat: int) -> None:
    runs_root = generate(workdir, 1, 2000, 5, 80)
    run = next(p for p in runs_root.iterdir() if p.is_dir())
    warm(run)
    cli, job = [], []
    for round_no in range(1, repeat + 1):
        env = base_env(workdir, "cli")
        seconds, peak = timed([*CLI, "process", str(run), "--output-dir", str(workdir / "cli" / "out"), "--publish"],
                              env, workdir / "cli.log")
        cli.append((seconds, peak))
        env = base_env(workdir, "job")
        env["BENCH_RUNS_ROOT"] = str(runs_root)
        seconds, peak = timed([sys.executable, "-m", "bench_pipeline.main", "--no-samples"], env, workdir / "job.log")
        job.append((seconds, peak))
        print(f"round {round_no}/{repeat}: process --publish {cli[-1][0]:.1f}s, process_run job {seconds:.1f}s",
              file=sys.stderr, flush=True)
    for label, got in (("bench-pipeline process --publish", cli), ("process_run job (bench_pipeline.main)", job)):
        best = min(s for s, _ in got)
        print(f"{label}: best {best:.1f}s, median {statistics.median(s for s, _ in got):.1f}s, "
              f"peak memory {mib(max(p.total for _, p in got))} (PSS of the process tree), "
              f"{mib(max(p.single for _, p in got))} (RSS of the largest process)")
    ratio = min(s for s, _ in job) / min(s for s, _ in cli)
    print(f"10,000-attempt run: process_run job / process --publish = {ratio:.2f} (best of {repeat}; target <= 1.5)")


# --- backfill: many small runs ------------------------------------------------------------

def wait_for_backfill(env: dict, timeout: float) -> dict:
    """Poll the instance until its one backfill is done; its runs' timeline."""
    probe = (
        "import json, dagster as dg\n"
        "i = dg.DagsterInstance.get()\n"
        "b = i.get_backfills()\n"
        "runs = i.get_run_records(dg.RunsFilter(tags={'dagster/backfill': b[0].backfill_id})) if b else []\n"
        "print(json.dumps({'status': b[0].status.value if b else None, 'created': b[0].backfill_timestamp if b else None,\n"
        "  'runs': [[r.dagster_run.status.value, r.start_time, r.end_time] for r in runs]}))\n"
    )
    import json

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run([sys.executable, "-c", probe], env=env, cwd=ROOT, capture_output=True, text=True)
        state = json.loads(out.stdout.strip().splitlines()[-1])
        if state["status"] and state["status"].startswith(("COMPLETED", "FAILED", "CANCELED")):
            return state
        time.sleep(2)
    raise SystemExit("the backfill did not finish in time")


def measure_backfill(workdir: Path, runs: int) -> None:
    runs_root = generate(workdir, runs, 12, 3, 30)
    folders = sorted(p for p in runs_root.iterdir() if p.is_dir())
    warm(runs_root)
    env = base_env(workdir, "loop")
    started = time.perf_counter()
    for folder in folders:
        subprocess.run([*CLI, "process", str(folder), "--output-dir", str(workdir / "loop" / "out" / folder.name)],
                       cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    loop = time.perf_counter() - started
    print(f"{runs} runs: bench-pipeline process loop {loop:.1f}s", file=sys.stderr, flush=True)

    env = base_env(workdir, "backfill")
    env["BENCH_RUNS_ROOT"] = str(runs_root)
    add = ("import os, sys, dagster as dg\nfrom bench_pipeline.partitions import runs_partitions\n"
           "dg.DagsterInstance.get().add_dynamic_partitions(runs_partitions.name, sorted(sys.argv[1:]))")
    subprocess.run([sys.executable, "-c", add, *(f.name for f in folders)], env=env, cwd=ROOT, check=True)
    for sensor in ("run_folder_sensor", "catalog_sensor"):
        subprocess.run([str(BIN / "dagster"), "sensor", "stop", "-w", "workspace.yaml", sensor], env=env, cwd=ROOT,
                       check=True, capture_output=True)
    daemon = subprocess.Popen([str(BIN / "dagster-daemon"), "run", "-w", "workspace.yaml"], env=env, cwd=ROOT,
                              stdout=open(workdir / "daemon.log", "wb"), stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        subprocess.run(["bash", "scripts/backfill.sh"], env=env, cwd=ROOT, check=True, capture_output=True)
        state = wait_for_backfill(env, timeout=3600)
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        daemon.wait(timeout=60)
    done = [r for r in state["runs"] if r[1] is not None and r[2] is not None]
    first_start, last_end = min(r[1] for r in done), max(r[2] for r in done)
    backfill = last_end - first_start
    print(f"{runs} runs: backfill {state['status']}, {len(state['runs'])} Dagster run(s), "
          f"first run start to last run end {backfill:.1f}s "
          f"(the daemon's wait before its first run: {first_start - state['created']:.1f}s, not counted)")
    print(f"{runs} runs: backfill / process loop = {backfill / loop:.2f} (loop {loop:.1f}s; target <= 4)")
    refreshes = measure_refresh(env, rounds=3)
    median = statistics.median(refreshes)
    print(f"{runs} runs: cross-run refresh (run_catalog, suite_trends, system_repeats, suite_pages) "
          f"median {median:.1f}s (range {min(refreshes):.1f}-{max(refreshes):.1f}s, {len(refreshes)} rounds) = "
          f"{median / backfill:.1%} of the backfill (target <= 10%)")


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
    parser.add_argument("--repeat", type=int, default=2, help="rounds of the large-run measurement")
    parser.add_argument("--runs", type=int, default=40, help="small runs in the backfill measurement")
    parser.add_argument("--only", choices=("large", "backfill"), default=None)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-dagster-"))
    workdir.mkdir(parents=True, exist_ok=True)
    if args.only in (None, "large"):
        measure_large(workdir, args.repeat)
    if args.only in (None, "backfill"):
        measure_backfill(workdir, args.runs)


if __name__ == "__main__":
    main()
