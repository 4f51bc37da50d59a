"""The catalog refresh in a process of its own: what the main command (main.py) runs while its
last runs are still being published (``EarlyRefresh``, below).

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
import threading

from .dagster_internals import INSTANCE_STORAGE_MODULES
from .definitions import defs  # noqa: F401 - loaded for the refresh
from .in_process_runs import Refreshed, execute_refresh
from .local_instance import open_instance

#: How often the early refresh looks at the instance for the last runs' reports (seconds).
EARLY_REFRESH_POLL = 0.25

for _name in INSTANCE_STORAGE_MODULES:
    importlib.import_module(_name)


def refresh(dagster_home: str) -> Refreshed:
    """The ``refresh_catalog`` job on the instance at ``dagster_home``, executed in this
    process (the fork server's environment predates the main command's
    default DAGSTER_HOME, so it is passed)."""
    os.environ["DAGSTER_HOME"] = dagster_home
    with open_instance() as instance:
        return execute_refresh(instance)


class EarlyRefresh:
    """The catalog refresh, started while the last runs are still being published.

    A thread looks at the instance every EARLY_REFRESH_POLL seconds; once every run of
    ``keys`` has its ``reports`` stage recorded by this command (after the newest one
    recorded before), the last stage the refresh reads (``cross_run.FOLLOWED_STAGE``), it
    starts the refresh in a process forked from the fork server (refresh_process.py), which
    uses the core the publication leaves free. When a run fails before its reports, or the
    per-run run ends first, nothing starts and ``result`` is None: the command refreshes
    after the runs, as before. The refresh then covers every run of the command, and
    ``catalog_behind`` finds it up to date once the publications are recorded.
    """

    def __init__(self, instance, keys: list[str], dagster_home: str) -> None:
        import dagster as dg

        from .assets.cross_run import FOLLOWED_STAGE

        self._instance, self._keys, self._home = instance, set(keys), dagster_home
        self._asset = dg.AssetKey(FOLLOWED_STAGE)
        latest = instance.fetch_materializations(self._asset, limit=1).records
        self._after = latest[0].storage_id if latest else 0
        self._stop, self._started = threading.Event(), threading.Event()
        self._pool = self._future = None
        self._thread = threading.Thread(target=self._watch, name="early-catalog-refresh", daemon=True)
        self._thread.start()

    def _recorded(self) -> bool:
        import dagster as dg

        records = self._instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=self._asset, asset_partitions=sorted(self._keys),
                                  after_storage_id=self._after),
            limit=len(self._keys) * 2,
        ).records
        return {record.partition_key for record in records} >= self._keys

    def _watch(self) -> None:
        from concurrent.futures import ProcessPoolExecutor

        from .bulk import fork_server_context, start_worker

        try:
            while not self._stop.wait(EARLY_REFRESH_POLL):
                if self._recorded():
                    self._pool = ProcessPoolExecutor(1, mp_context=fork_server_context(), initializer=start_worker)
                    self._future = self._pool.submit(refresh, self._home)
                    self._started.set()
                    return
        except Exception:  # noqa: BLE001 - the instance could not be read: the refresh runs after the runs
            return

    def wait_started(self, timeout: float) -> bool:
        """Whether the refresh has started, waiting up to ``timeout`` seconds."""
        return self._started.wait(timeout)

    def stop_watching(self) -> None:
        """No refresh starts after this (the per-run run is over)."""
        self._stop.set()
        self._thread.join()

    def result(self) -> Refreshed | None:
        """How the early refresh ended (waiting for it), or None when it did not start."""
        self.stop_watching()
        if self._future is None:
            return None
        try:
            return self._future.result()
        except Exception as exc:  # noqa: BLE001 - the process died: say so, as for a failed run
            return Refreshed(False, "", f"the catalog refresh's process failed: {type(exc).__name__}: {exc}")
        finally:
            self._pool.shutdown()
