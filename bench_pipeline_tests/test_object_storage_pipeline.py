"""Runs, outputs and frames in a bucket, on the whole Dagster path, against a real S3 API
(moto's server on loopback, ``conftest.s3_server``) with the real clients (s3fs, boto3).

The same generated runs are processed from local folders and from the bucket: the sensor's
ticks, the per-run job, the reports, the catalog refresh. Every output is the same, byte for
byte, except what names a location (metrics.json's generated_at and the outbox's publication
times aside, as between any two processings): the suite page's ``bench-pipeline compare``
command names the run folders, local paths against ``s3://`` URLs, and is compared with
them replaced. A second tick processes nothing; a re-judged run is processed again; a
missing bucket, missing credentials, an unsafe key and an unreadable object each give their
error or finding.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from bench_pipeline.assets import per_run_assets
from bench_pipeline.generator import generate_runs
from bench_pipeline.partitions import range_tags, runs_partitions
from bench_pipeline.resources import PipelineSettings
from standins.s3 import Bucket

from .run_builder import make_run, row
from .support.bucket_pipeline import (LANGFUSE, local_files, normalized, process_requests, refresh_catalog,
                                      resources_for, tick)

ROOT = Path(__file__).resolve().parents[1]


def bucket_files(bucket, prefix: str) -> dict[str, bytes]:
    return {key[len(prefix) + 1:]: bucket.get(key) for key in bucket.keys(prefix + "/")}


@pytest.fixture()
def runs(tmp_path):
    """Generated runs of one suite (each later one has the one before as its baseline), one
    with the generator's edge cases."""
    source = tmp_path / "generated"
    generate_runs(source, runs=3, seed=11, tasks=8, repeats=2, history_messages=8)
    generate_runs(source, runs=1, seed=12, tasks=6, repeats=2, history_messages=8, edge_cases=False, id_prefix="clean-")
    return source


@pytest.mark.slow
def test_bucket_runs_and_reports_match_local_ones_byte_for_byte(runs, bucket, tmp_path, monkeypatch):
    for var in LANGFUSE:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("BENCH_PARTITIONS_PER_RUN", "20")
    local_root = tmp_path / "local"
    shutil.copytree(runs, local_root / "runs")
    local = PipelineSettings(runs_root=str(local_root / "runs"), output_root=str(local_root / "reports"),
                             storage_base=str(local_root / "storage"), quiet_seconds=300)
    bucket.upload_folder(runs, "runs")
    remote = PipelineSettings(runs_root=bucket.url("runs"), output_root=bucket.url("reports"),
                              storage_base=str(tmp_path / "bucket-storage"), quiet_seconds=300)
    run_ids = sorted(p.name for p in runs.iterdir())

    processed = {}
    for name, settings in (("local", local), ("bucket", remote)):
        resources = resources_for(settings)
        with dg.instance_for_test() as instance:
            first = tick(instance, settings)
            processed[name] = process_requests(instance, resources, first)
            refresh_catalog(instance, resources)
            second = tick(instance, settings, first.cursor)
            assert second.run_requests == [], name  # nothing changed: nothing to process
            if name == "bucket":
                catalog = instance.fetch_materializations(dg.AssetKey("run_catalog"), limit=1).records[0]
                assert catalog.asset_materialization.metadata["dagster/row_count"].value == len(run_ids)
                mat = instance.fetch_materializations(dg.AssetKey("reports"), limit=1).records[0]
                report = mat.asset_materialization.metadata["report_html"].value
                assert report.startswith(bucket.url("reports/")) and report.endswith("/report.html")
    assert processed["local"] == processed["bucket"] == run_ids

    here, there = local_files(local_root / "reports"), bucket_files(bucket, "reports")
    assert sorted(here) == sorted(there)
    assert {n.split("/", 1)[0] for n in there} == {*run_ids, "_systems", "_suites"}
    for name in here:
        mine, theirs = normalized(here, name), normalized(there, name)
        if name.startswith("_suites/"):  # its compare command names the run folders
            mine = mine.replace(str(local_root / "runs").encode(), b"<runs>")
            theirs = theirs.replace(bucket.url("runs").encode(), b"<runs>")
        assert mine == theirs, name
    # the reports link each attempt's evidence in the bucket as they do on disk: relative keys
    summary = there[f"{run_ids[1]}/summary.md"].decode()
    assert f"](<../../runs/{run_ids[1]}/tasks/" in summary


