"""The main command end to end, then the Dagster UI's server on the same instance."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import dagster as dg
import pytest

from bench_pipeline.assets.cross_run import catalog_behind
from bench_pipeline.assets.run_stages import up_to_date
from bench_pipeline.data_quality import data_quality_findings
from bench_pipeline.formula import FORMULA_VERSION
from bench_pipeline.main_output import unchanged_lines
from bench_pipeline.sample_runs import SAMPLES
from bench_pipeline.partitions import runs_partitions
from bench_pipeline.resources import PipelineSettings
from bench_pipeline.sensors.run_folder_sensor import evaluate_run_folders

from .run_builder import make_run, row
from .support.network import free_port

ROOT = Path(__file__).resolve().parents[1]

ASSETS_QUERY = """
{ assetNodes { assetKey { path } }
  assetOrError(assetKey: {path: ["capability_aggregates"]}) {
    ... on Asset { assetMaterializations(limit: 100) { partition } } } }
"""


def _graphql(port: int, query: str) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql", data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["data"]


def test_unchanged_runs_are_named_one_by_one_up_to_twenty_then_counted():
    keys = [f"run-{i:02d}" for i in range(25)]
    assert unchanged_lines(keys[:20]) == [
        f"run-{i:02d}: unchanged since it was processed with formula {FORMULA_VERSION}: skipped" for i in range(20)]
    assert unchanged_lines(keys) == [
        f"25 runs unchanged since they were processed with formula {FORMULA_VERSION}: skipped (run-00 ... run-24)"]
    assert unchanged_lines([]) == []


def test_run_sh_help_names_the_script_and_its_options(capsys):
    from bench_pipeline.main import main

    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    said = capsys.readouterr().out
    assert said.startswith("usage: scripts/run.sh [-h] [--no-samples] [--prepare-ui]")
    words = " ".join(said.split())  # as wrapped to the terminal
    assert "main.py" not in said and "Process every ready run folder under the runs root" in words
    assert "--no-samples do not write sample runs when the runs root holds no run folder" in words
    assert "--prepare-ui only write the sample runs" in words


#: The main command with another formula version, as after a change of FORMULA_VERSION: set
#: before any module reads it (the worker processes keep the real one: only the data versions
#: the step records, and the command's words, matter here).
BUMPED_MAIN = """
import sys
import bench_pipeline.formula
bench_pipeline.formula.FORMULA_VERSION = "test-bump"
from bench_pipeline.main import main
sys.exit(main(["--no-samples"]))
"""


def _stops_and_the_ui_warns(env: dict, said: str) -> None:
    """A runs root the main command refuses (``said``): it exits 2 with the message on stderr,
    removing no run; scripts/ui.sh's preparation says it as a warning and lets the UI start."""
    done = subprocess.run([sys.executable, "-m", "bench_pipeline.main"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert (done.returncode, done.stderr) == (2, f"error: {said}\n"), done.stdout[-2000:] + done.stderr[-2000:]
    assert "its folder is gone" not in done.stdout
    done = subprocess.run([sys.executable, "-m", "bench_pipeline.main", "--prepare-ui"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert (done.returncode, done.stderr) == (0, ""), done.stdout[-2000:] + done.stderr[-2000:]
    assert (f"warning: {said}. The UI starts all the same; the run folder sensor's ticks fail with this message, "
            "removing no run, until that changes.") in done.stdout


@pytest.mark.slow
def test_main_says_what_it_skips_what_waits_and_why_it_processes_a_run_again(tmp_path):
    """A folder that is not a run is named, once; a run whose manifest.json is not valid JSON
    waits as a legacy run, and the command says so; after a formula change every run is
    processed again "formula changed from X to Y", and a run whose folder changed says that."""
    runs = tmp_path / "runs"
    for run_id in ("run-1", "run-2"):
        make_run(runs, [row("a"), row("b", status="failed")], run_id=run_id)
    broken = make_run(runs, [row("a")], run_id="run-broken-manifest")
    (broken / "manifest.json").write_text('{"status": "completed",')
    (runs / "notes").mkdir()
    make_run(runs, [row("a")], run_id="L" * 250)  # too long for its stored files' names
    env = {**os.environ, "BENCH_HOME": str(tmp_path / "data"), "BENCH_RUNS_ROOT": str(runs),
           "DAGSTER_HOME": str(tmp_path / "home")}
    for var in ("BENCH_OUTPUT_ROOT", "BENCH_STORAGE_BASE", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        env.pop(var, None)
    (tmp_path / "home").mkdir()
    shutil.copy(ROOT / "deploy" / "dagster.local.yaml", tmp_path / "home" / "dagster.yaml")

    def run_main(*args: str) -> list[str]:
        done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        return done.stdout.splitlines()

    first = run_main("-m", "bench_pipeline.main", "--no-samples")
    assert first.count("no results.jsonl, so not a run folder (or not one yet), skipped (1): notes") == 1
    assert f"{'L' * 250}: not processed: its name is 250 bytes long: the stored values of a run are files named " \
           "<run id>.parquet, so a run id fits in at most 247 bytes; rename the folder" in first
    (waiting,) = [line for line in first if line.startswith("not ready yet")]
    assert waiting.startswith("not ready yet, left for later (1): run-broken-manifest: its manifest.json is "
                              "unreadable (not valid JSON (")
    assert waiting.endswith("): with no status to say whether the run is finished, it is taken for a legacy run "
                            "(no manifest status), ready once its results file has been quiet for "
                            "BENCH_QUIET_SECONDS=300 s; its report will list the broken manifest under data quality")
    assert not [line for line in first if "processing it again" in line]  # new runs: nothing to explain

    results = runs / "run-1" / "results.jsonl"
    results.write_text(results.read_text() + json.dumps(row("c")) + "\n")
    again = run_main("-c", BUMPED_MAIN)
    assert (f"run-1: its folder changed since it was processed (manifest.json, suite.json or its results file); "
            f"formula changed from {FORMULA_VERSION} to test-bump: processing it again") in again
    assert f"run-2: formula changed from {FORMULA_VERSION} to test-bump: processing it again" in again
    assert len([line for line in again if ": ok (" in line]) == 2

    # the runs root mistyped (or its mount point missing): an error on stderr, no sample run written there,
    # no run removed; scripts/ui.sh's preparation says it and lets the UI start
    env["BENCH_RUNS_ROOT"] = str(tmp_path / "runs-typo")
    said = (f"the runs root {tmp_path / 'runs-typo'} cannot be listed: no such folder, and 2 run(s) processed "
            "before are known: none is removed; check BENCH_RUNS_ROOT (a missing mount point?); if every run was "
            "removed on purpose, delete the runs' partitions (in the UI: an asset's page, Delete partitions) or "
            "start from a new instance (an empty DAGSTER_HOME)")
    _stops_and_the_ui_warns(env, said)
    assert not (tmp_path / "runs-typo").exists()
    # an empty runs root (an empty mount point), here the default one, where sample runs would go on a
    # new instance: the command stops, removing no run and writing no sample; the UI starts, saying why
    # its sensor's ticks fail (its runs' partitions can be deleted there)
    del env["BENCH_RUNS_ROOT"]
    empty = tmp_path / "data" / "runs"
    empty.mkdir(parents=True)
    said = (f"the runs root {empty} holds no run folder: 2 run(s) processed before are known: none is removed; "
            "check BENCH_RUNS_ROOT (an empty mount point? a bucket prefix with a typo?); if every run was removed "
            "on purpose, delete the runs' partitions (in the UI: an asset's page, Delete partitions) or start "
            "from a new instance (an empty DAGSTER_HOME)")
    _stops_and_the_ui_warns(env, said)
    assert list(empty.iterdir()) == []  # no sample run written into it
    with dg.DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        assert sorted(instance.get_dynamic_partitions(runs_partitions.name)) == ["run-1", "run-2"]
        # the runs removed on purpose: their partitions deleted, as the UI's "Delete partitions" does
        for key in instance.get_dynamic_partitions(runs_partitions.name):
            instance.delete_dynamic_partition(runs_partitions.name, key)
    pages = list((tmp_path / "data" / "reports" / "_suites").glob("*/index.html"))
    assert len(pages) == 1
    # the runs root is then just empty, and the catalog follows at once: no run in it, no suite page left
    done = subprocess.run([sys.executable, "-m", "bench_pipeline.main", "--no-samples"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert (done.returncode, done.stderr) == (0, ""), done.stdout[-2000:] + done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert f"no ready run folders under {empty}" in lines and "catalog: ok" in lines and "Reports:" not in lines
    assert not [page for page in pages if page.exists()] and list(empty.iterdir()) == []
    with dg.DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        (record,) = instance.fetch_materializations(dg.AssetKey("run_catalog"), limit=1).records
        assert record.asset_materialization.metadata["dagster/row_count"].value == 0


@pytest.mark.slow
def test_main_says_each_thing_once_naming_its_run(tmp_path):
    """The main command on the sample runs: one line per processed run, nothing in Dagster's
    log format, each publication warning once and named by its run, and the closing list
    with every report written (comparison.md of the runs compared with a baseline). The
    step's lines and Dagster's events are all in the instance."""
    env = {**os.environ, "BENCH_HOME": str(tmp_path / "data"), "DAGSTER_HOME": str(tmp_path / "home")}
    for var in ("BENCH_RUNS_ROOT", "BENCH_OUTPUT_ROOT", "BENCH_STORAGE_BASE", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        env.pop(var, None)
    (tmp_path / "home").mkdir()  # as scripts/instance.sh makes it
    shutil.copy(ROOT / "deploy" / "dagster.local.yaml", tmp_path / "home" / "dagster.yaml")
    done = subprocess.run([sys.executable, "-m", "bench_pipeline.main"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert not [line for line in lines if " - dagster - " in line]
    assert len(lines) == len(set(line for line in lines if line)) + lines.count("")  # no line twice

    runs = sorted(p.name for p in (tmp_path / "data" / "runs").iterdir())
    reports = tmp_path / "data" / "reports"
    duplicates = {run_id: json.loads((reports / run_id / "metrics.json").read_text())["data_quality"]["duplicate_rows"]
                  for run_id in runs}
    assert sum(1 for n in duplicates.values() if n) == 1  # the second imperfect sample
    # the publication's own word on duplicates: what Langfuse gets, not contradicting summary.md
    warned = [line for line in lines if "duplicate task/attempt record(s)" in line]
    assert sorted(warned) == sorted(
        f"{run_id}: langfuse: {len(rows)} earlier duplicate task/attempt record(s) not sent: Langfuse keeps one "
        f"item per task/attempt, the later line's (the metrics still count every row in attempt-level populations)"
        for run_id, rows in duplicates.items() if rows)
    for run_id in runs:
        assert len([line for line in lines if line.endswith(f"] {run_id}") or f"] {run_id}: " in line]) == 1
    assert len([line for line in lines if ": ok (" in line]) == len(runs)
    # each run's line says how many data-quality findings it has and where they are listed
    for run_id in runs:
        (line,) = [line for line in lines if f"] {run_id}: ok (" in line]
        findings = data_quality_findings(json.loads((reports / run_id / "metrics.json").read_text()))
        if run_id.startswith("sample-clean-"):
            assert findings == 0 and line.endswith(", no data-quality findings"), line
        else:
            assert findings > 1 and line.endswith(
                f", {findings} data-quality findings: see \"Data quality\" in its summary.md or report.html"), line

    listed = lines[lines.index("Reports:") + 1:]
    compared = [run_id for run_id in runs if (reports / run_id / "comparison.md").exists()]
    assert len(compared) == 3  # every sample but the first has an earlier run of its suite
    # each run's line says its gate and against what, or why it is not compared
    for run_id in runs:
        (line,) = [line for line in lines if f"] {run_id}: ok (" in line]
        if run_id in compared:
            written = json.loads((reports / run_id / "comparison.json").read_text())
            assert f"s), gate {written['gate']['result']} against {written['baseline']['run_id']}, " in line, line
        else:
            assert "s), not compared (no earlier processed run of suite 'android-core' was measured with its setup (" \
                in line, line
    for run_id in runs:
        for name in ("report.html", "summary.md", "comparison.md"):
            path = reports / run_id / name
            assert (f"  {path}" in listed) == path.exists(), path
    # then every suite's page, named once
    pages = sorted(str(p) for p in (reports / "_suites").glob("*/index.html"))
    assert pages and "Suite pages (the latest runs of a suite, their systems and noise floors):" in listed
    assert [line.strip() for line in listed if line.strip().endswith("/index.html")] == pages

    instance = dg.DagsterInstance.from_config(str(tmp_path / "home"))
    run = next(r for r in instance.get_runs() if r.job_name == "process_run")
    logs = instance.all_logs(run.run_id)
    messages = [e.user_message for e in logs if e.dagster_event is None]
    for run_id in runs:
        assert any(m.startswith("[") and f"] {run_id}: ok (" in m and "data-quality finding" in m for m in messages)
    assert sorted(m for m in messages if "duplicate task/attempt" in m) == sorted(warned)
    events = {e.dagster_event.event_type_value for e in logs if e.dagster_event is not None}
    assert {"STEP_START", "ASSET_MATERIALIZATION", "ASSET_CHECK_EVALUATION", "STEP_SUCCESS"} <= events
    # one catalog refresh, after which nothing is behind
    assert lines.count("catalog: ok") == 1
    assert [r.status for r in instance.get_runs() if r.job_name == "refresh_catalog"] == [dg.DagsterRunStatus.SUCCESS]
    assert catalog_behind(instance) is None


#: EarlyRefresh as the main command uses it, in a process of its own like the command's (the
#: fork server, started first, loads the refresh's code with this process's environment).
EARLY_REFRESH = """
import json, os
import dagster as dg
from bench_pipeline.bulk import start_fork_server
from bench_pipeline.main import REFRESH_PROCESS
start_fork_server(also_preload=(REFRESH_PROCESS,))
from bench_pipeline.assets.cross_run import catalog_behind
from bench_pipeline.definitions import defs
from bench_pipeline.refresh_process import EarlyRefresh
from bench_pipeline.partitions import runs_partitions

home = os.environ["DAGSTER_HOME"]
with dg.DagsterInstance.get() as instance:
    instance.add_dynamic_partitions(runs_partitions.name, ["r1", "r2"])
    never = EarlyRefresh(instance, ["r1", "r2"], home)  # r2 is not processed: it never starts
    early = EarlyRefresh(instance, ["r1"], home)
    assert defs.resolve_job_def("process_run").execute_in_process(instance=instance, partition_key="r1").success
    started = early.wait_started(120)
    refreshed = early.result()
    print(json.dumps({"pid": os.getpid(), "started": started, "never": never.result(),
                      "refreshed": [refreshed.success, refreshed.run_id, refreshed.error],
                      "behind": catalog_behind(instance)}))
"""


@pytest.mark.slow
def test_the_catalog_refresh_starts_in_its_own_process_once_the_runs_reports_are_recorded(tmp_path):
    """EarlyRefresh starts the refresh_catalog job in a process forked from the fork server once
    every run it waits for has its reports recorded, and says how it ended; one that waits for
    a run never processed starts nothing (the command then refreshes after its runs). The
    refresh lists the run and leaves nothing behind."""
    make_run(tmp_path / "runs", [row("a"), row("b", status="failed")], run_id="r1")
    env = {**os.environ, "BENCH_HOME": str(tmp_path / "data"), "BENCH_RUNS_ROOT": str(tmp_path / "runs"),
           "DAGSTER_HOME": str(tmp_path / "home")}
    for var in ("BENCH_OUTPUT_ROOT", "BENCH_STORAGE_BASE", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        env.pop(var, None)
    (tmp_path / "home").mkdir()
    shutil.copy(ROOT / "deploy" / "dagster.local.yaml", tmp_path / "home" / "dagster.yaml")
    done = subprocess.run([sys.executable, "-c", EARLY_REFRESH], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    said = json.loads(done.stdout.splitlines()[-1])
    assert said["started"] is True and said["never"] is None and said["behind"] is None
    success, run_id, error = said["refreshed"]
    assert (success, error) == (True, None)

    instance = dg.DagsterInstance.from_config(str(tmp_path / "home"))
    refresh = instance.get_run_by_id(run_id)
    assert refresh.job_name == "refresh_catalog" and refresh.status == dg.DagsterRunStatus.SUCCESS
    assert refresh.tags.get("dagster/max_retries") == "0"  # the daemon could not launch it again
    pids = {e.dagster_event.pid for e in instance.all_logs(run_id) if e.dagster_event is not None}
    assert pids and said["pid"] not in pids  # executed in another process
    (catalog,) = instance.fetch_materializations(dg.AssetKey("run_catalog"), limit=5).records
    assert catalog.asset_materialization.metadata["dagster/row_count"].value == 1
    assert (tmp_path / "data" / "reports" / "r1" / "metrics.json").is_file()


@pytest.mark.slow
def test_main_command_then_ui_serves_the_materializations(tmp_path):
    env = {**os.environ, "BENCH_HOME": str(tmp_path / "data"), "DAGSTER_HOME": str(tmp_path / "home")}
    for var in ("BENCH_RUNS_ROOT", "BENCH_OUTPUT_ROOT", "BENCH_STORAGE_BASE", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        env.pop(var, None)
    (tmp_path / "home").mkdir()
    shutil.copy(ROOT / "deploy" / "dagster.local.yaml", tmp_path / "home" / "dagster.yaml")

    done = subprocess.run([sys.executable, "-m", "bench_pipeline.main"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    runs = sorted(p.name for p in (tmp_path / "data" / "runs").iterdir())
    assert len(runs) == sum(s.runs for s in SAMPLES)  # the sample runs
    for run_id in runs:
        out = tmp_path / "data" / "reports" / run_id
        assert {"metrics.json", "attempts.jsonl", "summary.md", "report.html", "langfuse_outbox.jsonl"} <= {
            p.name for p in out.iterdir()}
        assert str(out / "report.html") in done.stdout
    assert "catalog: ok" in done.stdout

    # Run twice: nothing changed, so nothing is processed, and it says so per run.
    again = subprocess.run([sys.executable, "-m", "bench_pipeline.main"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-3000:]
    for run_id in runs:
        assert f"{run_id}: unchanged since it was processed with formula {FORMULA_VERSION}: skipped" in again.stdout
    assert "ok (" not in again.stdout and "catalog: up to date" in again.stdout

    # The sensor's first tick (empty cursor) on that instance requests nothing either.
    instance = dg.DagsterInstance.from_config(str(tmp_path / "home"))
    settings = PipelineSettings(runs_root=str(tmp_path / "data" / "runs"), output_root=str(tmp_path / "data" / "reports"),
                                storage_base=str(tmp_path / "data" / "storage"))
    tick = evaluate_run_folders(settings, None, instance.get_dynamic_partitions(runs_partitions.name),
                                lambda fingerprints: up_to_date(instance, fingerprints))
    assert tick.run_requests == [] and set(json.loads(tick.cursor)) == set(runs)

    port = free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("dagster-webserver")), "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        data = None
        while time.monotonic() < deadline:
            try:
                data = _graphql(port, ASSETS_QUERY)
                break
            except OSError:
                time.sleep(1)
        assert data is not None, "the webserver did not answer"
        keys = {"/".join(n["assetKey"]["path"]) for n in data["assetNodes"]}
        assert {"raw_results", "attempt_metrics", "capability_aggregates", "reports", "langfuse_publication", "run_catalog"} <= keys
        partitions = {m["partition"] for m in data["assetOrError"]["assetMaterializations"]}
        assert partitions == set(runs)
    finally:
        server.terminate()
        server.wait(timeout=30)


def _runs_to_interrupt(tmp_path: Path, count: int) -> tuple[Path, dict]:
    """``count`` generated runs of 200 tasks and the environment of a main command over them
    on an instance of their own (nothing of the caller's Langfuse or roots)."""
    runs = tmp_path / "runs"
    subprocess.run([sys.executable, "-m", "bench_pipeline.cli", "generate", str(runs), "--runs", str(count), "--seed",
                    "5", "--tasks", "200"], cwd=ROOT, check=True, capture_output=True)
    env = {**os.environ, "BENCH_HOME": str(tmp_path / "data"), "BENCH_RUNS_ROOT": str(runs),
           "DAGSTER_HOME": str(tmp_path / "home"), "BENCH_QUIET_SECONDS": "0"}
    for var in ("BENCH_OUTPUT_ROOT", "BENCH_STORAGE_BASE", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        env.pop(var, None)
    (tmp_path / "home").mkdir()
    shutil.copy(ROOT / "deploy" / "dagster.local.yaml", tmp_path / "home" / "dagster.yaml")
    return runs, env


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_stops_the_main_command_and_the_next_one_finishes_the_work(tmp_path, signum):
    """Ctrl-C (or SIGTERM) while runs are processed: the command stops within seconds with exit
    code 130, saying which runs were not done, and leaves no process behind (its workers'
    pool was never shut down by the interrupted step: it hung at exit, joining them). The
    next command processes what is left, and every run then has its reports."""
    runs, env = _runs_to_interrupt(tmp_path, 8)
    main = subprocess.Popen([sys.executable, "-m", "bench_pipeline.main", "--no-samples"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines = []
    for line in main.stdout:  # interrupted once the first run is done, while the others are processed
        lines.append(line.rstrip("\n"))
        if line.startswith("[1/8]"):
            main.send_signal(signum)
            break
    rest, _ = main.communicate(timeout=60)
    lines += rest.splitlines()
    assert main.returncode == 130, "\n".join(lines[-20:])
    assert lines[-1].startswith("interrupted: stopped. Every file is written whole or not at all")
    assert any(line.startswith("interrupted before ") for line in lines), "\n".join(lines[-20:])
    assert not [line for line in lines if "Traceback" in line or "DagsterExecutionInterruptedError" in line], \
        "\n".join(lines[-60:])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # the fork server and its workers end with the command
        try:
            os.killpg(main.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        pytest.fail("processes of the interrupted command are still running")
    with dg.DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        stopped = [r for r in instance.get_runs() if r.status != dg.DagsterRunStatus.SUCCESS]
        # the daemon's run retries cannot launch this command's runs (no code location): none
        # is marked to be retried, which the daemon would only log it cannot do
        assert stopped and all(r.tags.get("dagster/will_retry") == "false" for r in stopped), [
            (r.status, r.tags.get("dagster/will_retry")) for r in stopped]
    done = subprocess.run([sys.executable, "-m", "bench_pipeline.main", "--no-samples"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    reports = tmp_path / "data" / "reports"
    assert sorted(p.parent.name for p in reports.glob("*/metrics.json")) == sorted(p.name for p in runs.iterdir())


def _as_a_background_job() -> None:
    """The signal dispositions a shell gives a background job: SIGINT ignored, SIGTERM not
    (whatever this test process was started with)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@pytest.mark.slow
def test_sigterm_after_the_runs_stops_a_background_command(tmp_path):
    """A shell's background job has SIGINT ignored; Dagster then left SIGTERM ignored after its
    first run, and a ``kill`` once the runs were done (while the command waits for the catalog
    refresh) was lost: the command went on to the end with exit code 0. It stops now, with
    130. The kill is sent as the runs' Dagster run is reported done; when the command has
    already ended by then (its refresh done meanwhile: nothing left to stop), the case is
    tried again on a fresh instance, up to three times."""
    runs, env = _runs_to_interrupt(tmp_path, 4)
    stopped = []
    for attempt in range(3):
        home = tmp_path / f"home{attempt}"
        home.mkdir()
        shutil.copy(ROOT / "deploy" / "dagster.local.yaml", home / "dagster.yaml")
        env.update(DAGSTER_HOME=str(home), BENCH_HOME=str(tmp_path / f"data{attempt}"))
        output = tmp_path / f"out{attempt}.txt"
        with open(output, "w") as out:
            main = subprocess.Popen([sys.executable, "-m", "bench_pipeline.main", "--no-samples"], cwd=ROOT,
                                    env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                    preexec_fn=_as_a_background_job)
        deadline = time.monotonic() + 300
        while "  (4 runs in one Dagster run" not in output.read_text() and time.monotonic() < deadline:
            time.sleep(0.01)
        finished = "See it in the UI" in output.read_text()
        main.send_signal(signal.SIGTERM)
        main.wait(timeout=60)
        lines = output.read_text().splitlines()
        if finished:
            continue
        stopped.append(main.returncode)
        assert main.returncode == 130, "\n".join(lines[-20:])
        assert lines[-1].startswith("interrupted: stopped."), "\n".join(lines[-20:])
        assert not [line for line in lines if "Traceback" in line], "\n".join(lines[-60:])
        break
    assert stopped == [130], "the command ended before the kill in every attempt"
