"""Stage 1, raw results: read a run folder exactly as run-directory.md lays it out.

Bad input never aborts the run: a line that is not a JSON object, a row without a usable
``task_id`` or ``attempt`` becomes a located ``bad_rows`` entry (R27, R33); a broken
manifest or suite becomes a ``run_files`` entry and the reference's null. Only a folder that
is not a run at all (no results.jsonl) is an error.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterator

from .artifacts import AVAILABLE, UNREADABLE, JsonFile, TooDeep, loads_exact, loads_json, read_json_file
from .layouts import (
    OUTSIDE_RUN_FOLDER,
    REJUDGED_RESULTS,
    RESULTS,
    manifest_view,
    rejudged_refusal,
    results_file_name,
    results_refusal,
    row_view,
    suite_view,
)
from .stats import INT64_MAX


class NotARunFolderError(Exception):
    """The given path is not a benchmark run folder."""


@dataclass
class RawRow:
    """One usable results.jsonl row: where it was, its identity and the parsed object."""

    line: int
    task_id: str
    attempt: int
    data: dict[str, Any]


@dataclass
class RawRun:
    """Everything stage 1 knows about a run before any artifact is opened."""

    run_id: str
    run_dir: Path
    manifest: dict[str, Any]
    suite_def: dict[str, Any]
    suite: str | None
    rows: list[RawRow]
    metrics_k: int | None
    planned: Plan | None  # the manifest's distinct planned (task, attempt) pairs (R26, R32)
    bad_rows: list[dict] = field(default_factory=list)
    duplicate_rows: list[dict] = field(default_factory=list)
    run_files: list[dict] = field(default_factory=list)  # manifest/suite problems
    #: The file the rows were read from: results.jsonl, or results.rejudged.jsonl when the
    #: run was re-judged (layouts.results_file_name).
    results_file: str = RESULTS

    @property
    def suite_tasks(self) -> dict[str, dict]:
        """suite.json tasks by id (entries without a string id are ignored)."""
        tasks = self.suite_def.get("tasks")
        if not isinstance(tasks, list):
            return {}
        return {t["id"]: t for t in tasks if isinstance(t, dict) and isinstance(t.get("id"), str)}

    @property
    def missing_attempts(self) -> list[dict] | None:
        """Planned (task, attempt) pairs with no usable row, in plan order (R32, R33);
        at most MISSING_LIST_CAP of them (``missing_count`` counts them all)."""
        return None if self.planned is None else self._missing[1]

    @property
    def missing_count(self) -> int | None:
        """How many planned (task, attempt) pairs have no usable row (R32); None without a plan."""
        return None if self.planned is None else self._missing[0]

    @cached_property
    def _missing(self) -> tuple[int, list[dict]]:
        assert self.planned is not None
        return self.planned.missing({(r.task_id, r.attempt) for r in self.rows}, MISSING_LIST_CAP)


#: The largest attempt number a row may carry (the Dagster stages' Int64 columns); a
#: larger one makes the line a bad row.
ATTEMPT_LIMIT = INT64_MAX


def is_positive_int(value: object) -> bool:
    """An integer >= 1 that is not a Boolean (R26, R27)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def parse_results(data: bytes) -> tuple[list[RawRow], list[dict]]:
    """Split results.jsonl into usable rows and located bad rows (run-directory.md, R27).

    Lines split on ``\\n``; whitespace-only lines are ignored. A line is bad when it is not
    UTF-8, not JSON, not an object, has no string ``task_id`` or an ``attempt`` that is
    present, non-null and not an integer >= 1. A null or absent attempt means 1. Each row's
    ``data`` is ``layouts.row_view`` of the line: its fields read from ``metrics`` when there
    (the runner's layout), else from the top level.
    """
    rows: list[RawRow] = []
    bad: list[dict] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = loads_json(raw)
        except UnicodeDecodeError:
            bad.append({"line": number, "reason": "not UTF-8"})
            continue
        except TooDeep as exc:
            bad.append({"line": number, "reason": str(exc)})
            continue
        except ValueError as exc:
            bad.append({"line": number, "reason": f"not valid JSON: {str(exc).splitlines()[0][:160]}"})
            continue
        if not isinstance(obj, dict):
            bad.append({"line": number, "reason": f"not a JSON object ({type(obj).__name__})"})
            continue
        task_id = obj.get("task_id")
        if task_id is None:
            bad.append({"line": number, "reason": "no task_id"})
            continue
        if not isinstance(task_id, str):
            bad.append({"line": number, "reason": "task_id is not a string"})
            continue
        attempt = obj.get("attempt")
        if type(attempt) is float and attempt.is_integer() and abs(attempt) >= 2 ** 63:
            # orjson's reading of an integer beyond 64 bits (or a float literal): read the
            # line again keeping integers exact, to tell the two apart.
            obj = loads_exact(raw)
            attempt = obj.get("attempt")
        if attempt is None:
            attempt = 1
        elif not is_positive_int(attempt):
            bad.append({"line": number, "reason": f"attempt is not an integer >= 1: {attempt!r}"[:200]})
            continue
        elif attempt > ATTEMPT_LIMIT:
            bad.append({"line": number, "reason": f"attempt {attempt} is beyond 2**63 - 1, the largest attempt "
                                                  "number the pipeline keeps"[:200]})
            continue
        rows.append(RawRow(number, task_id, attempt, row_view(obj)))
    return rows, bad


