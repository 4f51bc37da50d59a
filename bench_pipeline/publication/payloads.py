"""Pure: the wire payloads of a publication, from its plan (``plan``).

Span payloads are OTLP/JSON (hex ids, ``stringValue`` attributes named by
``LangfuseOtelSpanAttributes``), the form ``POST /api/public/otel/v1/traces`` accepts: an
experiment item is the evaluation observation of an attempt, under its execution trace or a
replay root. Score payloads are the wire form of ``CreateScoreRequest`` (camelCase keys), sent
as ``score-create`` events (``score_event``) or, on a server without the ingestion endpoint, as
SDK 5's array; v3 servers also get one dataset run item per attempt. Requests are bounded in
size and count (``greedy_groups``, ``chunk_by_size``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
from langfuse import LangfuseOtelSpanAttributes

from .bindings import EXECUTION_TRACE, REPLAY, Binding
from .ids import PrefixDigest, run_score_id, trace_url
from .otlp import SCOPE_NAME, SCOPE_VERSION, span_attr
from .plan import AttemptPlan, RunPlan
from .timestamps import to_nanos

T = TypeVar("T")


def experiment_output(plan: AttemptPlan, binding: Binding, *, base_url: str | None, project_id: str | None) -> dict:
    """The experiment item output (outputs.md "Langfuse publication")."""
    ev = plan.evidence
    artifact = ev.get("trace_artifact")
    if not isinstance(artifact, Mapping):
        artifact = {"status": "missing", "path": None}
    trace_id = plan.execution_trace_id if plan.episode_id else None
    if binding.mode == EXECUTION_TRACE:
        trace_id = binding.trace_id
    return {
        "final_response": ev.get("final_response"),
        "tool_calls": ev.get("tool_calls"),
        "trace_artifact": {"status": artifact.get("status"), "path": artifact.get("path")},
        "aiden_episode_id": plan.episode_id,
        "aiden_trace_id": trace_id,
        "aiden_trace_url": trace_url(base_url, project_id, trace_id) if plan.episode_id else None,
        "execution_trace_status": binding.status,
    }


@dataclass
class ExperimentContext:
    """Server-assigned facts the span and score payloads need (placeholders in the outbox)."""

    dataset_id: str
    experiment_id: str | None  # v4: the SDK formula; v3: the dataset run's server id (None until it exists)
    project_id: str | None
    base_url: str | None
    #: v4 events mode: experiment items are spans carrying the SDK's experiment attributes.
    #: v3 legacy mode: the dataset run item links item and trace; spans carry no experiment attributes.
    span_experiment: bool = True


_ATTR_CACHE: dict[tuple, dict] = {}


def _scalar_attr(key: str, value: Any) -> dict:
    """``_attr`` for a str / int / bool / None value, shared between spans (they are only encoded)."""
    cache_key = (key, type(value), value)
    attr = _ATTR_CACHE.get(cache_key)
    if attr is None:
        attr = span_attr(key, value)
        if len(_ATTR_CACHE) < 100_000:
            _ATTR_CACHE[cache_key] = attr
    return attr


def _span(trace_id: str, span_id: str, parent: str | None, name: str, attrs: list[dict],
          start_ns: int, end_ns: int) -> dict:
    span: dict[str, Any] = {"traceId": trace_id, "spanId": span_id}
    if parent:
        span["parentSpanId"] = parent
    span.update({
        "name": name, "kind": 1, "attributes": attrs,
        # last, so that a span's content without its times is a prefix (span_bytes_hash)
        "startTimeUnixNano": str(start_ns), "endTimeUnixNano": str(end_ns),
    })
    return span


def attempt_spans(plan: AttemptPlan, binding: Binding, run: RunPlan, ctx: ExperimentContext,
                  start: str, end: str) -> list[dict]:
    """OTLP/JSON spans for one attempt: the evaluation observation (the experiment item),
    preceded by the replay root when the item is not bound to an execution trace."""
    start_ns, end_ns = to_nanos(start), to_nanos(end)
    output = experiment_output(plan, binding, base_url=ctx.base_url, project_id=ctx.project_id)
    item = plan.item
    metadata = {
        "run_id": run.run_id, "suite": run.suite, "task_id": plan.task_id, "attempt": plan.attempt,
        "category": item["metadata"].get("category"), "dataset_id": ctx.dataset_id,
        "dataset_item_id": plan.item_id, "experiment_name": run.run_id, "experiment_run_name": run.run_id,
        "execution_trace_status": binding.status, "binding": binding.mode,
        "in_suite_definition": item["metadata"].get("in_suite_definition"),
    }
    attrs = [
        _scalar_attr(LangfuseOtelSpanAttributes.OBSERVATION_TYPE, "evaluator"),
        span_attr(LangfuseOtelSpanAttributes.OBSERVATION_INPUT, item["input"]),
        span_attr(LangfuseOtelSpanAttributes.OBSERVATION_OUTPUT, output),
    ]
    attrs += [_scalar_attr(f"{LangfuseOtelSpanAttributes.OBSERVATION_METADATA}.{k}", v)
              if v is None or type(v) in (str, int, bool)
              else span_attr(f"{LangfuseOtelSpanAttributes.OBSERVATION_METADATA}.{k}", v) for k, v in metadata.items()]
    if ctx.span_experiment:
        attrs += [
            _scalar_attr(LangfuseOtelSpanAttributes.EXPERIMENT_ID, ctx.experiment_id),
            run.run_attr(LangfuseOtelSpanAttributes.EXPERIMENT_NAME, run.run_id),
            run.run_attr(LangfuseOtelSpanAttributes.EXPERIMENT_DESCRIPTION, run.experiment_description),
            run.run_attr(LangfuseOtelSpanAttributes.EXPERIMENT_METADATA, run.experiment_metadata),
            _scalar_attr(LangfuseOtelSpanAttributes.EXPERIMENT_DATASET_ID, ctx.dataset_id),
            span_attr(LangfuseOtelSpanAttributes.EXPERIMENT_ITEM_ID, plan.item_id),
            span_attr(LangfuseOtelSpanAttributes.EXPERIMENT_ITEM_ROOT_OBSERVATION_ID, binding.observation_id),
            span_attr(LangfuseOtelSpanAttributes.EXPERIMENT_ITEM_EXPECTED_OUTPUT, item["expectedOutput"]),
            span_attr(LangfuseOtelSpanAttributes.EXPERIMENT_ITEM_METADATA, item["metadata"]),
        ]
    spans = []
    if binding.mode == REPLAY:
        replay_attrs = [
            span_attr(LangfuseOtelSpanAttributes.TRACE_NAME, f"benchmark-replay/{plan.task_id}#attempt-{plan.attempt}"),
            _scalar_attr(LangfuseOtelSpanAttributes.OBSERVATION_TYPE, "span"),
            attrs[1],  # the same input
            span_attr(LangfuseOtelSpanAttributes.OBSERVATION_OUTPUT,
                      {"final_response": output["final_response"], "tool_calls": output["tool_calls"]}),
            _scalar_attr(f"{LangfuseOtelSpanAttributes.OBSERVATION_METADATA}.replay", True),
            _scalar_attr(f"{LangfuseOtelSpanAttributes.OBSERVATION_METADATA}.note",
                         "Result replay from the benchmark's saved artifacts; not an Agent execution. "
                         "Parent and child observations are one attempt."),
            _scalar_attr(f"{LangfuseOtelSpanAttributes.OBSERVATION_METADATA}.run_id", run.run_id),
            _scalar_attr(f"{LangfuseOtelSpanAttributes.OBSERVATION_METADATA}.execution_trace_status", binding.status),
        ]
        spans.append(_span(binding.trace_id, binding.parent_span_id or plan.replay_root_span_id, None,
                           "benchmark-replay", replay_attrs, start_ns, end_ns))
    spans.append(_span(binding.trace_id, binding.observation_id, binding.parent_span_id, plan.name, attrs,
                       start_ns, end_ns))
    return spans


_TIMES_START = b',"startTimeUnixNano":'


def encode_spans(spans: list[dict]) -> list[bytes]:
    """Each span as OTLP/JSON bytes (the pieces ``otlp_bytes`` joins)."""
    return [orjson.dumps(s) for s in spans]


def span_bytes_hash(encoded: list[bytes]) -> str:
    """Hash of encoded spans without their times (a resend with new times is the same content):
    the times close each span (``_span``), so each is hashed up to them."""
    h = hashlib.sha256()
    for span in encoded:
        cut = span.rfind(_TIMES_START)
        h.update(memoryview(span)[:cut] if cut >= 0 else span)
        h.update(b"\n")
    return h.hexdigest()[:24]


def span_content_hash(spans: list[dict]) -> str:
    """Hash of span payloads without their timestamps (a resend with new times is the same)."""
    return span_bytes_hash(encode_spans(spans))


def otlp_bytes(encoded: list[bytes]) -> bytes:
    """``orjson.dumps(otlp_body(spans))`` from the spans' own bytes."""
    head, tail = _OTLP_SHELL
    return head + b",".join(encoded) + tail


