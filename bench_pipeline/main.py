"""The main command: process every ready run folder through a real Dagster instance.

`python -m bench_pipeline.main` (what scripts/run.sh calls):

1. uses the Dagster instance under $DAGSTER_HOME (SQLite, created when missing);
2. writes sample runs into the runs root when it holds no run folder;
3. adds a partition for every ready run folder and executes the `process_run` job for
   each (the same job the sensor and backfills run), then refreshes the catalog;
4. prints where each run's reports are.

`dagster dev -w workspace.yaml` on the same DAGSTER_HOME then shows these runs,
materializations and checks.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import dagster as dg

from .partitions import runs_partitions
from .resources import default_settings
from .run_folders import is_ready, scan

SAMPLE_RUNS = 3
#: Console shows progress and problems, not every step event (all events are in the instance).
QUIET = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}
SAMPLE_SEED = 7


def _say(message: str) -> None:
    print(message, flush=True)


def ensure_sample_runs(runs_root: Path) -> None:
    """Write deterministic sample runs when the runs root holds no run folder."""
    if scan(str(runs_root)):
        return
    from .generate import generate_runs

    _say(f"no run folders under {runs_root}: writing {SAMPLE_RUNS} sample runs")
    runs_root.mkdir(parents=True, exist_ok=True)
    generate_runs(runs_root, runs=SAMPLE_RUNS, seed=SAMPLE_SEED, tasks=12, repeats=3, history_messages=30)


def run_all(samples: bool = True) -> int:
    """Process every ready run; returns the number of failed runs."""
    from .definitions import defs  # loaded only here: --samples-only does not need it
    settings = default_settings()
    runs_root = Path(settings.runs_root)
    if samples:
        ensure_sample_runs(runs_root)
    # scripts/instance.sh seeds $DAGSTER_HOME/dagster.yaml (deploy/dagster.local.yaml); run
    # directly, Dagster's defaults apply until such a file exists.
    home = Path(os.environ.setdefault("DAGSTER_HOME", str(Path(".dagster_home").absolute())))
    home.mkdir(parents=True, exist_ok=True)
    instance = dg.DagsterInstance.get()
    found = scan(str(runs_root))
    folders, waiting = [], []  # ready folders; run ids left for later
    for folder in found:
        if is_ready(folder, settings.quiet_seconds):
            folders.append(folder)
        else:
            waiting.append(folder.run_id)
    if waiting:
        _say(f"not ready yet, left for later ({len(waiting)}): {', '.join(waiting[:10])}"
             f"{' ...' if len(waiting) > 10 else ''} (manifest status not completed/aborted, "
             f"or a legacy results.jsonl changed within BENCH_QUIET_SECONDS={settings.quiet_seconds})")
    if not folders:
        _say(f"no ready run folders under {runs_root}")
        return 0
    keys = [f.run_id for f in folders]
    existing = set(instance.get_dynamic_partitions(runs_partitions.name))
    new = [k for k in keys if k not in existing]
    if new:
        instance.add_dynamic_partitions(runs_partitions.name, new)
    job = defs.resolve_job_def("process_run")
    failed = 0
    for i, key in enumerate(keys, start=1):
        started = time.monotonic()
        result = job.execute_in_process(
            instance=instance, partition_key=key, raise_on_error=False, tags={"bench/trigger": "main"}, run_config=QUIET,
        )
        status = "ok" if result.success else "FAILED"
        failed += 0 if result.success else 1
        _say(f"[{i}/{len(keys)}] {key}: {status} ({time.monotonic() - started:.1f}s)")
    catalog = defs.resolve_job_def("refresh_catalog").execute_in_process(
        instance=instance, raise_on_error=False, run_config=QUIET,
    )
    _say(f"catalog: {'ok' if catalog.success else 'FAILED'}")
    _say("")
    _say("Reports:")
    for key in keys:
        out = Path(settings.output_root) / key
        _say(f"  {out / 'report.html'}")
        _say(f"  {out / 'summary.md'}")
    _say("")
    _say(f"Dagster instance: {home}")
    _say("See it in the UI: scripts/ui.sh  (dagster dev -w workspace.yaml on the same instance)")
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-samples", action="store_true", help="do not write sample runs into an empty runs root")
    parser.add_argument("--samples-only", action="store_true", help="only write sample runs into an empty runs root")
    args = parser.parse_args(argv)
    if args.samples_only:
        ensure_sample_runs(Path(default_settings().runs_root))
        return 0
    return 1 if run_all(samples=not args.no_samples) else 0


if __name__ == "__main__":
    sys.exit(main())
