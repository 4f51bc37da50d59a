# Sourced by run.sh and ui.sh: installs the project and points DAGSTER_HOME at the local
# instance (./.dagster_home unless set), with deploy/dagster.local.yaml as its settings.
scripts/bootstrap.sh run
export DAGSTER_HOME="${DAGSTER_HOME:-$PWD/.dagster_home}"
mkdir -p "$DAGSTER_HOME"
[ -f "$DAGSTER_HOME/dagster.yaml" ] || cp deploy/dagster.local.yaml "$DAGSTER_HOME/dagster.yaml"
