"""What the catalog refresh keeps from one refresh to the next, so that it reads and writes
only what changed.

Each cross-run result is a function of named, versioned inputs: every run's stored stage
values at their data version (the run folder's fingerprint and the formula version, the tag
``dagster/data_version`` of the run's materializations) and, for what shows a run's gate,
its comparison's data version (comparison_inputs.py). A refresh records, beside what it
made, the versions it made each part from (a catalog row, a trend row, a system, a suite
page); the next refresh keeps a part whose versions are unchanged and recomputes the rest.
The runs' current data versions are followed through Dagster's event log after a cursor
(``run_versions``), so that a refresh reads only the materializations made since the last.
Kept parts are the values a refresh from scratch would make from the same inputs, so the
result is the same byte for byte (bench_pipeline_tests/assets/test_incremental_refresh.py).

The state lives under the storage base (``<base>/cross_run_state/<name>.json``), written with
the one JSON writer. A part of a row per run or per system is kept by columns (``save_columns``:
a list per field, nested values as JSON text), so that a refresh copies the rows that still hold
as they are and parses only those it needs. What is large and needed only for a few parts at a time (a system's
repeats document) is kept in pieces of its own (``<base>/cross_run_state/<name>/<key>.json``,
``save_piece`` / ``load_piece``), each read only when a refresh needs it, so that the state
read and written by every refresh stays small; a frame of a row per run (the catalog, the
trends) is the asset's own stored value, which the next refresh reads by columns and patches
(``load_kept_frame``). It is dropped whole (the refresh starts from
scratch) when it was made by another ``REFRESH_VERSION``: another formula version, or another
version of the cross-run code (``CROSS_RUN_VERSION``, raised with any change to what the
cross-run assets write). A refresh run tagged ``bench/refresh=from_scratch`` ignores it as
well.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import dagster as dg
import pandas as pd
import pyarrow as pa

from ..dagster_internals import DATA_VERSION_TAG, latest_tags_by_partition
from ..formula import FORMULA_VERSION
from ..jsonio import json_bytes, read_written
from ..object_store import CONCURRENCY, is_remote, storage_path, write_whole
from ..partitions import runs_partitions
from ..resources.io_managers import load_asset_frame

#: The version of what the cross-run assets write (catalog rows, trends, repeats files, suite
#: pages): raise it with any change to their code or templates, so that the next refresh
#: recomputes every part instead of keeping parts made by the old code.
CROSS_RUN_VERSION = "2026-12-07.2"
#: What a kept part must have been made by: this formula and this cross-run code.
REFRESH_VERSION = f"{FORMULA_VERSION}/{CROSS_RUN_VERSION}"
#: The materialization metadata key naming the REFRESH_VERSION a frame-valued cross-run asset
#: was made by (``load_kept_frame`` keeps its stored value only when it is the current one).
REFRESH_VERSION_KEY = "refresh_version"
#: The run tag that makes a refresh ignore what earlier refreshes kept.
FROM_SCRATCH_TAG = "bench/refresh"


def from_scratch(context: dg.AssetExecutionContext) -> bool:
    """Whether this refresh run was asked to recompute everything (tag ``bench/refresh`` =
    ``from_scratch``, e.g. from the launchpad)."""
    return context.run.tags.get(FROM_SCRATCH_TAG) == "from_scratch"


def run_keys(instance: dg.DagsterInstance) -> list[str]:
    """Every run partition, in the order Dagster lists them."""
    return list(instance.get_dynamic_partitions(runs_partitions.name))


#: Up to how many materializations ``run_versions`` reads per request (Dagster's limit).
RECORDS_PER_REQUEST = 10_000


def run_versions(instance: dg.DagsterInstance, asset: str, keys: Iterable[str], storage_base: str,
                 context: dg.AssetExecutionContext | None = None) -> dict[str, str | None]:
    """{run: the data version of its latest ``asset`` materialization}, None for a run without
    one (or without the tag: such a run is recomputed by every refresh).

    Read from the event log after a cursor, so that a refresh reads only the materializations
    made since the last one: the latest version of every partition ever materialized is kept
    (``versions_<asset>``, with the storage id of the newest materialization it includes) and
    the materializations after that id are applied in storage order (the cursor is Dagster's
    own way of following an asset's events: its asset sensors keep a storage id too). Without
    kept versions (the first refresh, another REFRESH_VERSION, a refresh from scratch) or
    after the asset was wiped since they were kept (``dagster asset wipe``: Dagster then
    ignores its earlier materializations), every partition's latest is read in one query."""
    key = dg.AssetKey(asset)
    name = f"versions_{asset}"
    kept = load_state(storage_base, name, context)
    cursor, latest = kept.get("cursor"), kept.get("versions")
    wiped = _last_wipe(instance, key)
    if not isinstance(cursor, int) or not isinstance(latest, dict) or kept.get("wiped") != wiped:
        newest = instance.fetch_materializations(key, limit=1).records
        cursor = newest[0].storage_id if newest else 0  # read before the query: what it misses comes after
        latest = {partition: tags.get(DATA_VERSION_TAG)
                  for partition, tags in latest_tags_by_partition(instance, key, [DATA_VERSION_TAG], None).items()}
    newest, page = cursor, None
    while True:
        result = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key, after_storage_id=cursor),
                                                 limit=RECORDS_PER_REQUEST, cursor=page, ascending=True)
        for record in result.records:
            newest = max(newest, record.storage_id)
            materialization = record.asset_materialization
            if record.partition_key is not None and materialization is not None:
                latest[record.partition_key] = (materialization.tags or {}).get(DATA_VERSION_TAG)
        if not result.has_more:
            break
        page = result.cursor
    if newest != kept.get("cursor") or latest is not kept.get("versions") or kept.get("wiped") != wiped:
        save_state(storage_base, name, {"cursor": newest, "wiped": wiped, "versions": dict(sorted(latest.items()))})
    return {run: latest.get(run) for run in keys}


