"""One run partition's work: the order the partitions of a step go in, and the stages each stores."""

from __future__ import annotations

import pytest

from bench_pipeline.assets.partition_pool import in_dependency_order, run_partitions, side_by_side
from bench_pipeline.assets.partition_work import STAGES, PartitionJob, PartitionOutcome, StagesStored
from bench_pipeline.assets.stage_values import STORED_STAGES
from bench_pipeline.data_quality_checks import CHECKS
from bench_pipeline.publication.settings import LangfuseSettings

from ..dagster_helpers import make_resources


def job(key: str, after: str | None = None) -> PartitionJob:
    return PartitionJob(key, key, key, "storage", LangfuseSettings(None, None, None), None, after=after)


def test_a_run_is_processed_after_its_baseline_in_the_same_step():
    jobs = [job("c", after="b"), job("b", after="a"), job("a"), job("x", after="not-in-this-step")]
    assert [j.key for j in in_dependency_order(jobs)] == ["a", "x", "b", "c"]
    cycle = [job("p", after="q"), job("q", after="p")]
    assert [j.key for j in in_dependency_order(cycle)] == ["p", "q"]


def test_jobs_start_together_and_wait_only_for_a_baseline_started_before_them():
    """Every job starts at once in dependency order; a job keeps ``after`` (it waits, before
    its comparison, for that job's stored values) only when that job starts before it, so a
    cycle of pinned baselines cannot make two workers wait for each other."""
    jobs = [job("c", after="b"), job("b", after="a"), job("a"), job("x", after="not-in-this-step")]
    assert [(j.key, j.after) for j in side_by_side(jobs)] == [("a", None), ("x", None), ("b", "a"), ("c", "b")]
    cycle = [job("p", after="q"), job("q", after="p")]
    assert [(j.key, j.after) for j in side_by_side(cycle)] == [("p", None), ("q", "p")]
    assert side_by_side([]) == []


def test_every_stage_before_the_publication_is_stored_in_stage_order():
    assert STAGES == ("raw_results", "attempt_metrics", "task_groups", "capability_aggregates", "run_comparison",
                      "reports", "langfuse_publication")
    assert set(STORED_STAGES) == set(STAGES[:-1])


@pytest.mark.slow
def test_in_worker_processes_each_partitions_stages_come_before_its_publication(tmp_path, monkeypatch):
    """Pooled, a partition's stages before the publication and its checks are sent as soon
    as they are stored (StagesStored), before its outcome; the outcome repeats them and adds
    the publication, so the step records each once (test_run_stages counts them)."""
    from bench_pipeline.assets.run_stages import partition_jobs
    from bench_pipeline.generator import generate_runs

    for var in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)
    settings = make_resources(tmp_path)["settings"]
    keys = sorted(p.name for p in generate_runs(tmp_path / "runs", runs=2, seed=5, tasks=6, repeats=2,
                                                history_messages=4, edge_cases=False))  # every attempt's row
    jobs = partition_jobs(keys, settings, LangfuseSettings(None, None, None), workers=1)
    items = list(run_partitions(jobs, lambda line: None, processes=2))

    assert len(items) == 4
    for key in keys:
        (early_at, early), = [(i, x) for i, x in enumerate(items) if isinstance(x, StagesStored) and x.outcome.key == key]
        (final_at, final), = [(i, x) for i, x in enumerate(items) if isinstance(x, PartitionOutcome) and x.key == key]
        assert early_at < final_at
        assert list(early.outcome.materialized) == list(STAGES[:-1])
        assert list(final.materialized) == list(STAGES)
        assert {s: final.materialized[s] for s in STAGES[:-1]} == early.outcome.materialized
        assert early.outcome.checks == final.checks and len(final.checks) == len(CHECKS)
        assert early.outcome.error is None and final.error is None
        assert early.outcome.attempts == final.attempts == 12
        assert (tmp_path / "reports" / key / "report.html").is_file()



