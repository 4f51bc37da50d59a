#!/usr/bin/env bash
# The main command: install, then process every run folder through a local Dagster instance.
# With no run folders under the runs root (default ./.bench_data/runs), sample runs are written first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh run
export DAGSTER_HOME="${DAGSTER_HOME:-$PWD/.dagster_home}"
mkdir -p "$DAGSTER_HOME"
[ -f "$DAGSTER_HOME/dagster.yaml" ] || cp deploy/dagster.local.yaml "$DAGSTER_HOME/dagster.yaml"
exec .venv/bin/python -m bench_pipeline.main "$@"
