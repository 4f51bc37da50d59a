"""The catalog refresh after one new run, at two sizes of catalog: does it grow with what changed?

For each size N (200 and 2,000 by default): N small runs (12 tasks x 3 attempts, one suite,
the generator's systems) processed through the Dagster path (``python -m bench_pipeline.main``,
which ends with a refresh), then, per round, one more run arrives: its per-run stages are
materialized on the same instance, and the ``refresh_catalog`` job (what the catalog sensor
requests) is timed in a fresh process, incremental as it runs for users, then once more from
scratch (run tag ``bench/refresh=from_scratch``) on the same state, side by side. The sizes'
rounds are interleaved (round 1 of each size, then round 2, ...), so that whatever else the
machine does falls on every size alike. Times are the job's own (start-up and the definitions'
import excluded) and, for the incremental refresh, its steps' own (the assets' work, without
the Dagster run around them), median of the rounds with the range.

With ``--workdir`` a catalog prepared by an earlier invocation is measured again; once the
runs held back for the rounds are used, each round generates one more run of the suite,
started after every run of the catalog.

Usage:
    .venv/bin/python benchmarks/refresh_benchmark.py [--sizes 200 2000] [--rounds 3] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
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

REFRESH = (
    "import json, sys, time, dagster as dg\n"
    "from bench_pipeline.definitions import defs\n"
    "job = defs.resolve_job_def('refresh_catalog')\n"
    "tags = {'bench/refresh': 'from_scratch'} if sys.argv[1] == 'scratch' else {}\n"
    "instance = dg.DagsterInstance.get()\n"
    "started = time.perf_counter()\n"
    "result = job.execute_in_process(instance=instance, tags=tags)\n"
    "elapsed = time.perf_counter() - started\n"
    "assert result.success\n"
    "steps = sum(e.event_specific_data.duration_ms for e in result.all_events\n"
    "            if e.event_type_value == 'STEP_SUCCESS') / 1000\n"
    "print(json.dumps({'job': elapsed, 'steps': steps}))\n"
)

ONE_RUN = (
    "import sys, dagster as dg\n"
    "from bench_pipeline.assets import per_run_assets\n"
    "from bench_pipeline.partitions import runs_partitions\n"
    "from bench_pipeline.definitions import build_resources\n"
    "instance = dg.DagsterInstance.get()\n"
    "instance.add_dynamic_partitions(runs_partitions.name, [sys.argv[1]])\n"
    "assert dg.materialize(per_run_assets, partition_key=sys.argv[1], instance=instance,\n"
    "                      resources=build_resources()).success\n"
)


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s ({min(values):.2f}-{max(values):.2f})"


def environment(workdir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGFUSE_", "BENCH_", "DAGSTER_"))}
    home = workdir / "dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "deploy" / "dagster.local.yaml", home / "dagster.yaml")
    env.update({"DAGSTER_HOME": str(home), "BENCH_HOME": str(workdir / "data")})
    return env


def python(code: str, env: dict, *args: str) -> str:
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"failed:\n{out.stderr[-3000:]}")
    return out.stdout


def prepare(workdir: Path, size: int, extra: int) -> tuple[dict, list[Path]]:
    """``size`` runs processed on a new instance; ``extra`` more generated, not yet in the runs root."""
    from bench_pipeline.generator import generate_runs

    env = environment(workdir)
    runs = Path(env["BENCH_HOME"]) / "runs"
    held = workdir / "held"
    if not (workdir / "prepared").exists():
        print(f"generating and processing {size} runs (once per workdir) ...", file=sys.stderr, flush=True)
        generated = generate_runs(workdir / "generated", runs=size + extra, seed=2026, tasks=12, repeats=3,
                                  history_messages=30, edge_cases=False)
        runs.mkdir(parents=True, exist_ok=True)
        held.mkdir(exist_ok=True)
        for i, folder in enumerate(sorted(generated)):
            shutil.move(str(folder), str((runs if i < size else held) / folder.name))
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "bench_pipeline.main"], env=env, cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL, stderr=open(workdir / "main.log", "wb"))
        print(f"  processed in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
        (workdir / "prepared").touch()
    return env, sorted(held.iterdir())


def new_run(runs: Path, round_no: int) -> Path:
    """A run like the catalog's (12 tasks x 3 attempts, its suite), started after all of them
    (a start of its own per invocation and round), written into the runs root."""
    from datetime import datetime, timedelta, timezone

    from bench_pipeline.generator import generate_runs

    start = datetime(2100, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=int(time.time()) % 10**8, hours=round_no)
    (folder,) = generate_runs(runs, runs=1, seed=7000 + round_no, tasks=12, repeats=3, history_messages=30,
                              edge_cases=False, id_prefix="round-", start=start)
    return folder


def refresh(env: dict, mode: str) -> dict[str, float]:
    """One refresh_catalog run: the job's time and its steps' own (the work of the assets,
    without Dagster's run around them: the run's creation and its events). What earlier work
    wrote is flushed to disk first (``os.sync``), so that the kernel's writeback of it (a
    refresh from scratch at 2,000 runs writes thousands of files) does not fall inside the
    refresh measured."""
    os.sync()
    return json.loads(python(REFRESH, env, mode).splitlines()[-1])


KINDS = ("incremental", "incremental steps", "from scratch")


def one_round(workdir: Path, env: dict, held: list[Path], size: int, round_no: int,
              times: dict[str, list[float]]) -> None:
    """One more run arrives in the catalog at ``workdir``; the refresh timed incremental, then
    from scratch."""
    runs = Path(env["BENCH_HOME"]) / "runs"
    if held:  # the runs generated with the catalog, held back for the rounds
        folder = held.pop(0)
        shutil.move(str(folder), str(runs / folder.name))
    else:  # a catalog measured before: one more run, started after every run of it
        folder = new_run(runs, round_no)
    python(ONE_RUN, env, folder.name)
    incremental = refresh(env, "incremental")
    times["incremental"].append(incremental["job"])
    times["incremental steps"].append(incremental["steps"])
    times["from scratch"].append(refresh(env, "scratch")["job"])
    print(f"{size} runs, round {round_no}: incremental {incremental['job']:.2f} s (steps {incremental['steps']:.2f} s), "
          f"from scratch {times['from scratch'][-1]:.2f} s, load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)


def measure(base: Path, sizes: list[int], rounds: int) -> dict[int, dict[str, list[float]]]:
    """Every size's rounds, interleaved (round 1 of each size, then round 2, ...), so that
    whatever else the machine does falls on every size alike."""
    prepared = {size: prepare(base / f"n{size}", size, rounds) for size in sizes}
    times = {size: {kind: [] for kind in KINDS} for size in sizes}
    for env, _ in prepared.values():
        refresh(env, "incremental")  # the state as the last refresh left it
    for round_no in range(1, rounds + 1):
        for size, (env, held) in prepared.items():
            one_round(base / f"n{size}", env, held, size, round_no, times[size])
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 2000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=None, help="keep processed catalogs here between invocations")
    args = parser.parse_args()
    compile_package()
    base = args.workdir or Path(tempfile.mkdtemp(prefix="refresh-bench-"))
    results = measure(base, args.sizes, args.rounds)
    for size, times in results.items():
        ratio = statistics.median(times["incremental"]) / statistics.median(times["from scratch"])
        print(f"{size} runs + 1 new: refresh incremental {spread(times['incremental'])} (its steps "
              f"{spread(times['incremental steps'])}), from scratch {spread(times['from scratch'])}, "
              f"ratio of the medians {ratio:.2f}")


if __name__ == "__main__":
    main()
