"""IO managers for the per-run frames (Parquet) and documents (JSON).

Both are ``UPathIOManager`` subclasses, so the base path may be a local folder (default)
or an ``s3://`` / ``gs://`` URL (with the matching fsspec package installed). A partition
key can never leave the base folder: keys are plain run-folder names, checked here.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any, get_origin

import dagster as dg
import pandas as pd
from dagster import InputContext, OutputContext, UPathIOManager
from upath import UPath

from ..artifacts import loads_json
from ..jsonio import json_bytes
from ..object_store import storage_path, write_whole
from .settings import PipelineSettings, safe_partition_key


def is_mapping_type(annotation: Any) -> bool:
    """Whether an input's type annotation is a mapping (``dict``, ``dict[str, X]``,
    ``Mapping[str, X]``): a consumer that wants ``{partition: value}``."""
    return annotation is dict or get_origin(annotation) in (dict, Mapping)


class _SafeUPathIOManager(UPathIOManager):
    def make_safe_partition_path(self, base_path: UPath, partition: str) -> UPath:
        return base_path / safe_partition_key(partition)

    def load_partitions(self, context: InputContext):
        """Always {partition: value} for a non-partitioned consumer of partitioned data.

        The base class returns the bare value when exactly one partition exists, which a
        cross-run asset cannot tell apart from a mapping of runs.
        """
        loaded = super().load_partitions(context)
        keys = context.asset_partition_keys
        wants_mapping = is_mapping_type(context.dagster_type.typing_type) and not context.has_partition_key
        if len(keys) == 1 and wants_mapping:
            return {keys[0]: loaded} if loaded is not None else {}
        return loaded


class ParquetIOManager(_SafeUPathIOManager):
    """Stores a pandas DataFrame as ``<base>/<asset>/<partition>.parquet``."""

    extension = ".parquet"

    def dump_to_path(self, context: OutputContext, obj: pd.DataFrame, path: UPath) -> None:
        buffer = io.BytesIO()
        obj.to_parquet(buffer, index=False)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_whole(path, buffer.getvalue())  # a reader never sees half a frame

    def load_from_path(self, context: InputContext, path: UPath) -> pd.DataFrame:
        return pd.read_parquet(io.BytesIO(path.read_bytes()))


class JsonIOManager(_SafeUPathIOManager):
    """Stores a JSON-serializable dict as ``<base>/<asset>/<partition>.json``."""

    extension = ".json"

    def dump_to_path(self, context: OutputContext, obj: dict, path: UPath) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_whole(path, json_bytes(obj))  # the one JSON writer (jsonio.py), whole or not at all

    def load_from_path(self, context: InputContext, path: UPath) -> dict:
        return loads_json(path.read_bytes())


class ParquetIOManagerFactory(dg.ConfigurableIOManagerFactory):
    """Parquet frames under the settings' storage base (local folder or object-store URL)."""

    settings: PipelineSettings

    def create_io_manager(self, context) -> ParquetIOManager:
        return ParquetIOManager(storage_path(self.settings.storage_base))


class JsonIOManagerFactory(dg.ConfigurableIOManagerFactory):
    """JSON documents under the settings' storage base (local folder or object-store URL)."""

    settings: PipelineSettings

    def create_io_manager(self, context) -> JsonIOManager:
        return JsonIOManager(storage_path(self.settings.storage_base))


def partition_path(base_path: str, asset: str, partition_key: str, extension: str) -> UPath:
    """Where one partition's value of ``asset`` is stored: ``<base>/<asset>/<partition><extension>``
    (``.parquet`` for a frame, ``.json`` for a document), as the IO managers place it."""
    return storage_path(base_path) / asset / (safe_partition_key(partition_key) + extension)


def load_asset_frame(base_path: str, asset: str) -> pd.DataFrame:
    """The frame a non-partitioned asset last stored (``<base>/<asset>.parquet``, where the
    parquet IO manager stores it), read with that IO manager's own reader. Raises OSError
    when it was never stored."""
    path = storage_path(base_path) / (asset + ParquetIOManager.extension)
    return ParquetIOManager(storage_path(base_path)).load_from_path(None, path)


def _manager(base_path: str, extension: str) -> ParquetIOManager | JsonIOManager:
    """The IO manager that stores values with ``extension``."""
    base = storage_path(base_path)
    return ParquetIOManager(base) if extension == ParquetIOManager.extension else JsonIOManager(base)


def store_partition(base_path: str, asset: str, partition_key: str, value: pd.DataFrame | dict) -> UPath:
    """Store one partition's value of ``asset`` where the matching IO manager loads it from
    (``partition_path``), with that IO manager's own writer. The per-run stages compute in one
    step and store each stage's value with this; later reads (the catalog,
    ``load_asset_value``) go through the IO managers as usual."""
    extension = ParquetIOManager.extension if isinstance(value, pd.DataFrame) else JsonIOManager.extension
    path = partition_path(base_path, asset, partition_key, extension)
    _manager(base_path, extension).dump_to_path(None, value, path)  # the writers need no context
    return path


def load_partition(base_path: str, asset: str, partition_key: str, extension: str) -> pd.DataFrame | dict:
    """One partition's stored value of ``asset`` (``extension``: ``.parquet`` for a frame,
    ``.json`` for a document), read with the matching IO manager's own reader: what
    ``store_partition`` stored. Raises OSError when it was never stored."""
    return _manager(base_path, extension).load_from_path(None, partition_path(base_path, asset, partition_key,
                                                                               extension))
