"""The `bench-pipeline` command line: process one run folder, or generate sample runs."""

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
