"""`bench-pipeline backfill`: one asset backfill of the per-run stages over every run partition,
launched on the Dagster instance as the UI's "Materialize all partitions" does.

The Dagster daemon runs it; the per-run stages' backfill policy groups the partitions into
Dagster runs of ``PARTITIONS_PER_RUN`` each (docs/operations.md). It goes through Dagster's
own GraphQL API, the mutation the UI sends, with the workspace's code locations loaded in this
process (no webserver, no code server: starting one, as `dagster-graphql -w` does, cost
about 5 s more on this project's machine). Dagster has no public call for that: it is
``dagster_internals.execute_graphql_in_process``. A workspace with other kinds of locations (a
gRPC server, as in deploy/docker/workspace.yaml) is loaded by `dagster-graphql` as before.

Nothing runs a launched backfill until a daemon does: ``no_daemon_note`` says so, with what to
do, when no daemon has written a heartbeat to the instance lately. The UI's port is not known
here (`dg dev` takes 3000 unless it is in use or given with -p, and records it nowhere), so the
link names the UI's port in words (3000, the -p given to scripts/ui.sh, or the port Dagster
named when 3000 was in use).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .local_instance import open_instance

#: A daemon counts as running when one of its daemons (sensor, backfill, run queue, ...) wrote
#: a heartbeat to the instance within this many seconds. Each writes one every 30 s
#: (DEFAULT_HEARTBEAT_INTERVAL_SECONDS in dagster/_daemon/controller.py): this leaves room for
#: three missed ones. (`dagster-daemon liveness-check` tolerates half an hour: a daemon stopped
#: ten minutes ago would still pass it.)
HEARTBEAT_RECENT_SECONDS = 120

MUTATION = """
mutation BackfillAllRuns($assets: [AssetKeyInput!]) {
  launchPartitionBackfill(backfillParams: {assetSelection: $assets, allPartitions: true}) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
    ... on UnauthorizedError { message }
    ... on PartitionSetNotFoundError { message }
    ... on InvalidSubsetError { message }
  }
}
"""


def _variables() -> dict:
    from .assets.partition_work import STAGES

    return {"assets": [{"path": [stage]} for stage in STAGES]}


def in_process_modules(workspace: Path) -> list[tuple[str, str, str]] | None:
    """(module, working directory, location name) of every location of ``workspace``, or None
    when one is not a ``python_module`` (it then needs `dagster-graphql`)."""
    import yaml

    entries = (yaml.safe_load(workspace.read_text(encoding="utf-8")) or {}).get("load_from") or []
    modules = []
    for entry in entries:
        spec = entry.get("python_module") if isinstance(entry, dict) and len(entry) == 1 else None
        if isinstance(spec, str):
            spec = {"module_name": spec}
        if not isinstance(spec, dict) or not isinstance(spec.get("module_name"), str) or "attribute" in spec:
            return None
        directory = (workspace.parent / spec.get("working_directory", ".")).resolve()
        modules.append((spec["module_name"], str(directory), spec.get("location_name") or spec["module_name"]))
    return modules or None


def launch(workspace: Path) -> str:
    """Launch the backfill; returns its id, or raises RuntimeError with Dagster's message."""
    modules = in_process_modules(workspace)
    if modules is not None:
        from .dagster_internals import execute_graphql_in_process

        answer = execute_graphql_in_process(modules, MUTATION, _variables())
    else:
        answer = _query_with_dagster_graphql(workspace)
    result = (answer.get("data") or {}).get("launchPartitionBackfill") or {}
    if result.get("__typename") != "LaunchBackfillSuccess":
        raise RuntimeError(f"the backfill was not launched: {result.get('message') or answer}")
    return result["backfillId"]


def _query_with_dagster_graphql(workspace: Path) -> dict:
    done = subprocess.run(
        [str(Path(sys.executable).with_name("dagster-graphql")), "-w", str(workspace), "-t", MUTATION,
         "-v", json.dumps(_variables())],
        capture_output=True, text=True, cwd=workspace.parent,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"dagster-graphql failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    return json.loads(lines[-1])


def no_daemon_note(heartbeats: Mapping[str, Any], now: float, home: str) -> str | None:
    """What to tell the user when no daemon runs on the instance at ``home`` (``heartbeats``:
    ``DagsterInstance.get_daemon_heartbeats()``, each with a ``timestamp``), else None."""
    latest = max((h.timestamp for h in heartbeats.values()), default=None)
    if latest is not None and now - latest <= HEARTBEAT_RECENT_SECONDS:
        return None
    last = "never" if latest is None else f"last {_ago(now - latest)} ago"
    return (f"warning: no Dagster daemon is running on the instance {home} (no daemon heartbeat in the last "
            f"{HEARTBEAT_RECENT_SECONDS} s; {last}), so nothing runs the backfill yet. Start one with the same "
            f"DAGSTER_HOME: scripts/ui.sh (the UI and its daemon) or .venv/bin/dagster-daemon run -w workspace.yaml; "
            f"it picks the backfill up within 30 s (a daemon started seconds ago may not have written its first "
            f"heartbeat yet)")


def _ago(seconds: float) -> str:
    minutes = seconds / 60
    if minutes < 2:
        return f"{seconds:.0f} s"
    return f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.0f} h"


def daemon_note() -> str | None:
    """``no_daemon_note`` for the instance of $DAGSTER_HOME (the one the backfill went to)."""
    with open_instance() as instance:
        heartbeats = instance.get_daemon_heartbeats()
    return no_daemon_note(heartbeats, time.time(), os.environ.get("DAGSTER_HOME", ""))
