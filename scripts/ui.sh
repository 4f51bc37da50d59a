#!/usr/bin/env bash
# Starts the Dagster UI (webserver and daemon) on the same local instance as scripts/run.sh.
# With an empty runs root, sample runs are written first so the sensor has something to process.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh run
export DAGSTER_HOME="${DAGSTER_HOME:-$PWD/.dagster_home}"
mkdir -p "$DAGSTER_HOME"
[ -f "$DAGSTER_HOME/dagster.yaml" ] || cp deploy/dagster.local.yaml "$DAGSTER_HOME/dagster.yaml"
.venv/bin/python -m bench_pipeline.main --samples-only
exec .venv/bin/dagster dev -w workspace.yaml "$@"