def recorded_reads(monkeypatch) -> list[str]:
    """Every GET the pipeline's S3 client makes from now on, as ``s3://`` URLs."""
    import s3fs

    reads: list[str] = []
    real = s3fs.S3FileSystem._cat_file

    async def recorded(self, path, *args, **kwargs):
        reads.append(f"s3://{path}")
        return await real(self, path, *args, **kwargs)

    monkeypatch.setattr(s3fs.S3FileSystem, "_cat_file", recorded)
    return reads


@pytest.mark.slow
def test_a_rejudged_run_in_a_bucket_is_processed_again_and_its_copy_reused(bucket, tmp_path, monkeypatch):
    for var in LANGFUSE:
        monkeypatch.delenv(var, raising=False)
    runs = tmp_path / "generated"
    (run,) = generate_runs(runs, runs=1, seed=5, tasks=6, repeats=2, history_messages=8)
    bucket.upload_folder(runs, "runs")
    settings = PipelineSettings(runs_root=bucket.url("runs"), output_root=bucket.url("reports"),
                                storage_base=bucket.url("storage"), quiet_seconds=300)
    resources = resources_for(settings)
    reads = recorded_reads(monkeypatch)
    with dg.instance_for_test() as instance:
        first = tick(instance, settings)
        assert process_requests(instance, resources, first) == [run.name]
        fetched = [u for u in reads if f"/runs/{run.name}/" in u]
        assert any(u.endswith("/history.json") for u in fetched) and not any(u.endswith(".png") for u in fetched)
        metrics = json.loads(bucket.get(f"reports/{run.name}/metrics.json"))
        assert bucket.keys(f"storage/attempt_metrics/{run.name}")  # the frames in the bucket too

        # re-judged: results.jsonl rewritten (one attempt now fails)
        lines = (run / "results.jsonl").read_text().splitlines()
        first_row = json.loads(lines[0])
        first_row.update(status="failed", success=False, failure_class="agent")
        bucket.put(f"runs/{run.name}/results.jsonl", "\n".join([json.dumps(first_row), *lines[1:]]) + "\n")
        reads.clear()
        again = tick(instance, settings, first.cursor)
        assert [r.partition_key for r in again.run_requests] == [run.name]
        assert again.run_requests[0].tags["bench/trigger"] == "changed"
        assert process_requests(instance, resources, again) == [run.name]
        fetched = [u for u in reads if f"/runs/{run.name}/" in u]
        assert fetched == [bucket.url(f"runs/{run.name}/results.jsonl")]  # the rest reused from the local copy
        rejudged = json.loads(bucket.get(f"reports/{run.name}/metrics.json"))
        assert rejudged["capability"] != metrics["capability"]
        assert tick(instance, settings, again.cursor).run_requests == []


@pytest.mark.slow
def test_a_runner_run_rejudged_in_a_bucket_is_processed_from_its_rejudged_copy(bucket, tmp_path, monkeypatch):
    """The runner's manifest has no status; its metrics.json makes the run ready at once. The
    runner's re-judge writes results.rejudged.jsonl: the run is requested again, only that
    object is fetched, and the outputs are read from it; the copy removed, the run is
    requested again (a run key of its own) and read from results.jsonl as at first."""
    for var in LANGFUSE:
        monkeypatch.delenv(var, raising=False)
    runs = tmp_path / "generated"
    (run,) = generate_runs(runs, runs=1, seed=5, tasks=6, repeats=2, history_messages=8)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest.pop("status", None)  # as the runner writes it
    (run / "manifest.json").write_text(json.dumps(manifest))
    (run / "metrics.json").write_text("{}")  # the runner's own, written at the end of its run
    bucket.upload_folder(runs, "runs")
    settings = PipelineSettings(runs_root=bucket.url("runs"), output_root=bucket.url("reports"),
                                storage_base=str(tmp_path / "storage"), quiet_seconds=3600)
    resources = resources_for(settings)
    reads = recorded_reads(monkeypatch)
    with dg.instance_for_test() as instance:
        first = tick(instance, settings)
        assert process_requests(instance, resources, first) == [run.name]  # ready at once, not in an hour
        metrics = json.loads(bucket.get(f"reports/{run.name}/metrics.json"))
        assert metrics["results_file"] == "results.jsonl"

        lines = (run / "results.jsonl").read_text().splitlines()
        first_row = json.loads(lines[0])
        first_row.update(status="failed", success=False, failure_class="agent")
        bucket.put(f"runs/{run.name}/results.rejudged.jsonl", "\n".join([json.dumps(first_row), *lines[1:]]) + "\n")
        reads.clear()
        again = tick(instance, settings, first.cursor)
        assert [r.partition_key for r in again.run_requests] == [run.name]
        assert again.run_requests[0].tags["bench/trigger"] == "changed"
        assert process_requests(instance, resources, again) == [run.name]
        fetched = [u for u in reads if f"/runs/{run.name}/" in u]
        assert fetched == [bucket.url(f"runs/{run.name}/results.rejudged.jsonl")]  # the rest reused
        rejudged = json.loads(bucket.get(f"reports/{run.name}/metrics.json"))
        assert rejudged["results_file"] == "results.rejudged.jsonl"
        assert rejudged["capability"] != metrics["capability"]
        assert tick(instance, settings, again.cursor).run_requests == []  # its data version is the folder's

        bucket.server.client().delete_object(Bucket=bucket.name, Key=f"runs/{run.name}/results.rejudged.jsonl")
        back = tick(instance, settings, again.cursor)
        assert [r.partition_key for r in back.run_requests] == [run.name]
        assert back.run_requests[0].run_key not in (first.run_requests[0].run_key, again.run_requests[0].run_key)
        assert process_requests(instance, resources, back) == [run.name]
        restored = json.loads(bucket.get(f"reports/{run.name}/metrics.json"))
        assert restored["results_file"] == "results.jsonl" and restored["capability"] == metrics["capability"]


