"""The main command: process every ready run folder through a real Dagster instance.

`python -m bench_pipeline.main` (what scripts/run.sh calls):

1. uses the Dagster instance under $DAGSTER_HOME (SQLite, created when missing);
2. writes sample runs into the runs root when it holds no run folder;
3. says which folders are not run folders (no results.jsonl) and which runs are not ready
   yet, and why; adds a partition for every ready run folder, skips the runs already
   processed from the same folder contents with the same formula version (saying so per
   run), says why a run processed before is processed again (its folder changed, the
   formula changed from X to Y), and executes the `process_run` job (the one the sensor
   and backfills run) over the others, up to PARTITIONS_PER_RUN runs per Dagster run; then
   refreshes the catalog if it is behind;
4. prints where each run's reports are.

The catalog refresh does not wait for the last runs' Langfuse publication, which it does not
read: once every run of the last Dagster run has its reports recorded, it starts in a
process of its own (``EarlyRefresh``, refresh_process.py) while those runs are published.

The console shows each line once: what the per-run step says (one line per run, progress of
large runs, warnings named by their run), plainly, and this command's own lines. Dagster's
events (step started, materializations, ...) go to the instance only, where the UI shows
them with the step's lines.

`scripts/ui.sh` (`dg dev`) on the same DAGSTER_HOME then shows these runs, materializations
and checks.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

# Only light imports here: `main` starts the fork server before Dagster is imported.
from .in_process_runs import RUN_CONFIG, RUN_TAGS, execute_refresh, interrupted, plain_console, step_error
from .interrupts import Interrupts
from .local_instance import open_instance
from .main_output import SUITE_PAGES_LISTED, listed, suite_pages, unchanged_lines, written_reports
from .main_plan import in_start_order, processed_again
from .sample_runs import ensure_sample_runs, samples_allowed

#: The module of the early catalog refresh's process, which the fork server loads at start.
REFRESH_PROCESS = "bench_pipeline.refresh_process"


def _say(message: str) -> None:
    print(message, flush=True)


def _error(exc: Exception) -> int:
    """An error that stops the command before it processes anything (exit code 2), on stderr
    as the command line's are: a CI job reading stderr sees it."""
    print(f"error: {exc}", file=sys.stderr, flush=True)
    return 2


def run_all(samples: bool = True) -> int:
    """Process every ready run that is new or changed; returns the number of failures (each
    failed run, and a failed catalog refresh)."""
    from .definitions import defs  # loaded only here: --prepare-ui does not need it

    # scripts/instance.sh seeds $DAGSTER_HOME/dagster.yaml (deploy/dagster.local.yaml); run
    # directly, Dagster's defaults apply until such a file exists.
    home = Path(os.environ.setdefault("DAGSTER_HOME", str(Path(".dagster_home").absolute())))
    home.mkdir(parents=True, exist_ok=True)
    with open_instance() as instance, Interrupts() as interrupts:
        return _run_all(defs, instance, samples, interrupts)


def prepare_ui() -> None:
    """Before the UI starts (scripts/ui.sh): the sample runs written when the default runs
    root holds no run folder (``samples_allowed``, ``ensure_sample_runs``), and the runs of
    the local instance that a process no longer running left under way marked failed
    (orphaned_runs.py), when the instance exists. A runs root that does not exist, cannot be
    listed or holds no run folder while the instance knows runs processed from it is said,
    and the UI starts (where the runs' partitions can be deleted, if they were removed on
    purpose), its run folder sensor's ticks failing with the same words."""
    from .resources.settings import default_runs_root
    from .run_folders import RunsRootError, scan

    home = os.environ.get("DAGSTER_HOME")
    if not home or not (Path(home) / "dagster.yaml").is_file():
        if samples_allowed():  # no instance made yet (scripts/instance.sh writes that file)
            ensure_sample_runs(default_runs_root())
        return
    from .orphaned_runs import fail_orphaned_runs
    from .partitions import runs_partitions

    with open_instance() as instance:
        known = len(instance.get_dynamic_partitions(runs_partitions.name))
        if known:
            try:
                scan(default_runs_root(), known=known)
            except RunsRootError as exc:  # the sensor's page says it too, at each tick
                _say(f"warning: {exc}. The UI starts all the same; the run folder sensor's ticks fail with "
                     "this message, removing no run, until that changes.")
        elif samples_allowed():
            ensure_sample_runs(default_runs_root())
        fail_orphaned_runs(instance, _say)