@pytest.mark.slow
def test_a_ctrl_c_swallowed_before_the_pool_looks_stops_it_and_its_workers(tmp_path, monkeypatch):
    """The main command's Ctrl-C, taken by a handler that did not raise it: the step's wait
    loop raises Dagster's interrupt within its 0.2 s wait, before the runs are done, and kills
    its workers instead of waiting for them."""
    import multiprocessing
    import os
    import signal

    import dagster as dg

    from bench_pipeline.assets.run_stages import partition_jobs
    from bench_pipeline.generator import generate_runs
    from bench_pipeline.interrupts import Interrupts

    for var in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)
    settings = make_resources(tmp_path)["settings"]
    keys = sorted(p.name for p in generate_runs(tmp_path / "runs", runs=4, seed=5, tasks=200, edge_cases=False))
    jobs = partition_jobs(keys, settings, LangfuseSettings(None, None, None), workers=1)
    before = signal.getsignal(signal.SIGINT)
    earlier = set(multiprocessing.active_children())
    items = []
    try:
        with Interrupts() as interrupts:
            signal.signal(signal.SIGINT, lambda signo, frame: None)  # noted, not raised
            os.kill(os.getpid(), signal.SIGINT)
            with pytest.raises(dg.DagsterExecutionInterruptedError):
                for item in run_partitions(jobs, lambda line: None, processes=2):
                    items.append(item)
            assert interrupts.received()
    finally:
        signal.signal(signal.SIGINT, before)
    assert not [item for item in items if isinstance(item, PartitionOutcome)]
    for worker in set(multiprocessing.active_children()) - earlier:  # killed, not waited for: gone at once
        worker.join(5)
        assert not worker.is_alive()
    assert not (tmp_path / "reports" / keys[-1] / "report.html").is_file()

def test_run_comparisons_metadata_names_an_inconclusive_gate_and_what_is_missing():
    """An empty candidate against a baseline: nothing paired, so run_comparison's metadata says
    inconclusive (never a pass), with both no_evidence reasons and the words for them."""
    from bench_pipeline.assets.stage_metadata import comparison_metadata, comparison_note
    from bench_pipeline.comparison import compare
    from bench_pipeline.comparison_sides import make_side

    rows = [{"task_id": t, "attempt": 1, "line": i, "success": True, "agent_eligible": True, "quality_score": None,
             "task_wall_ms": None, "total_tokens": None, "cost_usd": None} for i, t in enumerate(("a", "b"), start=1)]
    baseline = make_side(rows, run_id="base", suite="s", metrics_k=1)
    empty = make_side([], run_id="cand", suite="s", metrics_k=1)
    meta = comparison_metadata(compare(baseline, empty, 0.05), "base", "the latest earlier run of the suite", {})
    assert meta["gate"] == "inconclusive" and meta["paired_tasks"] == 0
    assert meta["gate_reasons"] == "first_attempt_no_evidence, task_success_no_evidence"
    assert meta["gate_statement"].startswith("inconclusive: the data cannot decide, so this is neither a pass nor a "
                                             "fail: the first attempt has no paired task")
    assert "a drop of any size could have gone unseen" in meta["gate_statement"]
    assert meta["first_attempt_verdict"] == "n/a (no paired tasks)"
    # the run's one line in the step's log (and scripts/run.sh) says the gate and against what
    assert comparison_note(meta) == ", gate inconclusive against base"


def test_a_runs_line_says_why_it_is_not_compared():
    from bench_pipeline.assets.stage_metadata import comparison_metadata, comparison_note

    meta = {**comparison_metadata(None, None, "no baseline: no other run of suite 's' was found", {}),
            "not_compared": "no earlier processed run of suite 's' was measured with its setup (no judge, a / b)"}
    assert comparison_note(meta) == (", not compared (no earlier processed run of suite 's' was measured with its "
                                     "setup (no judge, a / b))")
    assert comparison_note(comparison_metadata(None, None, "no baseline", {})) == ", not compared"
    assert comparison_note(None) == "" and comparison_note({}) == ""


@pytest.mark.slow
@pytest.mark.parametrize("runs,processes", [(3, 3), (5, 2)])
def test_a_suites_runs_in_one_step_are_processed_side_by_side_and_compared_as_from_scratch(
        tmp_path, monkeypatch, runs, processes):
    """Runs of one suite in one step, each the next one's baseline, in workers started
    together (three for three runs; two for five, each worker taking partition after
    partition): each comparison, made once its baseline's values are stored, equals a
    `bench-pipeline compare` of the two run folders from scratch."""
    import json

    from bench_pipeline.assets.run_stages import partition_jobs
    from bench_pipeline.cli import main as cli_main
    from bench_pipeline.generator import generate_runs

    for var in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)
    settings = make_resources(tmp_path)["settings"]
    count, runs = runs, tmp_path / "runs"
    keys = sorted(p.name for p in generate_runs(runs, runs=count, seed=11, tasks=8, repeats=2, history_messages=4,
                                                edge_cases=False, systems=1))
    jobs = partition_jobs(keys, settings, LangfuseSettings(None, None, None), workers=1)
    assert [(j.key, j.after) for j in side_by_side(jobs)] == [(keys[0], None), *zip(keys[1:], keys)]
    items = list(run_partitions(jobs, lambda line: None, processes=processes))

    outcomes = {x.key: x for x in items if isinstance(x, PartitionOutcome)}
    assert sorted(outcomes) == keys and all(o.error is None for o in outcomes.values())
    for baseline, candidate in zip(keys, keys[1:]):
        got = json.loads((tmp_path / "reports" / candidate / "comparison.json").read_bytes())
        assert got["inputs"]["baseline"]["run_id"] == baseline
        cli_main(["compare", str(runs / baseline), str(runs / candidate), "--output-dir", str(tmp_path / candidate)])
        fresh = json.loads((tmp_path / candidate / "comparison.json").read_bytes())
        assert {k: v for k, v in got.items() if k != "inputs"} == fresh


