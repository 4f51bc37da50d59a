"""The per-run stages' stored values, read back by the work that spans runs.

The per-run step stores each run's frames and documents under the storage base
(``io_managers.store_partition``: ``<base>/<asset>/<run id>.parquet`` or ``.json``). What is
computed from several runs (the catalog, the trends, the systems' repeats, the suite pages)
reads those values, never the run folders or the output folders again: they are what the
run's materialization, and its data version, stand for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from upath import UPath

from .comparison_sides import SIDE_FIELDS, ComparisonInputError, Side, make_side
from .frames import attempts_from_frame, raw_run_from_frame, tasks_from_frame
from .identity import RunIdentity
from .artifacts import loads_json
from .processed import ProcessedRun
from .resources.io_managers import load_partition, partition_path

#: The attempt_metrics columns a comparison side reads (``comparison_sides.make_side``).
SIDE_COLUMNS = ["task_id", "attempt", "line", *SIDE_FIELDS, "evidence"]


def stored_path(storage_base: str, asset: str, run_id: str, extension: str) -> UPath:
    """Where the per-run step stored ``asset``'s value for a run (``extension``: ``.parquet``
    for a frame, ``.json`` for a document)."""
    return partition_path(storage_base, asset, run_id, extension)


def stored_frame_path(storage_base: str, run_id: str) -> UPath:
    """Where the per-run step stored a run's attempt_metrics frame."""
    return stored_path(storage_base, "attempt_metrics", run_id, ".parquet")


def read_stored_document(storage_base: str, asset: str, run_id: str) -> dict | None:
    """A run's stored document of ``asset`` (capability_aggregates: its metrics.json), None when
    it was never stored or cannot be read."""
    try:
        value = loads_json(stored_path(storage_base, asset, run_id, ".json").read_bytes())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def read_attempt_rows(path: UPath) -> list[dict]:
    """A stored attempt_metrics frame's rows as ``make_side`` reads them, reading only
    SIDE_COLUMNS: plain Python values (null -> None, NaN included), and ``evidence`` (JSON
    text) as ``{"dir": ...}``, the only part a side keeps. Converted column by column (a
    float column's NaN made null by Arrow), then zipped into rows."""
    with path.open("rb") as handle:
        table = pq.read_table(handle, columns=SIDE_COLUMNS)
    columns: dict[str, list] = {}
    for name in SIDE_COLUMNS:
        column = table.column(name)
        if name in SIDE_FIELDS and pa.types.is_floating(column.type):
            column = pc.if_else(pc.is_nan(column), pa.scalar(None, column.type), column)
        columns[name] = column.to_pylist()
    evidence = []
    for text in columns["evidence"]:
        parsed = orjson.loads(text) if isinstance(text, str) else None
        evidence.append({"dir": parsed.get("dir")} if isinstance(parsed, dict) else {})
    columns["evidence"] = evidence
    return [dict(zip(SIDE_COLUMNS, values)) for values in zip(*(columns[name] for name in SIDE_COLUMNS))]


#: What reading a stored frame can raise for a frame that is missing or not one.
FRAME_ERRORS = (OSError, ValueError, pa.ArrowException)


def stored_side(storage_base: str, row: Mapping[str, Any], run_dir: Path | None = None,
                identity: RunIdentity | None = None) -> Side:
    """A run as a comparison side from its stored attempt frame and its catalog row (run id,
    suite, metrics_k); raises one of FRAME_ERRORS when the frame is missing or unreadable."""
    rows = read_attempt_rows(stored_frame_path(storage_base, row["run_id"]))
    return make_side(rows, run_id=row["run_id"], suite=row["suite"], metrics_k=row["metrics_k"], run_dir=run_dir,
                     identity=identity)


def stored_baseline(storage_base: str, run_id: str) -> Side:
    """A baseline as the per-run step compares with it: its stored capability_aggregates
    document (suite, coverage.metrics_k) and attempt frame, what its own processing stored
    (not the files in its output folder). Raises ComparisonInputError, with a one-line
    reason, when either is missing or unreadable."""
    document = read_stored_document(storage_base, "capability_aggregates", run_id)
    coverage = document.get("coverage") if document is not None else None
    if not isinstance(coverage, dict):
        raise ComparisonInputError(f"{run_id}: no stored capability_aggregates document to compare with")
    row = {"run_id": run_id, "suite": document.get("suite"), "metrics_k": coverage.get("metrics_k")}
    try:
        return stored_side(storage_base, row)
    except FRAME_ERRORS as exc:
        raise ComparisonInputError(f"{run_id}: no readable stored attempt_metrics frame to compare with "
                                   f"({type(exc).__name__})") from None


#: The stored values ``stored_processed`` reads: (asset, extension).
PROCESSED_VALUES = (("raw_results", ".parquet"), ("attempt_metrics", ".parquet"), ("task_groups", ".parquet"),
                    ("capability_aggregates", ".json"))


def has_stored_values(storage_base: str, run_id: str) -> bool:
    """Whether every value ``stored_processed`` reads was stored for the run (a storage base
    cleared since says no)."""
    return all(stored_path(storage_base, asset, run_id, extension).exists() for asset, extension in PROCESSED_VALUES)


class StoredValuesError(ValueError):
    """A run's stored stage values that are missing or cannot be read back."""


def stored_processed(storage_base: str, run_id: str, run_dir: Path | str) -> ProcessedRun:
    """A run through stages 1-4 as its processing stored it: raw_results (with the run
    folder's manifest.json and suite.json, as stage 1 reads them), attempt_metrics,
    task_groups and capability_aggregates (its metrics.json). What the comparison and the
    reports read from a processed run (``pipeline.compare_stored``); the attempts.jsonl
    fields of a float column come back as floats, so this is not for writing metrics files.
    Raises StoredValuesError, naming what is missing, when a value cannot be read."""
    values = {}
    for asset, extension in PROCESSED_VALUES:
        try:
            values[asset] = load_partition(storage_base, asset, run_id, extension)
        except (*FRAME_ERRORS, TypeError) as exc:
            raise StoredValuesError(f"{run_id}: no readable stored {asset} value ({type(exc).__name__})") from None
    metrics = values["capability_aggregates"]
    if not isinstance(metrics, dict):
        raise StoredValuesError(f"{run_id}: the stored capability_aggregates value is not a document")
    raw = raw_run_from_frame(run_dir, values["raw_results"])
    if isinstance(metrics.get("results_file"), str):
        raw = replace(raw, results_file=metrics["results_file"])
    return ProcessedRun(raw, attempts_from_frame(values["attempt_metrics"]), tasks_from_frame(values["task_groups"]),
                        metrics)
