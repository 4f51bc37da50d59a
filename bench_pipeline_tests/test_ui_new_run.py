"""With scripts/ui.sh running, a new run folder gets its report.html without anyone asking:
the run-folder sensor notices it, the daemon's queue launches the per-run job, the job writes
the reports. The bound here is generous so that a loaded CI machine does not fail it;
benchmarks/latency_benchmark.py measures the latency itself (docs/benchmarks.md). Then a pin
added, removed and added again: the comparison sensor has each state computed, the third
(the same as the first) too, since Dagster launches a run key only once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from bench_pipeline import local_instance
from bench_pipeline.generator import generate_runs

from .support.network import free_port

ROOT = Path(__file__).resolve().parents[1]
#: Seconds from the run's manifest.json (written last, status completed) to its report.html.
BOUND = 60


def _wait_until(condition, timeout: float, step: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return condition()


@pytest.mark.slow
def test_a_new_run_folder_gets_its_report_while_the_ui_runs(tmp_path):
    port = free_port()
    home, data = tmp_path / "home", tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCH_", "DAGSTER_", "LANGFUSE_"))}
    env.update({"BENCH_HOME": str(data), "DAGSTER_HOME": str(home)})
    log = tmp_path / "ui.log"
    ui = subprocess.Popen(["bash", "scripts/ui.sh", "-h", "127.0.0.1", "-p", str(port)], cwd=ROOT, env=env,
                          stdout=open(log, "wb"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                          start_new_session=True)
    try:
        def answers() -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=5):
                    return True
            except OSError:
                return False

        assert _wait_until(answers, 180, 0.5), "the webserver did not answer:\n" + log.read_text()[-3000:]
        # scripts/instance.sh gave the new instance the project's settings, stamped.
        source = (ROOT / "deploy" / "dagster.local.yaml").read_text()
        assert (home / "dagster.yaml").read_text() == local_instance.stamped(source)
        # The sample runs ui.sh wrote into the empty runs root are processed first: the new
        # run then has the queue to itself.
        samples = sorted((data / "runs").iterdir())
        assert samples
        assert _wait_until(lambda: all((data / "reports" / s.name / "report.html").is_file() for s in samples),
                           240, 0.5), "the sample runs were not processed:\n" + log.read_text()[-3000:]

        generate_runs(data / "runs", runs=1, seed=4242, tasks=12, repeats=3, history_messages=30,
                      edge_cases=False, id_prefix="arrived-")
        (run,) = [p for p in (data / "runs").iterdir() if p.name.startswith("arrived-")]
        ready = (run / "manifest.json").stat().st_mtime
        report = data / "reports" / run.name / "report.html"
        assert _wait_until(report.is_file, BOUND + 30, 0.1), (
            f"no report.html for {run.name} {BOUND + 30} s after it was ready:\n" + log.read_text()[-3000:])
        assert report.stat().st_mtime - ready <= BOUND
        # metrics.json and summary.md are written by a child process beside report.html, so on
        # a loaded machine they may land a moment after it.
        for name in ("metrics.json", "summary.md"):
            assert _wait_until((data / "reports" / run.name / name).is_file, 30, 0.1), name

        import dagster as dg

        instance = dg.DagsterInstance.from_config(str(home))
        (record,) = instance.get_run_records(dg.RunsFilter(tags={"dagster/partition": run.name}))
        assert record.dagster_run.tags["dagster/sensor_name"] == "run_folder_sensor"
        assert record.dagster_run.tags["bench/trigger"] == "new"

        # The new run (another platform than the samples') has no baseline; pinned to the first
        # sample it is compared with it, unpinned it is not, pinned again it is again.
        out = data / "reports" / run.name
        assert "no comparison: no earlier processed run of suite" in (out / "summary.md").read_text()
        pins, pinned = data / "baselines.json", samples[0].name
        suite = json.loads((out / "metrics.json").read_bytes())["suite"]

        def compared_with() -> str | None:
            try:
                return json.loads((out / "comparison.json").read_bytes())["baseline"]["run_id"]
            except (OSError, ValueError):
                return None

        def comparisons() -> int:
            return len(instance.fetch_materializations(dg.AssetRecordsFilter(
                dg.AssetKey("run_comparison"), asset_partitions=[run.name]), limit=100).records)

        # its processing records its stages (run_comparison among them) after writing the reports:
        # counted once its Dagster run is over
        assert _wait_until(lambda: instance.get_run_by_id(record.dagster_run.run_id).status
                           == dg.DagsterRunStatus.SUCCESS, 120, 0.5), log.read_text()[-3000:]
        made = comparisons()
        assert made == 1
        for step, expected in enumerate((pinned, None, pinned), start=1):
            if expected is None:
                pins.unlink()
            else:
                pins.write_text(json.dumps({suite: expected}))
            assert _wait_until(lambda: comparisons() == made + step and compared_with() == expected, 180, 0.5), (
                f"step {step}: compared with {compared_with()!r}, {comparisons() - made} comparison(s) made:\n"
                + log.read_text()[-3000:])
            assert ("Compared with" in (out / "summary.md").read_text()) == (expected is not None)
        (first, _, third) = instance.get_run_records(dg.RunsFilter(tags={
            "dagster/partition": run.name, "dagster/sensor_name": "comparison_sensor"}), ascending=True)
        assert first.dagster_run.tags["dagster/run_key"].split("#")[0] == third.dagster_run.tags[
            "dagster/run_key"].split("#")[0]  # the same state, requested twice
    finally:
        if ui.poll() is None:
            ui.send_signal(signal.SIGTERM)
            try:
                ui.wait(timeout=40)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(ui.pid, signal.SIGKILL)  # what is left of this test's own session
        except (ProcessLookupError, PermissionError):
            pass
