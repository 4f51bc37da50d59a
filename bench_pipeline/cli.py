"""The `bench-pipeline` command line: process one run folder, compare two (or two sets of runs),
pool repeated runs, generate sample runs, or launch a backfill of every run through Dagster."""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

from .bulk import exit_now
from .cli_common import LEFT_FOR_EXIT, Progress, check_run_folders, gate_exit_code, gate_extras, refused_input, say
from .run_reader import NotARunFolderError


def cmd_process(args: argparse.Namespace) -> int:
    """Process RUN_DIR into OUTPUT_DIR: metrics.json, attempts.jsonl, summary.md, report.html."""
    from .bulk import gc_paused

    with gc_paused():  # one pause for the whole command: see bulk.py
        return _process(args)


def _process(args: argparse.Namespace) -> int:
    from .bulk import default_workers
    from .pipeline import run_stages
    from .data_quality import data_quality_findings

    started = time.monotonic()
    out_dir = Path(args.output_dir)
    try:
        result = run_stages(
            Path(args.run_dir), out_dir,
            workers=args.workers or default_workers(),
            progress=Progress("attempts derived"),
            keep_evidence=args.publish,  # the Langfuse trace output shows each attempt's evidence
        )
    except (NotARunFolderError, OSError) as exc:  # OSError: an output folder that cannot be made
        say(refused_input(exc))
        return 2
    processed, written = result.processed, result.written
    findings = data_quality_findings(processed.metrics)
    say(
        f"{processed.raw.run_id}: {len(processed.attempts)} attempts, {len(processed.tasks)} tasks, "
        f"{findings} data-quality finding(s), {time.monotonic() - started:.2f}s"
    )
    for name, path in written.items():
        print(f"{name}: {path}")
    if args.publish:
        from .publication.cli import publish_processed

        code = publish_processed(processed, out_dir)
        LEFT_FOR_EXIT.append(processed)
        return code
    LEFT_FOR_EXIT.append(processed)  # freed by the process's end, not object by object
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Process BASELINE_RUN_DIR and CANDIDATE_RUN_DIR and compare them (comparison.md of the
    specification): exit 0 when the release gate passes, 1 when it fails, 3 when it is
    inconclusive (the data cannot decide), 2 for bad input."""
    from .bulk import gc_paused

    repeated = bool(args.baseline or args.candidate)
    positional = args.baseline_run_dir is not None or args.candidate_run_dir is not None
    if repeated and positional:
        say("error: give either BASELINE_RUN_DIR CANDIDATE_RUN_DIR or --baseline/--candidate, not both")
        return 2
    if repeated and not (args.baseline and args.candidate):
        say("error: the repeated form needs at least one --baseline and one --candidate")
        return 2
    if not repeated and (args.baseline_run_dir is None or args.candidate_run_dir is None):
        say("error: compare needs BASELINE_RUN_DIR and CANDIDATE_RUN_DIR (or --baseline/--candidate)")
        return 2
    if not (_read_detect(args) and _read_max_drop(args)):
        return 2
    with gc_paused():  # one pause for the whole command: see bulk.py
        if repeated:
            from .cli_sets import compare_sets_command

            return compare_sets_command(args)
        return _compare(args)


def _compare(args: argparse.Namespace) -> int:
    from .bulk import default_workers
    from .comparison import Comparison
    from .comparison_sides import ComparisonInputError, side_from_output, side_from_processed
    from .outputs import write_comparison_files
    from .pipeline import run_stages
    from .reports.gate_words import gate_statement

    started = time.monotonic()
    out = Path(args.output_dir)
    baseline_run, candidate_run = Path(args.baseline_run_dir), Path(args.candidate_run_dir)
    max_drop = args.max_drop
    workers = args.workers or default_workers()
    try:
        check_run_folders([baseline_run, candidate_run], distinct=False)  # both before either is processed
        baseline = run_stages(baseline_run, out / "baseline", workers=workers, progress=Progress("baseline attempts derived"))
        candidate = run_stages(candidate_run, out / "candidate", workers=workers,
                               progress=Progress("candidate attempts derived"),
                               baseline=side_from_output(out / "baseline"), max_drop=max_drop,
                               baseline_run_dir=baseline_run, targets=args.targets)
        # OUT's copies: the same comparison.json, comparison.md with its links made from OUT
        comparison = Comparison(candidate.comparison, side_from_output(out / "baseline", baseline_run),
                                side_from_processed(candidate.processed))
        written = write_comparison_files(out, comparison)
    except (NotARunFolderError, ComparisonInputError, OSError) as exc:
        say(refused_input(exc))
        return 2
    result = candidate.comparison
    gate = result["gate"]
    say(
        f"gate {gate['result']}: {candidate.processed.raw.run_id} against {baseline.processed.raw.run_id}, "
        f"{result['tasks']['paired']} paired task(s): {gate_statement(result, short=True).split(': ', 1)[1]}"
        + gate_extras(gate, result, started)
    )
    for prefix, files in (("baseline/", baseline.written), ("candidate/", candidate.written), ("", written)):
        for name, path in files.items():
            print(f"{prefix}{name}: {path}")
    LEFT_FOR_EXIT.extend([baseline, candidate])  # freed by the process's end, not object by object
    return gate_exit_code(gate)


def cmd_repeats(args: argparse.Namespace) -> int:
    """Process RUN_DIR... and pool them by task (repeated-runs.md): OUT/repeats.json and
    OUT/repeats.md, each run's files under OUT/runs/. Exit 0, or 2 for bad input."""
    from .bulk import gc_paused
    from .cli_sets import repeats_command

    if not _read_detect(args):
        return 2
    with gc_paused():
        return repeats_command(args)


