"""The catalog refresh in a process of its own: what the main command runs while its last runs
are still being published (main.py, ``EarlyRefresh``).

The refresh is a Dagster run executed in process, and the main command's own process is busy
with the per-run Dagster run then: two runs cannot share a process (each captures the
process's output for its logs). So the refresh runs in a process forked from the fork server
(bulk.py), a fresh single-threaded process. Importing this module loads what the refresh
needs, the definitions and the modules Dagster opens a SQLite instance with
(``dagster_internals.INSTANCE_STORAGE_MODULES``): the main command's fork server preloads it
(``main.REFRESH_PROCESS``), on the other core while the main command starts, and the refresh
then opens the instance in about 0.1 s instead of about 0.6 s.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING

from .dagster_internals import INSTANCE_STORAGE_MODULES
from .definitions import defs  # noqa: F401 - loaded for the refresh

if TYPE_CHECKING:
    from .in_process_runs import Refreshed

for _name in INSTANCE_STORAGE_MODULES:
    importlib.import_module(_name)


def refresh(dagster_home: str) -> "Refreshed":
    """The ``refresh_catalog`` job on the instance at ``dagster_home``, executed in this
    process (the fork server's environment predates the main command's
    default DAGSTER_HOME, so it is passed)."""
    import dagster as dg

    from .in_process_runs import execute_refresh

    os.environ["DAGSTER_HOME"] = dagster_home
    with dg.DagsterInstance.get() as instance:
        return execute_refresh(instance)
