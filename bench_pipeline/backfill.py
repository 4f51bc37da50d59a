"""`bench-pipeline backfill`: one asset backfill of the per-run stages over every run partition,
launched on the Dagster instance as the UI's "Materialize all partitions" does.

The Dagster daemon runs it; the per-run stages' backfill policy groups the partitions into
Dagster runs of ``PARTITIONS_PER_RUN`` each (docs/operations.md). It goes through Dagster's
own GraphQL API, the mutation the UI sends, with the workspace's code locations loaded in this
process (no webserver, no code server: starting one, as `dagster-graphql -w` does, cost
about 5 s more on this project's machine). Dagster has no public call for that: it is
``dagster_internals.execute_graphql_in_process``. A workspace with other kinds of locations (a
gRPC server, as in deploy/docker/workspace.yaml) is loaded by `dagster-graphql` as before.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
