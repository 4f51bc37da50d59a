"""metrics.json and attempts.jsonl: the document's keys, each attempt's record, the files."""

from __future__ import annotations

import json
from pathlib import Path

from bench_pipeline.formula import FORMULA_VERSION
from bench_pipeline.metrics_files import (
    ATTEMPT_KEYS,
    SCHEMA_VERSION,
    attempt_record,
    encode_attempt_lines,
    metrics_document,
    write_metrics_files,
)
from bench_pipeline.run_reader import RawRun
from bench_pipeline.vocabulary import ATTEMPT_FIELDS


def _raw(run_id: str = "run-1", suite: str | None = "suite-x") -> RawRun:
    return RawRun(run_id, Path(run_id), {}, {}, suite, [], None, None)


def _row(task_id: str, **extra) -> dict:
    """An attempt row as stage 2 makes it: every record key, plus keys internal to the stages."""
    values = {key: None for key in ATTEMPT_KEYS}
    return {**values, "run_id": "run-1", "task_id": task_id, "attempt": 1, "provenance": {"llm_calls": "recorded"},
            "evidence": {"findings": {}}, "observations": ["internal"], **extra}


def test_metrics_document_puts_the_identity_first_and_data_quality_last():
    body = {"capability": {"pass_at_1": 1}, "coverage": {"attempts": 2}}
    quality = {"bad_rows": []}
    document = metrics_document(_raw(), body, quality, generated_at="2026-11-30T00:00:00Z")
    assert list(document) == ["schema_version", "formula_version", "run_id", "suite", "generated_at", "results_file",
                              "capability", "coverage", "data_quality"]
    assert document == {"schema_version": SCHEMA_VERSION, "formula_version": FORMULA_VERSION, "run_id": "run-1",
                        "suite": "suite-x", "generated_at": "2026-11-30T00:00:00Z", "results_file": "results.jsonl",
                        "capability": {"pass_at_1": 1},
                        "coverage": {"attempts": 2}, "data_quality": {"bad_rows": []}}
    assert SCHEMA_VERSION == 1


def test_metrics_document_stamps_the_time_it_is_made_in_utc():
    stamp = metrics_document(_raw(suite=None), {}, {})["generated_at"]
    assert len(stamp) == 20 and stamp[4] == "-" and stamp[10] == "T" and stamp.endswith("Z")


def test_attempt_record_keeps_the_outputs_md_fields_in_order_then_provenance_and_evidence():
    record = attempt_record(_row("t", quality_score=0.5))
    assert tuple(record) == ATTEMPT_KEYS == (*ATTEMPT_FIELDS, "provenance", "evidence")
    assert "observations" not in record
    assert (record["task_id"], record["quality_score"], record["provenance"]) == ("t", 0.5, {"llm_calls": "recorded"})


def test_attempt_lines_are_one_compact_object_per_attempt():
    lines = encode_attempt_lines([_row("t"), _row("u")]).split(b"\n")
    assert lines[-1] == b"" and len(lines) == 3
    assert [json.loads(line)["task_id"] for line in lines[:2]] == ["t", "u"]
    assert b": " not in lines[0] and b", " not in lines[0]  # compact


def test_write_metrics_files_writes_both_and_keeps_an_attempts_file_already_written(tmp_path):
    metrics = {"run_id": "run-1", "capability": {}}
    written = write_metrics_files(tmp_path / "out", metrics, [_row("t")])
    assert written == {"metrics.json": tmp_path / "out" / "metrics.json",
                       "attempts.jsonl": tmp_path / "out" / "attempts.jsonl"}
    assert json.loads(written["metrics.json"].read_text()) == metrics
    assert written["metrics.json"].read_bytes().endswith(b"}\n")
    assert written["attempts.jsonl"].read_bytes() == encode_attempt_lines([_row("t")])
    made = tmp_path / "made.jsonl"
    made.write_bytes(b"as made by the chunks\n")
    again = write_metrics_files(tmp_path / "out", metrics, [_row("u")], attempts_written=made)
    assert again["attempts.jsonl"] == made and made.read_bytes() == b"as made by the chunks\n"
    assert written["attempts.jsonl"].read_bytes() == encode_attempt_lines([_row("t")])  # not rewritten
