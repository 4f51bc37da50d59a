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

import orjson

from .run_reader import suite_name


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
    earlier = [r for r in runs if r.processed and r.suite == candidate.suite and r.run_id != candidate.run_id
               and r.order < candidate.order]
    if not earlier:
        return Baseline(None, f"no baseline: no earlier processed run of suite {candidate.suite!r}")
    return Baseline(max(earlier, key=lambda r: r.order).run_id, "the latest earlier run of the suite")


def _json_object(path: Path) -> dict:
    try:
        value = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def run_info(run_dir: Path, out_dir: Path) -> RunInfo:
    """One run folder's RunInfo (suite by R2, as the stages name it)."""
    manifest = _json_object(run_dir / "manifest.json")
    started = manifest.get("started_at")
    processed = (out_dir / "metrics.json").is_file() and (out_dir / "attempts.jsonl").is_file()
    return RunInfo(run_dir.name, suite_name(_json_object(run_dir / "suite.json"), manifest),
                   started if isinstance(started, str) else None, processed)


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
    return {k: v for k, v in _json_object(path).items() if isinstance(k, str) and isinstance(v, str)}
