"""Bodies checked with the SDK's generated request types (the sdk5 score form)."""

from __future__ import annotations

import pytest
from langfuse.api.scores.types.create_score_request import CreateScoreRequest

from standins.langfuse.messages import ApiError
from standins.langfuse.sdk_types import sdk5_score_row, validate_with, wire_aliases

TRACE = "0123456789abcdef0123456789abcdef"


def error_of(body) -> str:
    with pytest.raises(ApiError) as err:
        sdk5_score_row(body, "proj")
    assert err.value.status == 400
    return err.value.message


def test_wire_aliases_map_python_names_to_camel_case():
    aliases = wire_aliases(CreateScoreRequest)
    assert aliases["trace_id"] == "traceId" and aliases["data_type"] == "dataType"


def test_a_python_field_name_in_the_body_is_refused_with_the_wire_name():
    with pytest.raises(ApiError) as err:
        validate_with(CreateScoreRequest, {"name": "x", "value": 1, "trace_id": TRACE}, "CreateScoreRequest")
    assert "'trace_id' (expected 'traceId')" in err.value.message
    assert validate_with(CreateScoreRequest, {"name": "x", "value": 1, "traceId": TRACE}, "c").trace_id == TRACE


def test_an_sdk5_score_becomes_a_stored_row():
    row = sdk5_score_row({"id": "s", "name": "x", "value": 1, "dataType": "BOOLEAN", "traceId": TRACE,
                          "timestamp": "2025-03-01T12:00:00Z", "metadata": [1]}, "proj")
    assert {k: row[k] for k in ("id", "projectId", "value", "dataType", "source", "timestamp", "environment",
                                "metadata")} == {
        "id": "s", "projectId": "proj", "value": 1.0, "dataType": "BOOLEAN", "source": "API",
        "timestamp": "2025-03-01T12:00:00.000Z", "environment": "default", "metadata": [1]}
    assert sdk5_score_row({"name": "c", "value": "ok", "sessionId": "s"}, "p")["dataType"] == "CATEGORICAL"


def test_sdk5_scores_are_refused_as_the_server_would():
    assert error_of([1]) == "score must be a JSON object"
    assert error_of({"name": "x", "value": 1}) == "score needs one of traceId, sessionId or datasetRunId"
    assert error_of({"name": "x", "value": 1, "observationId": "o", "sessionId": "s"}) == "observationId requires traceId"
    assert error_of({"name": "x", "value": 5, "dataType": "BOOLEAN", "traceId": TRACE}) == "BOOLEAN score value must be 0 or 1"
    assert error_of({"name": "x", "value": 1.0, "traceId": TRACE, "timestamp": "2025-01-01T00:00:00"}) == (
        "timestamp '2025-01-01T00:00:00' has no UTC offset")
    assert error_of({"name": "x", "value": 1, "traceId": TRACE, "environment": "Prod"}) == "invalid environment 'Prod'"
