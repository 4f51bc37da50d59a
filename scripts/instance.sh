# Sourced by run.sh, ui.sh and backfill.sh: installs the project and points DAGSTER_HOME at the
# local instance (./.dagster_home unless set), with deploy/dagster.local.yaml as its settings.
# $DAGSTER_HOME/dagster.yaml is the project's stamped copy: written when missing, replaced when it
# is an unedited copy of an earlier version, never replaced once edited (a note says when the
# project's settings have changed since): bench_pipeline/local_instance.py.
scripts/bootstrap.sh run
export DAGSTER_HOME="${DAGSTER_HOME:-$PWD/.dagster_home}"
mkdir -p "$DAGSTER_HOME"
.venv/bin/python -m bench_pipeline.local_instance deploy/dagster.local.yaml "$DAGSTER_HOME/dagster.yaml"
