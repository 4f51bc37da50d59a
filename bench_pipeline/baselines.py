"""Which run a run is compared with (comparison.md): its baseline.

By default the baseline of a run is the latest earlier processed run of the same suite and
the same setup key (comparison.md "The default baseline": judge enabled and model, platform
device and os, setup.py; unknown fields compare as null), ordered by manifest ``started_at``
and then run id (a run without ``started_at`` sorts before every dated one): a run judged by
another judge or measured on another device is not compared with by default, since the
comparison would mix that change with the agent's. A run without such an earlier run has no
baseline, and the reason names the runs of its suite with another setup. A user pins a
baseline per suite in a JSON file, ``{"<suite>": "<run id>"}`` (``BENCH_BASELINES``, default
``$BENCH_HOME/baselines.json``; no file, no pins): every other run of that suite is then
compared with the pinned run, whatever its setup (the comparison's warnings say what
differs). A run is never its own baseline, and a pinned run that has not been processed is
none.

``choose_baseline`` is pure; ``run_index`` and ``load_pins`` read the runs root, the
output root and the pins file. Each of them may be in a bucket (object_store/): the runs'
manifest.json and suite.json are read through their local copies (only changed ones are
fetched), "processed" comes from one listing of the output root, and a pins file
``s3://.../baselines.json`` is read from the bucket (a missing object means no pins; one that
cannot be read is an error, since a silently lost pin changes every comparison of its suite).
"""

from __future__ import annotations

import os
from collections.abc import Container
from dataclasses import dataclass, replace
from pathlib import Path

from . import object_store
from .artifacts import loads_json
from .identity import read_identity
from .setup import UNKNOWN_KEY, SetupKey, key_text


@dataclass(frozen=True)
class RunInfo:
    """What choosing a baseline needs to know of one run folder: ``setup`` is its setup key
    (setup.Setup.key, from the manifest read for the suite and start anyway)."""

    run_id: str
    suite: str | None
    started_at: str | None
    processed: bool  # its output folder holds metrics.json and attempts.jsonl
    setup: SetupKey = UNKNOWN_KEY

    @property
    def order(self) -> tuple[str, str]:
        return (self.started_at or "", self.run_id)


@dataclass(frozen=True)
class Baseline:
    """The chosen baseline (``run_id`` None when there is none) and how it was chosen.

    ``not_compared``, without a baseline: why, in words that stay true for as long as the
    run has none for that reason (they name no other run that may come or go), so that the
    run's reports can say it (``reason`` names the suite's other runs, which change).
    run_comparison's data version records it (comparison_inputs.py): the reports are made
    again when it changes."""

    run_id: str | None
    reason: str
    not_compared: str | None = None


def choose_baseline(candidate: RunInfo, runs: list[RunInfo], pins: dict[str, str]) -> Baseline:
    """The baseline of ``candidate`` among ``runs`` (see the module doc)."""
    if candidate.suite is None:
        return Baseline(None, "no baseline: the run's suite is unknown", "its suite is unknown")
    pinned = pins.get(candidate.suite)
    if pinned is not None:
        if pinned == candidate.run_id:
            return Baseline(None, f"no baseline: this run is the pinned baseline of suite {candidate.suite!r}",
                            f"it is the pinned baseline of suite {candidate.suite!r}")
        found = next((r for r in runs if r.run_id == pinned), None)
        if found is None or not found.processed:
            why = (f"the pinned baseline {pinned!r} of suite {candidate.suite!r} "
                   + ("is no run folder under the runs root (its folder was deleted, or the pins file names it "
                      "wrongly)" if found is None else "has not been processed"))
            return Baseline(None, f"no baseline: {why}", why)
        across = "" if found.setup == candidate.setup else (
            f", measured with another setup ({key_text(found.setup)}; this run: {key_text(candidate.setup)}): "
            "the comparison's warnings say what both recorded differently (a part one of them did not record is "
            "not compared)")
        if found.suite != candidate.suite:  # a pin is used as it is; say so where the comparison is announced
            across = f", a run of another suite ({found.suite!r}): the comparison's warnings say so" + across
        return Baseline(pinned, f"pinned for suite {candidate.suite!r}{across}")
    suite_runs = [r for r in runs if r.suite == candidate.suite and r.run_id != candidate.run_id]
    others = [r for r in suite_runs if r.setup == candidate.setup]
    earlier = [r for r in others if r.processed and r.order < candidate.order]
    if not earlier:
        across = [r for r in suite_runs if r.setup != candidate.setup]
        reason = (no_earlier_reason(candidate, others) if others or not across else
                  f"no baseline: no other run of suite {candidate.suite!r} was measured with this run's setup")
        return Baseline(None, reason + other_setups_note(candidate, across),
                        f"no earlier processed run of suite {candidate.suite!r} was measured with its setup "
                        f"({key_text(candidate.setup)})")
    return Baseline(max(earlier, key=lambda r: r.order).run_id, "the latest earlier run of the suite")


