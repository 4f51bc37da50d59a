"""Backfill after a formula change, as a user does it: edit the constant, run the backfill.

A copy of the package is materialized for several runs through `bench-pipeline backfill`
(one asset backfill, run by a Dagster daemon in one Dagster run), then its FORMULA_VERSION
is changed: every run's formula-dependent assets become stale, the catalog sensor
refreshes the run catalog at once to list every run as behind the new version, and one
more backfill rewrites every metrics.json with the new version. After each backfill the
catalog sensor refreshes the run catalog, which then shows every run with the new version
and none behind.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
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


def _backfill(tmp: Path, env: dict, daemon_up: bool = False) -> str:
    """`bench-pipeline backfill` (one asset backfill of every run partition), run by the
    daemon; waits until it has finished and returns its id. ``daemon_up``: the daemon has
    been running a while (heartbeats written), so the command says nothing of it."""
    instance = dg.DagsterInstance.from_config(str(tmp / "home"))
    before = {b.backfill_id for b in instance.get_backfills()}
    done = subprocess.run([sys.executable, "-m", "bench_pipeline.cli", "backfill"], cwd=tmp / "src", env=env,
                          check=True, capture_output=True, text=True, timeout=120)
    if daemon_up:
        assert "no Dagster daemon" not in done.stdout, done.stdout
    (backfill,) = [b for b in instance.get_backfills() if b.backfill_id not in before]
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        backfill = instance.get_backfill(backfill.backfill_id)
        if backfill.status.value.startswith(("COMPLETED", "FAILED", "CANCELED")):
            assert backfill.status.value == "COMPLETED_SUCCESS", backfill.status
            return backfill.backfill_id
        time.sleep(1)
    raise AssertionError("the backfill did not finish in time")


def _backfill_runs(tmp: Path, backfill_id: str) -> list:
    instance = dg.DagsterInstance.from_config(str(tmp / "home"))
    return instance.get_runs(dg.RunsFilter(tags={"dagster/backfill": backfill_id}))


def _stale(tmp: Path, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", STALE_PROBE, *RUNS], cwd=tmp / "src", env=env,
                         check=True, capture_output=True, text=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _versions(tmp: Path) -> set[str]:
    return {json.loads((tmp / "reports" / r / "metrics.json").read_text())["formula_version"] for r in RUNS}


CATALOG_PROBE = """
import json
import dagster as dg
from bench_pipeline.definitions import defs
frame = defs.load_asset_value("run_catalog", instance=dg.DagsterInstance.get())
print(json.dumps(dict(zip(frame["run_id"], frame["formula_version"]))))
"""


def _catalog_after(tmp: Path, env: dict, since: float, version: str) -> dict:
    """The catalog {run_id: formula version} once the catalog sensor has refreshed it after
    ``since`` with every run at ``version``."""
    instance = dg.DagsterInstance.from_config(str(tmp / "home"))
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        refreshed = [r for r in instance.get_run_records(dg.RunsFilter(job_name="refresh_catalog"))
                     if r.end_time and r.end_time > since and r.dagster_run.is_success]
        if refreshed:
            out = subprocess.run([sys.executable, "-c", CATALOG_PROBE], cwd=tmp / "src", env=env, check=False,
                                 capture_output=True, text=True, timeout=120)
            # its output when it does not end well (it once died of SIGABRT in CI, saying nothing)
            assert out.returncode == 0, f"catalog probe exited {out.returncode}: {out.stderr[-3000:]}"
            catalog = json.loads(out.stdout.strip().splitlines()[-1])
            if catalog == {run_id: version for run_id in RUNS}:
                return catalog
        time.sleep(2)
    raise AssertionError("the catalog sensor did not refresh the catalog in time")


def _catalog_metadata(tmp: Path) -> dict:
    instance = dg.DagsterInstance.from_config(str(tmp / "home"))
    record = instance.fetch_materializations(dg.AssetKey("run_catalog"), limit=1).records[0]
    return {k: v.value for k, v in record.asset_materialization.metadata.items()}


def _catalog_refreshed_after(tmp: Path, since: float) -> dict:
    """run_catalog's metadata once the catalog sensor has refreshed it after ``since``."""
    instance = dg.DagsterInstance.from_config(str(tmp / "home"))
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if any(r.end_time and r.end_time > since and r.dagster_run.is_success
               for r in instance.get_run_records(dg.RunsFilter(job_name="refresh_catalog"))):
            return _catalog_metadata(tmp)
        time.sleep(2)
    raise AssertionError("the catalog sensor did not refresh the catalog after the formula change in time")


@pytest.fixture()
def daemon(tmp_path):
    """A Dagster daemon on the test's instance, with the run-folder sensor stopped (the test
    decides which runs are requested); the catalog sensor runs."""
    env = _env(tmp_path)
    running = {}

    def stop() -> None:
        proc = running.pop("proc", None)
        if proc is not None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)

    def start() -> None:
        """(Re)start the daemon: a deployment restarts it to load changed definitions."""
        stop()
        subprocess.run([DAGSTER, "sensor", "stop", "-w", "workspace.yaml", "run_folder_sensor"],
                       cwd=tmp_path / "src", env=env, check=True, capture_output=True, timeout=120)
        running["proc"] = subprocess.Popen(
            [str(Path(sys.executable).with_name("dagster-daemon")), "run", "-w", "workspace.yaml"],
            cwd=tmp_path / "src", env=env, stdout=open(tmp_path / "daemon.log", "wb"), stderr=subprocess.STDOUT,
            start_new_session=True)

    yield start
    stop()


