"""Dagster resources: settings from the environment, and the frame/JSON IO managers."""

from .io_managers import JsonIOManagerFactory, ParquetIOManagerFactory, safe_partition_key
from .langfuse import LangfuseResource
from .settings import PipelineSettings, default_settings

__all__ = [
    "JsonIOManagerFactory",
    "LangfuseResource",
    "ParquetIOManagerFactory",
    "PipelineSettings",
    "default_settings",
    "safe_partition_key",
]
