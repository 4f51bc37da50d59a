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
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "bench_pipeline.cli"]


def parse_floor(run_dir: Path) -> float:
    """Seconds to read and parse every JSON artifact file (and results.jsonl) of a run."""
    started = time.perf_counter()
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
    return time.perf_counter() - started


def process_command(run_dir: Path, out_dir: Path) -> tuple[float, int]:
    """Seconds and peak RSS (KiB) of the whole CLI command in a fresh process."""
    shutil.rmtree(out_dir, ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    subprocess.run([*CLI, "process", str(run_dir), "--output-dir", str(out_dir)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    elapsed = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return elapsed, max(peak, before)


METRICS_ONLY = (
    "import sys; from pathlib import Path; "
    "from bench_pipeline.bulk import default_workers; "
    "from bench_pipeline.process import process_run, write_metrics_files; "
    "p = process_run(sys.argv[1], workers=default_workers()); "
    "write_metrics_files(Path(sys.argv[2]), p.metrics, p.attempts)"
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
    from bench_pipeline.generate import generate_runs

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
    parser.add_argument("--repeat", type=int, default=3, help="best of N for each measurement")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of processing the large run")
    args = parser.parse_args()

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    small, large = generate(workdir, 200), generate(workdir, 2000)
    results = {}
    for label, run in (("small", small), ("large", large)):
        warm(run)
        floor = min(parse_floor(run) for _ in range(args.repeat))
        timings = [process_command(run, workdir / f"out-{label}") for _ in range(args.repeat)]
        engine = min(metrics_only(run, workdir / f"engine-{label}") for _ in range(args.repeat))
        results[label] = {"floor": floor, "process": min(t for t, _ in timings), "peak_kib": max(p for _, p in timings),
                          "engine": engine}
        attempts = sum(1 for _ in open(run / "results.jsonl", "rb"))
        print(f"{label}: {attempts} attempts, parse floor {floor:.2f}s, process {results[label]['process']:.2f}s "
              f"(engine without reports {engine:.2f}s), peak RSS {results[label]['peak_kib'] / 1024:.0f} MiB", flush=True)

    s, lg = results["small"], results["large"]
    ratio = (lg["process"] - s["process"]) / (lg["floor"] - s["floor"])
    print(f"marginal ratio (b_large - b_small) / (a_large - a_small) = {ratio:.2f}")
    engine_ratio = (lg["engine"] - s["engine"]) / (lg["floor"] - s["floor"])
    print(f"marginal ratio of the engine alone (no summary.md/report.html) = {engine_ratio:.2f}")
    print(f"small run end to end: {s['process']:.2f}s")

    if args.profile:
        import cProfile
        import pstats

        from bench_pipeline.outputs import write_run_outputs
        from bench_pipeline.process import process_run

        profiler = cProfile.Profile()
        profiler.enable()
        write_run_outputs(workdir / "out-profile", process_run(large))
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main()