def otlp_body(spans: list[dict]) -> dict:
    """An OTLP/JSON ExportTraceServiceRequest holding ``spans``."""
    return {"resourceSpans": [{
        "resource": {"attributes": [span_attr("service.name", "bench_pipeline")]},
        "scopeSpans": [{"scope": {"name": SCOPE_NAME, "version": SCOPE_VERSION}, "spans": spans}],
    }]}


_OTLP_SHELL = tuple(orjson.dumps(otlp_body([{"x": 1}])).split(b'{"x":1}'))


def _score(score_id: str, name: str, value: Any, data_type: str, timestamp: str, **subject: str | None) -> dict:
    body: dict[str, Any] = {"id": score_id, "name": name}
    if data_type == "CATEGORICAL":
        body["value"] = value
    else:
        body["value"] = float(value)
    body["dataType"] = data_type
    body["timestamp"] = timestamp
    body.update({k: v for k, v in subject.items() if v is not None})
    return body


def attempt_score_payloads(plan: AttemptPlan, binding: Binding, run: RunPlan, timestamp: str) -> list[dict]:
    """``benchmark.*`` scores of one attempt on its experiment item (trace + observation).

    ``timestamp`` is the publication's anchor (``anchor_time``), the start time of every span
    of the run, so that each read API finds the scores with their observations."""
    digest = PrefixDigest("bench-pipeline/attempt-score/v1", run.suite, run.run_id, plan.item_id)
    return [
        _score("bench-" + digest(name)[:32], name, value, dtype, timestamp,
               traceId=binding.trace_id, observationId=binding.observation_id)
        for name, value, dtype in plan.scores
    ]


