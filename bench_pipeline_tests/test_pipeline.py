"""The composition of the stages (pipeline.py) on generated runs: outputs.md's structure,
invariants, determinism, the same bytes in parallel and in one process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench_pipeline.frames import attempts_frame, attempts_from_frame, raw_results_frame, tasks_frame, tasks_from_frame
from bench_pipeline.generator import generate_runs
from bench_pipeline.metrics_files import ATTEMPT_KEYS
from bench_pipeline.outputs import write_run_outputs
from bench_pipeline.pipeline import run_stages
from bench_pipeline.vocabulary import EFFICIENCY_FIELDS, FAILURE_CLASSES, FAILURE_STAGES, RELIABILITY_FIELDS

# outputs.md "metrics.json", key by key.
PASS_KEYS = {"value", "successes", "eligible_tasks", "total_tasks", "ci95"}
METRICS_SHAPE = {
    "capability": {
        "pass_at_1": PASS_KEYS, "pass_at_k": PASS_KEYS, "pass_pow_k": PASS_KEYS,
        "attempt_success_rate": {"value", "successes", "eligible_attempts", "total_attempts", "ci95", "coverage"},
        "oracle_best_score_at_k": {"value", "count", "eligible_tasks"},
        "first_success_attempt": {"mean", "p50", "count"},
    },
    "coverage": {"pass_at_1", "pass_at_k", "pass_pow_k", "unique_tasks", "attempts", "metrics_k",
                 "agent_eligible_attempts", "invalid_attempts", "planned_attempts", "missing_attempts"},
    "diagnostics": {"failure_stage_coverage"},
    # comparison.md, "Uncertainty grouped by task and estimators, in metrics.json"
    "uncertainty": {"attempt_success_rate": {"value", "tasks", "attempts", "se_simple", "se_clustered", "ci95",
                                             "design_effect"}},
    "estimators": {"pass_at_k_unbiased": {"value", "tasks", "k"}, "pass_pow_k_unbiased": {"value", "tasks", "k"}},
}
#: metrics.json's keys in order: outputs.md's, with comparison.md's two additions before
#: data_quality (which stays last).
METRICS_KEY_ORDER = ["schema_version", "formula_version", "run_id", "suite", "generated_at", "results_file",
                     "capability",
                     "coverage", "failures", "diagnostics", "category", "observations", "efficiency",
                     "reliability", "cost_to_first_success", "aggregate", "uncertainty", "estimators",
                     "data_quality"]
DIST_KEYS = {"count", "sum", "mean", "p50", "p90", "p95"}
PER_TASK_KEYS = {"attempts", "eligible_attempts", "passed", "failed", "pass_rate", "best_quality",
                 "avg_quality", "avg_wall_ms", "first_attempt_passed"}
OUTPUTS_MD_ATTEMPT_FIELDS = {
    "run_id", "task_id", "attempt", "line", "category", "artifact_dir", "status", "success_raw", "success",
    "agent_eligible_raw", "agent_eligible", "failure_class", "first_failure_stage", "failure_event_ref",
    "quality_score", "rubric_pass_count", "rubric_total", "task_wall_ms", "setup_ms", "screenshot_capture_ms",
    "time_to_first_token_ms", "llm_calls", "llm_time_ms", "vision_llm_calls", "vision_llm_time_ms",
    "device_actions", "device_execution_ms", "tool_calls", "screenshots_taken", "tool_errors", "replan_count",
    "retry_count", "input_tokens", "output_tokens", "total_tokens", "cached_input_tokens", "reasoning_tokens",
    "cost_usd", "recovery_attempted", "recovery_succeeded",
}


def assert_outputs_md_shape(m: dict) -> None:
    assert list(m) == METRICS_KEY_ORDER
    for section, shape in METRICS_SHAPE.items():
        if isinstance(shape, set):
            assert shape <= set(m[section]), section
        else:
            for name, keys in shape.items():
                assert keys <= set(m[section][name]), (section, name)
    for name in ("pass_at_1", "pass_at_k", "pass_pow_k", "attempt_success_rate"):
        assert set(m["capability"][name]["ci95"]) == {"lower", "upper"}
    assert set(m["uncertainty"]) == {"attempt_success_rate"}
    assert set(m["uncertainty"]["attempt_success_rate"]["ci95"]) == {"lower", "upper"}
    assert set(m["estimators"]) == {"pass_at_k_unbiased", "pass_pow_k_unbiased"}
    assert set(m["failures"]["class"]) >= set(FAILURE_CLASSES)
    assert set(m["failures"]["stage"]) >= set(FAILURE_STAGES)
    assert set(m["efficiency"]) == set(EFFICIENCY_FIELDS)
    assert set(m["reliability"]) == set(RELIABILITY_FIELDS)
    for dist in [*m["efficiency"].values(), *m["reliability"].values()]:
        assert set(dist) == DIST_KEYS
    assert set(m["cost_to_first_success"]) == {"task_wall_ms", "total_tokens", "cost_usd"}
    for dist in m["cost_to_first_success"].values():
        assert set(dist) == {"count", "mean", "p50"}
    for entry in m["category"].values():
        assert set(entry) == {"pass_rate", "rubric_pass_rate", "attempts"}
    for entry in m["observations"].values():
        assert set(entry) == {"pass_rate", "passed_tasks", "observed_tasks"}
    assert set(m["aggregate"]) == {"tasks", "per_task"}
    for entry in m["aggregate"]["per_task"].values():
        assert set(entry) == PER_TASK_KEYS
    assert {"bad_rows", "duplicate_rows", "missing_attempts", "unsafe_artifact_dirs"} <= set(m["data_quality"])


def assert_invariants(m: dict, attempts: list[dict]) -> None:
    """Relations that hold for every run, whatever its content."""
    cap, cov = m["capability"], m["coverage"]
    for name in ("pass_at_1", "pass_at_k", "pass_pow_k", "attempt_success_rate"):
        metric = cap[name]
        lo, hi = metric["ci95"]["lower"], metric["ci95"]["upper"]
        if metric["value"] is None:
            assert lo is None and hi is None
        else:
            assert 0 <= lo <= metric["value"] <= hi <= 1
    assert cap["pass_pow_k"]["successes"] <= cap["pass_at_k"]["successes"] <= cap["pass_at_k"]["eligible_tasks"]
    assert cap["pass_pow_k"]["eligible_tasks"] == cap["pass_at_k"]["eligible_tasks"]
    assert cap["pass_at_1"]["successes"] <= cap["pass_at_1"]["eligible_tasks"] <= cov["unique_tasks"]
    assert cov["agent_eligible_attempts"] + cov["invalid_attempts"] == cov["attempts"] == len(attempts)
    assert m["aggregate"]["tasks"] == cov["attempts"]
    eligible_failed = sum(1 for a in attempts if a["agent_eligible"] and a["success"] is False)
    assert sum(m["failures"]["stage"].values()) == eligible_failed
    assert sum(m["failures"]["class"].values()) == sum(1 for a in attempts if a["failure_class"] is not None)
    assert sum(t["attempts"] for t in m["aggregate"]["per_task"].values()) == len({(a["task_id"], a["attempt"]) for a in attempts})
    assert cap["oracle_best_score_at_k"]["count"] <= cap["oracle_best_score_at_k"]["eligible_tasks"]
    assert cap["first_success_attempt"]["count"] <= cov["unique_tasks"]
    for dist in [*m["efficiency"].values(), *m["reliability"].values()]:
        if dist["count"]:
            assert dist["p50"] <= dist["p90"] <= dist["p95"]
        else:
            assert dist["sum"] is None and dist["mean"] is None
    assert sum(c["attempts"] for c in m["category"].values()) <= cov["attempts"]
    # the interval grouped by task is around the same attempt success, on the same population
    u, asr = m["uncertainty"]["attempt_success_rate"], cap["attempt_success_rate"]
    assert (u["value"], u["attempts"]) == (asr["value"], asr["eligible_attempts"])
    if u["value"] is not None:
        assert 0 <= u["ci95"]["lower"] <= u["value"] <= u["ci95"]["upper"] <= 1
        assert u["tasks"] <= cov["unique_tasks"]
    est = m["estimators"]
    assert est["pass_at_k_unbiased"]["tasks"] == est["pass_pow_k_unbiased"]["tasks"] <= cov["unique_tasks"]
    assert est["pass_at_k_unbiased"]["k"] == cov["metrics_k"]
    if est["pass_at_k_unbiased"]["value"] is not None:
        assert 0 <= est["pass_pow_k_unbiased"]["value"] <= est["pass_at_k_unbiased"]["value"] <= 1


@pytest.fixture(scope="module")
def fifty_runs(tmp_path_factory) -> list[Path]:
    return generate_runs(tmp_path_factory.mktemp("runs"), runs=50, seed=11, tasks=12, repeats=3, history_messages=20)


def test_every_generated_run_processes_with_the_outputs_md_structure(fifty_runs, tmp_path):
    """Done-when of the engine: every folder of `generate --runs 50` processes, and every
    metrics.json has every key of outputs.md."""
    found = {"bad_rows": 0, "duplicate_rows": 0, "unsafe_artifact_dirs": 0, "invalid_artifacts": 0, "missing_attempts": 0}
    for run in fifty_runs:
        processed = run_stages(run).processed
        written = write_run_outputs(tmp_path / run.name, processed)
        metrics = json.loads(written["metrics.json"].read_text())
        assert_outputs_md_shape(metrics)
        assert_invariants(metrics, processed.attempts)
        lines = written["attempts.jsonl"].read_text().splitlines()
        assert len(lines) == len(processed.raw.rows)
        assert set(json.loads(lines[0])) == set(ATTEMPT_KEYS) and OUTPUTS_MD_ATTEMPT_FIELDS < set(ATTEMPT_KEYS)
        for key in found:
            found[key] += len(metrics["data_quality"][key])
        # The records the CLI works on satisfy the schemas the Dagster stages enforce.
        # Each frame validates (pandera raises otherwise) and round-trips without loss.
        assert len(raw_results_frame(processed.raw)) == len(processed.raw.rows) + len(processed.raw.bad_rows)
        frame = attempts_frame(processed.attempts)
        assert attempts_from_frame(frame) == [{k: a[k] for k in frame.columns} for a in processed.attempts]
        assert tasks_from_frame(tasks_frame(processed.tasks)) == processed.tasks
    assert all(found.values()), found  # the generator's edge cases reach the report


def test_parallel_derivation_equals_sequential(tmp_path, monkeypatch):
    run = generate_runs(tmp_path, runs=1, seed=5, tasks=40, repeats=3, history_messages=12)[0]
    monkeypatch.setattr("bench_pipeline.derivation.PARALLEL_MIN_ROWS", 10)
    monkeypatch.setattr("bench_pipeline.derivation._CHUNK_ROWS", 17)
    assert run_stages(run, workers=2).processed.attempts == run_stages(run, workers=1).processed.attempts


def test_parallel_outputs_equal_sequential_outputs(fifty_runs, tmp_path, monkeypatch):
    """With workers, report.html is written here and the other files by a forked child
    (report rows in chunks, too): every file is byte-identical to the sequential one."""
    processed = run_stages(fifty_runs[3]).processed
    sequential = write_run_outputs(tmp_path / "one", processed, workers=1)
    monkeypatch.setattr("bench_pipeline.reports.rows.PARALLEL_MIN_ATTEMPTS", 1)
    monkeypatch.setattr("bench_pipeline.reports.rows._CHUNK_ATTEMPTS", 7)
    monkeypatch.setattr("bench_pipeline.derivation.PARALLEL_MIN_ROWS", 1)  # the outputs' fork, too
    parallel = write_run_outputs(tmp_path / "two", processed, workers=2)
    assert list(parallel) == list(sequential) == ["metrics.json", "attempts.jsonl", "summary.md", "report.html"]
    for name, path in sequential.items():
        assert parallel[name] == tmp_path / "two" / name
        assert parallel[name].read_bytes() == path.read_bytes(), name


@pytest.mark.parametrize("workers", [1, 2])
def test_run_stages_with_an_output_folder_equals_the_stages_then_write(fifty_runs, tmp_path, monkeypatch, workers):
    """The composition with files (attempts.jsonl lines and report rows made where each
    chunk is derived, bulky evidence then dropped) writes the same bytes as processing
    without files and writing the processed run in one process."""
    from bench_pipeline.outputs import BULKY_EVIDENCE
    from bench_pipeline.pipeline import run_stages

    monkeypatch.setattr("bench_pipeline.derivation.PARALLEL_MIN_ROWS", 1)
    monkeypatch.setattr("bench_pipeline.derivation._CHUNK_ROWS", 5)
    # One generated_at for both paths, so that every byte can be compared.
    monkeypatch.setattr("bench_pipeline.metrics_files.metrics_document.__defaults__", ("2026-11-30T00:00:00Z",))
    for run in fifty_runs[:6]:
        expected = write_run_outputs(tmp_path / "staged" / run.name, run_stages(run).processed)
        result = run_stages(run, tmp_path / "command" / run.name, workers=workers)
        processed, written = result.processed, result.written
        assert list(written) == list(expected)
        for name, path in expected.items():
            assert written[name].read_bytes() == path.read_bytes(), (run.name, name)
        assert len(processed.attempts) == len(processed.raw.rows)
        assert not any(k in a["evidence"] for a in processed.attempts for k in BULKY_EVIDENCE)
        result = run_stages(run, tmp_path / "kept" / run.name, workers=workers, keep_evidence=True)
        kept = result.processed
        staged = run_stages(run).processed
        assert kept.attempts == staged.attempts
        assert kept.tasks == processed.tasks == staged.tasks
        assert kept.metrics == processed.metrics == staged.metrics


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), tasks=st.integers(1, 9), repeats=st.integers(1, 4), edge=st.booleans())
def test_invariants_hold_on_generated_runs(tmp_path_factory, seed, tasks, repeats, edge):
    root = tmp_path_factory.mktemp("prop")
    run = generate_runs(root, runs=1, seed=seed, tasks=tasks, repeats=repeats, history_messages=8, edge_cases=edge)[0]
    first = run_stages(run).processed
    assert_outputs_md_shape(first.metrics)
    assert_invariants(first.metrics, first.attempts)
    again = run_stages(run).processed
    first.metrics.pop("generated_at")
    again.metrics.pop("generated_at")
    assert again.metrics == first.metrics  # deterministic


def test_extreme_but_valid_numbers_process_end_to_end(tmp_path):
    """Numbers inside the float range (R42) whose totals overflow it or pass 64 bits never
    stop a run: totals beyond the range are unavailable, 64-bit-plus integers are written
    exactly, counts beyond 64 bits are unavailable, and the Dagster frames accept the rows.
    (The JSON parser reads an integer beyond 64 bits as the nearest float.)"""
    from bench_pipeline_tests.run_builder import make_run, row

    rows = [row("t", status="failed", metrics={"input_tokens": 2 ** 63, "task_wall_ms": 1.7e308, "llm_calls": 2 ** 70}),
            row("u", status="passed", metrics={"input_tokens": 2 ** 63, "task_wall_ms": 1.7e308, "retry_count": 2 ** 64})]
    run = make_run(tmp_path, rows)
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "bench_pipeline.cli", "process", str(run), "--output-dir", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    wall = metrics["efficiency"]["task_wall_ms"]
    assert (wall["count"], wall["sum"], wall["mean"], wall["p50"]) == (2, None, None, 1.7e308)
    assert metrics["efficiency"]["input_tokens"]["sum"] == 2 ** 64  # exact, beyond 64 bits
    lines = [json.loads(line) for line in (out / "attempts.jsonl").read_text().splitlines()]
    assert lines[0]["input_tokens"] == 2 ** 63
    assert lines[0]["llm_calls"] is None and lines[1]["retry_count"] is None  # counts beyond 64 bits
    assert (out / "report.html").stat().st_size > 0 and "n/a" in (out / "summary.md").read_text()
    assert len(attempts_frame(run_stages(run).processed.attempts)) == 2


ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2 ** 64) | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["", "t", "passed", "failed", "timeout", "judge_error", "skipped", "agent", "environment",
                       "tasks/t", "../x", "/abs", "setup", "evaluation", "tap", "screenshot observation"]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(
        st.sampled_from(["task_id", "attempt", "status", "success", "agent_eligible", "failure_class", "metrics",
                         "artifact_dir", "quality_score", "category", "rubric", "judge", "tasks", "id", "metrics_k",
                         "type", "usage", "events", "extra", "final_response", "tool_calls", "passed", "lines",
                         "hard_assertions", "trace_observations", "input_tokens", "task_wall_ms", "llm_calls"]),
        children, max_size=5),
    max_leaves=20,
)
ROW_FIELDS = st.fixed_dictionaries(
    {"task_id": st.sampled_from(["t", "u"]) | ANY_JSON},
    optional={k: ANY_JSON for k in ("attempt", "status", "success", "agent_eligible", "failure_class", "metrics",
                                    "artifact_dir", "quality_score", "category", "rubric", "trace_observations",
                                    "hard_assertions", "task_wall_ms", "llm_calls", "first_failure_stage")},
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(rows=st.lists(ROW_FIELDS, min_size=1, max_size=4), manifest=ANY_JSON, suite=ANY_JSON,
       history=ANY_JSON, episode=ANY_JSON, trace=ANY_JSON)
def test_any_json_anywhere_never_stops_a_run(tmp_path_factory, rows, manifest, suite, history, episode, trace):
    """Whatever JSON the runner leaves in the rows, manifest, suite and artifacts, the run is
    processed and every output file is written (bad input becomes nulls and findings)."""
    from bench_pipeline.pipeline import run_stages
    from bench_pipeline_tests.run_builder import make_run

    root = tmp_path_factory.mktemp("fuzz")
    artifacts = {"tasks/t": {"history.json": history, "episode.json": episode, "trace.json": trace}}
    run = make_run(root, rows, manifest=manifest, suite=suite, artifacts=artifacts)
    result = run_stages(run, root / "out")
    processed, written = result.processed, result.written
    assert list(written) == ["metrics.json", "attempts.jsonl", "summary.md", "report.html"]
    metrics = json.loads(written["metrics.json"].read_text())
    assert metrics["coverage"]["attempts"] == len(processed.attempts)
    assert len(written["attempts.jsonl"].read_text().splitlines()) == len(processed.attempts)
    lines = {a["line"] for a in processed.attempts}
    assert all(v["line"] in lines and isinstance(v["field"], str) for v in metrics["data_quality"]["invalid_values"])


def test_a_large_k_with_few_attempts_is_listed_compactly(tmp_path):
    """metrics_k = 1,000 with 2 attempts per task: the reports name a few missing attempts
    per task and count the rest, instead of a thousand entries per task."""
    from bench_pipeline.pipeline import run_stages
    from bench_pipeline.reports import LIST_CAP, STRIP_CAP
    from bench_pipeline_tests.run_builder import make_run, row

    rows = [row(f"t{i}", attempt=a, status="failed") for i in range(40) for a in (1, 2)]
    run = make_run(tmp_path, rows, manifest={"status": "completed", "metrics_k": 1000})
    result = run_stages(run, tmp_path / "out")
    processed, written = result.processed, result.written
    assert processed.raw.metrics_k == 1000 and processed.metrics["capability"]["pass_at_k"]["eligible_tasks"] == 0
    summary = written["summary.md"].read_text()
    assert f"{998 - LIST_CAP:,} more attempts missing" in summary
    page = written["report.html"].read_text()
    assert f"#{STRIP_CAP + 1}-#1000: see the attempt table" in page
    assert page.count("attempt 999 missing") == 0 and written["report.html"].stat().st_size < 2_000_000


def test_nan_next_to_a_huge_integer_in_row_evidence_is_written_as_null(tmp_path):
    """orjson cannot write an integer beyond 64 bits, so such a value takes the standard
    library's path; NaN from the input must not stop it (orjson writes NaN as null too)."""
    from bench_pipeline.pipeline import run_stages
    from bench_pipeline_tests.run_builder import make_run, row

    big = "1" + "0" * 30
    line = ('{"task_id": "t", "attempt": 1, "status": "failed", "success": false, "agent_eligible": true,'
            ' "hard_assertions": {"x": NaN, "y": ' + big + '}}')
    result = run_stages(make_run(tmp_path, [line, row("u")]), tmp_path / "out")
    processed, written = result.processed, result.written
    first = json.loads(written["attempts.jsonl"].read_text().splitlines()[0])
    assert first["evidence"]["hard_assertions"] == {"x": None, "y": int(big)}
    assert len(processed.attempts) == 2
    back = attempts_from_frame(attempts_frame(run_stages(make_run(tmp_path / "d", [line])).processed.attempts))
    assert back[0]["evidence"]["hard_assertions"] == {"x": None, "y": int(big)}


