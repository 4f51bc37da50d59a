"""The HTTP/1.1 loop over a raw socket: keep-alive, chunked bodies, HEAD, HTTP/1.0 close."""

from __future__ import annotations

import socket

from standins.langfuse import LangfuseStandIn
from standins.langfuse.auth import basic_auth


def exchange(sock: socket.socket, request: bytes, head: bool = False) -> bytes:
    """Send one request and read one whole response (headers, then Content-Length bytes, none
    for HEAD)."""
    sock.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
    while not head and len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def test_keep_alive_chunked_bodies_head_and_http_1_0():
    with LangfuseStandIn(public_key="pk-lf-raw", secret_key="sk") as server:
        auth = basic_auth("pk-lf-raw", "sk").encode()
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
            first = exchange(sock, b"GET /api/public/health HTTP/1.1\r\nHost: x\r\n\r\n")
            assert first.startswith(b"HTTP/1.1 200 OK\r\n") and first.endswith(b'{"status":"OK","version":"4.16.0"}')
            body = b'{"name": "chunked"}'
            chunked = (b"POST /api/public/v2/datasets HTTP/1.1\r\nAuthorization: " + auth +
                       b"\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n" +
                       f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n")
            assert exchange(sock, chunked).startswith(b"HTTP/1.1 200 OK")  # the same connection
            head = exchange(sock, b"HEAD /api/public/health HTTP/1.1\r\n\r\n", head=True)
            assert head.endswith(b"\r\n\r\n") and b"Content-Length: 34" in head
            # HEAD: the length of the body a GET would get, no body: the next response starts clean
            sock.sendall(b"GET /api/public/health HTTP/1.0\r\n\r\n")
            rest = b""
            while chunk := sock.recv(65536):
                rest += chunk
            assert rest.startswith(b"HTTP/1.1 200 OK") and b"Connection: close" in rest
        assert list(server.datasets) == ["chunked"]
        assert [r.route for r in server.requests] == ["health", "datasets.create", "health", "health"]
