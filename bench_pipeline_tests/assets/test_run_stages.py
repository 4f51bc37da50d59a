"""Each per-run asset materializes for a partition on a temporary Dagster instance."""

from __future__ import annotations

import json
import re
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from bench_pipeline.assets import per_run_assets
from bench_pipeline.comparison_sides import side_from_output
from bench_pipeline.data_quality import data_quality_findings as written_findings
from bench_pipeline.formula import FORMULA_VERSION
from bench_pipeline.partitions import range_tags, runs_partitions
from bench_pipeline.pipeline import run_stages
from bench_pipeline.run_folders import fingerprint

from ..dagster_helpers import make_resources
from ..run_builder import make_run, row


@pytest.fixture()
def run_env(tmp_path):
    resources = make_resources(tmp_path)
    rows = [
        row("a", 1), row("a", 2, "failed"),
        row("b", 1, "failed"), row("b", 2),
        row("c", 1, artifact_dir="../../etc"),
        "{not json",
        row("a", 2, "failed"),  # duplicate of line 2
    ]
    manifest = {"status": "completed", "metrics_k": 2, "planned": [{"task_id": t, "attempts": 2} for t in "abc"]}
    run = make_run(tmp_path / "runs", rows, run_id="run-x", manifest=manifest)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(runs_partitions.name, ["run-x"])
    return tmp_path, run, instance, resources


def test_every_stage_materializes_and_matches_the_engine(run_env, monkeypatch):
    for var in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)
    root, run, instance, resources = run_env
    result = dg.materialize(per_run_assets, partition_key="run-x", instance=instance, resources=resources)
    assert result.success
    written = json.loads((root / "reports" / "run-x" / "metrics.json").read_text())
    direct = run_stages(run).processed.metrics
    for section in ("capability", "coverage", "failures", "efficiency", "aggregate", "data_quality"):
        assert written[section] == direct[section], section
    assert written["formula_version"] == FORMULA_VERSION
    assert written["capability"]["pass_at_1"]["successes"] == 2  # a#1 and c#1
    assert written["coverage"]["missing_attempts"] == 1  # c#2
    assert (root / "reports" / "run-x" / "report.html").stat().st_size > 1000
    assert "run-x" in (root / "reports" / "run-x" / "summary.md").read_text()
    lines = (root / "reports" / "run-x" / "attempts.jsonl").read_text().splitlines()
    assert len(lines) == 6

    frame = pd.read_parquet(root / "storage" / "attempt_metrics" / "run-x.parquet")
    assert str(frame["success"].dtype) == "boolean" and str(frame["llm_calls"].dtype) == "Int64"

    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert checks["no_bad_rows"].passed is False and checks["no_bad_rows"].severity == dg.AssetCheckSeverity.WARN
    assert checks["no_duplicate_rows"].passed is False and checks["no_duplicate_rows"].severity == dg.AssetCheckSeverity.ERROR
    assert checks["no_missing_attempts"].passed is False
    assert checks["no_unsafe_artifact_dirs"].passed is False
    assert checks["no_unsafe_artifact_dirs"].severity == dg.AssetCheckSeverity.ERROR
    assert checks["no_invalid_artifacts"].passed is True
    assert checks["recorded_matches_derived"].passed is True

    mat = {e.asset_key.path[-1]: e for e in result.get_asset_materialization_events()}
    meta = mat["capability_aggregates"].materialization.metadata
    assert meta["formula_version"].value == FORMULA_VERSION
    p1 = written["capability"]["pass_at_1"]  # numbers the Plots tab charts, rounded as their text
    assert meta["1_pass_at_1"].value == round(p1["value"], 4) == round(2 / 3, 4)
    assert meta["1_pass_at_1_text"].value == (f"{round(2 / 3, 4):.4f} [{round(p1['ci95']['lower'], 4):.4f}, "
                                              f"{round(p1['ci95']['upper'], 4):.4f}] (2/3)")
    assert meta["1_pass_at_1_ci95_lower"].value == round(p1["ci95"]["lower"], 4) < 2 / 3
    assert meta["1_pass_at_1_ci95_upper"].value == round(p1["ci95"]["upper"], 4) > 2 / 3
    assert meta["1_pass_at_1_successes"].value == 2 and meta["1_pass_at_1_denominator"].value == 3
    assert meta["5_coverage_missing_attempts"].value == 1
    assert meta["6_data_quality_findings"].value == written_findings(written)
    assert {e.materialization.partition for e in result.get_asset_materialization_events()} == {"run-x"}
    assert {e.partition for e in result.get_asset_check_evaluations()} == {"run-x"}
    tags = mat["reports"].materialization.tags
    assert tags["dagster/code_version"] == FORMULA_VERSION
    assert tags["dagster/data_version"] == f"{fingerprint(str(run))[0]}@{FORMULA_VERSION}"
    assert mat["raw_results"].materialization.metadata["bad_rows"].value == 1
    publication = mat["langfuse_publication"].materialization.metadata
    assert publication["status"].value == "not_configured"  # the embedded default works offline
    assert publication["items"].value == 5  # one per task/attempt: the duplicate row is one item
    outbox = root / "reports" / "run-x" / "langfuse_outbox.jsonl"
    assert outbox.exists() and outbox.read_text().strip()


