"""What the bulk endpoints' answers mean, on answers made in memory."""

from __future__ import annotations

import gzip

import httpx
import pytest

from bench_pipeline.publication import endpoints
from bench_pipeline.publication.retry import DeliveryFailure


class Recorder:
    """Stands for LangfuseHttp: keeps each POST and answers with the given response."""

    def __init__(self, status: int, body: bytes = b""):
        self.response = httpx.Response(status, content=body, request=httpx.Request("POST", "http://lf"))
        self.posts: list[tuple] = []
        self.guarded: list[bytes] = []

    def post(self, what, path, body, headers, **kw):
        self.posts.append((path, body, headers, kw))
        return self.response

    def guard(self, body, what):
        self.guarded.append(body)


def test_ingestion_succeeds_only_when_every_event_is_a_success():
    http = Recorder(207, b'{"successes":[{"id":"a"},{"id":"b"}],"errors":[]}')
    endpoints.send_ingestion(http, "scores", [b'{"id":"a"}', b'{"id":"b"}'])
    assert http.posts[0][:2] == ("/api/public/ingestion", b'{"batch":[{"id":"a"},{"id":"b"}]}')
    with pytest.raises(DeliveryFailure, match=r"HTTP 207: 1 of 2 event\(s\) rejected"):
        endpoints.send_ingestion(Recorder(207, b'{"successes":[{"id":"a"}],"errors":[{"id":"b"}]}'),
                                 "scores", [b"{}", b"{}"])
    with pytest.raises(DeliveryFailure, match="0 of 2"):
        endpoints.send_ingestion(Recorder(207, b'{"successes":[{"id":"a"}]}'), "scores", [b"{}", b"{}"])
    with pytest.raises(DeliveryFailure, match="not JSON"):
        endpoints.send_ingestion(Recorder(200, b"<html>"), "scores", [b"{}"])


def test_the_score_array_fails_on_a_207():
    http = Recorder(202)
    endpoints.send_scores(http, "scores", [b'{"id":"a"}'])
    assert http.posts[0][1] == b'[{"id":"a"}]'
    with pytest.raises(DeliveryFailure, match=r"HTTP 207: 1 of 2 score\(s\) rejected"):
        endpoints.send_scores(Recorder(207, b'{"rejected":1,"errors":["bad"]}'), "scores", [b"{}", b"{}"])


def test_spans_go_gzipped_and_fail_on_rejected_spans():
    http = Recorder(200, b"{}")
    endpoints.send_spans(http, "spans", b'{"resourceSpans":[]}')
    path, body, headers, kw = http.posts[0]
    assert path == "/api/public/otel/v1/traces" and gzip.decompress(body) == b'{"resourceSpans":[]}'
    assert headers["x-langfuse-ingestion-version"] == "4" and kw == {"retry_unanswered": False}
    assert http.guarded == [b'{"resourceSpans":[]}']  # the uncompressed bytes are checked for the key
    rejected = Recorder(200, b'{"partialSuccess":{"rejectedSpans":2,"errorMessage":"bad ids"}}')
    with pytest.raises(DeliveryFailure, match="2 span"):
        endpoints.send_spans(rejected, "spans", b"{}")
