"""What does pooling repeated runs cost beyond processing them?

Generates N clean runs of one system (default 20 runs of 200 tasks x 5 attempts = 1,000
attempts each, ~30 history messages per attempt) and measures, side by side in each round:

  a. a loop of `bench-pipeline process RUN --output-dir OUT` over the N runs (N processes);
  b. one `bench-pipeline repeats RUN... --output-dir OUT` over the same runs (processes every
     run with the same stages, then pools them and writes repeats.json and repeats.md).

It prints each round's seconds and the ratio b / a, then the median of the rounds with their
range (never the best). The rounds alternate which command runs first, so a warm page cache
favours neither.

    .venv/bin/python benchmarks/repeats_benchmark.py [--runs 20] [--tasks 200] [--rounds 3] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from compiled import compile_package

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CLI = [sys.executable, "-m", "bench_pipeline.cli"]


def timed(args: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args[:4])} ... failed (exit {done.returncode}): {done.stderr[-500:]}")
    return time.perf_counter() - started


def loop_of_process(runs: list[Path], out: Path) -> float:
    shutil.rmtree(out, ignore_errors=True)
    return sum(timed([*CLI, "process", str(r), "--output-dir", str(out / r.name)]) for r in runs)


def repeats_command(runs: list[Path], out: Path) -> float:
    shutil.rmtree(out, ignore_errors=True)
    return timed([*CLI, "repeats", *map(str, runs), "--output-dir", str(out)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--attempts", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    compile_package()

    from bench_pipeline.generator import generate_runs

    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-repeats-"))
    runs_root = work / "runs"
    if not runs_root.exists():
        print(f"generating {args.runs} runs of {args.tasks} tasks x {args.attempts} attempts in {runs_root} ...",
              flush=True)
        generate_runs(runs_root, runs=args.runs, seed=11, tasks=args.tasks, repeats=args.attempts,
                      history_messages=30, edge_cases=False, systems=1)
    runs = sorted(p for p in runs_root.iterdir() if p.is_dir())
    loops, pooled, ratios = [], [], []
    for round_no in range(1, args.rounds + 1):
        order = [("loop", loop_of_process), ("repeats", repeats_command)]
        if round_no % 2 == 0:
            order.reverse()
        seconds = {name: fn(runs, work / f"out-{name}") for name, fn in order}
        loops.append(seconds["loop"])
        pooled.append(seconds["repeats"])
        ratios.append(seconds["repeats"] / seconds["loop"])
        print(f"round {round_no}: loop of process {seconds['loop']:.2f} s, repeats {seconds['repeats']:.2f} s, "
              f"ratio {ratios[-1]:.3f}", flush=True)

    def summary(values: list[float], unit: str) -> str:
        return f"median {statistics.median(values):.3f}{unit} (range {min(values):.3f}-{max(values):.3f})"

    print(f"{len(runs)} runs, {args.rounds} rounds")
    print(f"loop of process: {summary(loops, ' s')}")
    print(f"repeats:         {summary(pooled, ' s')}")
    print(f"ratio repeats / loop: {summary(ratios, '')}")


if __name__ == "__main__":
    main()
