"""The Dagster names this project needs that Dagster does not make public, all in one place.

Checked against Dagster 1.13.27 (the version pyproject.toml pins). Each use says why no public
API serves (docs/operations.md, "Dagster internals"); bench_pipeline_tests/test_dagster_internals.py
fails naming the one that an upgrade removed or changed, and checks that what is written here
is what Dagster itself writes and reads.

- **Provenance tags** (``provenance_tags``). The per-run step records each partition's stage
  materializations as soon as that partition is done (``AssetMaterialization`` events, many
  partitions per step). Dagster writes the data-version tags only for an ``Output`` /
  ``MaterializeResult`` (``data_version=``), which covers every partition of the step at
  once, at its end; an ``AssetMaterialization`` takes tags and no data version. The tags'
  names and the "not recorded" event pointer come from ``dagster._core.definitions.data_version``.
- **The latest data version per partition** (``latest_tags_by_partition``): the event log
  storage's tag query. The public ``DagsterInstance.fetch_materializations`` returns whole
  events, every one of every partition, where this needs one tag of the latest of each.
- **The modules of a SQLite instance** (``INSTANCE_STORAGE_MODULES``): what Dagster imports
  when it opens the instance of deploy/dagster.local.yaml (its storages, SQLAlchemy, Alembic,
  the run coordinator and launcher; about 0.5 s). The main command's fork server loads them
  ahead (refresh_process.py). The instance config names these classes by module path; Dagster
  has no public list of them.
- **An in-process workspace** (``execute_graphql_in_process``): the GraphQL mutation the UI
  sends to launch an asset backfill, run against the workspace's code locations loaded in
  this process. The public routes are a running webserver (``DagsterGraphQLClient``) or the
  ``dagster-graphql -w`` command, which starts a code server first (backfill.py); Dagster
  has no public Python call that launches an asset backfill.
- **A run's process, and marking a run failed** (``run_process``, ``mark_run_failed``,
  ``local_sqlite_instance``): orphaned_runs.py ends runs of the local instance whose process
  died. It reads the pid Dagster records on a run's start event (``get_records_for_run``),
  marks the run failed as Dagster's run monitoring does (``report_run_failed``), and tells a
  SQLite instance (whose runs' processes are on this machine) by its run storage's class.
  None of these three is in Dagster's public API; the public route to end a run,
  ``DagsterGraphQLClient.terminate_run``, needs a running webserver and marks it canceled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg
from dagster._core.definitions.data_version import (
    CODE_VERSION_TAG,
    DATA_VERSION_IS_USER_PROVIDED_TAG,
    DATA_VERSION_TAG,
    NULL_EVENT_POINTER,
    get_input_data_version_tag,
    get_input_event_pointer_tag,
)

from .local_instance import open_instance

#: The Dagster version these names were checked against (pyproject.toml pins it).
CHECKED_WITH_DAGSTER = "1.13.27"

__all__ = ["CHECKED_WITH_DAGSTER", "CODE_VERSION_TAG", "DATA_VERSION_TAG", "INSTANCE_STORAGE_MODULES",
           "execute_graphql_in_process", "latest_tags_by_partition", "local_sqlite_instance", "mark_run_failed",
           "provenance_tags", "run_process"]

#: The modules Dagster imports to open the SQLite instance of deploy/dagster.local.yaml (the
#: default instance has the same storages): importing them ahead leaves opening an existing
#: instance about 0.1 s (test_dagster_internals checks that nothing of them is left to import).
INSTANCE_STORAGE_MODULES = (
    "dagster._core.storage.sqlite_storage",
    "dagster._core.storage.runs.sqlite.sqlite_run_storage",
    "dagster._core.storage.event_log.sqlite.sqlite_event_log",
    "dagster._core.storage.schedules.sqlite.sqlite_schedule_storage",
    "dagster._core.storage.local_compute_log_manager",
    "dagster._core.run_coordinator.queued_run_coordinator",
    "dagster._core.launcher.default_run_launcher",
    "alembic.command",
    "alembic.config",
)


def provenance_tags(code_version: str, data_version: str | None, upstream: dg.AssetKey | None,
                    upstream_version: str | None = None) -> dict[str, str]:
    """The tags Dagster writes on a materialization from ``Output(data_version=...)``: the code
    version, and with a data version, that version as user-provided and, for an asset computed
    from ``upstream``, its input's data version (``upstream_version``, by default the same)
    with no recorded input event."""
    tags = {CODE_VERSION_TAG: code_version}
    if data_version is None:
        return tags
    tags[DATA_VERSION_TAG] = data_version
    tags[DATA_VERSION_IS_USER_PROVIDED_TAG] = "true"
    if upstream is not None:
        tags[get_input_data_version_tag(upstream)] = upstream_version or data_version
        tags[get_input_event_pointer_tag(upstream)] = NULL_EVENT_POINTER
    return tags


#: Up to how many partitions ``latest_tags_by_partition`` names in its query.
LISTED_PARTITIONS = 200


def latest_tags_by_partition(instance: dg.DagsterInstance, asset_key: dg.AssetKey, tag_keys: Sequence[str],
                             partitions: Sequence[str] | None) -> dict[str, dict[str, str]]:
    """{partition: {tag: value}} of the latest materialization of each of ``partitions`` that
    has one (only ``tag_keys``); ``partitions`` None: of every partition ever materialized,
    deleted ones included.

    Many partitions (more than ``LISTED_PARTITIONS``) are not named in the query: the latest
    of every partition of the asset is read and the asked ones kept, which is faster than a
    query listing thousands of partition keys (docs/benchmarks.md) and reads only the
    partitions deleted since on top."""
    if partitions is None:
        return instance.event_log_storage.get_latest_tags_by_partition(
            asset_key, dg.DagsterEventType.ASSET_MATERIALIZATION, list(tag_keys))
    partitions = list(partitions)
    named = len(partitions) <= LISTED_PARTITIONS
    latest = instance.event_log_storage.get_latest_tags_by_partition(
        asset_key, dg.DagsterEventType.ASSET_MATERIALIZATION, list(tag_keys),
        asset_partitions=partitions if named else None,
    )
    if named:
        return latest
    asked = set(partitions)
    return {partition: tags for partition, tags in latest.items() if partition in asked}


def execute_graphql_in_process(modules: Sequence[tuple[str, str, str]], query: str,
                               variables: Mapping[str, Any]) -> dict:
    """``query`` against the code locations ``(module, working directory, location name)``
    loaded in this process, on the instance of $DAGSTER_HOME; the GraphQL answer.
    RuntimeError when a location does not load."""
    from dagster._core.remote_origin import InProcessCodeLocationOrigin
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
    from dagster_graphql.cli import execute_query

    origins = [InProcessCodeLocationOrigin(LoadableTargetOrigin(module_name=module, working_directory=directory),
                                           location_name=name) for module, directory, name in modules]
    with open_instance() as instance, \
            WorkspaceProcessContext(instance, InProcessWorkspaceLoadTarget(origins)) as context:
        errors = [entry.load_error for entry in context.create_request_context().get_code_location_entries().values()
                  if entry.load_error is not None]
        if errors:
            raise RuntimeError(f"the code location did not load: {errors[0].message.strip()}")
        return execute_query(context, query, dict(variables))


def run_process(instance: dg.DagsterInstance, run_id: str) -> tuple[int, float] | None:
    """(pid, Unix time) of the process that executes ``run_id``: its RUN_START event's;
    None before the run has started (Dagster records no process on the events before it)."""
    records = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.RUN_START,
                                           limit=1, ascending=False).records
    for record in records:
        entry = record.event_log_entry
        if entry.dagster_event is not None and entry.dagster_event.pid is not None:
            return entry.dagster_event.pid, entry.timestamp
    return None


def mark_run_failed(instance: dg.DagsterInstance, run_id: str, message: str) -> None:
    """End run ``run_id`` as FAILURE, ``message`` in its event log (as Dagster's run
    monitoring ends a run whose process died)."""
    run = instance.get_run_by_id(run_id)
    if run is not None:
        instance.report_run_failed(run, message)


def local_sqlite_instance(instance: dg.DagsterInstance) -> bool:
    """Whether the instance keeps its runs in SQLite (files on this machine, so its runs'
    processes were on this machine too: the local instance of deploy/dagster.local.yaml)."""
    from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage

    return isinstance(instance.run_storage, SqliteRunStorage)