@pytest.mark.parametrize("layout", ["flat", "runner"])
def test_a_run_whose_stages_are_current_gets_the_same_reports_from_its_stored_values(tmp_path, monkeypatch, layout):
    """Compared again from its stored values (``stored_stages``: its folder and the formula
    unchanged), a run's summary.md, report.html, comparison.json and comparison.md are the
    bytes a full processing writes; only run_comparison and reports are materialized, and
    metrics.json and attempts.jsonl are left as they were. Without stored values the run is
    processed in full."""
    from dataclasses import replace

    from bench_pipeline.assets.partition_work import process_partition
    from bench_pipeline.assets.run_stages import partition_jobs
    from bench_pipeline.generator import generate_runs

    for var in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)
    settings = make_resources(tmp_path)["settings"]
    keys = sorted(p.name for p in generate_runs(tmp_path / "runs", runs=2, seed=7, tasks=10, repeats=3,
                                                history_messages=6, edge_cases=True, systems=1, layout=layout))
    baseline_job, candidate_job = partition_jobs(keys, settings, LangfuseSettings(None, None, None), workers=1)
    assert candidate_job.baseline == keys[0] and not candidate_job.stored_stages
    logged: list[str] = []
    first = [process_partition(replace(j, after=None), logged.append) for j in (baseline_job, candidate_job)]
    assert [o.error for o in first] == [None, None]
    full = tmp_path / "reports" / keys[1]
    files = {f.name: f.read_bytes() for f in full.iterdir() if f.is_file()}
    assert {"summary.md", "report.html", "comparison.json", "comparison.md"} <= set(files)

    again = tmp_path / "again" / keys[1]  # as deep as the first, for the same relative links
    outcome = process_partition(replace(candidate_job, after=None, stored_stages=True, out_dir=str(again)),
                                logged.append)
    assert outcome.error is None and outcome.compared_only
    assert list(outcome.materialized) == ["run_comparison", "reports"]
    assert outcome.materialized["run_comparison"]["baseline"] == keys[0]
    assert outcome.materialized["reports"]["run_seconds"] >= 0
    assert outcome.attempts == first[1].attempts == 31  # a duplicated line among 30 planned attempts
    assert outcome.findings == first[1].findings and outcome.comparison_version == candidate_job.comparison_inputs.version()
    assert sorted(f.name for f in again.iterdir()) == ["comparison.json", "comparison.md", "report.html", "summary.md"]
    for name in ("summary.md", "report.html", "comparison.json", "comparison.md"):
        assert (again / name).read_bytes() == files[name], name

    # the first run has no baseline: its reports say why, the same from its stored values
    why = baseline_job.comparison_inputs.not_compared
    assert why.startswith("no earlier processed run of suite ") and first[0].materialized["run_comparison"] == {
        "baseline": "none", "reason": baseline_job.baseline_reason, "gate": "no baseline", "not_compared": why}
    assert f"no comparison: {why}" in (tmp_path / "reports" / keys[0] / "summary.md").read_text()
    alone = process_partition(replace(baseline_job, stored_stages=True, out_dir=str(tmp_path / "again" / keys[0])),
                              logged.append)
    assert alone.error is None and alone.compared_only and alone.materialized["run_comparison"]["not_compared"] == why
    for name in ("summary.md", "report.html"):
        assert (tmp_path / "again" / keys[0] / name).read_bytes() == (tmp_path / "reports" / keys[0] / name).read_bytes()

    # the stored values gone (a cleared storage): processed in full, as without them
    for stored in (tmp_path / "storage" / "attempt_metrics").iterdir():
        stored.unlink()
    outcome = process_partition(replace(candidate_job, after=None, stored_stages=True, out_dir=str(again)),
                                logged.append)
    assert outcome.error is None and not outcome.compared_only and list(outcome.materialized) == list(STAGES)
    assert any("processed in full, its stored values cannot be read" in line and "attempt_metrics" in line
               for line in logged)


