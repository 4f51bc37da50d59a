"""Which run a run is compared with (comparison.md): its baseline.

By default the baseline of a run is the latest earlier processed run of the same suite,
ordered by manifest ``started_at`` and then run id (a run without ``started_at`` sorts
before every dated one). A user pins a baseline per suite in a JSON file,
``{"<suite>": "<run id>"}`` (``BENCH_BASELINES``, default ``$BENCH_HOME/baselines.json``;
no file, no pins): every other run of that suite is then compared with the pinned run.
A run is never its own baseline, and a pinned run that has not been processed is none.

``choose_baseline`` is pure; ``run_index`` and ``load_pins`` read the runs root, the
output root and the pins file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .identity import read_identity, read_json_object


@dataclass(frozen=True)
class RunInfo:
    """What choosing a baseline needs to know of one run folder."""

    run_id: str
    suite: str | None
    started_at: str | None
    processed: bool  # its output folder holds metrics.json and attempts.jsonl

    @property
    def order(self) -> tuple[str, str]:
        return (self.started_at or "", self.run_id)


@dataclass(frozen=True)
class Baseline:
    """The chosen baseline (``run_id`` None when there is none) and how it was chosen."""

    run_id: str | None
    reason: str


def choose_baseline(candidate: RunInfo, runs: list[RunInfo], pins: dict[str, str]) -> Baseline:
    """The baseline of ``candidate`` among ``runs`` (see the module doc)."""
    if candidate.suite is None:
        return Baseline(None, "no baseline: the run's suite is unknown")
    pinned = pins.get(candidate.suite)
    if pinned is not None:
        if pinned == candidate.run_id:
            return Baseline(None, f"no baseline: this run is the pinned baseline of suite {candidate.suite!r}")
        found = next((r for r in runs if r.run_id == pinned), None)
        if found is None or not found.processed:
            return Baseline(None, f"no baseline: the pinned baseline {pinned!r} of suite {candidate.suite!r} "
                                  "has not been processed")
        return Baseline(pinned, f"pinned for suite {candidate.suite!r}")
    others = [r for r in runs if r.suite == candidate.suite and r.run_id != candidate.run_id]
    earlier = [r for r in others if r.processed and r.order < candidate.order]
    if not earlier:
        return Baseline(None, no_earlier_reason(candidate, others))
    return Baseline(max(earlier, key=lambda r: r.order).run_id, "the latest earlier run of the suite")


#: How many runs a "no baseline" reason names before it counts the rest.
NAMED_RUNS = 5


def _started(run: RunInfo) -> str:
    return f"started_at {run.started_at}" if run.started_at else "no started_at"


def no_earlier_reason(candidate: RunInfo, others: list[RunInfo]) -> str:
    """Why none of the suite's other runs is the candidate's baseline: the runs seen, grouped
    by why each does not count (not processed yet, started later, or started at the same
    time with a run id that sorts after the candidate's: ties are broken by run id), and how
    to pin one."""
    suite = candidate.suite
    if not others:
        return f"no baseline: no other run of suite {suite!r} was found"
    groups: dict[str, list[str]] = {}
    for run in sorted(others, key=lambda r: r.order):
        if not run.processed:
            why = "not processed yet"
        elif (run.started_at or "") == (candidate.started_at or ""):
            why = (f"the same {_started(candidate)}, and a run id that sorts after this run's "
                   "(ties are broken by run id)")
        else:
            why = "started later" if run.order > candidate.order else "not earlier"
        groups.setdefault(why, []).append(run.run_id)
    parts = []
    for why, ids in groups.items():
        named = ", ".join(repr(i) for i in ids[:NAMED_RUNS])
        more = f" and {len(ids) - NAMED_RUNS} more" if len(ids) > NAMED_RUNS else ""
        parts.append(f"{named}{more}: {why}")
    return (f"no baseline: none of the {len(others)} other run(s) of suite {suite!r} is an earlier processed "
            f"run than this one ({candidate.run_id!r}, {_started(candidate)}): {'; '.join(parts)}. "
            f"To compare with one of them, pin it in the baselines file ({{\"{suite}\": \"<run id>\"}}, "
            "docs/operations.md)")


def run_info(run_dir: Path, out_dir: Path) -> RunInfo:
    """One run folder's RunInfo (suite by R2, as the stages name it)."""
    identity = read_identity(run_dir)
    processed = (out_dir / "metrics.json").is_file() and (out_dir / "attempts.jsonl").is_file()
    return RunInfo(run_dir.name, identity.suite, identity.started_at, processed)


def run_index(runs_root: Path, output_root: Path) -> list[RunInfo]:
    """Every run folder under ``runs_root`` (one with a results.jsonl), in name order."""
    from .run_folders import scan

    return [run_info(Path(f.path), output_root / f.run_id) for f in scan(str(runs_root))]


def pins_file() -> Path:
    """The pinned baselines' file: BENCH_BASELINES, default $BENCH_HOME/baselines.json."""
    from .resources.settings import bench_home

    return Path(os.environ.get("BENCH_BASELINES") or bench_home() / "baselines.json")


def load_pins(path: Path) -> dict[str, str]:
    """``{suite: run id}`` from the pins file; no file (or no valid entry) means no pins."""
    return {k: v for k, v in read_json_object(path).items() if isinstance(k, str) and isinstance(v, str)}