def find_duplicates(rows: list[RawRow]) -> list[dict]:
    """One entry per task/attempt seen on more than one line (R33), in first-seen order."""
    lines: dict[tuple[str, int], list[int]] = {}
    for row in rows:
        lines.setdefault((row.task_id, row.attempt), []).append(row.line)
    return [
        {"task_id": task, "attempt": attempt, "lines": found}
        for (task, attempt), found in lines.items()
        if len(found) > 1
    ]


def valid_planned_entries(manifest: dict) -> list[dict] | None:
    """``planned`` entries with a string ``task_id`` and a positive integer ``attempts`` (R26);
    None when there is no list."""
    planned = manifest.get("planned")
    if not isinstance(planned, list):
        return None
    return [e for e in planned if counts_as_planned(e)]


def counts_as_planned(entry: object) -> bool:
    """Whether a ``planned`` entry is counted (R26): an object with a string ``task_id`` and a
    positive integer ``attempts``."""
    return isinstance(entry, dict) and isinstance(entry.get("task_id"), str) and is_positive_int(entry.get("attempts"))


MISSING_LIST_CAP = 100_000
"""data_quality.missing_attempts names at most this many pairs; the count is always exact."""


@dataclass(frozen=True)
class Plan:
    """The distinct planned (task, attempt) pairs, held as ranges (R26, R32).

    An entry ``{"task_id": t, "attempts": n}`` plans attempts 1..n of t; an entry naming a
    task again adds only the attempts beyond those already planned. ``segments`` keeps
    them in plan order as (task_id, first, last), so a plan of any size costs one tuple
    per entry and every count is arithmetic (R26 sets no upper bound on ``attempts``).
    """

    segments: tuple[tuple[str, int, int], ...]

    @property
    def size(self) -> int:
        """Number of distinct planned pairs (planned_attempts)."""
        return sum(last - first + 1 for _task, first, last in self.segments)

    def highest(self) -> dict[str, int]:
        """The highest planned attempt of each planned task (each plans 1..highest)."""
        return {task: last for task, _first, last in self.segments}

    def pairs(self) -> Iterator[tuple[str, int]]:
        """Every planned pair in plan order (as many as ``size``: mind huge plans)."""
        for task, first, last in self.segments:
            for attempt in range(first, last + 1):
                yield task, attempt

    def missing(self, observed: set[tuple[str, int]], cap: int) -> tuple[int, list[dict]]:
        """(how many planned pairs are not ``observed``, the first ``cap`` of them in plan
        order as ``{"task_id", "attempt"}``). Work is proportional to the segments, the
        observed pairs and ``cap``, never to the plan's size."""
        highest = self.highest()
        covered = sum(1 for task, attempt in observed if attempt <= highest.get(task, 0))
        count = self.size - covered
        wanted = min(cap, count)
        listed: list[dict] = []
        for task, first, last in self.segments:
            attempt = first
            while attempt <= last and len(listed) < wanted:
                if (task, attempt) not in observed:
                    listed.append({"task_id": task, "attempt": attempt})
                attempt += 1
            if len(listed) >= wanted:
                break
        return count, listed