def test_values_of_the_wrong_type_are_null_and_located_in_every_output(tmp_path):
    """A string cost, a textual success and a NaN wall time are read as the reference's nulls
    (success then derived from status) and each is listed with its line and field in
    metrics.json, both reports and the data-quality check, the other rows untouched."""
    from bench_pipeline.data_quality_checks import run_checks
    from bench_pipeline.pipeline import run_stages
    from bench_pipeline_tests.run_builder import make_run, row

    bad = ('{"task_id": "t", "attempt": 1, "status": "failed", "success": "true", "agent_eligible": true,'
           ' "metrics": {"cost_usd": "0.12", "task_wall_ms": NaN}}')
    result = run_stages(make_run(tmp_path, [row("u", metrics={"cost_usd": 0.5}), bad]), tmp_path / "out")
    processed, written = result.processed, result.written
    t = next(a for a in processed.attempts if a["task_id"] == "t")
    assert (t["success_raw"], t["success"], t["cost_usd"], t["task_wall_ms"]) == (None, False, None, None)
    metrics = json.loads(written["metrics.json"].read_text())
    assert metrics["efficiency"]["cost_usd"]["count"] == 1 and metrics["efficiency"]["cost_usd"]["sum"] == 0.5
    assert [(v["line"], v["task_id"], v["field"], v["value"]) for v in metrics["data_quality"]["invalid_values"]] == [
        (2, "t", "success", '"true"'), (2, "t", "task_wall_ms", "NaN"), (2, "t", "cost_usd", '"0.12"')]
    summary = written["summary.md"].read_text()
    assert "- Recorded values of the wrong type in results.jsonl (read as unavailable): 3: line 2 `t` attempt 1 " \
           "`success` = `\"true\"` (not true, false or null: success derived from status)," in summary
    assert "<code>cost_usd</code> = <code>&#34;0.12&#34;</code>" in written["report.html"].read_text()
    checks = {c.name: c for c in run_checks(processed.raw, processed.attempts, metrics["data_quality"])}
    assert (checks["no_invalid_values"].passed, checks["no_invalid_values"].count) == (False, 3)


