"""A processed run as one side of a comparison (comparison.md "Inputs and pairing").

A run enters a comparison as a ``Side``: its task groups (one row per task/attempt after the
de-duplication of reference 3.7 / R29, the later line wins, exactly ``task_groups.deduplicate``)
with the fields the sections read, and its run id, suite and metrics_k. A side is made from a
processed run in memory (``side_from_processed``), from a processed run's output folder
(``side_from_output``, the only I/O here besides ``with_run_dir``'s manifest), or from rows
(``make_side``: ``stored_values`` makes one from a run's stored frames).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .artifacts import loads_json
from .identity import RunIdentity, read_identity, run_identity
from .object_store import location_text
from .task_groups import ByAttempt, deduplicate
from .vocabulary import COMPARISON_RESOURCE_FIELDS

if TYPE_CHECKING:
    from .processed import ProcessedRun

#: The attempt fields a side keeps per task/attempt: the outcome, eligibility, quality and
#: the compared resources (comparison.md "Inputs and pairing"), and the evidence folder the
#: reports link to (never used by a formula).
SIDE_FIELDS = ("success", "agent_eligible", "quality_score", *COMPARISON_RESOURCE_FIELDS)



class ComparisonInputError(ValueError):
    """A processed run's output folder that cannot enter a comparison (missing or unreadable
    metrics.json or attempts.jsonl, or content that is not what run_stages writes)."""


@dataclass(frozen=True)
class Side:
    """One run as a comparison reads it.

    ``tasks``: {task_id: {attempt: row}} after de-duplication (R29), each row holding
    SIDE_FIELDS and ``evidence_dir`` (the attempt's evidence folder relative to the run
    folder, null when refused). ``run_dir``: the run folder, for the reports' evidence links
    only (None when unknown). ``identity``: what the run measured (model, code and suite
    versions) and with what (its measurement setup, which the warnings compare), which the
    reports name; every value unknown when the run folder is.
    """

    run_id: str | None
    suite: str | None
    metrics_k: int | None
    tasks: Mapping[str, ByAttempt]
    run_dir: Path | None = field(default=None, compare=False)
    identity: RunIdentity = field(default_factory=RunIdentity, compare=False)


def _slim(row: Mapping[str, Any]) -> dict[str, Any]:
    """The part of an attempt row (or attempts.jsonl record) a side keeps."""
    evidence = row.get("evidence")
    folder = evidence.get("dir") if isinstance(evidence, Mapping) else None
    kept = {f: row.get(f) for f in SIDE_FIELDS}
    kept["evidence_dir"] = folder if isinstance(folder, str) else None
    kept["line"] = row["line"]
    kept["task_id"] = row["task_id"]
    kept["attempt"] = row["attempt"]
    return kept


def make_side(rows: Iterable[Mapping[str, Any]], *, run_id: str | None, suite: str | None,
              metrics_k: int | None, run_dir: Path | None = None,
              identity: RunIdentity | None = None) -> Side:
    """A side from a run's attempt rows, every row (duplicates included): grouped by task and
    attempt with ``task_groups.deduplicate``, the later line winning (3.7, R29)."""
    grouped = deduplicate(_slim(r) for r in rows)
    return Side(run_id=run_id, suite=suite, metrics_k=metrics_k, tasks=grouped,
                run_dir=Path(run_dir) if run_dir is not None else None,
                identity=identity if identity is not None else RunIdentity(suite=suite))


def with_run_dir(side: Side, run_dir: Path | str) -> Side:
    """The side with its run folder and the identity that folder's manifest.json and
    suite.json record."""
    return replace(side, run_dir=Path(run_dir), identity=read_identity(run_dir))


def side_from_processed(processed: ProcessedRun, run_dir: Path | None = None) -> Side:
    """A side from a processed run (``pipeline.run_stages(...).processed``); ``run_dir``
    defaults to the run folder it was read from."""
    metrics = processed.metrics
    return make_side(
        processed.attempts,
        run_id=metrics.get("run_id", processed.raw.run_id),
        suite=metrics.get("suite", processed.raw.suite),
        metrics_k=(metrics.get("coverage") or {}).get("metrics_k", processed.raw.metrics_k),
        run_dir=run_dir if run_dir is not None else processed.raw.run_dir,
        identity=run_identity(processed.raw.manifest, processed.raw.suite_def),
    )


def side_from_output(out_dir: Path | str, run_dir: Path | None = None) -> Side:
    """A side from a processed run's output folder: metrics.json (run id, suite,
    coverage.metrics_k) and attempts.jsonl (every attempt row), both as run_stages writes
    them. Raises ComparisonInputError, with a one-line reason, for a folder that does not
    hold them. ``run_dir``: the run folder, for evidence links and the run's identity
    (optional)."""
    out_dir = Path(out_dir)
    metrics_path, attempts_path = out_dir / "metrics.json", out_dir / "attempts.jsonl"
    # the files' names in the reasons: their URLs when the folder is the copy of a bucket's
    metrics_name, attempts_name = location_text(metrics_path), location_text(attempts_path)
    try:
        metrics = loads_json(metrics_path.read_bytes())
    except OSError as exc:
        raise ComparisonInputError(f"{metrics_name}: cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise ComparisonInputError(f"{metrics_name}: not JSON ({exc})") from None
    if not isinstance(metrics, dict) or not isinstance(metrics.get("coverage"), dict):
        raise ComparisonInputError(f"{metrics_name}: not a metrics.json (no coverage object)")
    run_id, suite, k = metrics.get("run_id"), metrics.get("suite"), metrics["coverage"].get("metrics_k")
    if not isinstance(run_id, str) or not (suite is None or isinstance(suite, str)):
        raise ComparisonInputError(f"{metrics_name}: run_id or suite is not a string")
    if not (k is None or (type(k) is int and k >= 1)):
        raise ComparisonInputError(f"{metrics_name}: coverage.metrics_k is neither null nor a positive integer")
    try:
        lines = attempts_path.read_bytes().splitlines()
    except OSError as exc:
        raise ComparisonInputError(f"{attempts_name}: cannot be read ({exc.strerror or exc})") from None
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = loads_json(line)
        except ValueError as exc:
            raise ComparisonInputError(f"{attempts_name}: line {number} is not JSON ({exc})") from None
        if not (isinstance(record, dict) and isinstance(record.get("task_id"), str)
                and type(record.get("attempt")) is int and type(record.get("line")) is int):
            raise ComparisonInputError(f"{attempts_name}: line {number} is not an attempt record")
        rows.append(record)
    side = make_side(rows, run_id=run_id, suite=suite, metrics_k=k)
    return with_run_dir(side, run_dir) if run_dir is not None else side


def evidence_dir(side: Side, task_id: str, attempt: int = 1) -> str | None:
    """The evidence folder (relative to the side's run folder) of a task's attempt, None when
    the attempt is absent or its folder was refused; for the reports' links."""
    row = side.tasks.get(task_id, {}).get(attempt)
    return row["evidence_dir"] if row is not None else None