def planned_attempts(manifest: dict) -> Plan | None:
    """The distinct planned (task, attempt) pairs of valid ``planned`` entries (R26, R32).

    No list (absent or not a list) gives None; an empty list gives an empty plan.
    """
    entries = valid_planned_entries(manifest)
    if entries is None:
        return None
    highest: dict[str, int] = {}
    segments: list[tuple[str, int, int]] = []
    for entry in entries:
        task, attempts = entry["task_id"], entry["attempts"]
        if attempts > highest.get(task, 0):
            segments.append((task, highest.get(task, 0) + 1, attempts))
            highest[task] = attempts
    return Plan(tuple(segments))


def resolve_metrics_k(manifest: dict, rows: list[RawRow]) -> int | None:
    """k for every fixed-k metric (run-directory.md ``metrics_k``, R26).

    manifest.metrics_k when a positive integer; else the minimum ``attempts`` over valid
    planned entries; else the minimum over observed tasks of their highest attempt; else None.
    """
    k = manifest.get("metrics_k")
    if is_positive_int(k):
        return k
    entries = valid_planned_entries(manifest)
    if entries:
        return min(e["attempts"] for e in entries)
    highest: dict[str, int] = {}
    for row in rows:
        highest[row.task_id] = max(highest.get(row.task_id, 0), row.attempt)
    return min(highest.values()) if highest else None


def suite_name(suite_def: dict, manifest: dict) -> str | None:
    """R2: suite.json name, else manifest suite.name (or suite when a string), else None."""
    if isinstance(suite_def.get("name"), str):
        return suite_def["name"]
    suite = manifest.get("suite")
    if isinstance(suite, dict) and isinstance(suite.get("name"), str):
        return suite["name"]
    if isinstance(suite, str):
        return suite
    return None


def _object_file(run_dir: Path, real: str, name: str, problems: list[dict]) -> dict:
    """A top-level JSON object file, {} when unavailable (with a located problem)."""
    result: JsonFile = read_json_file(run_dir, real, name, exact=True)  # planned counts of any size (R26)
    if result.status == AVAILABLE and isinstance(result.value, dict):
        return result.value
    if result.status == AVAILABLE:
        problems.append({"file": name, "status": "invalid", "reason": "not a JSON object"})
    else:
        problems.append({"file": name, "status": result.status, "reason": result.reason})
    return {}


def read_run(run_dir: Path | str) -> RawRun:
    """Read manifest, suite and results of one run folder (stage 1).

    Raises NotARunFolderError naming the path when there is no readable results.jsonl.
    """
    check_local(run_dir)
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise NotARunFolderError(f"{run_dir}: not a folder, so not a benchmark run folder")
    real = os.path.realpath(run_dir)
    name = results_file_name(real)
    rows, bad = parse_results(read_results_bytes(run_dir, real, name))
    return read_run_files(run_dir, rows, bad, name)


def check_local(run_dir: Path | str) -> None:
    """NotARunFolderError for a run given as a bucket URL: the stages read local folders (the
    Dagster job copies a run in a bucket into its local cache first, object_store/)."""
    from .object_store import is_remote, normalize

    if is_remote(run_dir):
        url = normalize(run_dir)
        raise NotARunFolderError(
            f"{url}: a run in a bucket; the command line reads local run folders only: copy it first "
            f"(e.g. aws s3 cp --recursive {url} ./{url.rsplit('/', 1)[-1]}), or let the Dagster job read it "
            f"from the bucket (BENCH_RUNS_ROOT={url.rsplit('/', 1)[0]}, docs/operations.md \"Object storage\")")