def cmd_generate(args: argparse.Namespace) -> int:
    """Write synthetic run folders under OUT_ROOT."""
    from .generator import generate_runs, seeded_start
    from .generator.files import iso

    start = seeded_start(args.seed)
    if args.no_edge_cases:
        say("edge cases off (--no-edge-cases): clean runs, one valid line in results.jsonl per attempt run")
    else:
        say("edge cases on (the default): as in real runs, some attempts have no line in results.jsonl, a copy "
             "without task_id or a later duplicate, some runs a non-JSON or blank line, and some rows and artifacts "
             "are legacy, unsafe or broken (docs/generator.md, \"Edge cases\"); --no-edge-cases writes clean runs")
    say(f"seed {args.seed}: the first run starts at {iso(start)} (docs/generator.md, \"Start times\")")
    started = time.monotonic()
    try:
        folders = generate_runs(
            Path(args.out_root),
            runs=args.runs,
            seed=args.seed,
            tasks=args.tasks,
            repeats=args.repeats,
            history_messages=args.history_messages,
            systems=args.systems,
            edge_cases=not args.no_edge_cases,
            progress=say,
            layout=args.layout,
            start=start,
        )
    except FileExistsError as exc:  # a run folder of that id is there already: never overwritten
        say(f"error: {exc.filename}: a run folder of that id exists already and is never overwritten: write into "
            "another OUT_ROOT, or choose another --seed")
        return 2
    say(f"generated {len(folders)} run folder(s) in {time.monotonic() - started:.1f}s")
    for folder in folders:
        print(folder)
    return 0


def cmd_backfill(args: argparse.Namespace) -> int:
    """Launch one asset backfill of the per-run stages over every run partition."""
    from .backfill import daemon_note, launch

    try:
        backfill_id = launch(Path(args.workspace).absolute())
    except RuntimeError as exc:
        say(f"error: {exc}")
        return 1
    print(f"backfill {backfill_id} launched over every run partition; a Dagster daemon runs it "
          f"(UI: Overview -> Backfills, or http://127.0.0.1:<port>/runs/b/{backfill_id} with the "
          f"UI's port: 3000, the -p given to scripts/ui.sh, or the one Dagster named when 3000 was in use)",
          flush=True)
    note = daemon_note()
    if note is not None:
        print(note, flush=True)
    return 0


#: ``--detect X`` (repeatable) of ``compare`` and ``repeats`` (planning.md).
DETECT_HELP = ("a change to plan for, 0 < X <= 1 (0.05 is 5 percentage points; repeat for several, in the order "
               "given; default 0.02, 0.05 and 0.10): the tasks, or runs per side, needed to detect it")


def _read_detect(args: argparse.Namespace) -> bool:
    """``args.targets`` from ``--detect`` (planning.parse_detect); False, with the one-line
    error said, for a bad value (the command's exit 2)."""
    from .planning import parse_detect

    try:
        args.targets = parse_detect(args.detect)
    except ValueError as exc:
        say(f"error: {exc}")
        return False
    return True