def run_score_payloads(run: RunPlan, experiment: str, timestamp: str) -> list[dict]:
    """Run-level scores attached to the experiment (``datasetRunId``), at the anchor time."""
    return [
        _score(run_score_id(run.suite, run.run_id, name), name, value, "NUMERIC", timestamp, datasetRunId=experiment)
        for name, value in run.run_scores
    ]


def score_event(score: Mapping) -> dict:
    """A score as a ``score-create`` event of ``POST /api/public/ingestion``.

    The server stores the event's ``timestamp`` as the score's (the body has no timestamp
    field: langfuse ``packages/shared/src/server/ingestion/types.ts`` ``scoreEvent``, worker
    ``IngestionService.processScoreEventList``). The event id is the score id: a re-sent score
    overwrites its own event file, so a changed value replaces the old one."""
    return {"id": score["id"], "timestamp": score["timestamp"], "type": "score-create",
            "body": {k: v for k, v in score.items() if k != "timestamp"}}


def score_event_bytes(score: Mapping) -> bytes:
    """``score_event(score)`` encoded (orjson), the unit ingestion batches are made of."""
    return orjson.dumps(score_event(score))


_NAME_JSON: dict[str, str] = {}


def attempt_score_events(plan: AttemptPlan, binding: Binding, run: RunPlan, timestamp: str) -> list[bytes]:
    """``[score_event_bytes(s) for s in attempt_score_payloads(...)]``, byte for byte, made
    without the intermediate dicts (a 10,000-attempt run has some 280,000 scores)."""
    digest = PrefixDigest("bench-pipeline/attempt-score/v1", run.suite, run.run_id, plan.item_id)
    middle = f'","timestamp":{orjson.dumps(timestamp).decode()},"type":"score-create","body":{{"id":"'
    tail = f',"traceId":{orjson.dumps(binding.trace_id).decode()},' \
           f'"observationId":{orjson.dumps(binding.observation_id).decode()}}}}}'
    out = []
    for name, value, dtype in plan.scores:
        sid = "bench-" + digest(name)[:32]
        name_json = _NAME_JSON.get(name)
        if name_json is None:
            name_json = _NAME_JSON[name] = orjson.dumps(name).decode()
        value_json = orjson.dumps(value if dtype == "CATEGORICAL" else float(value)).decode()
        out.append(f'{{"id":"{sid}{middle}{sid}","name":{name_json},"value":{value_json},'
                   f'"dataType":"{dtype}"{tail}'.encode())
    return out


def run_item_body(plan: AttemptPlan, binding: Binding, run: RunPlan, created_at: str) -> dict:
    """``POST /api/public/dataset-run-items`` body (v3 legacy mode; ``PostDatasetRunItemsV1Body``,
    strict: runName, runDescription, metadata, datasetItemId, observationId, traceId, createdAt).
    The run takes its description, metadata and creation time from its first item."""
    return {
        "runName": run.run_id,
        "runDescription": run.experiment_description,
        "metadata": run.experiment_metadata,
        "datasetItemId": plan.item_id,
        "traceId": binding.trace_id,
        "observationId": binding.observation_id,
        "createdAt": created_at,
    }


def greedy_groups(sized: Iterable[tuple[T, int]], max_bytes: int, max_count: int) -> Iterator[list[T]]:
    """``(entry, size)`` pairs grouped greedily, in order, as each group is complete: a group
    stays under both limits (an entry larger than ``max_bytes`` goes alone)."""
    current: list[T] = []
    used = 0
    for entry, size in sized:
        if current and (used + size > max_bytes or len(current) >= max_count):
            yield current
            current, used = [], 0
        current.append(entry)
        used += size
    if current:
        yield current


def chunk_by_size(entries: list[Any], sizes: list[int], max_bytes: int, max_count: int) -> list[list[int]]:
    """Indices of ``entries`` grouped as ``greedy_groups`` groups them."""
    return list(greedy_groups(zip(range(len(entries)), sizes), max_bytes, max_count))
