"""What publication adds to ``bench-pipeline process``: the command with and without ``--publish``.

    .venv/bin/python benchmarks/publication_benchmark.py [--run-dir DIR] [--tasks 2000]
        [--repeats 5] [--history-messages 80] [--seed 3] [--rounds 3] [--modes v4,v3]
        [--seeded 0.5] [--json]

Without ``--run-dir`` a run folder is generated first, as
``bench-pipeline generate DIR --runs 1 --seed 3 --tasks 2000 --repeats 5 --history-messages 80
--no-edge-cases`` (10,000 attempts). Then, in ``--rounds`` interleaved rounds, each a fresh process:

* ``process``: ``bench-pipeline process RUN --output-dir OUT`` (the reference);
* ``outbox``: the same with ``--publish`` and no Langfuse keys (the outbox is written);
* ``v4`` / ``v3``: the same with ``--publish`` against a fresh stand-in in that mode, running in
  its own process like a server (``standins.langfuse``), with the execution
  traces of ``--seeded`` of the attempts that have one already there (those become ``available``).

Besides wall time: the CPU seconds (user + system) of the command's processes, so that what the
publisher itself costs can be told from what the stand-in (another process, on the same two
cores) costs.

After the rounds, per mode: the same command again with the record (nothing to send) and into a
new output folder (record lost: what exists is read back). Printed: wall time per round (best and
median), the ratio to ``process`` in the same round, peak memory, requests by endpoint, and the
request budget "scores + spans requests <= attempts / 50".
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from compiled import compile_package

ROOT = Path(__file__).resolve().parents[1]
CLI = [str(ROOT / ".venv" / "bin" / "bench-pipeline")] if (ROOT / ".venv" / "bin" / "bench-pipeline").exists() \
    else [sys.executable, "-m", "bench_pipeline.cli"]
BULK = ("POST /api/public/ingestion", "POST /api/public/otel/v1/traces", "POST /api/public/scores")

SERVER = r"""
import gc, json, sys
sys.path.insert(0, sys.argv[1])
from standins.langfuse import LangfuseStandIn
gc.disable()  # a short-lived server holding some 300,000 score rows: collections would dominate
standin = LangfuseStandIn(public_key="pk-lf-bench", secret_key="sk-lf-bench-secret", mode=sys.argv[2]).start()
for line in open(sys.argv[3]):
    if line.strip():
        trace_id, root = line.split()
        standin.add_trace(trace_id, root)
print(standin.base_url, flush=True)
import time
cpu = time.process_time()
for command in sys.stdin:
    if command.strip() == "stats":
        counts, seconds = {}, {}
        for r in standin.requests:
            key = f"{r.method} {r.path}"
            counts[key] = counts.get(key, 0) + 1
            seconds[key] = seconds.get(key, 0.0) + r.duration
        out = {"requests": counts, "handling_s": {k: round(v, 2) for k, v in seconds.items()},
               "large_requests": {k: sum(1 for r in standin.requests if f"{r.method} {r.path}" == k and r.bytes > 30)
                                  for k in counts},
               "failed": sum(1 for r in standin.requests if (r.status or 0) >= 400 and r.status != 404),
               "spans": len(standin.spans), "score_rows": len(standin.score_rows),
               "items": len(standin.dataset_items), "run_items": len(standin.dataset_run_items),
               "experiment_items": len(standin.experiment_item_spans()),
               "duplicate_span_receipts": len(standin.duplicate_span_receipts()),
               "cpu_s": round(time.process_time() - cpu, 2)}
        cpu = time.process_time()
        print(json.dumps(out), flush=True)
        standin.requests.clear()
