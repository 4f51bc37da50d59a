"""The HTTP/1.1 loop the stand-in serves on: a threading TCP server on loopback whose
handler reads requests (keep-alive, Content-Length or chunked bodies) and hands each to
``LangfuseStandIn.serve_request``. Leaner than ``http.server``, so that a large publication
measures the publisher, not the stand-in's header parsing."""

from __future__ import annotations

import socket
import socketserver
import threading
from http import HTTPStatus
from typing import TYPE_CHECKING, Dict, Set, Tuple

from .messages import Response

if TYPE_CHECKING:
    from .server import LangfuseStandIn


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr: Tuple[str, int], standin: "LangfuseStandIn"):
        self.standin = standin
        self.open_connections: Set[socket.socket] = set()
        self.conn_lock = threading.Lock()
        super().__init__(addr, Handler)


REASONS = {code: phrase for code, phrase in ((s.value, s.phrase) for s in HTTPStatus)}


class Handler(socketserver.StreamRequestHandler):
    """One connection: requests are read in a loop until the client or ``close`` ends it."""

    timeout = 30  # idle keep-alive connections end after this
    disable_nagle_algorithm = True  # avoid 40 ms delayed-ACK stalls
    rbufsize = 65536

    def setup(self) -> None:
        super().setup()
        with self.server.conn_lock:  # type: ignore[attr-defined]
            self.server.open_connections.add(self.connection)  # type: ignore[attr-defined]

    def finish(self) -> None:
        with self.server.conn_lock:  # type: ignore[attr-defined]
            self.server.open_connections.discard(self.connection)  # type: ignore[attr-defined]
        try:
            super().finish()
        except OSError:
            pass

    def handle(self) -> None:
        self.close_connection = False
        while not self.close_connection:
            try:
                line = self.rfile.readline(65537)
            except (OSError, ValueError):
                return
            if not line:
                return
            if line in (b"\r\n", b"\n"):
                continue
            parts = line.decode("latin-1").split()
            if len(parts) != 3:
                return
            self.command, self.path, version = parts
            headers: Dict[str, str] = {}
            while True:
                raw = self.rfile.readline(65537)
                if raw in (b"\r\n", b"\n", b""):
                    break
                key, _, value = raw.decode("latin-1").partition(":")
                headers[key.strip().lower()] = value.strip()
            self.headers = headers
            conn = headers.get("connection", "").lower()
            self.close_connection = conn == "close" or (version == "HTTP/1.0" and conn != "keep-alive")
            self.server.standin.serve_request(self)  # type: ignore[attr-defined]

    def read_body(self) -> bytes:
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def write_response(self, resp: Response, head: bool = False) -> None:
        lines = [f"HTTP/1.1 {resp.status} {REASONS.get(resp.status, '')}",
                 "Server: LangfuseStandIn/5", f"Content-Type: {resp.content_type}",
                 f"Content-Length: {len(resp.body)}"]
        lines += [f"{k}: {v}" for k, v in resp.headers.items()]
        if self.close_connection:
            lines.append("Connection: close")
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        try:
            self.wfile.write(data + resp.body if not head and resp.body else data)
            self.wfile.flush()
        except OSError:  # client went away (e.g. timed out during a delay fault)
            self.close_connection = True

    def drop(self) -> None:
        """Close the socket without any response."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
