"""How fast is `bench-pipeline process` compared with merely parsing the run's artifacts?

Generates two clean runs (200 and 2,000 tasks x 5 attempts, ~80 history messages per
attempt) and measures for each:

  a. the parse floor: read and orjson-parse every artifact file of the run, nothing else;
  b. the whole `bench-pipeline process RUN --output-dir OUT` command (a fresh process).

It prints the marginal ratio (b_large - b_small) / (a_large - a_small), which cancels
start-up costs, the small run's end-to-end time and both runs' peak memory. Figures are
ratios measured in one run on one machine; absolute seconds vary with the machine's load.

    .venv/bin/python benchmarks/engine_benchmark.py [--workdir DIR] [--repeat N] [--profile]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from compiled import compile_package

import orjson

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "bench_pipeline.cli"]


def parse_floor(run_dir: Path) -> tuple[float, float]:
    """Seconds to read and parse every JSON artifact file (and results.jsonl) of a run:
    wall clock and CPU time."""
    started, cpu = time.perf_counter(), time.process_time()
    for dirpath, _, filenames in os.walk(run_dir):
        for name in filenames:
            path = os.path.join(dirpath, name)
            if name.endswith(".json"):
                with open(path, "rb") as fh:
                    orjson.loads(fh.read())
            elif name == "results.jsonl":
                with open(path, "rb") as fh:
                    for line in fh.read().split(b"\n"):
                        if line.strip():
                            orjson.loads(line)
    return time.perf_counter() - started, time.process_time() - cpu


def process_command(run_dir: Path, out_dir: Path) -> tuple[float, int, float]:
    """Seconds, peak RSS (KiB) and CPU seconds (its worker processes included) of the whole
    CLI command in a fresh process."""
    shutil.rmtree(out_dir, ignore_errors=True)
    started = time.perf_counter()
    child = subprocess.Popen([*CLI, "process", str(run_dir), "--output-dir", str(out_dir)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    _, status, usage = os.wait4(child.pid, 0)  # this child's own peak, not the largest so far
    elapsed = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"bench-pipeline process failed on {run_dir} (exit {child.returncode})")
    return elapsed, usage.ru_maxrss, usage.ru_utime + usage.ru_stime  # reaped workers count in


METRICS_ONLY = (
    "import gc, os, sys; from pathlib import Path; gc.disable(); "
    "from bench_pipeline.bulk import default_workers; "
    "from bench_pipeline.pipeline import run_stages; from bench_pipeline.metrics_files import write_metrics_files; "
    "p = run_stages(sys.argv[1], workers=default_workers()).processed; "
    "write_metrics_files(Path(sys.argv[2]), p.metrics, p.attempts); "
    "os._exit(0)"  # like the command: no interpreter teardown
)


def metrics_only(run_dir: Path, out_dir: Path) -> float:
    """Seconds for the engine alone (metrics.json and attempts.jsonl, no reports), fresh process."""
    shutil.rmtree(out_dir, ignore_errors=True)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", METRICS_ONLY, str(run_dir), str(out_dir)], check=True, cwd=ROOT)
    return time.perf_counter() - started


def warm(run_dir: Path) -> None:
    """Read every file once so both measurements start from a warm page cache."""
    for dirpath, _, filenames in os.walk(run_dir):
        for name in filenames:
            with open(os.path.join(dirpath, name), "rb") as fh:
                fh.read()


def generate(root: Path, tasks: int) -> Path:
    from bench_pipeline.generator import generate_runs

    target = root / f"tasks-{tasks}"
    if target.exists():
        found = [p for p in target.iterdir() if p.is_dir()]
        if found:
            return found[0]
    print(f"generating {tasks} tasks x 5 attempts x ~80 messages ...", file=sys.stderr, flush=True)
    return generate_runs(target, runs=1, seed=2026, tasks=tasks, repeats=5, history_messages=80, edge_cases=False)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=None, help="keep generated runs here between invocations")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds (best and median of N are shown)")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of processing the large run")
    args = parser.parse_args()
    compile_package()

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    small, large = generate(workdir, 200), generate(workdir, 2000)
    runs = {"small": small, "large": large}
    for run in runs.values():
        warm(run)
    # Interleaved rounds, so that a drift in the machine's speed affects both runs alike.
    samples: dict[str, dict[str, list]] = {
        label: {"floor": [], "process": [], "peak": [], "engine": [], "floor_cpu": [], "process_cpu": []}
        for label in runs}
    for round_no in range(1, args.repeat + 1):
        for label, run in runs.items():
            got = samples[label]
            seconds, cpu = parse_floor(run)
            got["floor"].append(seconds)
            got["floor_cpu"].append(cpu)
            seconds, peak, cpu = process_command(run, workdir / f"out-{label}")
            got["process"].append(seconds)
            got["peak"].append(peak)
            got["process_cpu"].append(cpu)
            got["engine"].append(metrics_only(run, workdir / f"engine-{label}"))
        print(f"round {round_no}/{args.repeat} done", file=sys.stderr, flush=True)

    def summary(pick) -> dict[str, dict[str, float]]:
        return {label: {k: pick(v) for k, v in got.items() if k != "peak"} for label, got in samples.items()}

    for label, run in runs.items():
        best = summary(min)[label]
        attempts = sum(1 for _ in open(run / "results.jsonl", "rb"))
        print(f"{label}: {attempts} attempts, parse floor {best['floor']:.2f}s, process {best['process']:.2f}s "
              f"(engine without reports {best['engine']:.2f}s), peak RSS {max(samples[label]['peak']) / 1024:.0f} MiB")

    def ratio(figures: dict, key: str, floor: str = "floor") -> float:
        s, lg = figures["small"], figures["large"]
        return (lg[key] - s[key]) / (lg[floor] - s[floor])

    best, median = summary(min), summary(statistics.median)
    print(f"marginal ratio (b_large - b_small) / (a_large - a_small) = {ratio(best, 'process'):.2f} "
          f"(best of {args.repeat}; from medians {ratio(median, 'process'):.2f})")
    print(f"marginal ratio of the engine alone (no summary.md/report.html) = {ratio(best, 'engine'):.2f} "
          f"(from medians {ratio(median, 'engine'):.2f})")
    print(f"small run end to end: {best['small']['process']:.2f}s (median {median['small']['process']:.2f}s)")
    # The same marginal ratio in CPU time (every process of the command against the floor's
    # one): the work done, which load on the machine's other cores moves much less than the
    # wall clock. With two processes it is about twice the wall-clock ratio.
    print(f"marginal CPU-time ratio (all processes of the command / floor) = "
          f"{ratio(best, 'process_cpu', 'floor_cpu'):.2f} (from medians {ratio(median, 'process_cpu', 'floor_cpu'):.2f})")

    if args.profile:
        import cProfile
        import pstats

        from bench_pipeline.pipeline import run_stages

        profiler = cProfile.Profile()
        profiler.enable()
        run_stages(large, workdir / "out-profile")  # one process: workers are not profiled
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main()
