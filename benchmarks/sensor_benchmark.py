"""How long does one sensor tick take with thousands of run folders?

Creates N small ready run folders, then times the sensor's decision function for the
first tick (every folder new: manifests read, N run requests) and for a steady tick
(nothing changed: a few stat calls per folder).

    .venv/bin/python benchmarks/sensor_benchmark.py [--folders 5000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from bench_pipeline.resources import PipelineSettings
from bench_pipeline.sensors.run_folder_sensor import evaluate_run_folders


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
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