def _run_all(defs, instance, samples: bool, interrupts: Interrupts) -> int:
    from .assets.cross_run import catalog_behind
    from .assets.run_stages import PARTITIONS_PER_RUN, up_to_date
    from .orphaned_runs import fail_orphaned_runs
    from .partitions import partition_batches, range_tags, runs_partitions
    from .resources import default_settings
    from .readiness import ready_folders, waiting_reason
    from .run_folders import not_runs_note, refused_names, scan

    fail_orphaned_runs(instance, _say)  # a run left under way by a killed process blocks no refresh
    settings = default_settings()
    runs_root = settings.runs_root  # a folder or a bucket URL (s3://, gs://): kept as text
    existing = instance.get_dynamic_partitions(runs_partitions.name)
    home = Path(os.environ["DAGSTER_HOME"])
    not_runs: list[str] = []
    found = scan(str(runs_root), not_runs, known=len(existing))
    if not found and samples and samples_allowed():  # no run folder: the sample runs first
        ensure_sample_runs(runs_root)  # no error from the scan: no run known either
        not_runs = []
        found = scan(str(runs_root), not_runs, known=len(existing))
    if not_runs:
        _say(not_runs_note(not_runs))
    refused = refused_names(found)
    for folder, why in refused.items():
        _say(f"{folder}: not processed: {why}")
    found = [f for f in found if f.run_id not in refused]
    ready = ready_folders(found, settings.quiet_seconds)  # a bucket's manifests in one batch
    folders = [f for f in found if f.run_id in ready]
    waiting: dict[str, list[str]] = {}  # left for later, by why
    for folder in found:
        if folder.run_id not in ready:
            waiting.setdefault(waiting_reason(folder, settings.quiet_seconds), []).append(folder.run_id)
    for why, run_ids in waiting.items():
        _say(f"not ready yet, left for later ({len(run_ids)}): {listed(run_ids)}: {why}")
    # as the run folder sensor does: a run whose folder is gone is no longer one of the runs
    # (the catalog, its suite page and its system drop it at the refresh below; its reports stay)
    present = {f.run_id for f in found}
    gone = [key for key in existing if key not in present]
    for key in gone:
        instance.delete_dynamic_partition(runs_partitions.name, key)
        _say(f"{key}: its folder is gone: no longer one of the runs (the catalog, its suite page and its system "
             "leave it out from now on; its reports stay where they are)")
    if not folders and not gone:
        _say(f"no ready run folders under {runs_root}")
        if catalog_behind(instance) is None:
            return 0
        # nothing to process, but the catalog follows something else (its runs' partitions
        # deleted, a formula change, a refresh that failed): refreshed below
    existing = [key for key in existing if key not in gone]
    keys = [f.run_id for f in folders]
    new = [k for k in keys if k not in set(existing)]
    if new:
        instance.add_dynamic_partitions(runs_partitions.name, new)
    unchanged = up_to_date(instance, {f.run_id: f.fingerprint for f in folders})
    for line in unchanged_lines([k for k in keys if k in unchanged]):
        _say(line)
    todo = [k for k in keys if k not in unchanged]
    # every run to process: one whose folder was gone (its partition removed) and is back was
    # processed before all the same
    again = processed_again(instance, {f.run_id: f.fingerprint for f in folders if f.run_id not in unchanged})
    for key in todo:
        if key in again:
            _say(f"{key}: {again[key]}: processing it again")
    ahead = [b.run_id for b in follow_ahead(instance, settings, found, todo)]
    console = {"console": plain_console()}
    job = defs.resolve_job_def("process_run").with_logger_defs(console)
    failed = 0
    partitions = instance.get_dynamic_partitions(runs_partitions.name)
    # the runs whose comparison these put behind come after them (their baselines are done)
    batches = [*in_start_order(partition_batches(partitions, set(todo), PARTITIONS_PER_RUN), settings,
                               [f for f in found if f.run_id in set(todo)]),
               *partition_batches(partitions, set(ahead), PARTITIONS_PER_RUN)]
    from .refresh_process import EarlyRefresh

    early: EarlyRefresh | None = None
    for i, batch in enumerate(batches):
        started = time.monotonic()
        if i == len(batches) - 1:  # the refresh may start once this Dagster run's reports are recorded
            early = EarlyRefresh(instance, batch, str(home))
        # The step prints one line per run as it is done ("[i/n] <run>: ok|FAILED ...").
        try:
            result = job.execute_in_process(
                instance=instance, raise_on_error=False, run_config=RUN_CONFIG,
                tags={**RUN_TAGS, **range_tags(batch), "bench/trigger": "main"},
            )
        finally:
            if early is not None:
                early.stop_watching()
        errors = _failed_runs(result)
        seconds = _run_seconds(result)
        unreported = [key for key in batch if key not in errors and key not in seconds]
        # Ctrl-C or SIGTERM: stop here, no further Dagster run (also when Dagster took the signal
        # at the end of a run whose work was done, and completed it)
        if interrupted(result) or interrupts.received():
            if unreported:
                _say(f"interrupted before {listed(unreported)} {'was' if len(unreported) == 1 else 'were'} done "
                     f"(the Dagster run {result.run_id} failed)")
            else:
                _say(f"interrupted after the Dagster run {result.run_id}, its runs done")
            raise KeyboardInterrupt
        failed += sum(1 for key in batch if key in errors or key not in seconds)
        if unreported:  # the step failed before it got to these runs: say why, once per run
            reason = step_error(result) or "the Dagster run failed"
            for key in unreported:
                _say(f"{key}: FAILED: {reason} (see the Dagster run {result.run_id})")
        if len(batch) > 1:
            _say(f"  ({len(batch)} runs in one Dagster run, {time.monotonic() - started:.1f}s)")
    refreshed = early.result() if early is not None else None
    _stop_if_interrupted(interrupts)
    recompared, recompared_failed = follow_comparisons(job, instance, settings, interrupts)
    failed += recompared_failed
    if (refreshed is None or recompared) and catalog_behind(instance) is not None:
        refreshed = execute_refresh(instance)
    if refreshed is None:
        _say("catalog: up to date")
    elif refreshed.success:
        _say("catalog: ok")
    elif interrupts.received():  # the refresh failed because of it
        _say("catalog: interrupted before it was refreshed")
        raise KeyboardInterrupt
    else:
        where = f" (see the Dagster run {refreshed.run_id})" if refreshed.run_id else ""
        _say(f"catalog: FAILED: {refreshed.error}{where}")
        failed += 1  # the suite pages and systems are not current: not a success
    _stop_if_interrupted(interrupts)
    _say("")
    if keys:
        _say("Reports:")
    for key in keys:
        for path in written_reports(settings.output_root, key) or [f"{key}: no reports written"]:
            _say(f"  {path}")
    pages = suite_pages(settings.output_root)
    if pages:
        _say("Suite pages (the latest runs of a suite, their systems and noise floors):")
        for path in pages[:SUITE_PAGES_LISTED]:
            _say(f"  {path}")
        if len(pages) > SUITE_PAGES_LISTED:
            _say(f"  ... and {len(pages) - SUITE_PAGES_LISTED} more")
    _say("")
    _say(f"Dagster instance: {home}")
    _say("See it in the UI: scripts/ui.sh  (dg dev on the same instance)")
    _stop_if_interrupted(interrupts)
    return failed


