"""What a run's comparison was computed from, and which comparisons are behind their inputs.

A comparison depends on more than its own run: on the baseline the rule or a pin chooses
(baselines.py) and on the baseline's stored values. Each comparison records its inputs
(``ComparisonInputs``: comparison.json's ``inputs``, and the data version of its
run_comparison materialization, ``ComparisonInputs.version``): the candidate's and the baseline's data versions (``<folder fingerprint>@<formula
version>``, the version of the stored stage values it read) and the rule or pin that chose
the baseline. ``comparisons_behind`` (pure) then names every comparison whose inputs moved
on: its baseline re-processed (re-judged, backfilled), another baseline chosen now (a late
run, a pin added, changed or removed, the baseline's folder deleted), or a baseline found
where there was none. It waits while a run it needs is itself not current (being
processed): a comparison is recomputed once, from current inputs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from .baselines import RunInfo, choose_baseline

@dataclass(frozen=True)
class ComparisonInputs:
    """The inputs of one run's comparison (``baseline`` None: compared with nothing, and
    ``not_compared`` says why: baselines.Baseline.not_compared, shown in the run's reports)."""

    candidate: str
    candidate_version: str | None
    baseline: str | None
    baseline_version: str | None
    baseline_choice: str  # why this baseline (or none): baselines.Baseline.reason
    not_compared: str | None = None

    def record(self) -> dict:
        """comparison.json's ``inputs``."""
        return {
            "candidate": {"run_id": self.candidate, "data_version": self.candidate_version},
            "baseline": {"run_id": self.baseline, "data_version": self.baseline_version},
            "baseline_choice": self.baseline_choice,
        }

    def version(self) -> str:
        """The data version of the comparison: its inputs, as ``[baseline, baseline's data
        version, candidate's data version]`` in JSON (a run id may hold any character but
        ``/``), read back by ``from_version``; without a baseline, why there is none
        (``not_compared``, which the reports show) follows as a fourth item."""
        items = [self.baseline, self.baseline_version, self.candidate_version]
        if self.baseline is None and self.not_compared is not None:
            items.append(self.not_compared)
        return json.dumps(items, separators=(",", ":"))

    @classmethod
    def from_version(cls, run_id: str, text: str) -> ComparisonInputs | None:
        """The inputs a comparison's data version records; None for another kind of version
        (a materialization from before comparisons recorded their inputs). A version of three
        items without a baseline (from before the reports said why) has ``not_compared`` None."""
        try:
            items = json.loads(text)
        except (ValueError, TypeError):
            return None
        if not isinstance(items, list) or len(items) not in (3, 4):
            return None
        if not all(v is None or isinstance(v, str) for v in items) or (len(items) == 4 and items[3] is None):
            return None
        baseline, baseline_version, candidate_version = items[:3]
        not_compared = items[3] if len(items) == 4 else None
        if not_compared is not None and baseline is not None:  # version() writes no such thing
            return None
        return cls(run_id, candidate_version, baseline, baseline_version, "", not_compared)


@dataclass(frozen=True)
class Behind:
    """A comparison behind its inputs: the run, the baseline it should be compared with now
    (None: none) at the version to read, and why it is behind, in words."""

    run_id: str
    baseline: str | None
    baseline_version: str | None
    why: str

    @property
    def key(self) -> str:
        """What the recomputation is for: the run, its baseline and the baseline's version."""
        return f"{self.run_id}<{self.baseline or '-'}@{self.baseline_version or '-'}"


def comparisons_behind(runs: list[RunInfo], pins: Mapping[str, str], recorded: Mapping[str, ComparisonInputs],
                       stored: Mapping[str, str], current: Mapping[str, str]) -> list[Behind]:
    """The comparisons behind their inputs, in ``runs`` order.

    ``runs``: every run folder (baselines.run_index); ``pins``: the pinned baselines;
    ``recorded``: each run's recorded comparison inputs (runs never compared are left out:
    their own processing compares them); ``stored``: each
    run's data version of its stored stage values; ``current``: each run folder's data
    version now. A run is current when both are equal. Only a current run with a recorded
    comparison is looked at, and only against a current baseline (a baseline being
    processed is waited for).
    """
    by_id = {run.run_id: run for run in runs}
    behind = []
    for run in runs:
        rec = recorded.get(run.run_id)
        if rec is None or not _current(run.run_id, stored, current):
            continue
        expected = choose_baseline(run, runs, pins)
        if expected.run_id is None:
            if rec.baseline is not None:
                gone = "" if rec.baseline in by_id else f" (its folder {rec.baseline!r} is gone)"
                behind.append(Behind(run.run_id, None, None,
                                     f"compared with {rec.baseline!r}{gone}, now {expected.reason}"))
            elif rec.not_compared != expected.not_compared:  # what its reports say no longer holds
                was = (f"not compared because {rec.not_compared}" if rec.not_compared is not None
                       else "not compared, its reports not saying why")
                behind.append(Behind(run.run_id, None, None, f"{was}; now not compared because {expected.not_compared}"))
            continue
        if not _current(expected.run_id, stored, current):
            continue  # the baseline is being processed: its comparison follows once it is done
        version = stored[expected.run_id]
        if rec.baseline != expected.run_id:
            was = f"compared with {rec.baseline!r}" if rec.baseline else "compared with nothing"
            if rec.baseline is not None and rec.baseline not in by_id:
                was += " (its folder is gone)"
            why = f"{was}, now with {expected.run_id!r} ({expected.reason})"
        elif rec.baseline_version != version:
            why = f"its baseline {expected.run_id!r} was processed again since (now data version {version})"
        else:
            continue
        behind.append(Behind(run.run_id, expected.run_id, version, why))
    return behind


def _current(run_id: str, stored: Mapping[str, str], current: Mapping[str, str]) -> bool:
    return stored.get(run_id) is not None and stored.get(run_id) == current.get(run_id)
