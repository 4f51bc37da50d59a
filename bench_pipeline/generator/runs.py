"""Writing runs: `generate_runs` draws the suite and each run in turn from the master
generator, and `write_run` writes one run folder from its own seed, in the flat or the
runner's layout (`runner_rows`, `runner_run`). `seeded_start` is where the `generate`
command starts a seed's first run."""

from __future__ import annotations

import collections
import random
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Callable

import orjson

from .attempts import build_attempt
from .draws import build_suite, draw_run
from .edge_cases import RUN_EDGE_PERIODS, add_line_edges, add_row_lines, draw_row_edges
from .files import LAYOUTS, build_manifest, write_files
from .records import RunDraw, Task
from .runner_rows import RUNNER_ROOTS, RunnerRows, is_rejudged, runner_folder
from .runner_run import write_runner_run
from .world import BASE_TIME, MODELS, SKILLS, SUITE_NAME, SUITE_VERSION


def generate_runs(out_root: Path, runs: int, seed: int, tasks: int = 12, repeats: int = 3,
                  history_messages: int = 30, edge_cases: bool = True,
                  progress: Callable[[str], None] | None = None, id_prefix: str = "",
                  systems: int | None = None, layout: str = "flat", start: datetime | None = None) -> list[Path]:
    """Write `runs` synthetic run folders under `out_root`; return them in order.

    The first run starts at ``start`` (UTC; default `BASE_TIME`, 2026-11-28T10:00:00Z, where
    the sample runs start; the `generate` command passes `seeded_start(seed)`), each next one
    90 to 269 minutes (drawn) after the one before; a run's id is ``id_prefix``, its start and
    six drawn hex digits.

    ``layout``: "flat" (run-directory.md's flat layout) or "runner" (the benchmark runner's
    own, "The runner's layout"); a run in either carries the same data, so the pipeline
    gives it the same numbers.

    With ``systems`` = N, run i is a repeat of system i % N: one model and one clean git
    sha per system (repeated-runs.md "Systems") and active skills per system, drawn from a
    generator of their own, so the rest of every run is what it would be without. Every run,
    with or without systems, is measured with one setup (the lab's device, the judge on:
    ``draws.draw_run``), so each run's default baseline is an earlier generated run. The same arguments always produce
    byte-identical folders. A run folder that already exists is an error
    (FileExistsError), never overwritten.
    """
    if runs < 0 or tasks < 1 or repeats < 1 or history_messages < 4 or (systems is not None and systems < 1):
        raise ValueError("need runs >= 0, tasks >= 1, repeats >= 1, history_messages >= 4, systems >= 1")
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    drawn = random.Random(f"systems-{seed}")
    builds = [(MODELS[i % len(MODELS)], f"{drawn.getrandbits(28):07x}") for i in range(systems or 0)]
    # each system's active skills, drawn after every git sha (which stay what they were); every
    # run has the lab's device and judge (draws.draw_run): one setup key for all
    skills = [sorted(drawn.sample(SKILLS, 2 + drawn.randrange(len(SKILLS) - 1))) for _ in builds]
    out_root = Path(out_root)
    master = random.Random(seed)
    offsets = {name: master.randrange(period) for name, period in RUN_EDGE_PERIODS.items()}
    suite = build_suite(master, tasks)
    started = BASE_TIME if start is None else start
    created = []
    for index in range(runs):
        run = draw_run(master, index, runs, started, offsets, edge_cases, id_prefix)
        if builds:
            model, sha = builds[index % len(builds)]
            run = replace(run, model=model, git_sha=sha, active_skills=skills[index % len(builds)])
        run_dir = out_root / run.run_id
        write_run(run_dir, run, suite, repeats, history_messages, edge_cases, progress, layout)
        created.append(run_dir)
        started += timedelta(minutes=90 + master.randrange(180))
    return created


#: `seeded_start` puts a seed's first run this many days apart at most (seed mod this).
START_DAYS = 365


def seeded_start(seed: int) -> datetime:
    """Where the `generate` command starts the first run of ``seed``: ``1 + seed % 365`` days
    after `BASE_TIME` (2026-11-28T10:00:00Z, where the sample runs start), at 10:00 UTC (seed
    0: 2026-11-29T10:00:00Z, seed 1: 2026-11-30T10:00:00Z). Generated runs then start after
    every sample run (the samples start and end on 2026-11-28), so, written beside them, the
    first is compared with the latest sample instead of tying with the first ones; runs
    generated with different seeds do not share a start (seeds 365 apart do). It draws
    nothing: the runs themselves are those of the seed."""
    return BASE_TIME + timedelta(days=1 + seed % START_DAYS)


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
    line_edges: collections.Counter = collections.Counter()
    for number, (task, attempt) in enumerate(planned[:limit], start=1):
        edges = draw_row_edges(rng) if edge_cases else frozenset()
        line_edges.update({"missing_row"} if "missing_row" in edges else edges & LINE_EDGES.keys())
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
    line_edges.update(run.edges & LINE_EDGES.keys())
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
        rejudged = runner is not None and is_rejudged(run.index, run.status)
        progress(written_line(run, limit, len(planned), len(lines), line_edges, rejudged))


#: The edge cases that change how many lines results.jsonl has, as `written_line` names them
#: (singular, plural): per attempt (`ROW_EDGE_RATES`; an attempt without a line has no copies
#: either) or once per run (`RUN_EDGE_PERIODS`).
LINE_EDGES = {
    "missing_row": ("attempt without a line", "attempts without a line"),
    "missing_task_id": ("extra copy without task_id", "extra copies without task_id"),
    "duplicate_row": ("later duplicate", "later duplicates"),
    "non_json_line": ("non-JSON line", "non-JSON lines"),
    "blank_line": ("blank line", "blank lines"),
}


def written_line(run: RunDraw, done: int, planned: int, lines: int, line_edges: collections.Counter,
                 rejudged: bool) -> str:
    """What `write_run` says it wrote: the run's status, its attempts against the plan, and
    results.jsonl's lines, with the edge cases that make them differ from the attempts."""
    files = "results.rejudged.jsonl and in results.jsonl (an earlier judgement)" if rejudged else "results.jsonl"
    text = f"{run.run_id}: {run.status}, {done} of {planned} planned attempts run, {lines} lines in {files}"
    found = [f"{n} {names[n != 1]}" for key, names in LINE_EDGES.items() if (n := line_edges[key])]
    return text + (f"; edge cases: {', '.join(found)}" if found else "")
