"""Values derived from a decoded span: times, JSON attributes, environment, metadata, root."""

from __future__ import annotations

from datetime import datetime, timezone

from standins.langfuse.spans import (
    environment,
    is_root,
    maybe_json,
    observation_metadata,
    observation_type,
    span_end,
    span_start,
)


def span(parent=None, attributes=None, **extra) -> dict:
    return {"parent_span_id": parent, "attributes": attributes or {}, "start_time_unix_nano": 1_764_496_800_000_000_000,
            **extra}


def test_times_come_from_the_nanoseconds():
    assert span_start(span()) == datetime(2025, 11, 30, 10, 0, tzinfo=timezone.utc)
    assert span_end(span(end_time_unix_nano=1_764_496_801_500_000_000)) == datetime(2025, 11, 30, 10, 0, 1, 500000,
                                                                                    tzinfo=timezone.utc)
    assert span_end(span()) is None and span_end(span(end_time_unix_nano=0)) is None


def test_json_attributes_are_decoded_and_other_text_kept():
    assert maybe_json('{"a": 1}') == {"a": 1} and maybe_json("plain") == "plain" and maybe_json(3) == 3


def test_environment_from_the_span_then_the_resource_then_default():
    assert environment(span(attributes={"langfuse.environment": "prod"})) == "prod"
    assert environment(span(resource_attributes={"langfuse.environment": "ci"})) == "ci"
    assert environment(span()) == "default"


def test_metadata_merges_the_object_with_its_keyed_attributes():
    attrs = {"langfuse.observation.metadata.attempt": "1", "langfuse.observation.metadata": '{"suite": "s"}'}
    assert observation_metadata(attrs) == {"attempt": 1, "suite": "s"}
    assert observation_metadata({"langfuse.observation.metadata": "[1]"}) == {"metadata": [1]}
    assert observation_metadata({}) is None


def test_roots_and_types():
    assert is_root(span()) and not is_root(span(parent="a" * 16))
    assert is_root(span(parent="a" * 16, attributes={"langfuse.internal.as_root": True}))
    assert is_root(span(parent="a" * 16, attributes={"langfuse.internal.is_app_root": True}))
    assert observation_type(span()) == "SPAN"
    assert observation_type(span(attributes={"langfuse.observation.type": "evaluator"})) == "EVALUATOR"