def test_artifact_values_of_the_wrong_type_are_located_in_every_output(tmp_path):
    """A model call's duration written as text in history.json and a first-token time written
    as text in episode.json make their fields null and are each listed with the attempt's
    line, the file and where in it, in metrics.json, both reports and the data-quality check."""
    from bench_pipeline.data_quality_checks import run_checks
    from bench_pipeline.pipeline import run_stages
    from bench_pipeline_tests.run_builder import make_run, row

    history = [{"type": "assistant", "usage": {"input_tokens": 4, "output_tokens": 1}, "duration_ms": 700},
               {"type": "assistant", "usage": {"input_tokens": 4, "output_tokens": 1}, "duration_ms": "900"}]
    episode = {"events": [], "extra": {"first_token_time_ms": "12"}}
    run = make_run(tmp_path, [row("u"), row("t")],
                   artifacts={"tasks/t": {"history.json": history, "episode.json": episode}})
    result = run_stages(run, tmp_path / "out")
    t = next(a for a in result.processed.attempts if a["task_id"] == "t")
    assert (t["llm_calls"], t["llm_time_ms"], t["input_tokens"], t["time_to_first_token_ms"]) == (2, None, 8, None)
    metrics = json.loads(result.written["metrics.json"].read_text())
    assert metrics["data_quality"]["invalid_artifact_values"] == [
        {"line": 2, "task_id": "t", "attempt": 1, "file": "tasks/t/history.json", "field": "[1].duration_ms",
         "value": '"900"', "reason": "a string, not a number: the attempt's llm_time_ms is unavailable"},
        {"line": 2, "task_id": "t", "attempt": 1, "file": "tasks/t/episode.json", "field": "extra.first_token_time_ms",
         "value": '"12"', "reason": "a string, not a number: the attempt's time_to_first_token_ms is unavailable"}]
    assert metrics["data_quality"]["invalid_values"] == []
    summary = result.written["summary.md"].read_text()
    assert ("- Values of the wrong type in history.json and episode.json (read as absent): 2: line 2 `t` attempt 1 "
            "`tasks/t/history.json` `[1].duration_ms` = `\"900\"` (a string, not a number: the attempt's llm\\_time\\_ms "
            "is unavailable),") in summary  # the reason's text escaped for markdown
    html = result.written["report.html"].read_text()
    assert "<code>tasks/t/episode.json</code> <code>extra.first_token_time_ms</code> = <code>&#34;12&#34;</code>" in html
    checks = {c.name: c for c in run_checks(result.processed.raw, result.processed.attempts, metrics["data_quality"])}
    assert (checks["no_invalid_artifact_values"].passed, checks["no_invalid_artifact_values"].count) == (False, 2)
    assert checks["no_invalid_values"].passed


def test_the_composition_loads_the_langfuse_sdk_only_to_publish():
    """`bench-pipeline process` without --publish does not pay for importing the Langfuse SDK
    (about 0.3 s, twice a small run's whole processing)."""
    probe = "import sys, bench_pipeline.cli, bench_pipeline.pipeline; print('langfuse' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False"