standin.stop()
"""


def run_command(args: list[str], env: dict) -> dict:
    """One fresh process: wall seconds, peak RSS (MiB), exit status, the last lines of stderr."""
    started = time.perf_counter()
    proc = subprocess.Popen(args, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate()
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}):\n{err.decode()[-2000:]}")
    return {"wall_s": wall, "stdout": out.decode(), "stderr": err.decode()}


def measured(args: list[str], env: dict) -> dict:
    """``run_command`` under /usr/bin/time -f %M when present (peak RSS of that process)."""
    timer = Path("/usr/bin/time")
    if timer.exists():
        result = run_command([str(timer), "-f", "MAXRSS %M CPU %U %S"] + args, env)
        rss = [line.split() for line in result["stderr"].splitlines() if line.startswith("MAXRSS ")]
        result["rss_mib"] = round(int(rss[-1][1]) / 1024) if rss else None
        result["cpu_s"] = float(rss[-1][3]) + float(rss[-1][4]) if rss else None
        return result
    return {**run_command(args, env), "rss_mib": None, "cpu_s": None}


class StandIn:
    """A stand-in server in its own process (``SERVER``)."""

    def __init__(self, mode: str, seeds: Path):
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER, str(ROOT), mode, str(seeds)], text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT)
        self.base_url = self.proc.stdout.readline().strip()

    def stats(self) -> dict:
        self.proc.stdin.write("stats\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def env_for(base_url: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANGFUSE_")}
    env["PYTHONPATH"] = str(ROOT)
    if base_url:
        env.update(LANGFUSE_BASE_URL=base_url, LANGFUSE_PUBLIC_KEY="pk-lf-bench",
                   LANGFUSE_SECRET_KEY="sk-lf-bench-secret")
    return env


def seeds_for(run_dir: Path, fraction: float, path: Path) -> tuple[int, int]:
    """Trace ids of the run's episodes; every 1/fraction-th one is pre-seeded as an existing trace."""
    traces = []
    for episode in sorted(run_dir.glob("tasks/**/episode.json")):
        trace_id = json.loads(episode.read_text()).get("trace_id")
        if isinstance(trace_id, str) and len(trace_id) == 32:
            traces.append(trace_id)
    step = max(1, round(1 / fraction)) if fraction > 0 else 0
    seeded = traces[::step] if step else []
    path.write_text("".join(f"{t} {t[:16]}\n" for t in seeded))
    return len(traces), len(seeded)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-dir", type=Path)
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--history-messages", type=int, default=80)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--modes", default="v4,v3")
    parser.add_argument("--seeded", type=float, default=0.5, help="fraction of trace ids pre-seeded in the stand-in")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    compile_package()
    modes = [m for m in args.modes.split(",") if m]

    with tempfile.TemporaryDirectory(prefix="publication-benchmark-") as tmp_name:
        tmp = Path(tmp_name)
        run_dir = args.run_dir
        if run_dir is None:
            subprocess.run(CLI + ["generate", str(tmp / "runs"), "--runs", "1", "--seed", str(args.seed),
                                  "--tasks", str(args.tasks), "--repeats", str(args.repeats),
                                  "--history-messages", str(args.history_messages), "--no-edge-cases"],
                           cwd=ROOT, env=env_for(None), check=True, stdout=subprocess.DEVNULL)
            (run_dir,) = sorted((tmp / "runs").iterdir())
        with_trace, seeded = seeds_for(run_dir, args.seeded, tmp / "seeds.txt")
        attempts = sum(1 for _ in (run_dir / "results.jsonl").open())
        run_command(CLI + ["process", str(run_dir), "--output-dir", str(tmp / "warm")], env_for(None))  # page cache

        rounds: list[dict] = []
        servers: dict[str, dict] = {}
        for i in range(args.rounds):
            row: dict = {}
            out = tmp / f"r{i}"
            row["process"] = measured(CLI + ["process", str(run_dir), "--output-dir", str(out / "p")], env_for(None))
            row["outbox"] = measured(CLI + ["process", str(run_dir), "--output-dir", str(out / "o"), "--publish"],
                                     env_for(None))
            for mode in modes:
                standin = StandIn(mode, tmp / "seeds.txt")
                try:
                    row[mode] = measured(CLI + ["process", str(run_dir), "--output-dir", str(out / mode), "--publish"],
                                         env_for(standin.base_url))
                    row[mode]["server"] = standin.stats()
                    if i == args.rounds - 1:  # again with the record, then with the record lost
                        again = measured(CLI + ["process", str(run_dir), "--output-dir", str(out / mode),
                                                "--publish"], env_for(standin.base_url))
                        again["server"] = standin.stats()
                        lost = measured(CLI + ["process", str(run_dir), "--output-dir", str(out / f"{mode}-lost"),
                                               "--publish"], env_for(standin.base_url))
                        lost["server"] = standin.stats()
                        servers[mode] = {"again": again, "lost": lost}
                finally:
                    standin.close()
            rounds.append(row)
            shown = ", ".join(f"{k} {v['wall_s']:.2f}s" for k, v in row.items())
            print(f"round {i + 1}: {shown}", file=sys.stderr, flush=True)

    scenarios = ["process", "outbox", *modes]
    budget = math.ceil(attempts / 50)
    summary: dict = {"attempts": attempts, "with_trace_id": with_trace, "seeded_traces": seeded,
                     "budget_bulk_requests": budget, "scenarios": {}}
    for name in scenarios:
        walls = [r[name]["wall_s"] for r in rounds]
        ratios = [r[name]["wall_s"] / r["process"]["wall_s"] for r in rounds]
        cpus = [r[name]["cpu_s"] for r in rounds if r[name].get("cpu_s") is not None]
        entry = {"best_s": round(min(walls), 2), "median_s": round(statistics.median(walls), 2),
                 "cpu_median_s": round(statistics.median(cpus), 2) if cpus else None,
                 "ratio_best": round(min(ratios), 2), "ratio_median": round(statistics.median(ratios), 2),
                 "rss_mib": max((r[name]["rss_mib"] or 0) for r in rounds) or None,
                 "walls": [round(w, 2) for w in walls]}
        if name in modes:
            server = rounds[-1][name]["server"]
            bulk = sum(n for k, n in server["large_requests"].items() if k in BULK)
            entry.update(server=server, bulk_requests=bulk, within_budget=bulk <= budget,
                         again_s=round(servers[name]["again"]["wall_s"], 2),
                         again_requests=sum(servers[name]["again"]["server"]["requests"].values()),
                         lost_s=round(servers[name]["lost"]["wall_s"], 2),
                         lost_requests=servers[name]["lost"]["server"]["requests"],
                         summary_line=rounds[-1][name]["stdout"].strip().splitlines()[-1])
        summary["scenarios"][name] = entry
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"run: {attempts} attempts ({with_trace} with an execution trace id, {seeded} of those traces pre-seeded)")
    print(f"{'scenario':<10} {'best':>8} {'median':>8} {'x process (best/median, same round)':>38} "
          f"{'CPU (median)':>13} {'peak RSS':>10}")
    for name in scenarios:
        e = summary["scenarios"][name]
        print(f"{name:<10} {e['best_s']:>7.2f}s {e['median_s']:>7.2f}s {e['ratio_best']:>19.2f} / "
              f"{e['ratio_median']:<16.2f} {e['cpu_median_s'] or 0:>12.2f}s {e['rss_mib'] or '-':>7} MiB")
    for mode in modes:
        e = summary["scenarios"][mode]
        s = e["server"]
        print(f"\n== {mode}: {sum(s['requests'].values())} requests ({s['failed']} failed), stand-in CPU "
              f"{s['cpu_s']} s; stored {s['items']} items, "
              f"{s['spans']} spans, {s['score_rows']} score rows, {s['run_items']} run items, "
              f"{s['experiment_items']} experiment item spans, {s['duplicate_span_receipts']} duplicate span receipts")
        for endpoint, count in sorted(s["requests"].items()):
            print(f"   {count:>7}  {endpoint:<42} (stand-in handling {s['handling_s'][endpoint]:.1f} s)")
        print(f"   scores+spans requests: {e['bulk_requests']} (budget {budget}: "
              f"{'ok' if e['within_budget'] else 'OVER BUDGET'})")
        print(f"   again with the record: {e['again_s']} s, {e['again_requests']} requests; record lost: "
              f"{e['lost_s']} s, {sum(e['lost_requests'].values())} requests")
        print(f"   {e['summary_line']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
