"""The sensor that turns ready run folders into partitions and runs.

Each tick it scans the runs root (a few ``stat`` calls per folder; only new or changed
folders have their manifest read), adds a partition and requests a run for each new ready
folder, requests a run again for a folder whose fingerprint changed (re-judged:
results.jsonl rewritten, or the runner's results.rejudged.jsonl written, changed or
removed), leaves folders still being written for a later tick, and deletes the partition of
a folder that disappeared. Readiness is readiness.is_ready: a manifest status decides;
without one, the runner's metrics.json or summary.md makes a run ready at once, else its
results file must be quiet.

Cursor: JSON ``{run_id: entry}`` of every run it has requested. The entry is the folder's
fingerprint, and from the second request on ``<fingerprint>~<digest>`` (``_next_entry``: a
digest of the previous entry and the fingerprint); the run key is
``<run_id>:<entry>@<formula version>``. So
a folder back in a state it was requested in before (its re-judged copy removed gives back
the fingerprint of before the re-judge) gets a run key of its own, which Dagster does not
skip as already used; the run key also names the formula version, so that a folder
processed before with an earlier formula (a folder gone and back across an upgrade, a cursor
reset) is not skipped as already done. A cursor of bare fingerprints (as written before)
reads the same.
The entry of a folder that is gone is kept under ``GONE`` ({run_id: its last entry}), so
that the chain goes on when the folder comes back: it starts again from the bare
fingerprint otherwise, and a folder back with the contents it was first processed with (a
re-judged copy removed while the folder was away) got its first run key again, which Dagster
skips: the run kept its re-judged numbers.
The cursor also keeps, under ``NOT_RUNS`` (a key no run id can be: it holds a ``/``), the
folders of the runs root that are not run folders (no results.jsonl), found by the same scan
at no extra cost: each is said once, in the log and the skip reason of the tick that first
sees it (again only if it goes and comes back), not on every tick.

A runs root in a bucket is scanned from listing pages (run_folders.scan_bucket): no request
per unchanged run, a manifest read only for a run whose manifest.json is new or changed.
A runs root that cannot be listed fails the tick with the reason (RunsRootError: a missing
bucket, no credentials, no network; a local folder that does not exist while runs processed
from it are known), so the UI shows the error, never "no new runs" or every run gone.
"""


import hashlib
import json
import os
from collections.abc import Callable

import dagster as dg

from ..assets.run_stages import PARTITIONS_PER_RUN, REQUESTED_ONE_BY_ONE, up_to_date
from ..formula import FORMULA_VERSION
from .. import object_store
from ..partitions import partition_batches, range_tags, runs_partitions
from ..readiness import ready_folders
from ..resources import PipelineSettings
from ..run_folders import not_runs_note, refused_names, scan


#: Seconds between the sensor's ticks (BENCH_SENSOR_INTERVAL_SECONDS). Dagster's sensor daemon
#: evaluates sensors at most every 5 s (MIN_INTERVAL_LOOP_TIME in dagster/_daemon/sensor.py, not
#: configurable) and skips a sensor whose last tick is less than its minimum interval ago: 4 s
#: makes it tick on every loop, every 5 s; 5 s would skip every other loop (the previous tick
#: started a few milliseconds after its loop), so every 10 s. A tick over 1,000 unchanged run
#: folders takes a few hundredths of a second (benchmarks/sensor_benchmark.py).
MINIMUM_INTERVAL_SECONDS = int(os.environ.get("BENCH_SENSOR_INTERVAL_SECONDS", "4"))

#: The cursor's entry listing the runs root's folders that are not run folders (a run id is
#: one path segment, never ``/...``).
NOT_RUNS = "/not_run_folders"
#: The cursor's entry keeping the entries of the folders that are gone (module doc).
GONE = "/gone"


def evaluate_run_folders(
    settings: PipelineSettings,
    cursor: str | None,
    existing: list[str],
    already_done: Callable[[dict[str, str]], set[str]] = lambda fingerprints: set(),
    batch_size: int = PARTITIONS_PER_RUN,
    log: Callable[[str], None] = lambda line: None,
) -> dg.SensorResult:
    """One tick's decisions; pure apart from reading the runs root and ``already_done``, and
    ``log``, told of the folders that are not run folders seen for the first time.

    ``existing`` is the instance's partition keys in their order. ``already_done({run_id:
    fingerprint})`` names the runs already materialized from a folder with that fingerprint
    and with this formula version (by ``bench_pipeline.main``, a backfill, or before the
    cursor was lost): they are recorded, not requested again. Up to ``REQUESTED_ONE_BY_ONE``
    runs to process (at most ``batch_size``) get a Dagster run each (the lowest latency); a
    burst of more (a first tick over a full runs root) gets one Dagster run per consecutive
    range of ``batch_size``, as a backfill does.
    """
    with object_store.shared(settings.runs_root):  # one client for the tick's listing and reads
        return _evaluate(settings, cursor, existing, already_done, batch_size, log)


def _fingerprint(entry: str | None) -> str | None:
    """The folder fingerprint of a cursor entry (``<fingerprint>[~<digest>]``)."""
    return entry.split("~", 1)[0] if entry is not None else None


def _next_entry(previous: str | None, fingerprint: str) -> str:
    """The cursor entry of a folder with ``fingerprint`` after the entry ``previous``: the
    fingerprint alone the first time; after an earlier entry, with a digest of that entry
    and the fingerprint, so that every entry of a run differs from all its earlier ones
    (the chain of digests), also when the folder is back in an earlier state."""
    if previous is None:
        return fingerprint
    return f"{fingerprint}~{hashlib.sha1(f'{previous}>{fingerprint}'.encode()).hexdigest()[:16]}"


