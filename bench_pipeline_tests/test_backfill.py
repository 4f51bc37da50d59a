"""Backfill after a formula change, as a user does it: edit the constant, run the CLI backfill.

A copy of the package is materialized for several runs through `dagster job backfill`,
then its FORMULA_VERSION is changed: every run's formula-dependent assets become stale,
and one more `dagster job backfill ... --all` rewrites every metrics.json with the new
version.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest

import bench_pipeline
from bench_pipeline.formula import FORMULA_VERSION

from .run_builder import make_run, row

pytestmark = pytest.mark.slow

RUNS = ["run-1", "run-2", "run-3"]
DAGSTER = str(Path(sys.executable).with_name("dagster"))

STALE_PROBE = """
import json, sys
import dagster as dg
from dagster._utils.test.data_versions import get_stale_status_resolver
from bench_pipeline.definitions import defs
instance = dg.DagsterInstance.get()
assets = list(defs.resolve_asset_graph().assets_defs)
resolver = get_stale_status_resolver(instance, assets)
out = {}
for key in sys.argv[1:]:
    out[key] = {name: resolver.get_status(dg.AssetKey(name), key).value
                for name in ("raw_results", "attempt_metrics", "capability_aggregates")}
print(json.dumps(out))
"""


def _env(tmp: Path) -> dict:
    env = dict(os.environ)
    env.update({
        "DAGSTER_HOME": str(tmp / "home"),
        "BENCH_RUNS_ROOT": str(tmp / "runs"),
        "BENCH_OUTPUT_ROOT": str(tmp / "reports"),
        "BENCH_STORAGE_BASE": str(tmp / "storage"),
        "PYTHONPATH": str(tmp / "src"),
    })
    return env


def _backfill(tmp: Path, env: dict) -> None:
    """`dagster job backfill --all` and wait until its runs have finished."""
    instance = dg.DagsterInstance.from_config(str(tmp / "home"))
    before = len(instance.get_runs())
    subprocess.run(
        [DAGSTER, "job", "backfill", "-w", "workspace.yaml", "-j", "process_run", "--all", "--noprompt"],
        cwd=tmp / "src", env=env, check=True, capture_output=True, timeout=300,
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        runs = instance.get_runs()
        new = runs[: len(runs) - before]
        if len(new) == len(RUNS) and all(r.is_finished for r in new):
            assert all(r.is_success for r in new), [(r.run_id, r.status) for r in new]
            return
        time.sleep(1)
    raise AssertionError("backfill runs did not finish in time")


def _stale(tmp: Path, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", STALE_PROBE, *RUNS], cwd=tmp / "src", env=env,
                         check=True, capture_output=True, text=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _versions(tmp: Path) -> set[str]:
    return {json.loads((tmp / "reports" / r / "metrics.json").read_text())["formula_version"] for r in RUNS}


def test_formula_change_makes_runs_stale_and_backfill_reprocesses_all(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(Path(bench_pipeline.__file__).parent, src / "bench_pipeline",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (src / "workspace.yaml").write_text(
        "load_from:\n  - python_module:\n      module_name: bench_pipeline.definitions\n      working_directory: .\n"
    )
    (tmp_path / "home").mkdir()
    # Launch backfill runs at once (the deployed queue, which needs a daemon, has its own test).
    (tmp_path / "home" / "dagster.yaml").write_text(
        "run_coordinator:\n  module: dagster.core.run_coordinator\n  class: DefaultRunCoordinator\n"
        "telemetry:\n  enabled: false\n"
    )
    for run_id in RUNS:
        make_run(tmp_path / "runs", [row("a"), row("b", status="failed")], run_id=run_id)
    env = _env(tmp_path)
    instance = dg.DagsterInstance.from_config(str(tmp_path / "home"))
    instance.add_dynamic_partitions("benchmark_runs", RUNS)

    _backfill(tmp_path, env)
    assert _versions(tmp_path) == {FORMULA_VERSION}
    assert all(s == "FRESH" for run in _stale(tmp_path, env).values() for s in run.values())

    formula = src / "bench_pipeline" / "formula.py"
    formula.write_text(formula.read_text().replace(FORMULA_VERSION, "test-bump"))
    stale = _stale(tmp_path, env)
    assert all(s == "STALE" for run in stale.values() for s in run.values()), stale

    _backfill(tmp_path, env)
    assert _versions(tmp_path) == {"test-bump"}
    assert all(s == "FRESH" for run in _stale(tmp_path, env).values() for s in run.values())
    for run_id in RUNS:
        event = instance.get_latest_materialization_event(dg.AssetKey("capability_aggregates"))
        assert event.asset_materialization.tags["dagster/code_version"] == "test-bump"
