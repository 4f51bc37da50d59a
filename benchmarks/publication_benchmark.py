"""Publish a synthetic 10,000-attempt run to the local Langfuse stand-in and measure it.

    .venv/bin/python benchmarks/publication_benchmark.py [--tasks 500] [--repeats 20]
        [--seeded 0.5] [--workers 8] [--json]

Steps: generate a run folder (``bench_pipeline.generate.generate_runs``), process it
(``bench_pipeline.process.process_run``), start ``LangfuseStandIn``, pre-seed the execution
traces of a fraction of the attempts (those become ``available``), then publish three times:

1. first publication (everything is new);
2. the same call again with the publication record (nothing to send);
3. again into a new output folder (record lost: what exists is read back from the server).

For each it prints the wall time and the HTTP requests by endpoint, plus the budget check
"requests for scores and spans <= attempts / 50".
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_pipeline.generate import generate_runs
from bench_pipeline.pipeline import process_run
from bench_pipeline.process import attempt_record
from bench_pipeline.publication import LangfuseSettings, PublishOptions, publish_run
from bench_pipeline_tests.langfuse_standin import LangfuseStandIn

BULK = ("/api/public/scores", "/api/public/otel/v1/traces")


def build_run(tmp: Path, tasks: int, repeats: int, seed: int) -> tuple[dict, float]:
    started = time.perf_counter()
    (run_dir,) = generate_runs(tmp / "runs", runs=1, seed=seed, tasks=tasks, repeats=repeats,
                               history_messages=12, edge_cases=False)
    processed = process_run(run_dir)
    raw = processed.raw
    run = {
        "run_id": raw.run_id,
        "metrics": processed.metrics,
        "attempts": [attempt_record(a) for a in processed.attempts],
        "manifest": raw.manifest,
        "suite_def": raw.suite_def,
    }
    return run, time.perf_counter() - started


def by_endpoint(requests) -> dict[str, int]:
    counts = collections.Counter(f"{r.method} {r.path}" for r in requests)
    return dict(sorted(counts.items()))


def server_seconds(requests) -> dict[str, float]:
    """Time the stand-in spent handling each endpoint (summed over requests, threads overlap)."""
    seconds: dict[str, float] = collections.defaultdict(float)
    for r in requests:
        seconds[f"{r.method} {r.path}"] += r.duration
    return {k: round(v, 2) for k, v in sorted(seconds.items())}


def measure(label: str, standin: LangfuseStandIn, run: dict, out_dir: Path, settings, options) -> dict:
    first = len(standin.requests)
    last_shown = [-1]

    def progress(done: int, total: int) -> None:
        tenth = done * 10 // max(total, 1)
        if tenth != last_shown[0]:
            last_shown[0] = tenth
            print(f"    {label}: {done}/{total} attempts", file=sys.stderr, flush=True)

    started = time.perf_counter()
    result = publish_run(**run, out_dir=out_dir, settings=settings, options=options, progress=progress)
    wall = time.perf_counter() - started
    requests = standin.requests[first:]
    endpoints = by_endpoint(requests)
    bulk = sum(n for k, n in endpoints.items() if k.split(" ", 1)[1] in BULK)
    return {
        "label": label, "wall_s": round(wall, 2), "status": result.status, "items": result.items,
        "spans": result.spans, "scores": result.scores, "skipped_existing": result.skipped_existing,
        "http_requests": result.http_requests, "requests_by_endpoint": endpoints,
        "server_seconds_by_endpoint": server_seconds(requests),
        "bulk_requests": bulk, "failed_requests": sum(1 for r in requests if (r.status or 0) >= 400),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--seeded", type=float, default=0.5, help="fraction of episodes whose trace is pre-seeded")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="publication-benchmark-") as tmp_name:
        tmp = Path(tmp_name)
        run, build_s = build_run(tmp, args.tasks, args.repeats, args.seed)
        attempts = run["attempts"]
        n = len(attempts)
        print(f"built run {run['run_id']}: {n} attempts in {build_s:.1f}s", file=sys.stderr)
        with LangfuseStandIn(public_key=f"pk-lf-bench-{uuid.uuid4().hex[:8]}",
                             secret_key=f"sk-lf-bench-{uuid.uuid4().hex}") as standin:
            with_trace = [a for a in attempts if a["evidence"]["episode_id"] and a["evidence"]["trace_id"]]
            step = max(1, round(1 / args.seeded)) if args.seeded > 0 else 0
            seeded = with_trace[::step] if step else []
            for a in seeded:
                standin.add_trace(a["evidence"]["trace_id"], uuid.uuid4().hex[:16])
            settings = LangfuseSettings(standin.base_url, standin.public_key, standin.secret_key)
            options = PublishOptions(workers=args.workers)
            runs = [
                measure("first publication", standin, run, tmp / "out", settings, options),
                measure("again, with the record", standin, run, tmp / "out", settings, options),
                measure("again, record lost", standin, run, tmp / "out-2", settings, options),
            ]
            statuses = collections.Counter(
                json.loads(s["attributes"]["langfuse.observation.output"])["execution_trace_status"]
                for s in standin.experiment_item_spans()
            )
            summary = {
                "attempts": n, "episodes_with_trace_id": len(with_trace), "seeded_traces": len(seeded),
                "build_s": round(build_s, 1), "budget_bulk_requests": math.ceil(n / 50),
                "experiment_items": len(standin.experiment_item_spans()),
                "execution_trace_status": dict(statuses),
                "spans_stored": len(standin.spans), "score_rows": len(standin.score_rows),
                "duplicate_span_receipts": len(standin.duplicate_span_receipts()),
                "runs": runs,
            }
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"attempts: {n} ({len(with_trace)} with an execution trace id, {len(seeded)} of them seeded)")
    print(f"experiment items: {summary['experiment_items']}, statuses: {summary['execution_trace_status']}")
    print(f"stored: {summary['spans_stored']} spans, {summary['score_rows']} score rows, "
          f"{summary['duplicate_span_receipts']} duplicate span receipts")
    for r in runs:
        print(f"\n== {r['label']}: {r['wall_s']} s, {r['http_requests']} HTTP requests "
              f"({r['failed_requests']} failed); sent {r['items']} items, {r['spans']} spans, {r['scores']} scores; "
              f"{r['skipped_existing']} attempts already published")
        for endpoint, count in r["requests_by_endpoint"].items():
            print(f"   {count:>7}  {endpoint:<40} (stand-in handling {r['server_seconds_by_endpoint'][endpoint]:.1f} s)")
        verdict = "ok" if r["bulk_requests"] <= summary["budget_bulk_requests"] else "OVER BUDGET"
        print(f"   scores+spans requests: {r['bulk_requests']} (budget {summary['budget_bulk_requests']}: {verdict})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