def _stop_if_interrupted(interrupts: Interrupts) -> None:
    """Stop the command (KeyboardInterrupt) when a Ctrl-C or SIGTERM arrived that nobody
    acted on: one Dagster took at the end of its run, or one raised in a finalizer the
    interpreter ran meanwhile (Python reports such an exception and goes on)."""
    if interrupts.received():
        raise KeyboardInterrupt


def follow_ahead(instance, settings, found, todo: list[str]) -> list:
    """The runs whose comparison the runs of ``todo`` will put behind (a re-judged baseline, a
    late run), each said with why: processed after them by this command, so that one catalog
    refresh follows them all. ``found``: every run folder of the runs root (its scan)."""
    from .assets.comparisons import behind_now

    if not todo:
        return []
    ahead = behind_now(instance, settings, found, processing=frozenset(todo))
    for b in ahead:
        _say(f"{b.run_id}: to be compared again after the runs this command processes, which change its "
             f"comparison's inputs (once they are processed: {b.why})")
    return ahead


def follow_comparisons(job, instance, settings, interrupts: Interrupts) -> tuple[int, int]:
    """Process again the runs whose comparison is behind its inputs (assets/comparisons.py: a
    baseline processed again by this command, a late run, a pin added, changed or removed, a
    baseline's folder gone), each said with why; returns (how many, how many failed). Stops
    (KeyboardInterrupt) after a Dagster run during which Ctrl-C or SIGTERM arrived."""
    from .assets.comparisons import behind_now
    from .assets.run_stages import PARTITIONS_PER_RUN
    from .partitions import partition_batches, range_tags, runs_partitions

    behind = behind_now(instance, settings)
    for b in behind:
        _say(f"{b.run_id}: its comparison is behind its inputs ({b.why}): comparing again")
    failed = 0
    keys = {b.run_id for b in behind}
    for batch in partition_batches(instance.get_dynamic_partitions(runs_partitions.name), keys, PARTITIONS_PER_RUN):
        result = job.execute_in_process(instance=instance, raise_on_error=False, run_config=RUN_CONFIG,
                                        tags={**RUN_TAGS, **range_tags(batch), "bench/trigger": "baseline_changed"})
        if interrupted(result):
            raise KeyboardInterrupt
        _stop_if_interrupted(interrupts)
        errors, seconds = _failed_runs(result), _run_seconds(result)
        failed += sum(1 for key in batch if key in errors or key not in seconds)
    return len(behind), failed


