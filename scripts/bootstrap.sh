#!/usr/bin/env bash
# Creates .venv and installs the project into it (skipped when pyproject.toml is unchanged).
# Usage: scripts/bootstrap.sh [test]   -- "test" also installs test extras and system packages.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
want="${1:-run}"

# One bootstrap at a time (run.sh and ui.sh started together on a fresh checkout would both
# create .venv and install into it): the lock is released when this script exits.
exec {lock}>.bootstrap.lock
flock "$lock"

if [ ! -x .venv/bin/python ]; then
  echo "creating .venv with $("$PYTHON" --version)"
  "$PYTHON" -m venv .venv
fi

extras=".[dev]"  # dev: dg (scripts/ui.sh runs `dg dev`)
[ "$want" = "test" ] && extras=".[test,dev]"
stamp=".venv/.installed-$(sha1sum pyproject.toml | cut -c1-12)-$want"
if [ ! -f "$stamp" ]; then
  echo "installing bench_pipeline ($extras) into .venv ..."
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e "$extras"
  touch "$stamp"
fi
# The project's bytecode, written once here: an editable install leaves it to each process,
# and where PYTHONDONTWRITEBYTECODE is set (as in many container images and CI machines) every
# process (the main command, its fork server, each Dagster run process) would compile the
# package again (about 0.1 s). Up to date files are skipped; an edited module is recompiled
# in memory until the next call.
.venv/bin/python -m compileall -q bench_pipeline >/dev/null

if [ "$want" = "test" ]; then
  # System packages the slow tests use: Chromium (report.html in a real browser) and
  # PostgreSQL (Dagster storage as deployed).
  need=()
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
  [ -x /usr/lib/postgresql/15/bin/postgres ] || ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || need+=(postgresql)
  if [ "${#need[@]}" -gt 0 ]; then
    echo "installing system packages: ${need[*]}"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
fi