def read_run_files(run_dir: Path | str, rows: list[RawRow], bad_rows: list[dict],
                   results_file: str = RESULTS) -> RawRun:
    """A RawRun from already parsed rows plus the run's manifest.json and suite.json, each
    read as the flat layout has it (layouts.manifest_view, layouts.suite_view)."""
    run_dir = Path(run_dir)
    real = os.path.realpath(run_dir)
    problems: list[dict] = []
    refused = rejudged_refusal(real)
    if refused is not None:  # a re-judged copy that is not the results: say so, results.jsonl was read
        problems.append({"file": REJUDGED_RESULTS, "status": UNREADABLE, "reason": f"{refused}; results.jsonl read instead"})
    elif not rows and not bad_rows and os.path.lexists(os.path.join(real, REJUDGED_RESULTS)):
        problems += _empty_rejudged_copy(real)
    manifest = manifest_view(_object_file(run_dir, real, "manifest.json", problems))
    suite_def = suite_view(_object_file(run_dir, real, "suite.json", problems))
    return RawRun(
        run_id=run_dir.resolve().name,  # R1: the folder name is the run id
        run_dir=run_dir,
        manifest=manifest,
        suite_def=suite_def,
        suite=suite_name(suite_def, manifest),
        rows=rows,
        metrics_k=resolve_metrics_k(manifest, rows),
        planned=planned_attempts(manifest),
        bad_rows=bad_rows,
        duplicate_rows=find_duplicates(rows),
        run_files=problems,
        results_file=results_file,
    )


def _empty_rejudged_copy(real: str) -> list[dict]:
    """A finding when the run's re-judged copy, its results, holds no line while results.jsonl
    beside it has some (a re-judge that failed part-way): every attempt is then missing, as
    run-directory.md reads it, and this says where they went."""
    try:
        lines = sum(1 for line in read_results_bytes(Path(real), real, RESULTS).splitlines() if line.strip())
    except NotARunFolderError:
        return []
    if not lines:
        return []
    return [{"file": REJUDGED_RESULTS, "status": AVAILABLE,
             "reason": f"no result line, while results.jsonl beside it has {lines:,}: a re-judged copy is the run's "
                       "results (run-directory.md), so every attempt is missing; re-run the re-judge, or remove the "
                       "copy to read results.jsonl"}]


def read_results_bytes(run_dir: Path, real: str, name: str = RESULTS) -> bytes:
    """The bytes of the results file ``name`` (results.jsonl, or its re-judged copy), or
    NotARunFolderError naming the path."""
    path = os.path.join(real, name)
    refusal = results_refusal(real, name)
    if refusal == OUTSIDE_RUN_FOLDER:
        raise NotARunFolderError(f"{run_dir / name}: refused, {refusal} (its rows would be another folder's)")
    if refusal is not None and os.path.lexists(path):  # a folder, a FIFO, a device: its rows cannot be read
        raise NotARunFolderError(f"{run_dir / name}: {refusal} (a folder, a FIFO or a device), so no rows can be "
                                 "read from it")
    if refusal is not None:
        raise NotARunFolderError(f"{run_dir}: no results.jsonl, so not a benchmark run folder")
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise NotARunFolderError(f"{run_dir / name}: cannot be read ({exc.strerror or exc})") from exc


__all__ = [
    "MISSING_LIST_CAP",
    "NotARunFolderError",
    "Plan",
    "RawRow",
    "RawRun",
    "find_duplicates",
    "parse_results",
    "planned_attempts",
    "read_run",
    "read_run_files",
    "resolve_metrics_k",
    "suite_name",
]
