"""Pure: OTLP/JSON span attribute values and the instrumentation scope of the spans."""

from __future__ import annotations

from typing import Any

import orjson

SCOPE_NAME = "bench_pipeline.publication"
SCOPE_VERSION = "1"


def json_text(value: Any) -> str:
    """Input/output/metadata attribute values are JSON text (as the SDK sends them; compact)."""
    return orjson.dumps(value, default=str, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS).decode()

def span_attr(key: str, value: Any) -> dict:
    """An OTLP/JSON span attribute: a Boolean as such, anything else as text (JSON text when
    not a string, as the SDK sends input/output/metadata)."""
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    return {"key": key, "value": {"stringValue": value if isinstance(value, str) else json_text(value)}}
