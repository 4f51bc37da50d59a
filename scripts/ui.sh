#!/usr/bin/env bash
# Starts the Dagster UI (webserver and daemon) on the same local instance as scripts/run.sh.
# With an empty runs root, sample runs are written first so the sensor has something to process;
# runs a killed process left under way are marked failed (bench_pipeline/orphaned_runs.py).
# Options go to `dg dev` (e.g. -p 3001; the project is found by pyproject.toml's [tool.dg]). Stop it with Ctrl-C, or SIGTERM / SIGINT to
# this script's pid when it runs in the background: bench_pipeline/ui.py stops the webserver,
# the daemon and the code server, and kills what is left after BENCH_UI_STOP_TIMEOUT (20 s).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/instance.sh
.venv/bin/python -m bench_pipeline.main --prepare-ui
exec .venv/bin/python -m bench_pipeline.ui "$@"
