"""Repeated runs end to end through Dagster: generated runs of two systems processed by the
main command, whose catalog refresh writes every system's repeats and the suite page; the
repeats equal `bench-pipeline repeats` on the same folders; a second command changes
nothing; a new run refreshes them once more."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import dagster as dg
import pytest

from bench_pipeline.generator import generate_runs
from bench_pipeline.generator.world import BASE_TIME
from bench_pipeline.system_folders import suite_slug

ROOT = Path(__file__).resolve().parents[1]


def _main(env):
    done = subprocess.run([sys.executable, "-m", "bench_pipeline.main", "--no-samples"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done.stdout


def _files(root: Path) -> dict[Path, tuple[bytes, int]]:
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(root.glob("_*/**/*")) if p.is_file()}


def _count(home: Path, asset: str) -> int:
    instance = dg.DagsterInstance.from_config(str(home))
    return len(instance.fetch_materializations(dg.AssetKey(asset), limit=100).records)


@pytest.mark.slow
def test_main_command_writes_every_systems_repeats_and_the_suite_page(tmp_path):
    env = {**os.environ, "BENCH_HOME": str(tmp_path / "data"), "DAGSTER_HOME": str(tmp_path / "home")}
    for var in ("BENCH_RUNS_ROOT", "BENCH_OUTPUT_ROOT", "BENCH_STORAGE_BASE", "LANGFUSE_PUBLIC_KEY",
                "LANGFUSE_SECRET_KEY", "LANGFUSE_BASE_URL", "LANGFUSE_HOST"):
        env.pop(var, None)
    (tmp_path / "home").mkdir()
    shutil.copy(ROOT / "deploy" / "dagster.local.yaml", tmp_path / "home" / "dagster.yaml")
    runs_root, reports = tmp_path / "data" / "runs", tmp_path / "data" / "reports"
    folders = generate_runs(runs_root, runs=5, seed=21, tasks=8, repeats=2, history_messages=8, systems=2)

    out = _main(env)
    assert "catalog: ok" in out
    docs = {p.parent.name: json.loads(p.read_text()) for p in (reports / "_systems").glob("*/repeats.json")}
    assert sorted(len(d["runs"]) for d in docs.values()) == [2, 3]  # runs 0, 2, 4 and 1, 3
    (suite,) = {d["system"]["suite"] for d in docs.values()}
    page = (reports / "_suites" / suite_slug(suite) / "index.html").read_text()
    assert page.lstrip().lower().startswith("<!doctype html") and all(f.name in page for f in folders)
    for slug in docs:
        assert (reports / "_systems" / slug / "repeats.md").is_file()

    # the asset's numbers, from the stored frames, are the command line's, from the folders
    three = next(d for d in docs.values() if len(d["runs"]) == 3)
    cli_out = tmp_path / "cli"
    done = subprocess.run([sys.executable, "-m", "bench_pipeline.cli", "repeats",
                           *(str(runs_root / r["run_id"]) for r in three["runs"]), "--output-dir", str(cli_out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads((cli_out / "repeats.json").read_text()) == three

    # nothing new: nothing refreshed, not a byte (nor a file time) changed
    before = _files(reports)
    assert "catalog: up to date" in _main(env)
    assert _files(reports) == before
    assert (_count(tmp_path / "home", "system_repeats"), _count(tmp_path / "home", "suite_pages")) == (1, 1)

    # a new run of the first system (two days later: the same seed at the same start would write
    # a byte-identical copy of its first run, one measurement): one more refresh, the system pools four runs
    (late,) = generate_runs(runs_root, runs=1, seed=21, tasks=8, repeats=2, history_messages=8, systems=2,
                            id_prefix="late-", start=BASE_TIME + timedelta(days=2))
    assert "catalog: ok" in _main(env)
    docs = {p.parent.name: json.loads(p.read_text()) for p in (reports / "_systems").glob("*/repeats.json")}
    assert sorted(len(d["runs"]) for d in docs.values()) == [2, 4]
    assert late.name in (reports / "_suites" / suite_slug(suite) / "index.html").read_text()
    assert (_count(tmp_path / "home", "system_repeats"), _count(tmp_path / "home", "suite_pages")) == (2, 2)