def test_not_a_run_folder_fails_with_its_path(tmp_path):
    resources = make_resources(tmp_path)
    (tmp_path / "runs" / "empty-run").mkdir()
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(runs_partitions.name, ["empty-run"])
    result = dg.materialize(per_run_assets, partition_key="empty-run", instance=instance, resources=resources,
                            raise_on_error=False)
    assert not result.success
    failure = result.get_step_failure_events()[0].step_failure_data.error
    assert "no results.jsonl" in failure.message and "empty-run" in failure.message
    assert result.get_asset_materialization_events() == []


def test_schema_violation_fails_the_partition_with_a_readable_message(run_env, monkeypatch):
    """A frame that breaks the attempt schema (here: a negative attempt) is not stored: the
    partition fails at attempt_metrics, naming the schema and the column, and the stage
    before it stays materialized."""
    from bench_pipeline.assets import stage_values
    from bench_pipeline.frames import attempts_frame

    def broken(rows):
        return attempts_frame([{**r, "attempt": -r["attempt"]} for r in rows])

    monkeypatch.setattr(stage_values, "attempts_frame", broken)  # where the frame is made
    root, run, instance, resources = run_env
    result = dg.materialize(per_run_assets, partition_key="run-x", instance=instance, resources=resources,
                            raise_on_error=False)
    assert not result.success
    failure = result.get_step_failure_events()[0].step_failure_data.error
    assert "run-x at attempt_metrics" in failure.message
    assert "AttemptMetricsSchema" in failure.message and "attempt" in failure.message
    assert [e.asset_key.path[-1] for e in result.get_asset_materialization_events()] == ["raw_results"]
    assert not (root / "storage" / "attempt_metrics" / "run-x.parquet").exists()


def test_a_huge_plan_materializes_with_exact_counts(tmp_path, monkeypatch):
    """R26 sets no upper bound on planned attempts: two tasks planned 9 * 10**18 times
    each (more pairs than a 64-bit integer counts) go through every stage and check."""
    for var in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)
    resources = make_resources(tmp_path)
    huge = 9 * 10 ** 18
    manifest = {"status": "aborted", "planned": [{"task_id": "a", "attempts": huge}, {"task_id": "b", "attempts": huge}]}
    make_run(tmp_path / "runs", [row("a", 1), row("b", 2, "failed")], run_id="run-h", manifest=manifest)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(runs_partitions.name, ["run-h"])
    result = dg.materialize(per_run_assets, partition_key="run-h", instance=instance, resources=resources)
    assert result.success
    written = json.loads((tmp_path / "reports" / "run-h" / "metrics.json").read_text())
    assert written["coverage"]["planned_attempts"] == 2 * huge
    assert written["coverage"]["missing_attempts"] == 2 * huge - 2
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    missing = checks["no_missing_attempts"]
    assert missing.passed is False
    assert missing.metadata["count"].value == 2 * huge - 2
    assert missing.description == f"{2 * huge - 2} planned attempts missing"


