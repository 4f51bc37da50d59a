"""Span attributes as the SDK sets them, and the values the read endpoints derive from a span.

A span is the decoded dict of ``otlp.py`` (hex ids, ``attributes`` as Python values).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Dict, Optional, Tuple

SpanKey = Tuple[str, str]  # (trace_id, span_id)

# Span attribute keys (langfuse/_client/attributes.py, LangfuseOtelSpanAttributes)
A_TRACE_NAME = "langfuse.trace.name"
A_USER_ID = "user.id"
A_SESSION_ID = "session.id"
A_TRACE_TAGS = "langfuse.trace.tags"
A_TRACE_PUBLIC = "langfuse.trace.public"
A_TRACE_METADATA = "langfuse.trace.metadata"
A_TYPE = "langfuse.observation.type"
A_METADATA = "langfuse.observation.metadata"
A_LEVEL = "langfuse.observation.level"
A_STATUS_MESSAGE = "langfuse.observation.status_message"
A_INPUT = "langfuse.observation.input"
A_OUTPUT = "langfuse.observation.output"
A_MODEL = "langfuse.observation.model.name"
A_MODEL_PARAMETERS = "langfuse.observation.model.parameters"
A_USAGE = "langfuse.observation.usage_details"
A_COST = "langfuse.observation.cost_details"
A_PROMPT_NAME = "langfuse.observation.prompt.name"
A_PROMPT_VERSION = "langfuse.observation.prompt.version"
A_COMPLETION_START = "langfuse.observation.completion_start_time"
A_ENVIRONMENT = "langfuse.environment"
A_RELEASE = "langfuse.release"
A_VERSION = "langfuse.version"
A_AS_ROOT = "langfuse.internal.as_root"
A_IS_APP_ROOT = "langfuse.internal.is_app_root"
A_EXP_ID = "langfuse.experiment.id"
A_EXP_NAME = "langfuse.experiment.name"
A_EXP_DESCRIPTION = "langfuse.experiment.description"
A_EXP_METADATA = "langfuse.experiment.metadata"
A_EXP_DATASET_ID = "langfuse.experiment.dataset.id"
A_EXP_ITEM_ID = "langfuse.experiment.item.id"
A_EXP_ITEM_VERSION = "langfuse.experiment.item.version"
A_EXP_ITEM_EXPECTED = "langfuse.experiment.item.expected_output"
A_EXP_ITEM_METADATA = "langfuse.experiment.item.metadata"
A_EXP_ITEM_ROOT = "langfuse.experiment.item.root_observation_id"


def span_start(span: Dict[str, Any]) -> datetime:
    return datetime.fromtimestamp(span["start_time_unix_nano"] / 1e9, tz=timezone.utc)


def span_end(span: Dict[str, Any]) -> Optional[datetime]:
    end = span.get("end_time_unix_nano") or 0
    return datetime.fromtimestamp(end / 1e9, tz=timezone.utc) if end else None


def maybe_json(value: Any) -> Any:
    """Decode a JSON string attribute; leave anything else (or non-JSON text) as it is."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def environment(span: Dict[str, Any]) -> str:
    return (span["attributes"].get(A_ENVIRONMENT)
            or span.get("resource_attributes", {}).get(A_ENVIRONMENT) or "default")


def observation_metadata(attrs: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """``langfuse.observation.metadata`` (a JSON object) merged with its ``.key`` attributes."""
    out: Dict[str, Any] = {}
    prefix = A_METADATA + "."
    for k, v in attrs.items():
        if k.startswith(prefix):
            out[k[len(prefix):]] = maybe_json(v)
    if A_METADATA in attrs:
        whole = maybe_json(attrs[A_METADATA])
        if isinstance(whole, dict):
            out.update(whole)
        else:
            out["metadata"] = whole
    return out or None


def is_root(span: Dict[str, Any]) -> bool:
    a = span["attributes"]
    return span["parent_span_id"] is None or bool(a.get(A_IS_APP_ROOT)) or bool(a.get(A_AS_ROOT))


def observation_type(span: Dict[str, Any]) -> str:
    return str(span["attributes"].get(A_TYPE) or "span").upper()