def as_processed(runs: list[RunInfo], stored: Container[str], processing: Container[str] = ()) -> list[RunInfo]:
    """The run folders as the default rule sees them where the stage values are stored (the
    Dagster path, which compares a run with its baseline's stored values): a run is processed
    when it is processed now (``processing``), or when its outputs are written and its stage
    values stored (``stored``: the runs that have them). A run whose processing failed after
    its outputs were written, before its values were stored, is not: its successors are
    compared with the processed run before it (comparison.md: "the latest earlier processed
    run"), not left without a comparison."""
    return [replace(r, processed=(r.processed and r.run_id in stored) or r.run_id in processing) for r in runs]


#: How many runs a "no baseline" reason names before it counts the rest.
NAMED_RUNS = 5


def _started(run: RunInfo) -> str:
    return f"started_at {run.started_at}" if run.started_at else "no started_at"


def _named_ids(ids: list[str]) -> str:
    """The first NAMED_RUNS run ids quoted, and how many more there are."""
    named = ", ".join(repr(i) for i in ids[:NAMED_RUNS])
    return named + (f" and {len(ids) - NAMED_RUNS} more" if len(ids) > NAMED_RUNS else "")


def other_setups_note(candidate: RunInfo, runs: list[RunInfo]) -> str:
    """`` Runs of suite ... with another setup ...``: the suite's runs measured with another
    setup key than the candidate's, grouped by setup (each named, the first NAMED_RUNS of a
    setup), which the default rule does not compare with; '' when there is none."""
    if not runs:
        return ""
    groups: dict[SetupKey, list[str]] = {}
    for run in sorted(runs, key=lambda r: r.order):
        groups.setdefault(run.setup, []).append(run.run_id)
    parts = [f"{_named_ids(ids)} ({key_text(key)})" for key, ids in groups.items()]
    return (f". {len(runs)} run(s) of suite {candidate.suite!r} were measured with another setup than this one's "
            f"({key_text(candidate.setup)}) and are not compared with by default (the change of judge or platform "
            f"would be mixed with the agent's): {'; '.join(parts)}. To compare across setups anyway, pin one in "
            "the baselines file")


def no_earlier_reason(candidate: RunInfo, others: list[RunInfo]) -> str:
    """Why none of the suite's other runs with the candidate's setup is its baseline: the
    runs seen, grouped by why each does not count (not processed yet, started later, or
    started at the same time with a run id that sorts after the candidate's: ties are broken
    by run id), and how to pin one."""
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
    parts = [f"{_named_ids(ids)}: {why}" for why, ids in groups.items()]
    return (f"no baseline: none of the {len(others)} other run(s) of suite {suite!r} is an earlier processed "
            f"run than this one ({candidate.run_id!r}, {_started(candidate)}): {'; '.join(parts)}. "
            f"To compare with one of them, pin it in the baselines file ({{\"{suite}\": \"<run id>\"}}, "
            "docs/operations.md)")


def run_info(run_dir: Path, out_dir: Path) -> RunInfo:
    """One run folder's RunInfo (suite by R2, as the stages name it)."""
    identity = read_identity(run_dir)
    processed = (out_dir / "metrics.json").is_file() and (out_dir / "attempts.jsonl").is_file()
    return RunInfo(run_dir.name, identity.suite, identity.started_at, processed, identity.setup.key)


