"""Keeping the server's address and the keys out of logs and payloads."""

from __future__ import annotations

import logging

from bench_pipeline.publication.redaction import RedactUrl, holds_secret, short


def test_the_url_is_replaced_in_log_arguments():
    record = logging.LogRecord("httpx", logging.INFO, __file__, 1, 'HTTP Request: %s %s "%s"',
                               ("POST", "https://lf.example/api/public/ingestion", "HTTP/1.1 207"), None)
    assert RedactUrl("https://lf.example").filter(record) is True
    assert record.getMessage() == 'HTTP Request: POST <langfuse>/api/public/ingestion "HTTP/1.1 207"'
    other = logging.LogRecord("httpx", logging.INFO, __file__, 1, "%s", ("elsewhere",), None)
    RedactUrl("https://lf.example").filter(other)
    assert other.args == ("elsewhere",)


def test_answers_are_cut_for_messages():
    assert short("x" * 300) == "x" * 300
    assert short("x" * 301) == "x" * 300 + "..."
    assert short({"errors": [1]}) == "{'errors': [1]}"


def test_a_payload_with_a_secret_in_it_is_found():
    assert holds_secret(b'{"note":"sk-lf-1"}', [b"sk-lf-1"])
    assert not holds_secret(b'{"note":"fine"}', [b"sk-lf-1"]) and not holds_secret(b"{}", [])
