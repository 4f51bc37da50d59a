"""Writing runs: `generate_runs` draws the suite and each run in turn from the master
generator, and `write_run` writes one run folder from its own seed, in the flat or the
runner's layout (`runner_rows`, `runner_run`)."""

from __future__ import annotations

import collections
import random
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Callable

import orjson

from .attempts import build_attempt
from .draws import build_suite, draw_run
from .edge_cases import RUN_EDGE_PERIODS, add_line_edges, add_row_lines, draw_row_edges
from .files import LAYOUTS, build_manifest, write_files
from .records import RunDraw, Task
from .runner_rows import RUNNER_ROOTS, RunnerRows, runner_folder
from .runner_run import write_runner_run
from .world import BASE_TIME, MODELS, SUITE_NAME, SUITE_VERSION


def generate_runs(out_root: Path, runs: int, seed: int, tasks: int = 12, repeats: int = 3,
                  history_messages: int = 30, edge_cases: bool = True,
                  progress: Callable[[str], None] | None = None, id_prefix: str = "",
                  systems: int | None = None, layout: str = "flat") -> list[Path]:
    """Write `runs` synthetic run folders under `out_root`; return them in order.

    ``layout``: "flat" (run-directory.md's flat layout) or "runner" (the benchmark runner's
    own, "The runner's layout"); a run in either carries the same data, so the pipeline
    gives it the same numbers.

    With ``systems`` = N, run i is a repeat of system i % N: one model and one clean git
    sha per system (repeated-runs.md "Systems"), drawn from a generator of their own, so the
    rest of every run is what it would be without. The same arguments always produce
    byte-identical folders. A run folder that already exists is an error
    (FileExistsError), never overwritten.
    """
    if runs < 0 or tasks < 1 or repeats < 1 or history_messages < 4 or (systems is not None and systems < 1):
        raise ValueError("need runs >= 0, tasks >= 1, repeats >= 1, history_messages >= 4, systems >= 1")
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    drawn = random.Random(f"systems-{seed}")
    builds = [(MODELS[i % len(MODELS)], f"{drawn.getrandbits(28):07x}") for i in range(systems or 0)]
    out_root = Path(out_root)
    master = random.Random(seed)
    offsets = {name: master.randrange(period) for name, period in RUN_EDGE_PERIODS.items()}
    suite = build_suite(master, tasks)
    started = BASE_TIME
    created = []
    for index in range(runs):
        run = draw_run(master, index, runs, started, offsets, edge_cases, id_prefix)
        if builds:
            model, sha = builds[index % len(builds)]
            run = replace(run, model=model, git_sha=sha)
        run_dir = out_root / run.run_id
        write_run(run_dir, run, suite, repeats, history_messages, edge_cases, progress, layout)
        created.append(run_dir)
        started += timedelta(minutes=90 + master.randrange(180))
    return created


def write_run(run_dir: Path, run: RunDraw, suite: list[Task], repeats: int, history_messages: int,
              edge_cases: bool, progress: Callable[[str], None] | None, layout: str = "flat") -> None:
    """Write one run folder. Flat: manifest.json goes last (atomically), so a watcher never
    sees a half-written run. Runner: its own files in its order (`runner_run.write_runner_run`)."""
    run_dir.mkdir(parents=True, exist_ok=False)
    rng = random.Random(run.seed)
    planned = [(task, attempt) for task in suite for attempt in range(1, repeats + 1)]
    limit = len(planned)
    if run.status != "completed":
        limit = int(len(planned) * rng.uniform(0.3, 0.8))
    runner = None
    if layout == "runner":
        runner = RunnerRows(run.run_id, repeats, RUNNER_ROOTS[run.index % len(RUNNER_ROOTS)])
    lines: list[bytes] = []
    later: list[bytes] = []
    statuses: collections.Counter = collections.Counter()
    clock = run.started
    made_dirs: set[str] = set()
    for number, (task, attempt) in enumerate(planned[:limit], start=1):
        edges = draw_row_edges(rng) if edge_cases else frozenset()
        out = build_attempt(rng, run, task, attempt, clock, history_messages, edges, layout)
        clock = out.finished
        statuses[out.row["status"]] += 1
        if runner is None:
            write_files(run_dir, out.folder, out.files, made_dirs)
            add_row_lines(out.row, edges, lines, later)
        else:
            write_files(run_dir, runner_folder(task.id, attempt, repeats), out.files, made_dirs)
            add_row_lines(out.row, edges, lines, later, lambda row, task=task: runner.line(row, task))
        if progress is not None and number % 1000 == 0:
            progress(f"{run.run_id}: {number}/{len(planned)} attempts")
    lines.extend(later)
    add_line_edges(rng, run.edges, lines)
    if runner is not None:
        write_runner_run(run_dir, run, suite, repeats, clock, lines, statuses, runner.root)
    else:
        (run_dir / "results.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
        suite_doc = {"name": SUITE_NAME, "version": SUITE_VERSION, "tasks": [t.suite_entry() for t in suite]}
        (run_dir / "suite.json").write_bytes(orjson.dumps(suite_doc, option=orjson.OPT_INDENT_2))
        manifest = build_manifest(run, suite, repeats, clock)
        tmp = run_dir / "manifest.json.tmp"
        tmp.write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
        tmp.replace(run_dir / "manifest.json")
    if progress is not None:
        progress(f"{run.run_id}: {run.status}, {limit}/{len(planned)} attempts")