def _evaluate(settings: PipelineSettings, cursor: str | None, existing: list[str],
              already_done: Callable[[dict[str, str]], set[str]], batch_size: int,
              log: Callable[[str], None]) -> dg.SensorResult:
    existing_keys = set(existing)
    seen: dict = json.loads(cursor) if cursor else {}
    away: dict = dict(seen.pop(GONE, {}))  # the last entries of folders that were gone
    requests: list[dg.RunRequest] = []
    new_keys: list[str] = []
    skipped: list[str] = []
    current: dict = {}
    not_runs: list[str] = []
    found = scan(settings.runs_root, not_runs, known=len(existing))
    refused = refused_names(found)
    folders = [folder for folder in found if folder.run_id not in refused]
    returned = set()  # back after being gone: its chain of entries goes on (module doc)
    for folder in folders:
        if folder.run_id in away and folder.run_id not in seen:
            seen[folder.run_id] = away.pop(folder.run_id)
            returned.add(folder.run_id)
    changed = [f for f in folders if _fingerprint(seen.get(f.run_id)) != f.fingerprint or f.run_id in returned]
    # every new or changed folder: one not in the cursor may have been processed before it
    # (the cursor reset, or a folder gone before the cursor kept such entries aside)
    done = already_done({f.run_id: f.fingerprint for f in changed})
    # only new or changed folders are checked (a bucket's manifests read in one batch)
    ready = ready_folders([f for f in changed if f.run_id not in done], settings.quiet_seconds)
    for folder in folders:
        # a folder back is processed again unless its stored values are current (``done``)
        unchanged = _fingerprint(seen.get(folder.run_id)) == folder.fingerprint and folder.run_id not in returned
        if unchanged or folder.run_id in done:  # nothing to process (a folder back as it was: its partition again)
            current[folder.run_id] = seen[folder.run_id] if unchanged else _next_entry(seen.get(folder.run_id),
                                                                                     folder.fingerprint)
            if folder.run_id not in existing_keys and folder.run_id not in new_keys:
                new_keys.append(folder.run_id)
            continue
        if folder.run_id not in ready:
            skipped.append(folder.run_id)
            if folder.run_id in seen:  # changed and being rewritten: keep the old state for now
                current[folder.run_id] = seen[folder.run_id]
            continue
        current[folder.run_id] = _next_entry(seen.get(folder.run_id), folder.fingerprint)
        if folder.run_id not in existing_keys:
            new_keys.append(folder.run_id)
        requests.append(
            dg.RunRequest(
                partition_key=folder.run_id,
                run_key=f"{folder.run_id}:{current[folder.run_id]}@{FORMULA_VERSION}",
                tags={"bench/trigger": "changed" if folder.run_id in seen else "new"},
            )
        )
    if len(requests) > min(batch_size, REQUESTED_ONE_BY_ONE):
        requests = batched_requests(requests, [*existing, *new_keys], current, batch_size)
    gone = sorted(k for k in existing if k not in current and k not in skipped and k in seen)
    away.update((k, entry) for k, entry in seen.items() if k != NOT_RUNS and k not in current and k not in skipped)
    known = set(seen.get(NOT_RUNS, ()))
    for name, why in refused.items():  # said once, as the folders that are not runs
        if name not in known:
            log(f"{name}: not processed: {why}")
    not_runs = sorted([*not_runs, *refused])
    if not_runs:
        current[NOT_RUNS] = not_runs
    if away:
        current[GONE] = away
    first_seen = [name for name in not_runs if name not in known and name not in refused]  # said once (module doc)
    note = f"; {not_runs_note(first_seen)}" if first_seen else ""
    if first_seen:
        log(not_runs_note(first_seen))
    partition_requests = []
    if new_keys:
        partition_requests.append(runs_partitions.build_add_request(new_keys))
    if gone:
        partition_requests.append(runs_partitions.build_delete_request(gone))
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=partition_requests,
        cursor=json.dumps(current, sort_keys=True),
        skip_reason=None if requests or gone else f"no new or changed ready runs ({len(skipped)} not ready){note}",
    )


def batched_requests(requests: list[dg.RunRequest], ordered: list[str], fingerprints: dict[str, str],
                     size: int) -> list[dg.RunRequest]:
    """The requests as one run per consecutive range of at most ``size`` partitions."""
    triggers = {r.partition_key: r.tags["bench/trigger"] for r in requests}
    batched = []
    for batch in partition_batches(ordered, set(triggers), size):
        digest = hashlib.sha1("|".join([*(f"{k}:{fingerprints[k]}" for k in batch), FORMULA_VERSION]).encode()
                              ).hexdigest()[:16]
        kinds = sorted({triggers[k] for k in batch})
        batched.append(dg.RunRequest(
            run_key=f"{batch[0]}..{batch[-1]}:{digest}",
            tags={**range_tags(batch), "bench/trigger": kinds[0] if len(kinds) == 1 else "new+changed"},
        ))
    return batched


@dg.sensor(
    name="run_folder_sensor",
    job_name="process_run",
    minimum_interval_seconds=MINIMUM_INTERVAL_SECONDS,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Adds a partition and processes every new or changed ready run folder under the runs root.",
)
def run_folder_sensor(context: dg.SensorEvaluationContext, settings: PipelineSettings) -> dg.SensorResult:
    existing = context.instance.get_dynamic_partitions(runs_partitions.name)
    result = evaluate_run_folders(settings, context.cursor, existing, lambda fps: up_to_date(context.instance, fps),
                                  log=context.log.info)
    if result.run_requests:
        context.log.info(f"requesting {len(result.run_requests)} run(s)")
    return result
