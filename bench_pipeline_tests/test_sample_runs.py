"""sample_runs.py: the sample runs the main command writes into an empty runs root."""

from __future__ import annotations

import json

from bench_pipeline.data_quality_checks import run_checks
from bench_pipeline.identity import read_identity
from bench_pipeline.pipeline import run_stages
from bench_pipeline.sample_runs import ensure_sample_runs


def test_sample_runs_say_which_is_clean_and_which_has_data_problems(tmp_path):
    """The sample ids tell a newcomer what to expect: the clean runs pass every check, and
    each run with data problems fails at least one, because of its data. The samples are in
    the benchmark runner's layout (no manifest status; one re-judged run per pair), and the
    clean runs are repeats of one system."""

    ensure_sample_runs(tmp_path)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert [n.split("-2026-")[0] for n in names] == ["sample-clean", "sample-clean", "sample-with-data-problems",
                                                      "sample-with-data-problems"]
    assert all("status" not in json.loads((tmp_path / n / "manifest.json").read_text()) for n in names)
    assert all((tmp_path / n / "metrics.json").is_file() for n in names)
    clean = [read_identity(tmp_path / n) for n in names[:2]]
    assert (clean[0].model_name, clean[0].git_sha) == (clean[1].model_name, clean[1].git_sha)
    failed = {}
    files = set()
    for name in names:
        processed = run_stages(tmp_path / name).processed
        assert processed.raw.run_id == name
        files.add(processed.metrics["results_file"])
        failed[name] = {c.name for c in run_checks(processed.raw, processed.attempts, processed.metrics["data_quality"])
                        if not c.passed}
    assert files == {"results.jsonl", "results.rejudged.jsonl"}
    assert failed[names[0]] == failed[names[1]] == set()
    assert all(failed[n] for n in names[2:])
    assert set().union(*failed.values()) == {"no_bad_rows", "no_duplicate_rows", "no_missing_attempts",
                                             "no_unsafe_artifact_dirs", "no_invalid_artifacts", "no_invalid_values"}
    ensure_sample_runs(tmp_path)  # a runs root with runs gets no more
    assert sorted(p.name for p in tmp_path.iterdir()) == names


def test_only_the_default_runs_root_gets_sample_runs(tmp_path, monkeypatch):
    """scripts/ui.sh's preparation (no instance yet): samples into an empty $BENCH_HOME/runs,
    none into an empty runs root of one's own (BENCH_RUNS_ROOT), where they would mix with
    the real runs to come."""
    from bench_pipeline.main import prepare_ui
    from bench_pipeline.sample_runs import SAMPLES, samples_allowed

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "no-instance-yet"))
    monkeypatch.setenv("BENCH_HOME", str(tmp_path / "home"))
    own = tmp_path / "own-runs"
    own.mkdir()
    monkeypatch.setenv("BENCH_RUNS_ROOT", str(own))
    assert not samples_allowed()
    prepare_ui()
    assert list(own.iterdir()) == [] and not (tmp_path / "home" / "runs").exists()
    monkeypatch.delenv("BENCH_RUNS_ROOT")
    assert samples_allowed()
    prepare_ui()
    assert len(list((tmp_path / "home" / "runs").iterdir())) == sum(s.runs for s in SAMPLES)