def test_a_run_is_compared_from_its_stored_values_only_with_its_values_and_outputs_there(tmp_path, monkeypatch):
    """``stored_stages`` is set for a run whose stages are current (up_to_date) only when its
    stored values and its metrics.json and attempts.jsonl are all there: a run whose storage or
    output folder was cleared since is processed in full; a run compared again from its stored
    values is not waited for by a run compared with it."""
    import shutil

    import dagster as dg

    from bench_pipeline.assets import run_stages
    from bench_pipeline.assets.partition_work import process_partition
    from bench_pipeline.generator import generate_runs

    for var in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)
    settings = make_resources(tmp_path)["settings"]
    keys = sorted(p.name for p in generate_runs(tmp_path / "runs", runs=3, seed=4, tasks=4, repeats=1,
                                                history_messages=4, edge_cases=False, systems=1))
    for j in run_stages.partition_jobs(keys, settings, LangfuseSettings(None, None, None), workers=1):
        assert process_partition(replace_after(j), lambda line: None).error is None
    monkeypatch.setattr(run_stages, "up_to_date", lambda instance, fingerprints: set(fingerprints))

    def flags() -> list[tuple[bool, str | None]]:
        with dg.instance_for_test() as instance:  # no materialization: up_to_date above says current
            jobs = run_stages.partition_jobs(keys, settings, LangfuseSettings(None, None, None), workers=1,
                                             instance=instance)
        return [(j.stored_stages, j.after) for j in jobs]

    assert flags() == [(True, None), (True, None), (True, None)]
    (tmp_path / "storage" / "task_groups" / f"{keys[0]}.parquet").unlink()  # a stored value gone
    shutil.rmtree(tmp_path / "reports" / keys[2])  # an output folder gone
    assert flags() == [(False, None), (True, keys[0]), (False, None)]


def replace_after(j: PartitionJob) -> PartitionJob:
    """The job processed alone (not waiting for a baseline of the same step)."""
    from dataclasses import replace

    return replace(j, after=None)


def test_a_baseline_whose_stored_values_cannot_be_read_leaves_the_run_not_compared_saying_why(tmp_path, monkeypatch):
    """The baseline chosen, its stored values gone (a cleared storage): the run is processed
    without a comparison, its reports and run_comparison say why, and the comparison's data
    version records it, so that the comparison sensor compares it once the values are back."""
    import json
    from dataclasses import replace

    from bench_pipeline.assets.partition_work import process_partition
    from bench_pipeline.assets.run_stages import partition_jobs
    from bench_pipeline.comparison_inputs import ComparisonInputs
    from bench_pipeline.generator import generate_runs

    for var in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)
    settings = make_resources(tmp_path)["settings"]
    keys = sorted(p.name for p in generate_runs(tmp_path / "runs", runs=2, seed=7, tasks=4, repeats=2,
                                                history_messages=6, edge_cases=False, systems=1))
    baseline_job, candidate_job = partition_jobs(keys, settings, LangfuseSettings(None, None, None), workers=1)
    assert process_partition(replace(baseline_job, after=None), lambda _: None).error is None
    for stored in (tmp_path / "storage").rglob(f"*{keys[0]}*"):
        if stored.is_file():
            stored.unlink()
    outcome = process_partition(replace(candidate_job, after=None), lambda _: None)
    assert outcome.error is None and not outcome.compared_only
    why = f"the stored values of its baseline {keys[0]!r} could not be read"
    metadata = outcome.materialized["run_comparison"]
    assert metadata["baseline"] == "none" and metadata["not_compared"] == why
    assert metadata["reason"].startswith(f"no baseline: the stored values of baseline {keys[0]!r} cannot be read (")
    out = tmp_path / "reports" / keys[1]
    assert not (out / "comparison.json").exists()
    assert f"This run has no baseline, so no comparison: {why}." in (out / "summary.md").read_text()
    assert json.loads(outcome.comparison_version) == [None, None, candidate_job.comparison_inputs.candidate_version, why]
    recorded = ComparisonInputs.from_version(keys[1], outcome.comparison_version)
    assert (recorded.baseline, recorded.not_compared) == (None, why)
