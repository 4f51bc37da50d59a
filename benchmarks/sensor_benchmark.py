"""How long does one sensor tick take with thousands of run folders?

Creates N small ready run folders, then times the sensor's decision function for the
first tick (every folder new: manifests read, N run requests) and for a steady tick
(nothing changed: a few stat calls per folder). Then the whole sensor as the daemon calls
it (`run_folder_sensor`, on a SQLite instance holding the N partitions: the partition list
read from the instance, the folders scanned, the cursor compared), steady ticks, median
and range of --ticks of them, against the sensor's minimum interval.

    .venv/bin/python benchmarks/sensor_benchmark.py [--folders 5000] [--ticks 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from compiled import compile_package

from bench_pipeline.resources import PipelineSettings
from bench_pipeline.sensors.run_folder_sensor import MINIMUM_INTERVAL_SECONDS, evaluate_run_folders


def make_folders(root: Path, count: int) -> None:
    manifest = json.dumps({"status": "completed", "metrics_k": 1})
    row = json.dumps({"task_id": "t", "attempt": 1, "status": "passed"}) + "\n"
    for i in range(count):
        run = root / f"run-{i:06d}"
        run.mkdir()
        (run / "manifest.json").write_text(manifest)
        (run / "suite.json").write_text("{}")
        (run / "results.jsonl").write_text(row)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folders", type=int, default=5000)
    parser.add_argument("--ticks", type=int, default=5, help="steady ticks of the whole sensor")
    args = parser.parse_args()
    compile_package()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_folders(root, args.folders)
        settings = PipelineSettings(runs_root=str(root), output_root=str(root / "out"), storage_base=str(root / "s"))
        started = time.perf_counter()
        first = evaluate_run_folders(settings, None, [])
        first_s = time.perf_counter() - started
        existing = [k for req in first.dynamic_partitions_requests for k in req.partition_keys]
        started = time.perf_counter()
        steady = evaluate_run_folders(settings, first.cursor, existing)
        steady_s = time.perf_counter() - started
        assert not steady.run_requests
        print(f"{args.folders} run folders: first tick {first_s:.2f}s ({len(first.run_requests)} run requests, "
              f"{len(existing)} new partitions), "
              f"steady tick {steady_s:.2f}s (0 requests), cursor {len(first.cursor) / 1024:.0f} KiB")
        ticks = whole_sensor_ticks(settings, existing, first.cursor, args.ticks)
        print(f"{args.folders} run folders: the whole sensor on an instance, steady tick median "
              f"{statistics.median(ticks):.3f}s (range {min(ticks):.3f}-{max(ticks):.3f}s, {len(ticks)} ticks); "
              f"its minimum interval is {MINIMUM_INTERVAL_SECONDS} s (the daemon ticks it every 5 s)")


def whole_sensor_ticks(settings: PipelineSettings, partitions: list[str], cursor: str, ticks: int) -> list[float]:
    """Seconds of each of ``ticks`` steady ticks of ``run_folder_sensor`` itself."""
    import dagster as dg

    from bench_pipeline.partitions import runs_partitions
    from bench_pipeline.sensors import run_folder_sensor

    seconds = []
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(runs_partitions.name, partitions)
        for _ in range(ticks):
            with dg.build_sensor_context(instance=instance, cursor=cursor, resources={"settings": settings}) as ctx:
                started = time.perf_counter()
                result = run_folder_sensor(ctx)
                seconds.append(time.perf_counter() - started)
            assert not result.run_requests
    return seconds


if __name__ == "__main__":
    main()
