#!/usr/bin/env bash
# Backfill every run partition (after a formula change): one asset backfill of the per-run
# stages on the local instance, as the UI's "Materialize all partitions" does. The Dagster
# daemon (scripts/ui.sh, or `dagster-daemon run`) runs it. See docs/operations.md.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${DAGSTER_HOME:-}" ]; then . scripts/instance.sh; fi
exec .venv/bin/bench-pipeline backfill --workspace workspace.yaml "$@"
