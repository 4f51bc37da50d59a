"""What the reader's checks cost over orjson alone: every artifact of a generated run with long
histories parsed by ``artifacts.loads_json`` (a leading BOM removed, the nesting depth checked
on files with more than MAX_DEPTH brackets) against ``orjson.loads``, rounds alternating.

    .venv/bin/python benchmarks/parse_benchmark.py [--rounds 5] [--history-messages 200]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import orjson

from compiled import compile_package


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--history-messages", type=int, default=200)
    args = parser.parse_args()
    compile_package()
    from bench_pipeline.artifacts import MAX_DEPTH, loads_json
    from bench_pipeline.generator import generate_runs

    with tempfile.TemporaryDirectory() as tmp:
        generate_runs(Path(tmp), runs=1, seed=3, tasks=20, repeats=2, history_messages=args.history_messages,
                      edge_cases=False)
        files = [p.read_bytes() for p in sorted(Path(tmp).rglob("*.json"))]
    checked = sum(1 for b in files if b.count(b"[") + b.count(b"{") > MAX_DEPTH)

    def one_pass(parse) -> float:
        started = time.perf_counter()
        for _ in range(20):
            for data in files:
                parse(data)
        return (time.perf_counter() - started) / 20

    plain, ours = [], []
    for _ in range(args.rounds):
        plain.append(one_pass(orjson.loads))
        ours.append(one_pass(loads_json))
    ratios = [b / a for a, b in zip(plain, ours)]
    print(f"{len(files)} files, {sum(map(len, files)) / 1e6:.1f} MB, {checked} with more than {MAX_DEPTH} brackets")
    for name, times in (("orjson.loads", plain), ("artifacts.loads_json", ours)):
        print(f"{name}: {statistics.median(times) * 1000:.2f} ms a pass ({min(times) * 1000:.2f}-{max(times) * 1000:.2f})")
    print(f"ratio {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