def _failed_runs(result) -> dict[str, str]:
    """{run id: first line of its error} from a failed per-run step."""
    errors: dict[str, str] = {}
    for event in result.get_step_failure_events():
        data = event.step_failure_data.user_failure_data
        failed = data.metadata.get("failed_runs") if data is not None else None
        if failed is not None:
            errors.update({key: f"{v['stage']}: {v['error']}" for key, v in failed.value.items()})
    return errors


def _run_seconds(result) -> dict[str, float]:
    """{run id: seconds} of each run done: the last materialization of its partition carries
    ``run_seconds`` (the publication's, or the reports' when only its comparison and
    reports were made again)."""
    return {e.materialization.partition: e.materialization.metadata["run_seconds"].value
            for e in result.get_asset_materialization_events() if "run_seconds" in e.materialization.metadata}


def main(argv: list[str] | None = None) -> int:
    from .bulk import start_fork_server

    parser = argparse.ArgumentParser(
        prog="scripts/run.sh",
        description="Process every ready run folder under the runs root (BENCH_RUNS_ROOT, default "
                    ".bench_data/runs) through the local Dagster instance (DAGSTER_HOME, default .dagster_home): "
                    "metrics.json, summary.md and report.html of each new or changed run, its comparison with "
                    "its baseline and its Langfuse publication (a local outbox without LANGFUSE_* keys), then "
                    "the catalog and the suite pages. Runs already processed from the same folder contents "
                    "with the same formula version are skipped. With no run folder in the default runs root "
                    "(BENCH_RUNS_ROOT unset), sample runs are written first.",
        epilog="Environment variables: README.md (\"Your own runs\"); what it prints: docs/operations.md "
               "(\"Main command\").",
    )
    parser.add_argument("--no-samples", action="store_true",
                        help="do not write sample runs when the runs root holds no run folder (process your own "
                             "runs only)")
    parser.add_argument("--prepare-ui", action="store_true",
                        help="only write the sample runs when the runs root holds no run folder and mark failed "
                             "the runs a killed process left under way, process nothing (what scripts/ui.sh does "
                             "before it starts the UI)")
    args = parser.parse_args(argv)
    from .baselines import PinsError
    from .run_folders import RunsRootError

    if args.prepare_ui:
        try:
            prepare_ui()
        except RunsRootError as exc:
            return _error(exc)
        return 0

    # The per-run step's worker processes come from a fork server; started here, it loads
    # their code on another core while this process loads Dagster and the definitions.
    start_fork_server(also_preload=(REFRESH_PROCESS,))
    try:
        return 1 if run_all(samples=not args.no_samples) else 0
    except (RunsRootError, PinsError) as exc:  # a bucket that does not exist, no credentials; a broken pins file
        return _error(exc)
    except (KeyboardInterrupt, _interrupted_error()):  # Ctrl-C, or SIGTERM (Dagster handles both alike)
        _say("interrupted: stopped. Every file is written whole or not at all; run the command again to "
             "process the runs not done (each one interrupted is processed again from the start).")
        return INTERRUPTED


#: The exit code after an interrupt (128 + SIGINT, as a shell reports Ctrl-C).
INTERRUPTED = 130


def _interrupted_error() -> type[BaseException]:
    """Dagster's error for an interrupt outside a step (it subclasses BaseException)."""
    import dagster as dg

    return dg.DagsterExecutionInterruptedError


def entry() -> None:
    """``python -m bench_pipeline.main``: ``main()``, then the process ends without freeing the
    interpreter object by object (about half a second after importing Dagster, for memory the
    operating system reclaims at once). Every output is written and closed by then, the
    instance is closed, and the exit handlers (multiprocessing's fork server folder, logging)
    run as at a normal exit; ``bench-pipeline`` ends the same way (cli.entry)."""
    from .bulk import exit_now

    exit_now(main())


if __name__ == "__main__":
    entry()
