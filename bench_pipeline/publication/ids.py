"""Pure: the deterministic ids of the Langfuse objects that represent a run, and content hashes.

Every id is a function of stable inputs (suite name, run id, task id, attempt number, score
name), so publishing the same run twice addresses the same objects:

==========================  =================================================================
object                      id
==========================  =================================================================
Dataset                     the suite name (``dataset_name``)
Dataset Item                ``dataset_item_id(suite, task_id, attempt)``: ``suite:task:attempt``
                            when readable and unambiguous, else ``bench-item-<sha256>``
Experiment (dataset run)    the SDK formula (``experiment_id``) over project, dataset id and
                            run name (= run id)
replay trace / root span    ``replay_trace_id`` / ``replay_root_span_id`` (suite, run, item)
evaluation observation      ``evaluation_span_id`` (suite, run, item): the experiment item
attempt score               ``attempt_score_id`` (suite, run, item, score name)
run score                   ``run_score_id`` (suite, run, score name)
==========================  =================================================================
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

import orjson

from ..layouts import manifest_view

MAX_ITEM_ID_LENGTH = 255
UNKNOWN_SUITE = "unknown-suite"
_HEX32 = re.compile(r"^[0-9a-f]{32}$")


def canonical_json(value: Any) -> bytes:
    """Deterministic JSON bytes (sorted keys) used for hashes."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY,
                        default=str)

def content_hash(value: Any) -> str:
    return hashlib.sha256(canonical_json(value)).hexdigest()[:24]

def _id_json(parts: list) -> bytes:
    """``json.dumps(parts, separators=(",", ":"), ensure_ascii=False)`` as UTF-8: the text ids
    are hashed from (orjson gives the same bytes for strings and 64-bit ints, and is faster)."""
    try:
        return orjson.dumps(parts)
    except (TypeError, orjson.JSONEncodeError):  # lone surrogates, huge ints: the slow, exact path
        return json.dumps(parts, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")

def _digest(*parts: Any) -> str:
    return hashlib.sha256(_id_json(list(parts))).hexdigest()

class PrefixDigest:
    """``_digest(*prefix, last)`` for many ``last`` values: the prefix is hashed once."""

    def __init__(self, *prefix: Any):
        head = _id_json([*prefix, ""])  # [..., ""] -> cut the closing '""]'
        self._base = hashlib.sha256(head[:-3])

    def __call__(self, last: Any) -> str:
        h = self._base.copy()
        h.update(_id_json([last])[1:])  # '"name"]'
        return h.hexdigest()

def _span_id(*parts: Any) -> str:
    sid = _digest(*parts)[:16]
    return sid if sid != "0" * 16 else "0" * 15 + "1"  # an all-zero id is invalid in OTLP

def _trace_id(*parts: Any) -> str:
    tid = _digest(*parts)[:32]
    return tid if tid != "0" * 32 else "0" * 31 + "1"

def _suite_name_of(manifest: Mapping) -> Any:
    suite = manifest.get("suite")
    return suite.get("name") if isinstance(suite, Mapping) else suite

def dataset_name(metrics: Mapping | None, manifest: Mapping | None, suite_def: Mapping | None = None) -> str:
    """The stable suite name: metrics.json ``suite`` (R2), else the manifest's, else suite.json's,
    else the name a runner's manifest gives by its ``suite_path`` alone (the file name without
    its extension, ``layouts.manifest_view``; suite.json's own name comes first, R2)."""
    manifest = manifest or {}
    candidates: list[Any] = [(metrics or {}).get("suite"), _suite_name_of(manifest), (suite_def or {}).get("name"),
                             _suite_name_of(manifest_view(manifest))]
    for value in candidates:
        if isinstance(value, str) and value.strip():
            return value.strip()
    return UNKNOWN_SUITE

def dataset_item_id(suite: str, task_id: str, attempt: int) -> str:
    """Deterministic Dataset Item id for (suite, task, attempt); unique per project, <= 255 chars.

    ``suite:task:attempt`` when neither part contains ``:`` or control characters and the id
    fits; otherwise ``bench-item-`` + sha256 of the three parts (the two forms cannot collide:
    a hashed id has no ``:``).
    """
    readable = f"{suite}:{task_id}:{attempt}"
    if (
        ":" not in suite
        and ":" not in task_id
        and readable.isprintable()
        and len(readable) <= MAX_ITEM_ID_LENGTH
    ):
        return readable
    return "bench-item-" + _digest("bench-pipeline/dataset-item/v1", suite, task_id, attempt)[:48]

def experiment_id(project_id: str, dataset_id: str, run_name: str) -> str:
    """The SDK's deterministic experiment (dataset run) id (``Langfuse._create_experiment_id``)."""
    payload = json.dumps(
        ["langfuse-experiment-v1", project_id, dataset_id, run_name],
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]

def replay_trace_id(suite: str, run_id: str, item_id: str) -> str:
    return _trace_id("bench-pipeline/replay-trace/v1", suite, run_id, item_id)

def replay_root_span_id(suite: str, run_id: str, item_id: str) -> str:
    return _span_id("bench-pipeline/replay-root/v1", suite, run_id, item_id)

def evaluation_span_id(suite: str, run_id: str, item_id: str) -> str:
    return _span_id("bench-pipeline/evaluation-span/v1", suite, run_id, item_id)

def attempt_score_id(suite: str, run_id: str, item_id: str, name: str) -> str:
    return "bench-" + _digest("bench-pipeline/attempt-score/v1", suite, run_id, item_id, name)[:32]

def run_score_id(suite: str, run_id: str, name: str) -> str:
    return "bench-" + _digest("bench-pipeline/run-score/v1", suite, run_id, name)[:32]

def evaluation_name(task_id: str, attempt: int) -> str:
    return f"benchmark/{task_id}#attempt-{attempt}"

def normalize_trace_id(value: Any) -> str | None:
    """A 32-hex OTLP trace id (lower-cased), else None."""
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    return text if _HEX32.match(text) and text != "0" * 32 else None

def trace_url(base_url: str | None, project_id: str | None, trace_id: str | None) -> str | None:
    """``<base>/project/<project>/traces/<trace>`` (the SDK's ``get_trace_url``), credentials stripped."""
    if not base_url or not project_id or not trace_id:
        return None
    base = re.sub(r"^(https?://)[^/@]*@", r"\1", base_url.rstrip("/"))
    return f"{base}/project/{project_id}/traces/{trace_id}"
