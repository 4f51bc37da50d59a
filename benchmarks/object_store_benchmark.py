"""Runs in a bucket against runs on disk: the per-run step, and a sensor tick.

Against moto's S3 server on loopback (``standins/moto_server.py``, a process of
its own on a free port) with the pipeline's own clients (s3fs), side by side in one
invocation, rounds alternating, each figure the median of --rounds with its range:

- **run**: one generated 1,000-attempt run (334 tasks x 3 attempts, 30 history messages
  each: 5,866 objects, of which the stages read 2,883) through the per-run step
  (``per_run_stages``, one partition, a new instance each time, Langfuse outbox): from a
  local folder into local outputs, against runs root and output root in the bucket, with
  the local cache empty (**cold**: every object the stages read is fetched) and with the
  cache the previous processing left (**warm**: a re-processing, e.g. after a formula
  change: the run is listed, nothing fetched). Outputs are uploaded in both.
- **tick**: the run-folder sensor over N runs already requested (every one unchanged), on
  an instance holding their N partitions: the runs in a bucket (each with artifacts under
  tasks/) against the same runs on disk.
- **pieces**: the catalog refresh's kept system documents (refresh_state.save_pieces /
  load_pieces) with the storage base in the bucket: N documents of about 4 KB written, then
  100 read, several at once (as the refresh does) against one after another.

    .venv/bin/python benchmarks/object_store_benchmark.py [--rounds 3] [--runs 1000] [--only run|tick|pieces]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from compiled import compile_package

ROOT = Path(__file__).resolve().parents[1]
RUN_ID = "bench-1000-attempts"


def figure(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s (range {min(values):.2f}-{max(values):.2f}, {len(values)} rounds)"


def resources_for(settings):
    from bench_pipeline.resources import JsonIOManagerFactory, LangfuseResource, ParquetIOManagerFactory

    return {"settings": settings, "langfuse": LangfuseResource(),
            "parquet_io_manager": ParquetIOManagerFactory(settings=settings),
            "json_io_manager": JsonIOManagerFactory(settings=settings)}


def process_once(settings) -> float:
    import dagster as dg

    from bench_pipeline.assets import per_run_assets
    from bench_pipeline.partitions import runs_partitions

    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(runs_partitions.name, [RUN_ID])
        started = time.perf_counter()
        result = dg.materialize(per_run_assets, partition_key=RUN_ID, instance=instance,
                                resources=resources_for(settings), raise_on_error=False)
        seconds = time.perf_counter() - started
    if not result.success:
        raise SystemExit([e.step_failure_data.error.message for e in result.get_step_failure_events()])
    return seconds


def cpu_seconds(pid: int) -> float:
    """The CPU time (user + system, every thread) process ``pid`` has used so far."""
    with open(f"/proc/{pid}/stat", "rb") as fh:
        fields = fh.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_benchmark(work: Path, bucket, rounds: int, server_pid: int) -> None:
    from bench_pipeline.generator import generate_runs
    from bench_pipeline.resources import PipelineSettings

    generated = work / "generated"
    (made,) = generate_runs(generated, runs=1, seed=3, tasks=334, repeats=3, history_messages=30, id_prefix="x-")
    runs = work / "local" / "runs"
    runs.mkdir(parents=True)
    made.rename(runs / RUN_ID)
    objects = sum(1 for p in (runs / RUN_ID).rglob("*") if p.is_file())
    started = time.perf_counter()
    bucket.upload_folder(runs, "runs")
    print(f"run: {objects} objects uploaded in {time.perf_counter() - started:.1f} s", flush=True)
    local = PipelineSettings(runs_root=str(runs), output_root=str(work / "local" / "reports"),
                             storage_base=str(work / "local" / "storage"))
    remote = PipelineSettings(runs_root=bucket.url("runs"), output_root=bucket.url("reports"),
                              storage_base=str(work / "bucket-storage"))
    cache = work / "cache"
    times: dict[str, list[float]] = {"local": [], "cold": [], "warm": []}
    server_cpu: dict[str, list[float]] = {"local": [], "cold": [], "warm": []}  # moto's own CPU
    process_once(local)  # imports, the fork server, compiled templates: not in any figure
    for i in range(rounds):
        order = ["local", "cold", "warm"] if i % 2 == 0 else ["warm", "cold", "local"]
        for kind in order:
            if kind == "cold":
                shutil.rmtree(cache, ignore_errors=True)
            elif kind == "warm" and not cache.exists():
                process_once(remote)  # the copy a re-processing finds
            cpu = cpu_seconds(server_pid)
            seconds = process_once(local if kind == "local" else remote)
            times[kind].append(seconds)
            server_cpu[kind].append(cpu_seconds(server_pid) - cpu)
            print(f"  round {i + 1}: {kind} {seconds:.2f} s (moto's CPU {server_cpu[kind][-1]:.2f} s)", flush=True)
    base = statistics.median(times["local"])
    print(f"run: local folder {figure(times['local'])}")
    for kind in ("cold", "warm"):
        print(f"run: bucket, {kind} cache {figure(times[kind])}: {statistics.median(times[kind]) / base:.2f}x local; "
              f"moto's own CPU {figure(server_cpu[kind])}, against the whole target of {1.5 * base:.2f} s (1.5x local)")


def pieces_benchmark(bucket, count: int, rounds: int) -> None:
    """Writing ``count`` system documents and reading 100 of them, threaded against serial."""
    from bench_pipeline.assets import refresh_state

    doc = {"versions": {"run": "fingerprint@formula"}, "doc": {"tasks": [{"task_id": f"t{i}", "mean": i / 7}
                                                                         for i in range(60)]}, "page": {}}
    pieces = {f"system-{i:05d}": doc for i in range(count)}
    times: dict[str, list[float]] = {k: [] for k in ("write, several at once", "write, one after another",
                                                     "read 100, several at once", "read 100, one after another")}
    for round_no in range(rounds):
        base = bucket.url(f"pieces-{round_no}")
        started = time.perf_counter()
        refresh_state.save_pieces(base, "system_docs", pieces)
        times["write, several at once"].append(time.perf_counter() - started)
        started = time.perf_counter()
        for key, value in pieces.items():
            refresh_state.save_piece(base, "system_docs", key, value)
        times["write, one after another"].append(time.perf_counter() - started)
        wanted = list(pieces)[:100]
        started = time.perf_counter()
        assert all(v == doc for v in refresh_state.load_pieces(base, "system_docs", wanted).values())
        times["read 100, several at once"].append(time.perf_counter() - started)
        started = time.perf_counter()
        assert all(refresh_state.load_piece(base, "system_docs", key) == doc for key in wanted)
        times["read 100, one after another"].append(time.perf_counter() - started)
    for kind, values in times.items():
        print(f"pieces ({count}): {kind} {figure(values)}", flush=True)


def make_runs(root: Path, count: int) -> None:
    manifest = json.dumps({"status": "completed", "metrics_k": 1})
    row = json.dumps({"task_id": "t", "attempt": 1, "status": "passed"}) + "\n"
    for i in range(count):
        run = root / f"run-{i:06d}"
        (run / "tasks" / "t").mkdir(parents=True)
        (run / "manifest.json").write_text(manifest)
        (run / "suite.json").write_text("{}")
        (run / "results.jsonl").write_text(row)
        (run / "tasks" / "t" / "history.json").write_text("[]")
        (run / "tasks" / "t" / "trace.json").write_text("{}")


def tick_seconds(settings, ticks: int) -> tuple[float, list[float], int]:
    """(first tick's seconds, each steady tick's seconds, run requests of the first)."""
    import dagster as dg

    from bench_pipeline.partitions import runs_partitions
    from bench_pipeline.sensors import run_folder_sensor

    with dg.instance_for_test() as instance:
        with dg.build_sensor_context(instance=instance, resources={"settings": settings}) as ctx:
            started = time.perf_counter()
            first = run_folder_sensor(ctx)
            first_s = time.perf_counter() - started
        instance.add_dynamic_partitions(runs_partitions.name,
                                        [k for r in first.dynamic_partitions_requests for k in r.partition_keys])
        steady = []
        for _ in range(ticks):
            with dg.build_sensor_context(instance=instance, cursor=first.cursor, resources={"settings": settings}) as ctx:
                started = time.perf_counter()
                result = run_folder_sensor(ctx)
                steady.append(time.perf_counter() - started)
            assert not result.run_requests
    return first_s, steady, len(first.run_requests)


def tick_benchmark(work: Path, bucket, count: int, rounds: int) -> None:
    from bench_pipeline.resources import PipelineSettings

    runs = work / "tick-runs"
    make_runs(runs, count)
    started = time.perf_counter()
    bucket.upload_folder(runs, "tick-runs")
    print(f"tick: {count} runs ({5 * count} objects) uploaded in {time.perf_counter() - started:.1f} s", flush=True)
    for name, settings in (("disk", PipelineSettings(runs_root=str(runs), output_root=str(work / "o"),
                                                     storage_base=str(work / "s"))),
                           ("bucket", PipelineSettings(runs_root=bucket.url("tick-runs"), output_root=str(work / "o"),
                                                       storage_base=str(work / "s")))):
        first, steady, requested = tick_seconds(settings, rounds)
        print(f"tick: {count} unchanged runs on {name}: steady tick {figure(steady)}; the first tick "
              f"(every run new, {requested} run requests) {first:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=1000, help="runs of the sensor tick")
    parser.add_argument("--only", choices=("run", "tick", "pieces"))
    parser.add_argument("--pieces", type=int, default=2000, help="system documents of the pieces measurement")
    args = parser.parse_args()
    compile_package()
    sys.path.insert(0, str(ROOT))
    from standins.s3 import Bucket, S3Server, s3_environment, start_moto_server

    server, port = start_moto_server()
    try:
        os.environ.update(s3_environment(port))
        for var in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
            os.environ.pop(var, None)
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            os.environ["BENCH_CACHE"] = str(work / "cache")
            s3 = S3Server(port, s3_environment(port))
            s3.client().create_bucket(Bucket="bench-benchmark")
            bucket = Bucket("bench-benchmark", s3)
            if args.only in (None, "run"):
                run_benchmark(work, bucket, args.rounds, server.pid)
            if args.only in (None, "tick"):
                tick_benchmark(work, bucket, args.runs, max(args.rounds, 3))
            if args.only in (None, "pieces"):
                pieces_benchmark(bucket, args.pieces, max(args.rounds, 3))
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