#: The files whose presence makes a run's output folder a processed run.
PROCESSED_FILES = ("metrics.json", "attempts.jsonl")


def processed_outputs(output_root: str) -> dict[str, dict] | None:
    """For an output root in a bucket, ``{run id: {file name: ObjectInfo}}`` of PROCESSED_FILES
    from one listing of it (StoreError when it cannot be listed); None for a local one."""
    if not object_store.is_remote(output_root):
        return None
    return object_store.list_runs(output_root, PROCESSED_FILES)


def run_index(runs_root: Path | str, output_root: Path | str, folders: list | None = None,
              outputs: dict[str, dict] | None = None) -> list[RunInfo]:
    """Every run folder under ``runs_root`` (one with a results.jsonl), in name order.
    ``folders``: the runs root's ``run_folders.scan`` when already made; ``outputs``:
    ``processed_outputs(output_root)`` when already made."""
    from .run_folders import local_run_files, scan

    runs_root, output_root = str(runs_root), str(output_root)
    folders = folders if folders is not None else scan(runs_root)
    if not object_store.is_remote(runs_root) and not object_store.is_remote(output_root):
        return [run_info(Path(f.path), Path(output_root) / f.run_id) for f in folders]
    local = local_run_files(runs_root, [f.run_id for f in folders], folders=folders)
    if object_store.is_remote(output_root):
        listed = outputs if outputs is not None else processed_outputs(output_root) or {}
        done = {run_id for run_id, files in listed.items() if all(n in files for n in PROCESSED_FILES)}
    else:
        done = {f.run_id for f in folders
                if all((Path(output_root) / f.run_id / n).is_file() for n in PROCESSED_FILES)}
    infos = []
    for folder in folders:
        identity = read_identity(local[folder.run_id])
        infos.append(RunInfo(folder.run_id, identity.suite, identity.started_at, folder.run_id in done,
                             identity.setup.key))
    return infos


def pins_file() -> Path | str:
    """The pinned baselines' file: BENCH_BASELINES (a path or an object's URL), default
    $BENCH_HOME/baselines.json."""
    from .resources.settings import bench_home

    configured = os.environ.get("BENCH_BASELINES")
    if configured and object_store.is_remote(configured):
        return object_store.normalize(configured)
    return Path(configured or bench_home() / "baselines.json")


class PinsError(ValueError):
    """The pins file exists but does not hold pins: read as none, it would silently change
    every comparison of the pinned suites, so the step that reads it fails, saying why."""


def load_pins(path: Path | str) -> dict[str, str]:
    """``{suite: run id}`` from the pins file; no file means no pins. A file that cannot be
    read, is not valid JSON, is not a JSON object or pins a suite to something other than a
    run id (a text) raises PinsError naming it and what is wrong; an object in a bucket that
    exists but cannot be read is a StoreError."""
    try:
        data = object_store.read_bytes(str(path)) if object_store.is_remote(path) else Path(path).read_bytes()
    except FileNotFoundError:
        return {}
    except object_store.StoreError:  # a bucket that does not exist, no credentials: said as such
        raise
    except OSError as exc:  # a folder, no permission
        raise PinsError(f"the pinned baselines file {path} cannot be read ({exc.strerror or exc})") from None
    fix = 'it should be {"<suite name>": "<run id>", ...}; fix it or remove it (docs/operations.md)'
    try:
        pins = loads_json(data)
    except ValueError as exc:
        raise PinsError(f"the pinned baselines file {path} is not valid JSON ({exc}): {fix}") from None
    if not isinstance(pins, dict):
        raise PinsError(f"the pinned baselines file {path} is not a JSON object: {fix}")
    bad = [suite for suite, run_id in pins.items() if not isinstance(run_id, str)]
    if bad:
        raise PinsError(f"the pinned baselines file {path} pins suite {', '.join(repr(s) for s in bad[:5])} to "
                        f"something other than a run id (a text): {fix}")
    return pins
