"""The sample runs the main command writes into an empty runs root (docs/generator.md, "The
sample runs"): what a newcomer sees first."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Sample:
    """One group of sample runs: ``generate_runs`` arguments (docs/generator.md)."""

    prefix: str  # the run ids' prefix: what a newcomer will see
    runs: int
    edge_cases: bool
    seed: int
    layout: str = "runner"
    systems: int | None = None


#: The sample runs, in the runner's layout as real runs come (docs/generator.md). The ids say
#: what a newcomer will see: two clean runs whose every check passes, repeats of one system
#: (one model and git sha, so the suite page shows its noise floor; the second one was
#: re-judged: results.rejudged.jsonl), and two runs with the defects real runs have
#: (malformed lines, duplicated rows, unsafe or broken artifacts, missing attempts), whose
#: checks are red because of the data, not the pipeline. Seed 59 makes the two imperfect
#: runs show every kind of check failure between them but recorded_matches_derived (generated
#: rows record what their artifacts derive); the clean runs' own seed gives them
#: ids of their own.
SAMPLES = (Sample("sample-clean-", 2, False, 7, systems=1), Sample("sample-with-data-problems-", 2, True, 59))


def samples_allowed() -> bool:
    """Whether the main command and scripts/ui.sh write the sample runs (into an empty runs
    root): only into the default one, ``$BENCH_HOME/runs`` (BENCH_RUNS_ROOT unset). A runs root
    of your own never gets sample runs mixed in with yours, not even while it is empty."""
    return not os.environ.get("BENCH_RUNS_ROOT")


def ensure_sample_runs(runs_root: Path | str) -> None:
    """Write deterministic sample runs when the runs root, a local folder, holds no run
    folder. A runs root in a bucket is the runners' (docs/object-storage.md): nothing is
    written there. Called only for an instance that knows no run yet: one that knows some
    finds an empty runs root an error (``run_folders.scan``), not a place for samples."""
    from .object_store import is_remote
    from .run_folders import scan

    if is_remote(runs_root):
        return
    runs_root = Path(runs_root)
    if scan(str(runs_root)):
        return
    from .generator import generate_runs

    count = sum(s.runs for s in SAMPLES)
    clean = sum(s.runs for s in SAMPLES if not s.edge_cases)
    print(f"no run folders under {runs_root}: writing {count} sample runs in the benchmark runner's layout "
         f"({clean} clean, repeats of one system; {count - clean} with the data problems real runs have: "
         f"their red checks are the data's)", flush=True)
    runs_root.mkdir(parents=True, exist_ok=True)
    for sample in SAMPLES:
        generate_runs(runs_root, runs=sample.runs, seed=sample.seed, tasks=12, repeats=3, history_messages=30,
                      edge_cases=sample.edge_cases, id_prefix=sample.prefix, systems=sample.systems,
                      layout=sample.layout)
