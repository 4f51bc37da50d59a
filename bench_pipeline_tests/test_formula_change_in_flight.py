"""A formula change with Dagster runs in flight side by side: the daemon (the local instance's
queue, two runs at a time, as scripts/ui.sh runs it) re-processes every run of one suite,
each in a Dagster run of its own, so a run is often processed while its baseline is being
processed in another Dagster run. Once the sensors are quiet, every run carries the new
formula version and every comparison was made from both runs' values at that version and
equals a `bench-pipeline compare` of the two run folders from scratch: no comparison mixes
formula versions (issue: "A formula change mixes formula versions in comparisons")."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

import bench_pipeline
from bench_pipeline.cli import main as cli_main
from bench_pipeline.formula import FORMULA_VERSION
from bench_pipeline.generator import generate_runs

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
BUMP = FORMULA_VERSION + "-bumped"
#: Seconds without a new or unfinished run before the sensors count as quiet (longer than the
#: comparison sensor's 10 s and the run folder sensor's 4 s).
QUIET = 25


def _environment(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCH_", "DAGSTER_", "LANGFUSE_"))}
    env.update({"BENCH_HOME": str(tmp_path / "data"), "DAGSTER_HOME": str(tmp_path / "home"),
                "BENCH_QUIET_SECONDS": "0"})
    return env


def _process_run_records(home: Path) -> list:
    """The process_run runs of the instance under ``home``, oldest first."""
    import dagster as dg
    from dagster._core.instance.ref import InstanceRef

    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:
        records = instance.get_run_records(dg.RunsFilter(job_name="process_run"))
    return sorted(records, key=lambda r: r.create_timestamp)


def _wait_until_quiet(home: Path, daemon: subprocess.Popen, log: Path, reports: Path, runs: list[str],
                      timeout: float = 480) -> list:
    """Every process_run run once all are finished, every run shows the new formula version
    and no run was added for QUIET seconds."""
    deadline, seen, since = time.monotonic() + timeout, None, time.monotonic()
    while time.monotonic() < deadline:
        assert daemon.poll() is None, log.read_text()[-3000:]
        records = _process_run_records(home)
        state = [(r.dagster_run.run_id, r.dagster_run.status.value) for r in records]
        if state != seen:
            seen, since = state, time.monotonic()
        elif (all(r.dagster_run.is_finished for r in records) and time.monotonic() - since >= QUIET
              and all(_formula(reports, run) == BUMP for run in runs)):
            return records
        time.sleep(1)
    raise AssertionError(f"runs did not settle in {timeout}s: {seen}\n{log.read_text()[-3000:]}")


def _formula(reports: Path, run: str) -> str | None:
    try:
        return json.loads((reports / run / "metrics.json").read_bytes())["formula_version"]
    except (OSError, ValueError):
        return None


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.mark.slow
def test_a_formula_change_processed_two_dagster_runs_at_a_time_leaves_no_mixed_comparison(tmp_path):
    env = _environment(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(ROOT / "deploy" / "dagster.local.yaml", home / "dagster.yaml")
    runs_root, reports = tmp_path / "data" / "runs", tmp_path / "data" / "reports"
    # Runs of 1,000 attempts: each takes a few seconds in its Dagster run, longer than the
    # daemon takes to launch the next one, so the queue's two slots hold two runs at once.
    runs = [p.name for p in generate_runs(runs_root, runs=6, seed=21, tasks=200, repeats=5, history_messages=4,
                                          edge_cases=False, layout="runner", systems=1)]
    done = subprocess.run([sys.executable, "-m", "bench_pipeline.main", "--no-samples"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert {_formula(reports, run) for run in runs} == {FORMULA_VERSION}
    processed_before = {r.dagster_run.run_id for r in _process_run_records(home)}

    # The code with another formula version (a copy of the package, as a deployment ships it),
    # served by the daemon's own code location; one run per Dagster run, two at a time.
    src = tmp_path / "src"
    shutil.copytree(Path(bench_pipeline.__file__).parent, src / "bench_pipeline",
                    ignore=shutil.ignore_patterns("__pycache__"))
    formula = src / "bench_pipeline" / "formula.py"
    formula.write_text(formula.read_text().replace(FORMULA_VERSION, BUMP))
    workspace = yaml.safe_load((ROOT / "workspace.yaml").read_text())
    workspace["load_from"][0]["python_module"]["working_directory"] = str(src)
    (tmp_path / "workspace.yaml").write_text(yaml.safe_dump(workspace))
    daemon_env = {**env, "PYTHONPATH": str(src), "BENCH_PARTITIONS_PER_RUN": "1"}
    log = tmp_path / "daemon.log"
    with open(log, "wb") as out:
        daemon = subprocess.Popen([str(BIN / "dagster-daemon"), "run", "-w", str(tmp_path / "workspace.yaml")],
                                  cwd=src, env=daemon_env, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        records = _wait_until_quiet(home, daemon, log, reports, runs)
    finally:
        _stop(daemon)

    after = [r for r in records if r.dagster_run.run_id not in processed_before]
    assert all(r.dagster_run.status.value == "SUCCESS" for r in after), [r.dagster_run.status for r in after]
    assert len(after) >= len(runs)
    # Two Dagster runs were in flight at once (the queue's limit), so baselines were being
    # processed while their successors were.
    spans = sorted((r.start_time, r.end_time) for r in after)
    assert any(later_start < end for (_, end), (later_start, _) in zip(spans, spans[1:])), [
        (round(start - spans[0][0], 1), round(end - spans[0][0], 1)) for start, end in spans]
    follow_ups = [r for r in after if r.dagster_run.tags.get("bench/trigger") == "baseline_changed"]
    print(f"\n{len(after)} Dagster runs after the change, {len(follow_ups)} of them comparisons made again")

    for baseline, candidate in zip(runs, runs[1:]):
        got = json.loads((reports / candidate / "comparison.json").read_bytes())
        assert got["baseline"]["run_id"] == baseline
        versions = [got["inputs"][side]["data_version"] for side in ("baseline", "candidate")]
        assert all(v.endswith("@" + BUMP) for v in versions), (candidate, versions)
        fresh_out = tmp_path / f"fresh-{candidate}"
        cli_main(["compare", str(runs_root / baseline), str(runs_root / candidate), "--output-dir", str(fresh_out)])
        fresh = json.loads((fresh_out / "comparison.json").read_bytes())
        assert {k: v for k, v in got.items() if k != "inputs"} == fresh, candidate
