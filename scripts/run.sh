#!/usr/bin/env bash
# The main command: install, then process every run folder through a local Dagster instance.
# With no run folders under the runs root (default ./.bench_data/runs), sample runs are written first.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/instance.sh
exec .venv/bin/python -m bench_pipeline.main "$@"