def _normalized(path: Path, generated_at: str) -> bytes:
    """A file's bytes with the expected differences masked: the run's generated_at stamp and,
    in the outbox, the times stamped at publication (replay spans, ingestion events)."""
    data = path.read_bytes().replace(generated_at.encode(), b"<generated_at>")
    data = re.sub(rb'"(start|end)TimeUnixNano":"\d+"', rb'"\1TimeUnixNano":"<published_at>"', data)
    return re.sub(rb'"timestamp":"[0-9T:.-]+Z","type"', rb'"timestamp":"<published_at>","type"', data)


@pytest.mark.slow
def test_one_dagster_run_over_several_partitions_one_broken(tmp_path, monkeypatch):
    """A backfill's Dagster run covers a range of partitions (worker processes): every good
    run gets its own materializations and checks, and files byte-identical to the command
    line's; the broken folder fails only its own partition, with its located message."""
    from bench_pipeline.generator import generate_runs
    from bench_pipeline.pipeline import publish, run_stages
    from bench_pipeline.publication.settings import LangfuseSettings

    for var in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)
    resources = make_resources(tmp_path)
    good = [p.name for p in generate_runs(tmp_path / "runs", runs=3, seed=11, tasks=12, repeats=3, history_messages=8)]
    good += [p.name for p in generate_runs(tmp_path / "runs", runs=1, seed=12, tasks=12, repeats=3, history_messages=8,
                                           edge_cases=False, id_prefix="clean-")]
    (tmp_path / "runs" / "zz-broken").mkdir()
    keys = sorted([*good, "zz-broken"])
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(runs_partitions.name, keys)
        result = dg.materialize(per_run_assets, instance=instance, resources=resources, raise_on_error=False,
                                tags=range_tags(keys))
        assert not result.success
        failure = result.get_step_failure_events()[0].step_failure_data.error.message
        assert "1 of 5 run(s) failed: zz-broken at raw_results" in failure and "no results.jsonl" in failure
        for stage in ("raw_results", "attempt_metrics", "task_groups", "capability_aggregates", "reports",
                      "langfuse_publication"):
            status = instance.get_status_by_partition(dg.AssetKey(stage), keys, runs_partitions)
            assert {k: v.value for k, v in status.items()} == {
                **{k: "MATERIALIZED" for k in good}, "zz-broken": "FAILED"}, stage
        # Each stage once per good partition, though the stages before the publication are
        # recorded while it is published and the publication afterwards (StagesStored).
        recorded = sorted((e.asset_key.path[-1], e.partition) for e in result.get_asset_materialization_events())
        assert recorded == sorted((stage, k) for k in good for stage in (
            "raw_results", "attempt_metrics", "task_groups", "capability_aggregates", "run_comparison", "reports",
            "langfuse_publication"))
        # why a run has no baseline, as its reports say it (the command line is told the same)
        not_compared = {e.partition: e.materialization.metadata["not_compared"].value
                        for e in result.get_asset_materialization_events()
                        if e.asset_key.path[-1] == "run_comparison" and "not_compared" in e.materialization.metadata}
        checks = [(e.partition, e.check_name) for e in result.get_asset_check_evaluations()]
        assert sorted(checks) == sorted((k, name) for k in good for name in (
            "no_bad_rows", "no_duplicate_rows", "no_missing_attempts", "no_unsafe_artifact_dirs",
            "no_invalid_artifacts", "no_invalid_values", "no_invalid_artifact_values", "recorded_matches_derived"))

    compared = 0
    for run_id in good:
        dagster_out = tmp_path / "reports" / run_id
        command_out = tmp_path / "command" / run_id
        files = ["metrics.json", "attempts.jsonl", "summary.md", "report.html", "langfuse_outbox.jsonl"]
        baseline_dir, inputs = None, None
        if (dagster_out / "comparison.json").exists():  # compared with the same baseline outputs
            written = json.loads((dagster_out / "comparison.json").read_text())
            baseline_dir, compared = tmp_path / "reports" / written["baseline"]["run_id"], compared + 1
            inputs = written["inputs"]  # the data versions the step recorded (checked elsewhere)
            assert inputs["baseline"]["run_id"] == written["baseline"]["run_id"] and inputs["candidate"]["run_id"] == run_id
            files += ["comparison.json", "comparison.md"]
        processed = run_stages(tmp_path / "runs" / run_id, command_out, keep_evidence=True,
                               baseline=side_from_output(baseline_dir) if baseline_dir else None,
                               comparison_inputs=inputs, not_compared=not_compared.get(run_id)).processed
        publish(processed, command_out, LangfuseSettings(None, None, None))
        assert sorted(p.name for p in dagster_out.iterdir()) == sorted(p.name for p in command_out.iterdir())
        stamp = {p: json.loads((p / "metrics.json").read_text())["generated_at"] for p in (dagster_out, command_out)}
        for name in files:
            assert _normalized(dagster_out / name, stamp[dagster_out]) == _normalized(
                command_out / name, stamp[command_out]), (run_id, name)
    assert compared >= 2  # the generated runs share a suite: each later one has a baseline
    assert compared + len(not_compared) == len(good) and not_compared  # the first run of each suite has none
    for run_id, why in not_compared.items():
        assert why.startswith("no earlier processed run of suite ")
        assert "## Not compared\n\nThis run has no baseline" in (tmp_path / "reports" / run_id / "summary.md").read_text()


