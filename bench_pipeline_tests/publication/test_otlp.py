"""Pure OTLP/JSON attribute values."""

from __future__ import annotations

from bench_pipeline.publication.otlp import json_text, span_attr


def test_a_boolean_stays_a_boolean_and_anything_else_is_text():
    assert span_attr("k", True) == {"key": "k", "value": {"boolValue": True}}
    assert span_attr("k", "text") == {"key": "k", "value": {"stringValue": "text"}}
    assert span_attr("k", {"b": 1, "a": [None]}) == {"key": "k", "value": {"stringValue": '{"b":1,"a":[null]}'}}
    assert span_attr("k", 3) == {"key": "k", "value": {"stringValue": "3"}}


def test_json_text_is_compact_and_takes_what_json_does_not():
    import numpy as np

    assert json_text({"n": np.int64(2), 1: "x"}) == '{"n":2,"1":"x"}'
    assert json_text({"when": object}).startswith('{"when":"<class')
