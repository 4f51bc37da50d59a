"""The stages' glue that ``pipeline.run_stages`` composes: attempts in chunks (stage 2),
data_quality and the metrics.json document (stage 4), attempts.jsonl records, metrics.json.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

from .attempt_metrics import RunContext, derive_attempt
from .bulk import fork_map, gc_paused
from .formula import FORMULA_VERSION
from .jsonio import dumps, encode_records, write_atomic
from .run_reader import RawRun
from .vocabulary import ATTEMPT_FIELDS

SCHEMA_VERSION = 1
T = TypeVar("T")

#: Keys of an attempts.jsonl line, in outputs.md order, then provenance and evidence.
ATTEMPT_KEYS = (*ATTEMPT_FIELDS, "provenance", "evidence")


@dataclass
class ProcessedRun:
    """Every stage's output for one run."""

    raw: RawRun
    attempts: list[dict]
    tasks: list[dict]
    metrics: dict


#: Below this many rows a run is derived in one process (forking costs more than it saves;
#: at 1,000 rows two processes already save about a quarter of the command's time).
PARALLEL_MIN_ROWS = 500
_CHUNK_ROWS = 100


def workers_for(rows: int, workers: int) -> int:
    """The processes worth using for a run of ``rows`` rows: ``workers``, or 1 below
    PARALLEL_MIN_ROWS."""
    return workers if rows >= PARALLEL_MIN_ROWS else 1


@gc_paused()
def derive_chunks(
    raw: RawRun,
    then: Callable[[int, list[dict]], T],
    progress: Callable[[int, int], None] | None = None,
    workers: int = 1,
) -> list[T]:
    """Stage 2 in chunks: ``then(start, attempts)`` for each chunk of derived attempt rows.

    ``then`` runs in the process that derived the chunk: with ``workers`` > 1 and a large
    run, chunks are derived (and followed up) in this process and forked children, so
    per-attempt work after the derivation (encoding, rendering) is parallel too. ``start``
    is the chunk's first position in ``raw.rows``.
    """
    ctx = RunContext.of(raw)

    def derive_chunk(start: int, rows: list) -> T:
        return then(start, [derive_attempt(row, ctx) for row in rows])

    return fork_map(
        derive_chunk, raw.rows,
        workers=workers_for(len(raw.rows), workers),
        chunk_size=_CHUNK_ROWS, progress=progress,
    )


def data_quality(raw: RawRun, attempts: list[dict]) -> dict:
    """metrics.json data_quality (outputs.md, R33), plus artifact and run-file findings.

    ``invalid_artifacts`` (a located entry per unreadable/invalid history, episode or trace
    file) and ``run_files`` (a broken manifest.json or suite.json) extend outputs.md's four
    lists; see docs/metric-choices.md.
    """
    findings = [a["evidence"]["findings"] for a in attempts]
    missing = raw.missing_attempts or []
    run_files = list(raw.run_files)
    if raw.missing_count is not None and raw.missing_count > len(missing):
        run_files.append({
            "file": "manifest.json", "status": "available",
            "reason": f"planned attempts missing from results.jsonl: {raw.missing_count}; "
                      f"data_quality.missing_attempts lists the first {len(missing)} in plan order",
        })
    return {
        "bad_rows": raw.bad_rows,
        "duplicate_rows": raw.duplicate_rows,
        "missing_attempts": missing,
        "unsafe_artifact_dirs": [f["unsafe_dir"] for f in findings if f["unsafe_dir"] is not None],
        "invalid_artifacts": [p for f in findings for p in f["artifacts"]],
        "run_files": run_files,
    }


def data_quality_findings(metrics: dict) -> int:
    """How many data-quality findings a metrics.json records: every entry of its lists, with
    every missing planned attempt counted. The one count the command line, the catalog, the
    Dagster metadata and both reports show."""
    quality = metrics.get("data_quality") if isinstance(metrics.get("data_quality"), dict) else {}
    listed = sum(len(v) for k, v in quality.items() if isinstance(v, list) and k != "missing_attempts")
    return listed + missing_attempts_count(metrics)


def missing_attempts_count(metrics: dict) -> int:
    """Every missing planned attempt: coverage.missing_attempts, exact at any size (the
    data_quality list names at most MISSING_LIST_CAP), else the list's length."""
    quality = metrics.get("data_quality") if isinstance(metrics.get("data_quality"), dict) else {}
    listed = quality.get("missing_attempts")
    n_listed = len(listed) if isinstance(listed, list) else 0
    coverage = metrics.get("coverage") if isinstance(metrics.get("coverage"), dict) else {}
    counted = coverage.get("missing_attempts")
    return counted if type(counted) is int and counted >= n_listed else n_listed


def metric_scope(raw: RawRun) -> dict:
    """The run facts the aggregates need besides the rows: k and the planned/missing counts."""
    return {
        "metrics_k": raw.metrics_k,
        "planned_attempts": raw.planned.size if raw.planned is not None else None,
        "missing_attempts": raw.missing_count,
    }


def metrics_document(raw: RawRun, body: dict, quality: dict, generated_at: str | None = None) -> dict:
    """metrics.json from the aggregate sections (capability.combine_sections) and data_quality."""
    return {
        "schema_version": SCHEMA_VERSION,
        "formula_version": FORMULA_VERSION,
        "run_id": raw.run_id,
        "suite": raw.suite,
        "generated_at": generated_at or dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
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
