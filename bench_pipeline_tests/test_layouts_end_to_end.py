"""The same generated runs in the flat layout and in the runner's give the same outputs on
every path users take: `bench-pipeline process`, both forms of `compare`, `repeats`, and the
Dagster job of the main command (per-run files, comparisons with the default baseline, each
system's repeats). Over several seeds with the generator's edge cases on; what differs by
construction (the raw artifact_dir text, the runner's attempt_<n> folder names, the results
file read, the time written) is normalized by support.layout_compare, nothing else."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench_pipeline.cli import main as cli_main
from bench_pipeline.generator import generate_runs

from .support.layout_compare import comparable

ROOT = Path(__file__).resolve().parents[1]
OUTPUT_FILES = ("metrics.json", "attempts.jsonl", "comparison.json", "repeats.json")


def _documents(folder: Path) -> dict[str, object]:
    """Every JSON output below ``folder`` (by its path relative to it), parsed and made comparable."""
    docs: dict[str, object] = {}
    for path in sorted(folder.rglob("*")):
        if path.name not in OUTPUT_FILES:
            continue
        key = str(path.relative_to(folder))
        if path.suffix == ".jsonl":
            docs[key] = [comparable(json.loads(line)) for line in path.read_bytes().splitlines()]
        else:
            docs[key] = comparable(json.loads(path.read_bytes()))
    return docs


def _both(tmp_path: Path, **kwargs) -> tuple[list[Path], list[Path]]:
    flat = generate_runs(tmp_path / "flat" / "runs", **kwargs)
    runner = generate_runs(tmp_path / "runner" / "runs", **kwargs, layout="runner")
    assert [p.name for p in flat] == [p.name for p in runner]
    return flat, runner


def _cli(*args: str) -> int:
    return cli_main(list(args))


@pytest.mark.parametrize("seed", [3, 11, 29, 47])
def test_the_command_line_gives_the_same_outputs_for_both_layouts(tmp_path, seed, capsys):
    flat, runner = _both(tmp_path, runs=4, seed=seed, tasks=4, repeats=2, history_messages=8, systems=2)
    outputs: dict[str, dict] = {}
    for layout, runs in (("flat", flat), ("runner", runner)):
        out = tmp_path / layout / "out"
        for run in runs:
            assert _cli("process", str(run), "--output-dir", str(out / "process" / run.name)) == 0
        # the pair form (runs 0 and 2: one system), the set form and repeats of that system
        codes = (_cli("compare", str(runs[0]), str(runs[2]), "--output-dir", str(out / "pair")),
                 _cli("compare", "--baseline", str(runs[0]), "--baseline", str(runs[2]), "--candidate", str(runs[1]),
                      "--candidate", str(runs[3]), "--output-dir", str(out / "sets")),
                 _cli("repeats", str(runs[0]), str(runs[2]), "--output-dir", str(out / "repeats")))
        outputs[layout] = {"codes": codes, "docs": _documents(out)}
    capsys.readouterr()
    assert outputs["runner"]["codes"] == outputs["flat"]["codes"]
    flat_docs, runner_docs = outputs["flat"]["docs"], outputs["runner"]["docs"]
    assert sorted(runner_docs) == sorted(flat_docs)
    assert {"pair/comparison.json", "sets/comparison.json", "repeats/repeats.json"} <= set(flat_docs)
    for name in flat_docs:
        assert runner_docs[name] == flat_docs[name], name


def _main(env: dict) -> str:
    done = subprocess.run([sys.executable, "-m", "bench_pipeline.main", "--no-samples"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
def test_the_dagster_job_gives_the_same_outputs_for_both_layouts(tmp_path):
    """The main command's Dagster job (sensor readiness, the stages, comparisons with the
    default baseline, the catalog refresh's repeats) on each layout's runs root."""
    _both(tmp_path, runs=5, seed=17, tasks=5, repeats=2, history_messages=8, systems=2)
    docs = {}
    for layout in ("flat", "runner"):
        base = tmp_path / layout
        env = {**os.environ, "BENCH_HOME": str(base), "DAGSTER_HOME": str(base / "home"),
               "BENCH_QUIET_SECONDS": "0"}
        for var in ("BENCH_RUNS_ROOT", "BENCH_OUTPUT_ROOT", "BENCH_STORAGE_BASE", "LANGFUSE_PUBLIC_KEY",
                    "LANGFUSE_SECRET_KEY", "LANGFUSE_BASE_URL", "LANGFUSE_HOST"):
            env.pop(var, None)
        (base / "home").mkdir()
        shutil.copy(ROOT / "deploy" / "dagster.local.yaml", base / "home" / "dagster.yaml")
        assert "catalog: ok" in _main(env)
        docs[layout] = _documents(base / "reports")
    flat_docs, runner_docs = docs["flat"], docs["runner"]
    assert sorted(runner_docs) == sorted(flat_docs)
    assert sum(name.endswith("comparison.json") for name in flat_docs) == 4  # every run but the first of the suite
    assert sum(name.endswith("repeats.json") for name in flat_docs) == 2
    for name in flat_docs:
        assert runner_docs[name] == flat_docs[name], name
