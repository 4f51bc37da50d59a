"""The hand-written HTTP/1.1 client: its request head and how it reads answers (in memory)."""

from __future__ import annotations

import http.client
import io

import pytest

from bench_pipeline.publication.fast_posts import FastPosts


def client(url="http://lf.example:3000/base"):
    return FastPosts(url, 1.0, {"authorization": "Basic abc"})


def test_the_request_head_names_the_host_and_the_path_prefix():
    posts = client()
    assert (posts.host, posts.port, posts.prefix, posts.https) == ("lf.example", 3000, "/base", False)
    assert posts._head == b"host: lf.example:3000\r\nuser-agent: bench-pipeline\r\nauthorization: Basic abc\r\n"
    assert client("https://lf.example")._head.startswith(b"host: lf.example\r\n")  # the default port is not named


def test_headers_are_read_lower_cased_up_to_the_empty_line():
    reader = io.BytesIO(b"Content-Length: 2\r\nX-Thing:  a:b \r\n\r\nok")
    assert FastPosts._headers(reader) == {"content-length": "2", "x-thing": "a:b"}
    with pytest.raises(http.client.RemoteDisconnected):
        FastPosts._headers(io.BytesIO(b"content-length: 2\r\n"))


def test_bodies_by_length_chunked_and_until_the_connection_ends():
    posts = client()
    assert posts._body(io.BytesIO(b"hello, more"), {"content-length": "5"}) == b"hello"
    chunked = io.BytesIO(b"4\r\nwiki\r\n5;ext=1\r\npedia\r\n0\r\nTrailer: x\r\n\r\n")
    assert posts._body(chunked, {"transfer-encoding": "chunked"}) == b"wikipedia"
    assert posts._body(io.BytesIO(b"to the end"), {}) == b"to the end"
    with pytest.raises(http.client.IncompleteRead):
        posts._body(io.BytesIO(b"shor"), {"content-length": "5"})


def test_only_plain_urls_without_a_proxy_are_usable(monkeypatch):
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert FastPosts.usable("http://127.0.0.1:3000") and FastPosts.usable("https://lf.example")
    assert not FastPosts.usable("https://user:pw@lf.example") and not FastPosts.usable("ftp://lf.example")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:8080")
    assert not FastPosts.usable("https://lf.example")