def _last_wipe(instance: dg.DagsterInstance, key: dg.AssetKey) -> float | None:
    """When the asset was last wiped (Dagster's asset details), None if never."""
    records = instance.get_asset_records([key])
    details = records[0].asset_entry.asset_details if records else None
    return details.last_wipe_timestamp if details is not None else None


def _path(storage_base: str, name: str) -> Any:
    return storage_path(storage_base) / "cross_run_state" / f"{name}.json"


def _piece_path(storage_base: str, name: str, key: str) -> Any:
    return storage_path(storage_base) / "cross_run_state" / name / f"{key}.json"


def _read(path: Any, field: str) -> Any:
    """The ``field`` of what ``_write`` kept at ``path``; None when there is nothing, it cannot
    be read or was made by another REFRESH_VERSION."""
    try:
        kept = read_written(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get(REFRESH_VERSION_KEY) != REFRESH_VERSION:
        return None
    return kept.get(field)


def _write(path: Any, field: str, value: Any) -> None:
    """Keep ``value`` at ``path`` as ``field``, with this REFRESH_VERSION, replaced whole."""
    write_whole(path, json_bytes({REFRESH_VERSION_KEY: REFRESH_VERSION, field: value}))


def load_state(storage_base: str, name: str, context: dg.AssetExecutionContext | None = None) -> dict:
    """The parts kept by the last refresh under ``name``; empty when there are none, when they
    cannot be read, were made by another REFRESH_VERSION, or the run asks for a refresh from
    scratch."""
    if context is not None and from_scratch(context):
        return {}
    parts = _read(_path(storage_base, name), "parts")
    return parts if isinstance(parts, dict) else {}


def save_state(storage_base: str, name: str, parts: dict) -> None:
    """Keep ``parts`` (JSON values) for the next refresh."""
    _write(_path(storage_base, name), "parts", parts)


def load_kept_frame(context: dg.AssetExecutionContext, storage_base: str, name: str) -> pd.DataFrame | None:
    """The frame the asset ``name`` stored at its last materialization, to be patched by this
    refresh (a frame of a row per run, read by columns, without a Python object per cell to
    make first); None when there is none, it cannot be read, it was made by another
    REFRESH_VERSION (its materialization's REFRESH_VERSION_KEY metadata) or the run asks for a
    refresh from scratch. The asset's own stored value, not a copy of it: the one frame
    Dagster's IO manager stores is what the next refresh starts from."""
    if from_scratch(context):
        return None
    records = context.instance.fetch_materializations(dg.AssetKey(name), limit=1).records
    materialization = records[0].asset_materialization if records else None
    version = materialization.metadata.get(REFRESH_VERSION_KEY) if materialization is not None else None
    if getattr(version, "value", None) != REFRESH_VERSION:
        return None
    try:
        return load_asset_frame(storage_base, name)
    except (OSError, pa.ArrowException, ValueError):
        return None


#: What earlier versions kept of a frame-valued asset beside its stored value, under
#: ``cross_run_state/``: its rows as JSON, then as parquet.
_EARLIER_COPIES = (".json", ".parquet")


def delete_earlier_copies(storage_base: str, name: str) -> None:
    """Delete the copies of the frame ``name`` that earlier versions kept (``_EARLIER_COPIES``):
    called by a refresh that had no kept frame (the first after an upgrade, which starts from
    scratch), as no refresh reads them any more."""
    for suffix in _EARLIER_COPIES:
        (storage_path(storage_base) / "cross_run_state" / f"{name}{suffix}").unlink(missing_ok=True)


def save_columns(storage_base: str, name: str, columns: dict[str, list]) -> None:
    """Keep ``columns`` ({name: a plain value per row}) for the next refresh under ``name``: a
    part of a row per run or per system, kept by columns with its nested values as JSON text,
    so that the next refresh reads it as a few lists of strings and numbers (no object per
    nested value) and parses only the rows it needs."""
    _write(_path(storage_base, name), "columns", columns)


def load_columns(storage_base: str, name: str, names: tuple[str, ...],
                 context: dg.AssetExecutionContext | None = None) -> dict[str, list] | None:
    """The columns ``save_columns`` kept under ``name``; None when there are none, they cannot
    be read, were made by another REFRESH_VERSION or with other columns than ``names``, are not
    lists of one length (a row per run or system), or the run asks for a refresh from scratch."""
    if context is not None and from_scratch(context):
        return None
    columns = _read(_path(storage_base, name), "columns")
    if not isinstance(columns, dict) or tuple(columns) != names:
        return None
    if not all(isinstance(values, list) for values in columns.values()) or len({len(v) for v in columns.values()}) > 1:
        return None
    return columns


def save_piece(storage_base: str, name: str, key: str, value: Any) -> None:
    """Keep ``value`` (a JSON value) as the piece ``key`` of ``name``."""
    _write(_piece_path(storage_base, name, key), "value", value)


def load_piece(storage_base: str, name: str, key: str) -> Any:
    """The piece ``key`` of ``name`` kept by ``save_piece``; None when there is none, it cannot
    be read or was made by another REFRESH_VERSION."""
    return _read(_piece_path(storage_base, name, key), "value")


def save_pieces(storage_base: str, name: str, pieces: dict[str, Any]) -> None:
    """``save_piece`` of each {key: value}, several at once when the storage base is a bucket."""
    _each(storage_base, lambda item: save_piece(storage_base, name, *item), list(pieces.items()))


def load_pieces(storage_base: str, name: str, keys: Iterable[str]) -> dict[str, Any]:
    """{key: ``load_piece``} of each key, several at once when the storage base is a bucket."""
    keys = list(keys)
    return dict(zip(keys, _each(storage_base, lambda key: load_piece(storage_base, name, key), keys)))


def _each(storage_base: str, action: Callable[[Any], Any], items: list) -> list:
    """``action`` of each item, in threads when each is a request to a bucket."""
    if is_remote(storage_base) and len(items) > 1:
        with ThreadPoolExecutor(min(CONCURRENCY, 16, len(items))) as pool:
            return list(pool.map(action, items))
    return [action(item) for item in items]
