"""Does reading the runner's layout cost what the flat layout does?

Generates one clean run of 2,000 tasks x 5 attempts x ~80 history messages (10,000 attempts)
twice from the same seed, in the flat layout and in the benchmark runner's (run-directory.md
"The runner's layout": outcome fields inside `metrics`, absolute `artifact_dir`,
`attempt_<n>` folders, the runner's manifest, suite and trace.json), and measures, in
interleaved rounds, for each:

  a. the whole `bench-pipeline process RUN --output-dir OUT` command (a fresh process);
  b. the engine alone (metrics.json and attempts.jsonl, no reports; a fresh process).

It prints each figure's median with its range over the rounds, and the runner/flat ratio
of the medians and of each round. The target is a ratio within 1.05. Figures are ratios
measured side by side in one run on one machine; absolute seconds vary with its load.

    .venv/bin/python benchmarks/layout_benchmark.py [--workdir DIR] [--rounds N] [--tasks T]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from compiled import compile_package

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine_benchmark import metrics_only, process_command, warm  # noqa: E402

LAYOUTS = ("flat", "runner")


def generate(root: Path, layout: str, tasks: int) -> Path:
    """The run in ``layout`` (kept in ``root`` between invocations)."""
    from bench_pipeline.generator import generate_runs

    target = root / f"{layout}-{tasks}"
    if target.exists():
        found = [p for p in target.iterdir() if p.is_dir()]
        if found:
            return found[0]
    print(f"generating {tasks} tasks x 5 attempts x ~80 messages in the {layout} layout ...", file=sys.stderr,
          flush=True)
    return generate_runs(target, runs=1, seed=2026, tasks=tasks, repeats=5, history_messages=80,
                         edge_cases=False, layout=layout)[0]


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}s (range {min(values):.2f}-{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=None, help="keep the generated runs here between invocations")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (at least 3; medians are shown)")
    parser.add_argument("--tasks", type=int, default=2000, help="tasks of the run (x 5 attempts)")
    args = parser.parse_args()
    compile_package()
    if args.rounds < 3:
        parser.error("--rounds: at least 3")

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-layouts-"))
    workdir.mkdir(parents=True, exist_ok=True)
    runs = {layout: generate(workdir, layout, args.tasks) for layout in LAYOUTS}
    for run in runs.values():
        warm(run)
    samples = {layout: {"process": [], "engine": []} for layout in LAYOUTS}
    for round_no in range(1, args.rounds + 1):
        # alternate which layout goes first, so that a drift in the machine's speed within a
        # round does not favour one of them
        order = LAYOUTS if round_no % 2 else LAYOUTS[::-1]
        for layout in order:
            seconds, _peak, _cpu = process_command(runs[layout], workdir / f"out-{layout}")
            samples[layout]["process"].append(seconds)
            samples[layout]["engine"].append(metrics_only(runs[layout], workdir / f"engine-{layout}"))
        print(f"round {round_no}/{args.rounds} done", file=sys.stderr, flush=True)

    attempts = sum(1 for _ in open(runs["flat"] / "results.jsonl", "rb"))
    print(f"{attempts} attempts per run, {args.rounds} interleaved rounds")
    for key, label in (("process", "whole command"), ("engine", "engine alone")):
        flat, runner = samples["flat"][key], samples["runner"][key]
        per_round = [r / f for r, f in zip(runner, flat)]
        print(f"{label}: flat {spread(flat)}, runner {spread(runner)}; runner/flat = "
              f"{statistics.median(runner) / statistics.median(flat):.3f} from the medians "
              f"(per round: median {statistics.median(per_round):.3f}, range {min(per_round):.3f}-{max(per_round):.3f})")


if __name__ == "__main__":
    main()
