#!/usr/bin/env bash
# Starts the Dagster UI (webserver and daemon) on the same local instance as scripts/run.sh.
# With an empty runs root, sample runs are written first so the sensor has something to process.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/instance.sh
.venv/bin/python -m bench_pipeline.main --samples-only
exec .venv/bin/dagster dev -w workspace.yaml "$@"