def _read_max_drop(args: argparse.Namespace) -> bool:
    """``args.max_drop`` checked (comparison.check_max_drop); False, with the one-line error
    said, for a bad value (the command's exit 2)."""
    from .comparison import check_max_drop

    try:
        args.max_drop = check_max_drop(args.max_drop)
    except ValueError as exc:
        say(f"error: --max-drop: {exc}")
        return False
    return True


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench-pipeline", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("process", help="compute metrics and reports for one run folder")
    p.add_argument("run_dir", help="a run folder (manifest.json, suite.json, results.jsonl, tasks/)")
    p.add_argument("--output-dir", required=True, help="where metrics.json, attempts.jsonl and reports go")
    p.add_argument("--publish", action="store_true", help="also publish the run to Langfuse (LANGFUSE_* environment)")
    p.add_argument("--workers", type=int, default=0, help="processes deriving attempts and report rows of large runs (default: one per core)")
    p.set_defaults(func=cmd_process)

    c = sub.add_parser("compare", help="process two run folders (or two sets of runs) and compare them by task: "
                                       "a release gate (exit 0 pass, 1 fail, 3 inconclusive, 2 bad input)")
    c.add_argument("baseline_run_dir", nargs="?", help="the baseline run folder")
    c.add_argument("candidate_run_dir", nargs="?", help="the candidate run folder")
    c.add_argument("--baseline", action="append", default=[], metavar="DIR",
                   help="a baseline run folder (repeat for several: their tasks are pooled, repeated-runs.md)")
    c.add_argument("--candidate", action="append", default=[], metavar="DIR",
                   help="a candidate run folder (repeat for several)")
    c.add_argument("--output-dir", required=True,
                   help="OUT: baseline/ and candidate/ (each run's files), comparison.json and comparison.md")
    c.add_argument("--max-drop", type=float, default=None,
                   help="non-inferiority margin: the gate passes only when the 95%% interval of the change in first "
                        "attempt and in task success stays at or above -X; it is inconclusive when an interval "
                        "reaches below -X or is missing (a rate: 0.05 is 5 percentage points)")
    c.add_argument("--detect", action="append", default=[], metavar="X", help=DETECT_HELP)
    c.add_argument("--workers", type=int, default=0, help="processes for large runs (default: one per core)")
    c.set_defaults(func=cmd_compare)

    r = sub.add_parser("repeats", help="process several runs of one system and pool them by task: noise floor, "
                                       "flaky tasks (exit 0, 2 bad input)")
    r.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="the run folders")
    r.add_argument("--output-dir", required=True, help="OUT: repeats.json, repeats.md, and each run's files under runs/")
    r.add_argument("--detect", action="append", default=[], metavar="X", help=DETECT_HELP)
    r.add_argument("--workers", type=int, default=0, help="processes for large runs (default: one per core)")
    r.set_defaults(func=cmd_repeats)

    g = sub.add_parser("generate", help="write realistic synthetic run folders",
                       description="Write synthetic run folders under OUT_ROOT (docs/generator.md): the same "
                                   "arguments always write the same bytes. The folder paths go to stdout, one a "
                                   "line; what was written goes to stderr.")
    g.add_argument("out_root", metavar="OUT_ROOT",
                   help="the folder to write the run folders into (created when missing; an existing run folder "
                        "is an error, never overwritten)")
    g.add_argument("--runs", type=int, default=3, help="how many run folders to write (default: 3)")
    g.add_argument("--seed", type=int, default=0,
                   help="everything is drawn from it, the start times too: the first run starts 1 + SEED %% 365 "
                        "days after the sample runs, on 2026-11-29T10:00:00Z for seed 0 (default: 0)")
    g.add_argument("--tasks", type=int, default=12,
                   help="tasks in the suite (default: 12; past 16 the task templates repeat with a suffix)")
    g.add_argument("--repeats", type=int, default=3, help="attempts per task, the runs' metrics_k (default: 3)")
    g.add_argument("--history-messages", type=int, default=30,
                   help="about how many messages each attempt's history.json has (default: 30, at least 4)")
    g.add_argument("--no-edge-cases", action="store_true",
                   help="clean runs only: one valid line per attempt, every artifact present and valid (edge cases "
                        "are on by default: missing, duplicated and malformed lines, broken artifacts; for "
                        "benchmarks)")
    g.add_argument("--systems", type=int, default=None, metavar="N",
                   help="run i repeats system i %% N (one model and git sha each): repeated runs to pool "
                        "(default: every run a system of its own)")
    g.add_argument("--layout", choices=("flat", "runner"), default="flat",
                   help="flat: run-directory.md's flat layout (default); runner: as the benchmark runner writes "
                        "its runs (outcome fields inside each row's metrics, its own absolute artifact_dir, "
                        "attempt_<n> folders, its manifest and suite source, a re-judged copy for every 4th run); "
                        "the same data either way")
    g.set_defaults(func=cmd_generate)

    b = sub.add_parser("backfill", help="re-process every run through Dagster (after a formula change); needs the daemon",
                       description="Launch one Dagster backfill of the per-run stages over every run partition, on "
                                   "the instance of $DAGSTER_HOME: a running Dagster daemon (scripts/ui.sh starts one) "
                                   "processes it, in ranges of BENCH_PARTITIONS_PER_RUN run folders "
                                   "(docs/operations.md \"After a formula change\").")
    b.add_argument("--workspace", default="workspace.yaml", help="the Dagster workspace file (default: workspace.yaml)")
    b.set_defaults(func=cmd_backfill)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


def entry() -> None:
    """The installed ``bench-pipeline`` command: ``main()``, then the process ends.

    A processed large run is millions of small objects; freeing them one by one at
    interpreter shutdown takes a noticeable part of a second, for memory the operating
    system reclaims at once. Every output is written and closed by then, and the exit
    handlers run as at a normal exit (``bulk.exit_now``: the Langfuse SDK flushes there).

    For the same reason the cyclic garbage collector stays paused to the end: were the
    command's pause (``bulk.gc_paused``) lifted on its way out, the first allocation after
    would collect the young generation, every object the command made (about 0.1 s on a
    10,000-attempt run), only for the process to end.
    """
    gc.disable()
    code = main()
    if not LEFT_FOR_EXIT:
        sys.exit(code)
    exit_now(code)


if __name__ == "__main__":
    entry()
