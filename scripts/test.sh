#!/usr/bin/env bash
# The test command: install everything the tests need, then run all of them,
# the slow end-to-end, browser and PostgreSQL tests included.
# For the fast subset while coding: .venv/bin/pytest
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh test
exec .venv/bin/pytest -m "slow or not slow" --durations=25 "$@"
