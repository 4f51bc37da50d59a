"""Which runs of a system are pooled, and which are left out and why (repeated-runs.md
"Systems"; docs/metric-choices.md "Which runs a system pools").

- **The same run twice.** Two runs whose results files are byte-identical (a copy of a run
  folder under another name) are one measurement, not two: pooling both would count every
  task twice and make the noise floor look smaller than it is. ``bench-pipeline repeats`` and
  the set form of ``compare`` refuse them (``first_identical``); a system of the Dagster
  catalog pools only the one whose run id sorts first and lists the others
  (``pooled_members``). The bytes compared are those of the results file each run actually
  reads: results.rejudged.jsonl when it is a regular file, else results.jsonl
  (``layouts.results_file_name``).
- **A run with no usable rows** (no eligible attempt after de-duplication: an empty or
  unreadable results file, or only skipped, judge-error or environment-failed attempts)
  measured nothing of the agent. A catalog system leaves it out of its pooling (its metrics_k
  would still set k, and its missing tasks would still count against "in every run") and
  says so in its repeats.md and on the suite page.

``usable`` and ``pooled_members`` are pure; ``results_digests`` and ``first_identical`` read
the results files, and only of runs whose results files have equal sizes (a run whose size
no other shares cannot be a copy, and is never read).
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .layouts import results_file_name
from .repeats import RepeatRun
from .task_groups import is_eligible


def usable(run: RepeatRun) -> bool:
    """Whether the run has at least one eligible attempt (after its de-duplication)."""
    return any(is_eligible(row) for by_attempt in run.side.tasks.values() for row in by_attempt.values())


@dataclass(frozen=True)
class Members:
    """A system's runs split: ``pooled`` (in the given order), ``same_results`` ({run id:
    the pooled run id whose results it repeats}) and ``no_usable_rows`` (run ids)."""

    pooled: list[RepeatRun]
    same_results: dict[str, str] = field(default_factory=dict)
    no_usable_rows: list[str] = field(default_factory=list)

    @property
    def left_out(self) -> dict[str, str]:
        """{run id: why it is not pooled, in words}, for repeats.md and the suite page."""
        pooled = {str(r.run_id) for r in self.pooled}
        out = {run_id: f"the same results as {first}: counted once" for run_id, first in self.same_results.items()}
        out.update({run_id: "no usable rows (no eligible attempt): " + (
            "adds nothing to the pooled values or the noise floor" if run_id in pooled
            else "left out of the pooled values and the noise floor") for run_id in self.no_usable_rows})
        return out

    def notes(self) -> list[str]:
        """One sentence per run not pooled or pooled without adding anything: ``<run> has the
        same results as <run>: counted once``; ``<run> has no usable rows ...`` (left out, or,
        when pooled anyway, what it still changes)."""
        pooled = {str(r.run_id) for r in self.pooled}
        notes = [f"{run_id} has the same results as {first}: counted once"
                 for run_id, first in sorted(self.same_results.items())]
        for run_id in self.no_usable_rows:
            notes.append(f"{run_id} has no usable rows (no eligible attempt): " + (
                "it adds nothing to the pooled values, the stability or the noise floor (its metrics_k still counts "
                "toward k, and its missing tasks against \"in every run\")" if run_id in pooled else
                "it is left out of the pooled values, the stability and the noise floor"))
        return notes


def given(runs: Sequence[RepeatRun]) -> Members:
    """Runs given explicitly (``bench-pipeline repeats``, the set form of ``compare``): every
    one is pooled, as the specification says; those without usable rows are named."""
    return Members(list(runs), {}, [str(r.run_id) for r in runs if not usable(r)])


def pooled_members(runs: Sequence[RepeatRun], digests: Mapping[str, str | None] | None = None) -> Members:
    """The runs a system pools: a run without usable rows is left out; among runs with equal
    results digests (``digests``: {run id: digest or None}, None never equal to anything),
    only the one whose run id sorts first. When no run has usable rows, every run is pooled
    (there is nothing to pool either way) and each is still named as having none."""
    digests = digests or {}
    no_rows = [str(r.run_id) for r in runs if not usable(r)]
    candidates = [r for r in runs if usable(r)] or list(runs)
    first_of: dict[str, str] = {}
    for run in sorted(candidates, key=lambda r: str(r.run_id)):
        digest = digests.get(str(run.run_id))
        if digest is not None:
            first_of.setdefault(digest, str(run.run_id))
    same = {}
    pooled = []
    for run in candidates:
        digest = digests.get(str(run.run_id))
        first = first_of.get(digest) if digest is not None else None
        if first is not None and first != run.run_id:
            same[str(run.run_id)] = first
        else:
            pooled.append(run)
    return Members(pooled, same, no_rows)


# --- the results files (I/O) ----------------------------------------------------------------

def results_path(run_dir: Path | str) -> Path:
    """The results file a run folder is read from (``layouts.results_file_name``)."""
    return Path(run_dir) / results_file_name(str(run_dir))


def _sha256(path: Path) -> str | None:
    try:
        with open(path, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None


def results_digests(run_dirs: Mapping[str, Path | str]) -> dict[str, str | None]:
    """{run id: sha256 of the results file it reads} for the runs whose results file has the
    same size as another's; None for the others (no copy possible) and for a file that
    cannot be read."""
    sizes: dict[str, int] = {}
    for run_id, folder in run_dirs.items():
        try:
            sizes[run_id] = os.stat(results_path(folder)).st_size
        except OSError:
            continue
    shared = {size for size, n in Counter(sizes.values()).items() if n > 1}
    return {run_id: _sha256(results_path(run_dirs[run_id])) if sizes.get(run_id) in shared else None
            for run_id in run_dirs}


def first_identical(folders: Sequence[Path]) -> tuple[Path, Path, str] | None:
    """The first folder whose results file is byte-identical to an earlier one's: (that
    earlier folder, the folder, the file's name); None when all differ."""
    digests = results_digests({str(i): folder for i, folder in enumerate(folders)})
    seen: dict[str, Path] = {}
    for i, folder in enumerate(folders):
        digest = digests[str(i)]
        if digest is None:
            continue
        if digest in seen:
            return seen[digest], folder, results_path(folder).name
        seen[digest] = folder
    return None