def test_stages_are_fresh_after_processing_and_stale_after_a_formula_change(run_env, monkeypatch):
    """The materializations carry Dagster's provenance tags: every stage is fresh right after
    its run is processed, and stale ("has a new code version") once the formula version of
    the definitions differs from the one that computed it."""
    from dagster._utils.test.data_versions import get_stale_status_resolver

    from bench_pipeline.assets import run_stages

    for var in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)
    root, run, instance, resources = run_env
    stages = [key.to_user_string() for a in per_run_assets for key in a.keys]
    dg.materialize(per_run_assets, partition_key="run-x", instance=instance, resources=resources)
    resolver = get_stale_status_resolver(instance, per_run_assets)
    assert {s: resolver.get_status(dg.AssetKey(s), "run-x").value for s in stages} == dict.fromkeys(stages, "FRESH")

    specs = [spec.replace_attributes(code_version="bumped") for spec in run_stages.STAGE_SPECS]
    @dg.multi_asset(specs=specs, partitions_def=runs_partitions, can_subset=False)
    def changed():
        """The per-run stages as definitions with another formula version would declare them."""
    resolver = get_stale_status_resolver(instance, [changed])
    for stage in stages:
        assert resolver.get_status(dg.AssetKey(stage), "run-x").value == "STALE", stage
        causes = [c.reason for c in resolver.get_stale_causes(dg.AssetKey(stage), "run-x")]
        assert "has a new code version" in causes, (stage, causes)


def _comparison_meta(result, key):
    (event,) = [e for e in result.get_asset_materialization_events()
                if e.asset_key == dg.AssetKey("run_comparison") and e.materialization.partition == key]
    return {k: v.value for k, v in event.materialization.metadata.items()}