def test_an_unsafe_key_is_refused_with_a_located_finding(bucket, tmp_path, monkeypatch):
    for var in LANGFUSE:
        monkeypatch.delenv(var, raising=False)
    local = make_run(tmp_path / "runs", [row("a", artifact_dir="tasks/a"), row("b")], run_id="run-u",
                     artifacts={"tasks/a": {"history.json": []}})
    bucket.upload_folder(local.parent, "runs")
    bucket.put("runs/run-u/tasks/../../../escaped/history.json", "[]")
    settings = PipelineSettings(runs_root=bucket.url("runs"), output_root=bucket.url("reports"),
                                storage_base=str(tmp_path / "storage"))
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(runs_partitions.name, ["run-u"])
        result = dg.materialize(per_run_assets, partition_key="run-u", instance=instance,
                                resources=resources_for(settings))
    assert result.success
    quality = json.loads(bucket.get("reports/run-u/metrics.json"))["data_quality"]
    (finding,) = quality["run_files"]
    assert finding["file"] == "tasks/../../../escaped/history.json" and finding["status"] == "refused"
    assert bucket.url("runs/run-u/tasks/../../../escaped/history.json") in finding["reason"]
    assert not [p for p in (tmp_path / "cache").rglob("escaped")]  # nothing written outside the copy
    assert "tasks/../../../escaped/history.json" in bucket.get("reports/run-u/summary.md").decode()


def test_unreadable_objects_fail_their_own_partition_and_a_missing_bucket_says_so(bucket, tmp_path, monkeypatch):
    for var in LANGFUSE:
        monkeypatch.delenv(var, raising=False)
    for run_id in ("good", "bad"):
        make_run(tmp_path / "runs", [row("a")], run_id=run_id)
    bucket.upload_folder(tmp_path / "runs", "runs")
    settings = PipelineSettings(runs_root=bucket.url("runs"), output_root=str(tmp_path / "reports"),
                                storage_base=str(tmp_path / "storage"))
    import s3fs

    real = s3fs.S3FileSystem._cat_file

    async def one_unreadable(self, path, *args, **kwargs):  # as S3 answers a GET it refuses
        if path.endswith("/runs/bad/results.jsonl"):
            raise PermissionError("Access Denied")
        return await real(self, path, *args, **kwargs)

    monkeypatch.setattr(s3fs.S3FileSystem, "_cat_file", one_unreadable)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(runs_partitions.name, ["bad", "good"])
        result = dg.materialize(per_run_assets, instance=instance, resources=resources_for(settings),
                                raise_on_error=False, tags=range_tags(["bad", "good"]))
        message = result.get_step_failure_events()[0].step_failure_data.error.message
        assert "1 of 2 run(s) failed: bad at raw_results" in message
        assert f"cannot read {bucket.url('runs/bad/results.jsonl')}: access denied (Access Denied)" in message
        status = instance.get_status_by_partition(dg.AssetKey("reports"), ["bad", "good"], runs_partitions)
        assert {k: v.value for k, v in status.items()} == {"bad": "FAILED", "good": "MATERIALIZED"}

        missing = PipelineSettings(runs_root="s3://no-such-bucket-for-bench/runs", output_root=str(tmp_path / "o"),
                                   storage_base=str(tmp_path / "s"))
        failed = dg.materialize(per_run_assets, partition_key="good", instance=instance,
                                resources=resources_for(missing), raise_on_error=False)
        error, text = failed.get_step_failure_events()[0].step_failure_data.error, ""
        while error is not None:  # the step's own error under Dagster's wrapper
            text, error = text + error.message, error.cause
        assert ("the runs root s3://no-such-bucket-for-bench/runs cannot be listed: the bucket "
                "'no-such-bucket-for-bench' does not exist") in text


