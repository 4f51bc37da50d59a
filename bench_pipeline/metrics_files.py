"""metrics.json and attempts.jsonl (outputs.md): the metrics document, each attempt's record,
and writing both."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from .bulk import gc_paused
from .formula import FORMULA_VERSION
from .jsonio import dumps, encode_records, write_atomic
from .run_reader import RawRun
from .vocabulary import ATTEMPT_FIELDS

SCHEMA_VERSION = 1

#: Keys of an attempts.jsonl line, in outputs.md order, then provenance and evidence.
ATTEMPT_KEYS = (*ATTEMPT_FIELDS, "provenance", "evidence")


def metrics_document(raw: RawRun, body: dict, quality: dict, generated_at: str | None = None) -> dict:
    """metrics.json from the aggregate sections (capability.combine_sections) and data_quality."""
    return {
        "schema_version": SCHEMA_VERSION,
        "formula_version": FORMULA_VERSION,
        "run_id": raw.run_id,
        "suite": raw.suite,
        "generated_at": generated_at or dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "results_file": raw.results_file,
        **body,
        "data_quality": quality,
    }


def attempt_record(row: dict) -> dict:
    """An attempts.jsonl line: outputs.md names in order (internal keys dropped)."""
    return {k: row[k] for k in ATTEMPT_KEYS}


def encode_attempt_lines(attempts: list[dict]) -> bytes:
    """attempts.jsonl lines (outputs.md): one compact JSON object per attempt row."""
    return encode_records([attempt_record(a) for a in attempts])


@gc_paused()
def write_metrics_files(out_dir: Path, metrics: dict, attempts: list[dict],
                        attempts_written: Path | None = None) -> dict[str, Path]:
    """metrics.json and attempts.jsonl into ``out_dir`` (created when needed).

    ``attempts_written``, when given, is attempts.jsonl already written (by
    ``pipeline.run_stages``, from the lines encoded where the attempts were derived).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    metrics_path = out_dir / "metrics.json"
    write_atomic(metrics_path, dumps(metrics) + b"\n")
    attempts_path = attempts_written or out_dir / "attempts.jsonl"
    if attempts_written is None:
        write_atomic(attempts_path, encode_attempt_lines(attempts))
    return {"metrics.json": metrics_path, "attempts.jsonl": attempts_path}