def test_run_comparison_default_and_pinned_baselines_and_none(tmp_path, monkeypatch):
    for var in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("BENCH_BASELINES", str(tmp_path / "baselines.json"))
    resources = make_resources(tmp_path)
    for run_id, day, outcomes in (("r1", "01", ["passed", "failed"]), ("r2", "02", ["passed", "passed"])):
        make_run(tmp_path / "runs", [row("a", status=outcomes[0]), row("b", status=outcomes[1])], run_id=run_id,
                 manifest={"status": "completed", "started_at": f"2026-11-{day}T00:00:00Z"})
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(runs_partitions.name, ["r1", "r2"])

    first = dg.materialize(per_run_assets, partition_key="r1", instance=instance, resources=resources)
    meta = _comparison_meta(first, "r1")
    assert meta["baseline"] == "none" and meta["reason"].startswith(
        "no baseline: none of the 1 other run(s) of suite 'suite-x' is an earlier processed run than this one "
        "('r1', started_at 2026-11-01T00:00:00Z): 'r2': not processed yet.")
    assert not (tmp_path / "reports" / "r1" / "comparison.json").exists()

    second = dg.materialize(per_run_assets, partition_key="r2", instance=instance, resources=resources)
    meta = _comparison_meta(second, "r2")
    assert meta["baseline"] == "r1" and meta["reason"] == "the latest earlier run of the suite"
    written = json.loads((tmp_path / "reports" / "r2" / "comparison.json").read_text())
    assert written["baseline"]["run_id"] == "r1" and written["candidate"]["run_id"] == "r2"
    assert meta["gate"] == written["gate"]["result"] and meta["paired_tasks"] == 2
    # a pass without a margin says what it does not show, as the reports do
    assert meta["gate_statement"].startswith("pass: no significant regression of first attempt or task success was "
                                             "found, which is not evidence that there is none: ")
    assert "first attempt has 2 paired task" not in meta["gate_statement"] and "--max-drop X" in meta["gate_statement"]
    assert meta["first_attempt_n"] == 2 and meta["first_attempt_delta"] == pytest.approx(0.5)  # b: fail -> pass
    assert "Compared with" in (tmp_path / "reports" / "r2" / "summary.md").read_text()

    (tmp_path / "baselines.json").write_text(json.dumps({"suite-x": "r2"}))
    pinned = dg.materialize(per_run_assets, partition_key="r1", instance=instance, resources=resources)
    meta = _comparison_meta(pinned, "r1")
    assert meta["baseline"] == "r2" and meta["reason"] == "pinned for suite 'suite-x'"
    itself = dg.materialize(per_run_assets, partition_key="r2", instance=instance, resources=resources)
    assert _comparison_meta(itself, "r2")["reason"] == "no baseline: this run is the pinned baseline of suite 'suite-x'"


def test_json_nested_at_and_beyond_the_depth_limit_never_fails_the_run(tmp_path, monkeypatch):
    """A row, a history and a trace nested 254 deep (artifacts.MAX_DEPTH) are read, stored
    and published (the outbox) on the Dagster path; a line nested 300 deep is a bad row saying
    why, and a trace nested 300 deep is an invalid file: the run is processed, not FAILED at
    storing the row (jsonio) or publishing the trace (otlp)."""
    for var in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)

    def nest(levels: int):
        value: object = "x"
        for _ in range(levels):
            value = [value]
        return value

    resources = make_resources(tmp_path)
    call = {"type": "tool_call", "tool_name": "tap", "tool_call_id": "c1"}
    rows = [row("t", deep_unknown=nest(253)), row("u"), row("v", deep_unknown=nest(299))]
    make_run(tmp_path / "runs", rows, run_id="deep", artifacts={
        "tasks/t/attempt_1": {"history.json": [{**call, "tool_input": nest(252)}],  # list, message, input
                              "trace.json": {"tool_calls": [{"tool": "tap", "input": nest(251)}]}},
        "tasks/u/attempt_1": {"trace.json": {"tool_calls": [{"tool": "tap", "input": nest(297)}]}},
    })
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(runs_partitions.name, ["deep"])
    assert dg.materialize(per_run_assets, partition_key="deep", instance=instance, resources=resources).success
    metrics = json.loads((tmp_path / "reports" / "deep" / "metrics.json").read_text())
    quality = metrics["data_quality"]
    assert [(b["line"], b["reason"][:34]) for b in quality["bad_rows"]] == [(3, "JSON nested deeper than 254 levels")]
    assert metrics["coverage"]["attempts"] == 2
    invalid = [(a["task_id"], a["file"], a["status"]) for a in quality["invalid_artifacts"]]
    assert invalid == [("u", "tasks/u/attempt_1/trace.json", "invalid")]
    frame = pd.read_parquet(tmp_path / "storage" / "raw_results" / "deep.parquet")
    assert json.loads(frame.loc[frame["task_id"] == "t", "row_json"].iloc[0])["deep_unknown"] == nest(253)
    outbox = (tmp_path / "reports" / "deep" / "langfuse_outbox.jsonl").read_text()
    assert outbox.count("\n") > 0