@pytest.mark.slow
def test_main_command_with_every_root_in_a_bucket(s3_server, tmp_path):
    """`python -m bench_pipeline.main` with the three roots in a bucket: every run processed,
    its files in the bucket, one with a run id of the longest length (247 bytes: the local
    copy's index and lock beside it once made the command fail for every run), a folder
    whose name is too long refused by name; run again, nothing is processed."""
    client = s3_server.client()
    client.create_bucket(Bucket="bench-main")
    generated = generate_runs(tmp_path / "generated", runs=2, seed=3, tasks=6, repeats=2, history_messages=8)
    longest = generated[1].with_name(generated[1].name + "y" * (247 - len(generated[1].name)))
    shutil.copytree(generated[1], tmp_path / "too_long" / (longest.name + "zzzz"))
    generated[1].rename(longest)
    Bucket("bench-main", s3_server).upload_folder(tmp_path / "generated", "runs")
    Bucket("bench-main", s3_server).upload_folder(tmp_path / "too_long", "runs")
    env = {**os.environ, **s3_server.env, "BENCH_HOME": str(tmp_path / "data"), "DAGSTER_HOME": str(tmp_path / "home"),
           "BENCH_RUNS_ROOT": "s3://bench-main/runs", "BENCH_OUTPUT_ROOT": "s3://bench-main/reports",
           "BENCH_STORAGE_BASE": "s3://bench-main/storage"}
    for var in LANGFUSE:
        env.pop(var, None)
    (tmp_path / "home").mkdir()

    def main() -> str:
        done = subprocess.run([sys.executable, "-m", "bench_pipeline.main", "--no-samples"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done.stdout

    first = main()
    assert "catalog: ok" in first and f"{longest.name}zzzz: not processed: its name is 251 bytes long" in first
    for run_id in sorted(p.name for p in (tmp_path / "generated").iterdir()):  # the closing list names objects
        assert f"  s3://bench-main/reports/{run_id}/report.html\n" in first, first
    keys = Bucket("bench-main", s3_server).keys("reports/")
    run_ids = sorted(p.name for p in (tmp_path / "generated").iterdir())
    for run_id in run_ids:
        assert f"reports/{run_id}/metrics.json" in keys and f"reports/{run_id}/report.html" in keys
    assert any(k.startswith("reports/_suites/") for k in keys)
    pages = sorted(f"s3://bench-main/{k}" for k in keys if k.startswith("reports/_suites/") and k.endswith("/index.html"))
    assert pages and all(f"  {page}\n" in first for page in pages), first
    second = main()
    assert all(f"{run_id}: unchanged since it was processed" in second for run_id in run_ids)
    # With samples allowed, a bucket's runs root is the runners': no sample run is written
    # there, nor into a local folder named after the URL.
    done = subprocess.run([sys.executable, "-m", "bench_pipeline.main"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "sample runs" not in done.stdout and not (tmp_path / "s3:").exists()
    assert not [k for k in Bucket("bench-main", s3_server).keys("runs/") if "sample-" in k]

    env["BENCH_RUNS_ROOT"] = "s3://no-such-bucket-for-bench/runs"
    done = subprocess.run([sys.executable, "-m", "bench_pipeline.main", "--no-samples"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 2
    assert ("error: the runs root s3://no-such-bucket-for-bench/runs cannot be listed: the bucket "
            "'no-such-bucket-for-bench' does not exist") in done.stderr
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.slow
def test_every_root_in_a_bucket_a_rejudged_baseline_is_followed_and_the_refresh_keeps_the_rest(
        bucket, tmp_path, monkeypatch):
    """Every root in a bucket: a run's baseline is re-judged; the comparison sensor asks for its
    successor again, whose comparison then equals a `bench-pipeline compare` of the two run
    folders from scratch; the catalog refresh after it reads only the changed runs and leaves
    the bucket as a refresh from scratch leaves it, byte for byte."""
    from bench_pipeline.assets import cross_run_assets
    from bench_pipeline.assets.refresh_state import FROM_SCRATCH_TAG
    from bench_pipeline.cli import main as cli_main
    from bench_pipeline.sensors import comparison_sensor

    for var in LANGFUSE:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("BENCH_BASELINES", str(tmp_path / "baselines.json"))
    runs = tmp_path / "generated"
    r0, r1, r2 = generate_runs(runs, runs=3, seed=21, tasks=6, repeats=2, history_messages=6, edge_cases=False)
    bucket.upload_folder(runs, "runs")
    settings = PipelineSettings(runs_root=bucket.url("runs"), output_root=bucket.url("reports"),
                                storage_base=bucket.url("storage"), quiet_seconds=300)
    resources = resources_for(settings)

    def refresh(scratch: bool = False) -> dict:
        outcome = dg.materialize(cross_run_assets, instance=instance, resources=resources,
                                 tags={FROM_SCRATCH_TAG: "from_scratch"} if scratch else {})
        assert outcome.success
        return {e.asset_key.path[-1]: {k: v.value for k, v in e.materialization.metadata.items()}
                for e in outcome.get_asset_materialization_events()}

    def made() -> dict[str, bytes]:
        keys = [k for k in bucket.keys() if k.startswith(("reports/_systems/", "reports/_suites/", "storage/run_catalog",
                                                           "storage/suite_trends", "storage/system_repeats",
                                                           "storage/cross_run_state/"))]
        return {k: bucket.get(k) for k in keys}

    with dg.instance_for_test() as instance:
        first = tick(instance, settings)
        assert process_requests(instance, resources, first) == sorted([r0.name, r1.name, r2.name])
        assert json.loads(bucket.get(f"reports/{r1.name}/comparison.json"))["baseline"]["run_id"] == r0.name
        refresh()
        with dg.build_sensor_context(instance=instance, resources={"settings": settings}) as ctx:
            quiet = comparison_sensor(ctx)
        assert quiet.run_requests == []

        # r0 re-judged in the bucket: every first attempt fails now
        rows = [json.loads(line) for line in (r0 / "results.jsonl").read_text().splitlines() if line.strip()]
        for result in rows:
            if result["attempt"] == 1:
                result.update(status="failed", success=False, failure_class="agent")
        (r0 / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        bucket.put(f"runs/{r0.name}/results.jsonl", (r0 / "results.jsonl").read_bytes())
        again = tick(instance, settings, first.cursor)
        assert process_requests(instance, resources, again) == [r0.name]
        with dg.build_sensor_context(instance=instance, cursor=quiet.cursor, resources={"settings": settings}) as ctx:
            behind = comparison_sensor(ctx)
        assert [r.partition_key for r in behind.run_requests] == [r1.name]  # exactly its successor
        report_before = bucket.get(f"reports/{r1.name}/report.html")
        reads = recorded_reads(monkeypatch)
        assert process_requests(instance, resources, behind) == [r1.name]
        # r1's own stages are current: compared again from its stored values, nothing of its
        # run read but manifest.json and suite.json (unchanged: not even those), nothing else made
        assert not [url for url in reads if url.startswith(bucket.url(f"runs/{r1.name}/"))]
        assert {a: len(instance.fetch_materializations(dg.AssetRecordsFilter(dg.AssetKey(a), asset_partitions=[r1.name]),
                                                       limit=10).records)
                for a in ("attempt_metrics", "langfuse_publication", "run_comparison", "reports")} == {
            "attempt_metrics": 1, "langfuse_publication": 1, "run_comparison": 2, "reports": 2}
        assert bucket.get(f"reports/{r1.name}/report.html") != report_before

        got = json.loads(bucket.get(f"reports/{r1.name}/comparison.json"))
        assert cli_main(["compare", str(r0), str(r1), "--output-dir", str(tmp_path / "fresh")]) in (0, 1, 3)
        fresh = json.loads((tmp_path / "fresh" / "comparison.json").read_bytes())
        assert {k: v for k, v in got.items() if k != "inputs"} == fresh

        incremental = refresh()
        # r0's stored values changed; r1 was processed again with the same values, only its
        # comparison changed: one catalog row read, the page made again (it shows r1's gate)
        assert incremental["run_catalog"]["runs_read"] == 1
        assert incremental["system_repeats"]["systems_made"] == 1  # r0's system; r1's values are as they were
        assert incremental["suite_pages"]["pages_written"] == 1
        after = made()
        scratch = refresh(scratch=True)
        assert scratch["run_catalog"]["runs_kept"] == 0
        assert made() == after
