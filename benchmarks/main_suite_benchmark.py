"""How long does `python -m bench_pipeline.main` take over N small runs of one suite, each the
next one's baseline, and how does another checkout of the code compare on the same runs?

The main command runs its Dagster runs one at a time (up to BENCH_PARTITIONS_PER_RUN runs
each), so within one Dagster run a suite's runs share the cores: this is where processing a
run beside its baseline (and waiting only before its comparison) can gain. Each round, for
each tree (this one, and ``--other DIR`` when given), in alternating order: a fresh instance
and output folder over the same generated runs, the command timed from start to exit. The
median of the rounds with their range, never the best.

    .venv/bin/python benchmarks/main_suite_benchmark.py [--runs 200] [--repeat 3] [--other DIR]
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

ROOT = Path(__file__).resolve().parents[1]


def timed(tree: Path, runs: Path, work: Path) -> float:
    """One main command over ``runs`` with the package of ``tree``, on a fresh instance."""
    shutil.rmtree(work, ignore_errors=True)
    (work / "home").mkdir(parents=True)
    shutil.copy(ROOT / "deploy" / "dagster.local.yaml", work / "home" / "dagster.yaml")
    shutil.copytree(runs, work / "data" / "runs")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCH_", "DAGSTER_", "LANGFUSE_"))}
    env.update({"DAGSTER_HOME": str(work / "home"), "BENCH_HOME": str(work / "data"), "PYTHONPATH": str(tree),
                "BENCH_QUIET_SECONDS": "0"})
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "bench_pipeline.main", "--no-samples"], cwd=tree, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} s ({min(values):.1f}-{max(values):.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--other", type=Path, default=None, help="another checkout to time on the same runs")
    args = parser.parse_args()
    compile_package()
    from bench_pipeline.generator import generate_runs

    base = Path(tempfile.mkdtemp(prefix="bench-main-suite-"))
    runs = base / "runs"
    generate_runs(runs, runs=args.runs, seed=2026, tasks=12, repeats=3, history_messages=30, edge_cases=False,
                  systems=1)
    trees = {"this tree": ROOT, **({"other": args.other.resolve()} if args.other else {})}
    times: dict[str, list[float]] = {name: [] for name in trees}
    try:
        for round_no in range(1, args.repeat + 1):
            order = list(trees.items()) if round_no % 2 else list(reversed(trees.items()))
            for name, tree in order:
                times[name].append(timed(tree, runs, base / "work"))
            print(f"round {round_no}: " + ", ".join(f"{n} {times[n][-1]:.1f} s" for n in trees)
                  + f", load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    for name, tree in trees.items():
        print(f"{args.runs} runs of one suite, python -m bench_pipeline.main ({name}, {tree}): {spread(times[name])}")
    if args.other:
        ratio = statistics.median(times["this tree"]) / statistics.median(times["other"])
        print(f"this tree / other = {ratio:.2f} (ratio of the medians)")


if __name__ == "__main__":
    main()
