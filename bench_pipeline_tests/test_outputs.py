"""Stage 5's files: a processed run's outputs, with and without a baseline comparison."""

from __future__ import annotations

import json

from bench_pipeline.comparison import comparison_of
from bench_pipeline.comparison_sides import side_from_processed
from bench_pipeline.jsonio import dumps
from bench_pipeline.outputs import COMPARISON_FILES, OUTPUT_FILES, write_comparison_files, write_run_outputs
from bench_pipeline.pipeline import run_stages

from .run_builder import make_run, row


def test_write_run_outputs_writes_the_four_files_in_their_order(tmp_path):
    processed = run_stages(make_run(tmp_path / "runs", [row("a"), row("b", status="failed")])).processed
    written = write_run_outputs(tmp_path / "out", processed)
    assert list(written) == list(OUTPUT_FILES) == ["metrics.json", "attempts.jsonl", "summary.md", "report.html"]
    assert written["metrics.json"].read_bytes() == dumps(processed.metrics) + b"\n"
    lines = written["attempts.jsonl"].read_text().splitlines()
    assert [(r["task_id"], r["status"]) for r in map(json.loads, lines)] == [("a", "passed"), ("b", "failed")]
    assert written["summary.md"].read_text().startswith("# ")
    assert "<html" in written["report.html"].read_text()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(OUTPUT_FILES)


def test_a_comparison_adds_its_two_files(tmp_path):
    baseline = run_stages(make_run(tmp_path / "runs", [row("a"), row("b")], run_id="base")).processed
    candidate = run_stages(make_run(tmp_path / "runs", [row("a"), row("b", status="failed")], run_id="cand")).processed
    comparison = comparison_of(side_from_processed(baseline), side_from_processed(candidate))
    written = write_run_outputs(tmp_path / "out", candidate, comparison=comparison)
    assert list(written) == [*OUTPUT_FILES, *COMPARISON_FILES]
    assert json.loads(written["comparison.json"].read_text()) == json.loads(json.dumps(comparison.result))
    again = write_comparison_files(tmp_path / "again", comparison)
    assert list(again) == ["comparison.json", "comparison.md"]
    assert again["comparison.json"].read_bytes() == written["comparison.json"].read_bytes()
    assert again["comparison.md"].read_text().startswith("# ")
