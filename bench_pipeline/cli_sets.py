"""The commands on sets of runs: ``repeats`` and the repeated form of ``compare``
(repeated-runs.md), each run processed into its own folder, then pooled by task. ``cli``
parses the arguments and calls these."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from .cli_common import (LEFT_FOR_EXIT, BadInputError, Progress, check_run_folders, gate_exit_code, gate_extras,
                         refused_input, say)
from .run_reader import NotARunFolderError


def process_set(run_dirs: list[str], out_root: Path, what: str, workers: int) -> list:
    """Each run folder through the stages into ``out_root/<folder name>`` (a name given twice
    gets ``-2``, ``-3``); every folder checked before any is processed. Raises
    NotARunFolderError for a folder that is not a run, BadInputError for the same folder or
    the same run id twice."""
    from .pipeline import run_stages

    folders = [Path(d) for d in run_dirs]
    check_run_folders(folders)
    names: dict[str, int] = {}
    results = []
    for i, folder in enumerate(folders, start=1):
        names[folder.name] = names.get(folder.name, 0) + 1
        name = folder.name if names[folder.name] == 1 else f"{folder.name}-{names[folder.name]}"
        say(f"{what} {i}/{len(folders)}: {folder}")
        results.append(run_stages(folder, out_root / name, workers=workers, progress=Progress(f"{name} attempts derived")))
    ids: dict[str, Path] = {}
    for folder, result in zip(folders, results):
        run_id = result.processed.raw.run_id
        if run_id in ids:
            raise BadInputError(f"{folder}: the same run twice (run id {run_id!r}, also in {ids[run_id]})")
        ids[run_id] = folder
    return results


def repeats_command(args: argparse.Namespace) -> int:
    """``repeats RUN_DIR...`` (``cli.cmd_repeats``, with ``args.targets`` read)."""
    from .bulk import default_workers
    from .comparison_sides import ComparisonInputError
    from .outputs import write_repeats_files
    from .repeats import repeat_run_of, repeats
    from .reports.format import fmt_pct
    from .reports.repeated import level_interval, system_text
    from .system_members import given

    started = time.monotonic()
    out = Path(args.output_dir)
    try:
        results = process_set(args.run_dirs, out / "runs", "run", args.workers or default_workers())
        runs = [repeat_run_of(r.processed) for r in results]
        doc = repeats(runs, args.targets)
        reports = {r.processed.raw.run_id: r.written["report.html"] for r in results}
        written = write_repeats_files(out, doc, runs, reports, notes=given(runs).notes())
    except (NotARunFolderError, ComparisonInputError, BadInputError, OSError) as exc:
        say(refused_input(exc))
        return 2
    fa, br, st = doc["pooled"]["first_attempt"], doc["between_runs"], doc["stability"]
    noise = f"{br['noise_floor95'] * 100:.1f} points" if br["noise_floor95"] is not None else "n/a (one run)"
    flips = fmt_pct(st["flip_rate"]) if st["flip_rate"] is not None else "n/a"
    say(f"repeats: {len(runs)} run(s) of {system_text(doc['system'])}: pooled first attempt {fmt_pct(fa['mean'])} "
         f"{level_interval('rate', fa['ci95']['lower'], fa['ci95']['upper'])}, noise floor {noise}, flip rate {flips} "
         f"({st['flaky']} flaky of {st['tasks_classified']} tasks)"
         + (f"; warnings: {', '.join(doc['warnings'])}" if doc["warnings"] else "")
         + f" ({time.monotonic() - started:.2f}s)")
    for result in results:
        for name, path in result.written.items():
            print(f"runs/{path.parent.name}/{name}: {path}")
    for name, path in written.items():
        print(f"{name}: {path}")
    LEFT_FOR_EXIT.extend(results)
    return 0


def compare_sets_command(args: argparse.Namespace) -> int:
    """``compare --baseline DIR... --candidate DIR...``: the repeated form (repeated-runs.md;
    ``cli.cmd_compare``, with ``args.targets`` and ``args.max_drop`` read)."""
    from .bulk import default_workers
    from .comparison_sides import ComparisonInputError
    from .outputs import write_set_comparison_files
    from .repeats import compare_sets, repeat_run_of
    from .reports.gate_words import gate_statement

    started = time.monotonic()
    out = Path(args.output_dir)
    max_drop = args.max_drop
    workers = args.workers or default_workers()
    try:
        check_run_folders([Path(d) for d in (*args.baseline, *args.candidate)])  # every one before any is processed
        b_results = process_set(args.baseline, out / "baseline", "baseline run", workers)
        c_results = process_set(args.candidate, out / "candidate", "candidate run", workers)
        baseline = [repeat_run_of(r.processed) for r in b_results]
        candidate = [repeat_run_of(r.processed) for r in c_results]
        both = {r.run_id for r in baseline} & {r.run_id for r in candidate}
        if both:
            raise BadInputError(f"run {sorted(both)[0]!r} is on both sides")
        result = compare_sets(baseline, candidate, max_drop, args.targets)
        single = compare_sets(baseline[:1], candidate[:1], max_drop, args.targets)
        written = write_set_comparison_files(out, result, single, baseline, candidate)
    except (NotARunFolderError, ComparisonInputError, BadInputError, OSError) as exc:
        say(refused_input(exc))
        return 2
    gate = result["gate"]
    say(f"gate {gate['result']}: {len(candidate)} candidate run(s) against {len(baseline)} baseline run(s), "
         f"{result['tasks']['paired']} paired task(s): {gate_statement(result, short=True).split(': ', 1)[1]}"
         + gate_extras(gate, result, started))
    for prefix, results in (("baseline", b_results), ("candidate", c_results)):
        for r in results:
            for name, path in r.written.items():
                print(f"{prefix}/{path.parent.name}/{name}: {path}")
    for name, path in written.items():
        print(f"{name}: {path}")
    LEFT_FOR_EXIT.extend([*b_results, *c_results])
    return gate_exit_code(gate)
