"""`bench-pipeline backfill`: one asset backfill of the per-run stages over every run partition,
launched on the Dagster instance as the UI's "Materialize all partitions" does.

The Dagster daemon runs it; the per-run stages' backfill policy groups the partitions into
Dagster runs of ``PARTITIONS_PER_RUN`` each (docs/operations.md). It goes through Dagster's
own GraphQL API (``dagster-graphql`` on the workspace; no webserver needed).
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


def launch(workspace: Path) -> str:
    """Launch the backfill; returns its id, or raises RuntimeError with Dagster's message."""
    from .assets.partition_work import STAGES

    variables = {"assets": [{"path": [stage]} for stage in STAGES]}
    done = subprocess.run(
        [str(Path(sys.executable).with_name("dagster-graphql")), "-w", str(workspace), "-t", MUTATION,
         "-v", json.dumps(variables)],
        capture_output=True, text=True, cwd=workspace.parent,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"dagster-graphql failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    answer = json.loads(lines[-1])
    result = (answer.get("data") or {}).get("launchPartitionBackfill") or {}
    if result.get("__typename") != "LaunchBackfillSuccess":
        raise RuntimeError(f"the backfill was not launched: {result.get('message') or answer}")
    return result["backfillId"]
