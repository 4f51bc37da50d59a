"""Conversions between the stages' Python records and their validated pandas frames.

The formulas work on plain records (``None`` = null); Dagster stores and shows frames.
Every ``*_frame`` function validates with the stage's pandera schema, so a frame that
leaves a stage always matches its schema.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from .jsonio import json_bytes
from .metrics_files import ATTEMPT_KEYS
from .run_reader import RawRow, RawRun, read_run_files
from .schemas import AttemptMetricsSchema, RawResultsSchema, TaskGroupsSchema

#: Attempt columns stored as JSON text in the frame.
JSON_COLUMNS = ("provenance", "observations", "evidence")
ATTEMPT_COLUMNS = tuple(k for k in ATTEMPT_KEYS if k not in JSON_COLUMNS) + JSON_COLUMNS


def _dumps(value: object) -> str:
    """JSON text, as the output files write it (``jsonio.json_bytes``)."""
    return json_bytes(value).decode()


def _typed_frame(records: list[dict], schema: type) -> pd.DataFrame:
    """A frame of ``records`` in the schema's column order, its nullable integer columns
    built as Int64 directly: pandas would hold a column of integers and nulls as float64,
    which rounds an integer beyond 2**53 (a count or attempt number that then comes back
    different, or fails validation)."""
    columns = schema.to_schema().columns
    frame = pd.DataFrame.from_records(records, columns=list(columns))
    for name, column in columns.items():
        if str(column.dtype) == "Int64":
            frame[name] = pd.array([record.get(name) for record in records], dtype="Int64")
    return frame


def raw_results_frame(raw: RawRun) -> pd.DataFrame:
    """Stage 1 frame: usable rows and bad lines together, in line order."""
    records = [
        {"line": r.line, "task_id": r.task_id, "attempt": r.attempt, "status": _str(r.data.get("status")),
         "bad_reason": None, "row_json": _dumps(r.data)}
        for r in raw.rows
    ]
    records += [
        {"line": b["line"], "task_id": None, "attempt": None, "status": None, "bad_reason": b["reason"], "row_json": None}
        for b in raw.bad_rows
    ]
    records.sort(key=lambda r: r["line"])
    return RawResultsSchema.validate(_typed_frame(records, RawResultsSchema))


def raw_run_from_frame(run_dir: Path | str, frame: pd.DataFrame) -> RawRun:
    """Rebuild stage 1's RawRun from its frame plus the run's manifest and suite files."""
    rows: list[RawRow] = []
    bad: list[dict] = []
    for rec in frame.itertuples(index=False):
        if isinstance(rec.bad_reason, str):
            bad.append({"line": int(rec.line), "reason": rec.bad_reason})
        else:
            rows.append(RawRow(int(rec.line), rec.task_id, int(rec.attempt), json.loads(rec.row_json)))
    return read_run_files(run_dir, rows, bad)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def attempts_frame(rows: list[dict]) -> pd.DataFrame:
    """Stage 2 frame, validated by AttemptMetricsSchema."""
    records = []
    for row in rows:
        rec = {k: row[k] for k in ATTEMPT_COLUMNS}
        for k in JSON_COLUMNS:
            rec[k] = _dumps(row[k])
        records.append(rec)
    return AttemptMetricsSchema.validate(_typed_frame(records, AttemptMetricsSchema))


def _plain(value: object) -> object:
    """A frame cell as a plain Python value: NA -> None, numpy scalars -> int/float/bool."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float):
        if math.isnan(value):
            return None
        return int(value) if value.is_integer() else value
    if hasattr(value, "item"):  # numpy scalar
        return _plain(value.item())
    return value


def attempts_from_frame(frame: pd.DataFrame) -> list[dict]:
    """Stage 2 records from the frame (JSON columns decoded)."""
    rows = []
    for rec in frame.to_dict("records"):
        row = {k: _plain(v) for k, v in rec.items()}
        for k in JSON_COLUMNS:
            row[k] = json.loads(row[k])
        rows.append(row)
    return rows


def tasks_frame(tasks: list[dict]) -> pd.DataFrame:
    """Stage 3 frame, validated by TaskGroupsSchema."""
    return TaskGroupsSchema.validate(_typed_frame(tasks, TaskGroupsSchema))


def tasks_from_frame(frame: pd.DataFrame) -> list[dict]:
    """Stage 3 records from the frame."""
    return [{k: _plain(v) for k, v in rec.items()} for rec in frame.to_dict("records")]
