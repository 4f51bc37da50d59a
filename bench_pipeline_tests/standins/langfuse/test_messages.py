"""Answers as JSON bytes, also for values orjson cannot encode."""

from __future__ import annotations

from standins.langfuse.messages import ApiError, RequestLog, Response, json_response


def test_json_response_encodes_compactly_and_beyond_64_bits():
    resp = json_response(201, {"a": [1, None], "when": object.__name__}, {"X-Y": "1"})
    assert resp == Response(201, b'{"a":[1,null],"when":"object"}', "application/json", {"X-Y": "1"})
    assert json_response(200, {"n": 10 ** 30}).body == b'{"n":1000000000000000000000000000000}'


def test_an_api_error_carries_its_status_and_details():
    err = ApiError(400, "bad", [{"path": ["x"]}])
    assert (err.status, err.message, err.details, str(err)) == (400, "bad", [{"path": ["x"]}], "bad")


def test_a_request_log_starts_in_flight():
    log = RequestLog("POST", "/api/public/scores", {}, None, 12)
    assert (log.status, log.completed, log.route, log.fault, log.response_bytes) == (None, False, None, None, 0)
