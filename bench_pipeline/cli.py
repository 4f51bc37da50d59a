"""The `bench-pipeline` command line: process one run folder, compare two, or generate sample runs."""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path

from .run_reader import NotARunFolderError


#: What a finished command leaves for the process's end (see ``entry``).
_LEFT_FOR_EXIT: list[object] = []


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class _Progress:
    """A progress line on stderr for large runs: at most one a second, and the last."""

    def __init__(self, what: str, min_total: int = 2000, every_seconds: float = 1.0) -> None:
        self.what, self.min_total, self.every = what, min_total, every_seconds
        self.last = time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if total >= self.min_total and (done == total or now - self.last >= self.every):
            self.last = now
            _say(f"  {self.what}: {done}/{total}")


def cmd_process(args: argparse.Namespace) -> int:
    """Process RUN_DIR into OUTPUT_DIR: metrics.json, attempts.jsonl, summary.md, report.html."""
    from .bulk import gc_paused

    with gc_paused():  # one pause for the whole command: see bulk.py
        return _process(args)


def _process(args: argparse.Namespace) -> int:
    from .bulk import default_workers
    from .pipeline import run_stages
    from .process import data_quality_findings

    started = time.monotonic()
    out_dir = Path(args.output_dir)
    try:
        result = run_stages(
            Path(args.run_dir), out_dir,
            workers=args.workers or default_workers(),
            progress=_Progress("attempts derived"),
            keep_evidence=args.publish,  # the Langfuse trace output shows each attempt's evidence
        )
    except NotARunFolderError as exc:
        _say(f"error: {exc}")
        return 2
    processed, written = result.processed, result.written
    findings = data_quality_findings(processed.metrics)
    _say(
        f"{processed.raw.run_id}: {len(processed.attempts)} attempts, {len(processed.tasks)} tasks, "
        f"{findings} data-quality finding(s), {time.monotonic() - started:.2f}s"
    )
    for name, path in written.items():
        print(f"{name}: {path}")
    if args.publish:
        from .publication.cli import publish_processed

        return publish_processed(processed, out_dir)
    _LEFT_FOR_EXIT.append(processed)  # freed by the process's end, not object by object
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Process BASELINE_RUN_DIR and CANDIDATE_RUN_DIR and compare them (comparison.md of the
    specification): exit 0 when the release gate passes, 1 when it fails, 2 for bad input."""
    from .bulk import gc_paused

    with gc_paused():  # one pause for the whole command: see bulk.py
        return _compare(args)


def _compare(args: argparse.Namespace) -> int:
    from .bulk import default_workers
    from .comparison import Comparison, ComparisonInputError, check_max_drop, side_from_output, side_from_processed
    from .outputs import write_comparison_files
    from .pipeline import run_stages
    from .reports.compared import gate_statement

    started = time.monotonic()
    out = Path(args.output_dir)
    baseline_run, candidate_run = Path(args.baseline_run_dir), Path(args.candidate_run_dir)
    try:
        max_drop = check_max_drop(args.max_drop)
    except ValueError as exc:
        _say(f"error: --max-drop: {exc}")
        return 2
    workers = args.workers or default_workers()
    try:
        for run_dir in (baseline_run, candidate_run):  # both checked before either is processed
            if not (run_dir / "results.jsonl").is_file():
                raise NotARunFolderError(f"{run_dir}: no results.jsonl, so not a benchmark run folder")
        baseline = run_stages(baseline_run, out / "baseline", workers=workers, progress=_Progress("baseline attempts derived"))
        candidate = run_stages(candidate_run, out / "candidate", workers=workers,
                               progress=_Progress("candidate attempts derived"), baseline_dir=out / "baseline",
                               max_drop=max_drop, baseline_run_dir=baseline_run)
        # OUT's copies: the same comparison.json, comparison.md with its links made from OUT
        comparison = Comparison(candidate.comparison, side_from_output(out / "baseline", baseline_run),
                                side_from_processed(candidate.processed))
        written = write_comparison_files(out, comparison)
    except (NotARunFolderError, ComparisonInputError) as exc:
        _say(f"error: {exc}")
        return 2
    except OSError as exc:
        _say(f"error: {exc.filename or ''}: {exc.strerror or exc}".replace("error: : ", "error: "))
        return 2
    result = candidate.comparison
    gate = result["gate"]
    _say(
        f"gate {gate['result']}: {candidate.processed.raw.run_id} against {baseline.processed.raw.run_id}, "
        f"{result['tasks']['paired']} paired task(s): {gate_statement(result, short=True).split(': ', 1)[1]}"
        + (f" (reasons: {', '.join(gate['reasons'])}" if gate["reasons"] else " (")
        + (f"; warnings: {', '.join(result['warnings'])}" if result["warnings"] else "")
        + ("; " if gate["reasons"] or result["warnings"] else "") + f"{time.monotonic() - started:.2f}s)"
    )
    for prefix, files in (("baseline/", baseline.written), ("candidate/", candidate.written), ("", written)):
        for name, path in files.items():
            print(f"{prefix}{name}: {path}")
    _LEFT_FOR_EXIT.extend([baseline, candidate])  # freed by the process's end, not object by object
    return 0 if gate["result"] == "pass" else 1


def cmd_generate(args: argparse.Namespace) -> int:
    """Write synthetic run folders under OUT_ROOT."""
    from .generate import generate_runs

    started = time.monotonic()
    folders = generate_runs(
        Path(args.out_root),
        runs=args.runs,
        seed=args.seed,
        tasks=args.tasks,
        repeats=args.repeats,
        history_messages=args.history_messages,
        edge_cases=not args.no_edge_cases,
        progress=_say,
    )
    _say(f"generated {len(folders)} run folder(s) in {time.monotonic() - started:.1f}s")
    for folder in folders:
        print(folder)
    return 0


def cmd_backfill(args: argparse.Namespace) -> int:
    """Launch one asset backfill of the per-run stages over every run partition."""
    from .backfill import launch

    try:
        backfill_id = launch(Path(args.workspace).absolute())
    except RuntimeError as exc:
        _say(f"error: {exc}")
        return 1
    print(f"backfill {backfill_id} launched over every run partition; the Dagster daemon runs it "
          f"(UI: Overview -> Backfills, or http://127.0.0.1:3000/runs/b/{backfill_id})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench-pipeline", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("process", help="compute metrics and reports for one run folder")
    p.add_argument("run_dir", help="a run folder (manifest.json, suite.json, results.jsonl, tasks/)")
    p.add_argument("--output-dir", required=True, help="where metrics.json, attempts.jsonl and reports go")
    p.add_argument("--publish", action="store_true", help="also publish the run to Langfuse (LANGFUSE_* environment)")
    p.add_argument("--workers", type=int, default=0, help="processes deriving attempts and report rows of large runs (default: one per core)")
    p.set_defaults(func=cmd_process)

    c = sub.add_parser("compare", help="process two run folders and compare them by task: a release gate (exit 0 pass, 1 fail, 2 bad input)")
    c.add_argument("baseline_run_dir", help="the baseline run folder")
    c.add_argument("candidate_run_dir", help="the candidate run folder")
    c.add_argument("--output-dir", required=True,
                   help="OUT: baseline/ and candidate/ (each run's files), comparison.json and comparison.md")
    c.add_argument("--max-drop", type=float, default=None,
                   help="non-inferiority margin: the gate also fails when the 95%% interval of the change in first "
                        "attempt or task success reaches below -X (a rate: 0.05 is 5 percentage points)")
    c.add_argument("--workers", type=int, default=0, help="processes for large runs (default: one per core)")
    c.set_defaults(func=cmd_compare)

    g = sub.add_parser("generate", help="write realistic synthetic run folders")
    g.add_argument("out_root")
    g.add_argument("--runs", type=int, default=3)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--tasks", type=int, default=12)
    g.add_argument("--repeats", type=int, default=3)
    g.add_argument("--history-messages", type=int, default=30)
    g.add_argument("--no-edge-cases", action="store_true", help="clean runs only (for benchmarks)")
    g.set_defaults(func=cmd_generate)

    b = sub.add_parser("backfill", help="re-process every run through Dagster (after a formula change); needs the daemon")
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
    system reclaims at once. Every output is written and closed by then, and a command
    that publishes to Langfuse exits normally (the SDK flushes at exit).

    For the same reason the cyclic garbage collector stays paused to the end: were the
    command's pause (``bulk.gc_paused``) lifted on its way out, the first allocation after
    would collect the young generation, every object the command made (about 0.1 s on a
    10,000-attempt run), only for the process to end.
    """
    gc.disable()
    code = main()
    if not _LEFT_FOR_EXIT:
        sys.exit(code)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    entry()
