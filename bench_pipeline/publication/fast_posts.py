"""The hand-written HTTP/1.1 client of the per-item POSTs (``FastPosts``)."""

from __future__ import annotations

import gzip
import http.client
import os
import socket
import ssl
import threading
import urllib.request
from typing import Any
from urllib.parse import urlsplit


def ssl_context() -> ssl.SSLContext:
    """The certificates httpx would trust: SSL_CERT_FILE / SSL_CERT_DIR when set, else certifi's."""
    if os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE"),
                                          capath=os.environ.get("SSL_CERT_DIR"))
    try:
        import certifi

        return ssl.create_default_context(cafile=certifi.where())
    except ImportError:  # pragma: no cover - httpx depends on certifi
        return ssl.create_default_context()


class FastPosts:
    """Keep-alive HTTP/1.1 connections, one per thread, for the per-item POSTs (dataset items,
    dataset run items: 10,000 each for a large run). A request is one ``sendall`` and its
    answer is read straight off the socket (status line, headers, a ``Content-Length`` or
    chunked body): a tenth of the CPU ``httpx`` spends, a fifth of ``http.client``'s. One request
    at a time per connection (no pipelining), so an unanswered request is exactly one.
    Not used behind an environment proxy (``HTTP(S)_PROXY``), which only ``httpx`` honours."""

    def __init__(self, base_url: str, timeout: float, headers: dict[str, str]):
        parts = urlsplit(base_url)
        self.https = parts.scheme == "https"
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if self.https else 80)
        self.prefix = parts.path.rstrip("/")
        self.timeout = timeout
        default_port = (self.https and self.port == 443) or (not self.https and self.port == 80)
        host = self.host if ":" not in self.host else f"[{self.host}]"
        self._head = "".join(
            f"{k}: {v}\r\n" for k, v in {"host": host if default_port else f"{host}:{self.port}",
                                          "user-agent": "bench-pipeline", **headers}.items()).encode("latin-1")
        self._local = threading.local()
        self._all: list[socket.socket] = []
        self._lock = threading.Lock()
        self._context = ssl_context() if self.https else None

    @staticmethod
    def usable(base_url: str) -> bool:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
            return False
        proxies = urllib.request.getproxies()
        return not (proxies.get(parts.scheme) or proxies.get("all")) or bool(urllib.request.proxy_bypass(parts.hostname))

    def _connection(self) -> tuple[socket.socket, Any]:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._context is not None:
                sock = self._context.wrap_socket(sock, server_hostname=self.host)
            conn = self._local.conn = (sock, sock.makefile("rb"))
            with self._lock:
                self._all.append(sock)
        return conn

    def drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            try:
                conn[1].close()
                conn[0].close()
            except OSError:
                pass

    def post(self, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        """One POST; raises OSError / http.client.HTTPException without a (complete) answer."""
        sock, reader = self._connection()
        try:
            sock.sendall(b"POST " + (self.prefix + path).encode("latin-1") + b" HTTP/1.1\r\n" + self._head
                         + b"content-length: %d\r\n\r\n" % len(body) + body)
            while True:
                status_line = reader.readline(65537)
                if not status_line:
                    raise http.client.RemoteDisconnected("connection closed without an answer")
                parts = status_line.split(None, 2)
                if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
                    raise http.client.BadStatusLine(status_line.decode("latin-1", "replace"))
                status = int(parts[1])
                headers = self._headers(reader)
                if status >= 200 or status == 101:
                    break  # 1xx interim answers are skipped
            data = self._body(reader, headers)
        except BaseException:
            self.drop()  # the answer may still come: never reuse this connection
            raise
        if headers.get("connection", "").lower() == "close" or parts[0] == b"HTTP/1.0":
            self.drop()
        if headers.get("content-encoding", "").lower() == "gzip":
            data = gzip.decompress(data)
        return status, headers, data

    @staticmethod
    def _headers(reader: Any) -> dict[str, str]:
        headers: dict[str, str] = {}
        while True:
            line = reader.readline(65537)
            if line in (b"\r\n", b"\n"):
                return headers
            if not line:
                raise http.client.RemoteDisconnected("connection closed in the answer's headers")
            key, _, value = line.decode("latin-1").partition(":")
            headers[key.strip().lower()] = value.strip()

    def _body(self, reader: Any, headers: dict[str, str]) -> bytes:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            chunks = []
            while True:
                size = int(reader.readline(65537).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while reader.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunk = reader.read(size)
                if len(chunk) < size:
                    raise http.client.IncompleteRead(chunk)
                chunks.append(chunk)
                reader.readline(65537)
        if "content-length" in headers:
            length = int(headers["content-length"])
            data = reader.read(length)
            if len(data) < length:
                raise http.client.IncompleteRead(data, length - len(data))
            return data
        data = reader.read()  # no length: the body ends with the connection
        self.drop()
        return data

    def close(self) -> None:
        with self._lock:
            for sock in self._all:
                try:
                    sock.close()
                except OSError:
                    pass
            self._all.clear()