def test_formula_change_makes_runs_stale_and_backfill_reprocesses_all(tmp_path, daemon):
    src = tmp_path / "src"
    shutil.copytree(Path(bench_pipeline.__file__).parent, src / "bench_pipeline",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (src / "workspace.yaml").write_text(
        "load_from:\n  - python_module:\n      module_name: bench_pipeline.definitions\n      working_directory: .\n"
    )
    (tmp_path / "home").mkdir()
    # Launch backfill runs at once (the deployed queue has its own test).
    (tmp_path / "home" / "dagster.yaml").write_text(
        "run_coordinator:\n  module: dagster.core.run_coordinator\n  class: DefaultRunCoordinator\n"
        "telemetry:\n  enabled: false\n"
    )
    for run_id in RUNS:
        make_run(tmp_path / "runs", [row("a"), row("b", status="failed")], run_id=run_id)
    env = _env(tmp_path)
    instance = dg.DagsterInstance.from_config(str(tmp_path / "home"))
    instance.add_dynamic_partitions("benchmark_runs", RUNS)
    daemon()

    started = time.time()
    first = _backfill(tmp_path, env)
    assert len(_backfill_runs(tmp_path, first)) == 1  # every partition in one Dagster run
    assert _versions(tmp_path) == {FORMULA_VERSION}
    assert all(s == "FRESH" for run in _stale(tmp_path, env).values() for s in run.values())
    assert _catalog_after(tmp_path, env, started, FORMULA_VERSION)  # the catalog followed the runs
    meta = _catalog_metadata(tmp_path)
    assert (meta["formula_version"], meta["runs_behind_formula"]) == (FORMULA_VERSION, 0)

    formula = src / "bench_pipeline" / "formula.py"
    formula.write_text(formula.read_text().replace(FORMULA_VERSION, "test-bump"))
    stale = _stale(tmp_path, env)
    assert all(s == "STALE" for run in stale.values() for s in run.values()), stale

    restarted = time.time()
    daemon()  # the running daemon has the old definitions: restart it, as a deployment does
    # before anything is re-processed, the catalog is refreshed and names every run as behind
    meta = _catalog_refreshed_after(tmp_path, restarted)
    assert (meta["formula_version"], meta["runs_behind_formula"]) == ("test-bump", 3)
    assert [line for line in meta["runs_behind_formula_list"].splitlines() if line.startswith("| run-")] == [
        f"| {run_id} | suite-x | {FORMULA_VERSION} |" for run_id in RUNS]
    started = time.time()
    second = _backfill(tmp_path, env, daemon_up=True)
    assert len(_backfill_runs(tmp_path, second)) == 1
    assert _versions(tmp_path) == {"test-bump"}
    assert all(s == "FRESH" for run in _stale(tmp_path, env).values() for s in run.values())
    for run_id in RUNS:
        event = instance.get_latest_materialization_event(dg.AssetKey("capability_aggregates"))
        assert event.asset_materialization.tags["dagster/code_version"] == "test-bump"
    assert _catalog_after(tmp_path, env, started, "test-bump")
    meta = _catalog_metadata(tmp_path)
    assert (meta["formula_version"], meta["runs_behind_formula"]) == ("test-bump", 0)

    # nothing changed since: a backfill (the README's "re-process every run") derives every run
    # again and ends a success (``_backfill``: COMPLETED_SUCCESS). Before, a run already current
    # had only its comparison and reports made again, and the backfill, missing its other
    # stages, marked them failed.
    before = {run_id: _materializations(instance, run_id) for run_id in RUNS}
    third = _backfill(tmp_path, env, daemon_up=True)
    assert len(_backfill_runs(tmp_path, third)) == 1
    assert all(_materializations(instance, run_id) == before[run_id] + 1 for run_id in RUNS)


def _materializations(instance: dg.DagsterInstance, run_id: str) -> int:
    """How many times the run's capability_aggregates partition was materialized."""
    return len(instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("capability_aggregates"), asset_partitions=[run_id]),
        limit=100).records)


def test_backfill_without_a_daemon_says_nothing_runs_it_yet(tmp_path):
    """With no daemon on the instance, the backfill is launched (a daemon started later runs
    it) and the command says that nothing runs it yet, and what to start; its link says where
    the UI's port comes from, not a port it cannot know."""
    root = Path(bench_pipeline.__file__).resolve().parents[1]
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home"), "BENCH_HOME": str(tmp_path / "data")}
    (tmp_path / "home").mkdir()
    dg.DagsterInstance.from_config(str(tmp_path / "home")).add_dynamic_partitions("benchmark_runs", ["r1"])
    done = subprocess.run([sys.executable, "-m", "bench_pipeline.cli", "backfill"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    launched, note = done.stdout.splitlines()
    (backfill,) = dg.DagsterInstance.from_config(str(tmp_path / "home")).get_backfills()
    assert launched == (f"backfill {backfill.backfill_id} launched over every run partition; a Dagster daemon "
                        f"runs it (UI: Overview -> Backfills, or http://127.0.0.1:<port>/runs/b/{backfill.backfill_id} "
                        "with the UI's port: 3000, the -p given to scripts/ui.sh, or the one Dagster named when "
                        "3000 was in use)")
    assert note.startswith(f"warning: no Dagster daemon is running on the instance {tmp_path / 'home'} "
                           f"(no daemon heartbeat in the last 120 s; never), so nothing runs the backfill yet.")
