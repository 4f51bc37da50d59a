"""The catalog's runs as the systems and the suite pages read them (``StoredRuns``): each run's
system and its stored attempt_metrics frame, read at most once and only for the runs that
changed since the last refresh, and what the last refresh kept of every run, by columns
(``RUNS_COLUMNS``, refresh_state.save_columns). Used by assets/systems.py and
assets/suite_pages.py."""

from collections.abc import Iterable

import pandas as pd

from ..catalog import CatalogRows, row_identity
from ..comparison_sides import make_side
from ..jsonio import json_bytes, read_written
from ..repeats import RepeatRun, System, system_of
from ..resources import PipelineSettings
from ..stored_values import FRAME_ERRORS, read_attempt_rows, stored_frame_path
from ..system_folders import system_slug


def row_system(row: dict) -> System:
    """The system of a catalog run (``repeats.system_of``, from its catalog row's identity)."""
    return system_of(RepeatRun(make_side([], run_id=row["run_id"], suite=row["suite"], metrics_k=row["metrics_k"],
                                         identity=row_identity(row)), None))


def stored_repeat_run(settings: PipelineSettings, row: dict) -> RepeatRun | None:
    """A catalog run as a ``RepeatRun`` from its stored attempt_metrics frame and its catalog
    row (suite, metrics_k, model, git sha, start, setup, pass_at_1); None without a readable
    stored frame."""
    try:
        rows = read_attempt_rows(stored_frame_path(settings.storage_base, row["run_id"]))
    except FRAME_ERRORS:
        return None
    side = make_side(rows, run_id=row["run_id"], suite=row["suite"], metrics_k=row["metrics_k"],
                     run_dir=settings.run_dir(row["run_id"]), identity=row_identity(row))
    pass_at_1 = row["pass_at_1"]
    return RepeatRun(side, float(pass_at_1) if isinstance(pass_at_1, (int, float)) else None)


#: What the last refresh knew of each catalog run (``StoredRuns``), a row per run in catalog
#: order: its data version, whether it has a stored frame, its system (``encode_system``) and that
#: system's folder name without setup (``system_folders.system_slug``), its comparison's data
#: version and what the suite page shows of that comparison (``shown_runs``, as JSON text).
RUNS_COLUMNS = ("run_id", "data_version", "has_frame", "system", "base", "comparison_version", "shown")


def encode_system(system: System) -> str:
    """A system as the kept state names it: its parts as a JSON array (one text per system,
    compared and grouped as it is, parsed only for the systems made again)."""
    return json_bytes([system.suite, system.model, system.git_sha, system.alone, list(system.setup)]).decode()


def decode_system(text: str) -> System:
    """The system ``encode_system`` names."""
    suite, model, git_sha, alone, setup = read_written(text)
    return System(suite, model, git_sha, alone=alone, setup=tuple(setup))


class StoredRuns:
    """The catalog's runs for the systems and the pages, each stored frame read at most once
    and only when a system or page that shows the run is made again (refresh_state.py).

    ``kept``: the columns (RUNS_COLUMNS) the last refresh kept; a run whose data version is
    unchanged keeps whether it has a stored frame without reading it, and its system and that
    system's folder name without making them again. Python touches each run's kept row only to
    copy it: a catalog row (``CatalogRows``) is made for the runs read again and those a page
    lists. ``state``: the same columns for this refresh (``comparison_version`` and ``shown``
    filled by the pages, suite_pages.py)."""

    def __init__(self, settings: PipelineSettings, catalog: pd.DataFrame, comparisons: dict[str, str | None],
                 kept: dict[str, list] | None) -> None:
        self.settings, self.comparisons = settings, comparisons
        self.rows = CatalogRows(catalog)
        self.ids: list[str] = self.rows.column("run_id")
        self.versions: dict[str, str | None] = dict(zip(self.ids, self.rows.column("data_version")))
        self.loaded: dict[str, RepeatRun | None] = {}
        kept = kept or {name: [] for name in RUNS_COLUMNS}
        self.kept = kept
        self.kept_position = {run_id: i for i, run_id in enumerate(kept["run_id"])}
        self.state: dict[str, list] = {name: [] for name in RUNS_COLUMNS}
        self.position: dict[str, int] = {}
        #: the systems (``encode_system``) whose runs changed: those of the runs read again, before and now
        self.touched: set[str] = set()
        state = self.state
        for n, run_id in enumerate(self.ids):
            i, version = self.kept_position.get(run_id), self.versions[run_id]
            self.position[run_id] = n
            if i is not None and version is not None and kept["data_version"][i] == version:
                has_frame, system, base = kept["has_frame"][i], kept["system"][i], kept["base"][i]
            else:  # new or changed: its row and frame read, its system made
                made = row_system(self.rows[run_id])
                has_frame, system, base = self.run(run_id) is not None, encode_system(made), system_slug(made)
                if has_frame:
                    self.touched.add(system)
                if i is not None and kept["has_frame"][i]:
                    self.touched.add(kept["system"][i])
            state["run_id"].append(run_id)
            state["data_version"].append(version)
            state["has_frame"].append(has_frame)
            state["system"].append(system)
            state["base"].append(base)
        for run_id in set(self.kept_position) - set(self.position):  # gone from the catalog
            i = self.kept_position[run_id]
            if kept["has_frame"][i]:
                self.touched.add(kept["system"][i])

    def run(self, run_id: str) -> RepeatRun | None:
        """The run with its stored frame (read once)."""
        if run_id not in self.loaded:
            self.loaded[run_id] = stored_repeat_run(self.settings, self.rows[run_id])
        return self.loaded[run_id]

    def grouped(self) -> dict[str, list[str]]:
        """The ids of the runs with a stored frame grouped by system (``encode_system``; as
        ``repeats.group_systems`` groups them: systems in the order of their first run in the
        catalog)."""
        groups: dict[str, list[str]] = {}
        for run_id, has_frame, system in zip(self.state["run_id"], self.state["has_frame"], self.state["system"]):
            if has_frame:
                groups.setdefault(system, []).append(run_id)
        return groups

    def base_slug(self, run_id: str) -> str:
        """The folder name of the run's system without its setup (``system_folders.system_slug``)."""
        return self.state["base"][self.position[run_id]]

    def full(self, run_ids: Iterable[str]) -> list[RepeatRun]:
        """The runs ``run_ids`` with their stored frames (those that have one)."""
        return [run for run in (self.run(run_id) for run_id in run_ids) if run is not None]

    @property
    def missing(self) -> list[str]:
        return [run_id for run_id, has_frame in zip(self.state["run_id"], self.state["has_frame"]) if not has_frame]
