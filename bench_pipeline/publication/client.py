"""HTTP access to Langfuse: settings, the SDK's API client, retries and request counting.

Reads and the per-item dataset calls the SDK wraps go through its generated client
(``langfuse.api.client.LangfuseAPI``, with its own retries switched off so that one retry
policy applies). Everything else goes to the raw endpoints over the same ``httpx`` client,
because SDK 5.0.4 has no call for it or its paths hide failures (span exporter, score queue):

* scores: ``POST /api/public/ingestion`` with ``score-create`` events (207 with a status per
  event; both server generations), or, on a server without that endpoint, SDK 5's
  ``POST /api/public/scores`` with a JSON array (202 = all accepted, 207 = some rejected);
* spans: ``POST /api/public/otel/v1/traces`` with OTLP/JSON (gzip), header
  ``x-langfuse-ingestion-version: 4``; 2xx without ``partialSuccess.rejectedSpans`` = accepted;
* dataset run items (v3 legacy mode): ``POST /api/public/dataset-run-items``, one per attempt;
* the server probe and the reads SDK 5 does not wrap (``generation.py``, ``publisher.py``).

A 2xx answer means the server accepted (queued) the data; Langfuse writes it asynchronously.

No credential is ever logged or put in an exception message.
"""

from __future__ import annotations

import base64
import gzip
import http.client
import logging
import math
import os
import socket
import ssl
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx
import orjson
from langfuse import __version__ as _SDK_VERSION
from langfuse.api.client import LangfuseAPI
from langfuse.api.core.api_error import ApiError

log = logging.getLogger("bench_pipeline.publication")

DEFAULT_BASE_URL = "https://cloud.langfuse.com"  # the SDK's default when no URL is configured
RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
T = TypeVar("T")


@dataclass
class LangfuseSettings:
    """Where to publish. ``from_env`` reads LANGFUSE_BASE_URL (wins over LANGFUSE_HOST),
    LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY. The repr never shows the secret."""

    base_url: str | None
    public_key: str | None
    secret_key: str | None

    @classmethod
    def from_env(cls) -> LangfuseSettings:
        def env(name: str) -> str | None:
            value = os.environ.get(name)
            return value.strip() if value and value.strip() else None

        return cls(
            base_url=env("LANGFUSE_BASE_URL") or env("LANGFUSE_HOST"),
            public_key=env("LANGFUSE_PUBLIC_KEY"),
            secret_key=env("LANGFUSE_SECRET_KEY"),
        )

    @property
    def configured(self) -> bool:
        """Both keys are set (the URL defaults to Langfuse Cloud, like the SDK)."""
        return bool(self.public_key) and bool(self.secret_key)

    @property
    def url(self) -> str:
        return (self.base_url or DEFAULT_BASE_URL).rstrip("/")

    def __repr__(self) -> str:
        pk = self.public_key
        shown_pk = None if pk is None else (pk[:8] + "..." if len(pk) > 8 else "***")
        return (
            f"LangfuseSettings(base_url={'set' if self.base_url else None!r}, public_key={shown_pk!r}, "
            f"secret_key={'***' if self.secret_key else None!r})"
        )

    __str__ = __repr__


@dataclass
class PublishOptions:
    """Tuning of delivery (defaults suit a real server; tests shorten the waits)."""

    timeout: float = 30.0  # seconds per HTTP request (LANGFUSE_TIMEOUT overrides)
    retries: int = 3  # extra tries per request after a retryable failure
    backoff: float = 0.5  # first wait between tries, doubled each time
    max_retry_after: float = 120.0  # cap on a server's Retry-After (Langfuse Cloud's windows are 60 s)
    #: tries of one request answered 429 (rate limited) before it fails: a 429 says the server
    #: is up and busy, so it neither uses up ``retries`` nor counts towards ``give_up_after``
    rate_limited_tries: int = 30
    workers: int = 8  # concurrent per-item calls (dataset items, dataset run items)
    chunk_attempts: int = 250  # attempts per span+score round (progress granularity)
    max_score_bytes: int = 900_000  # SDK 5's /api/public/scores array: body limit 1 MiB
    max_ingestion_bytes: int = 3_400_000  # /api/public/ingestion: documented 3.5 MB per batch (openapi.yml)
    max_span_bytes: int = 2_000_000  # uncompressed OTLP/JSON per request
    max_spans_per_request: int = 1000
    max_scores_per_request: int = 10_000
    page_size: int = 100  # list pages (dataset items, experiment items, run items): the servers' maximum
    lookup_batch: int = 100  # execution trace ids per look-up request (filter ``traceId any of``)
    in_doubt_lookup_limit: int = 25  # up to this many in-doubt items: look up per trace, else page
    give_up_after: int = 20  # after this many requests in a row failed for good, stop trying
    #: seconds a v3 dataset run item sent without an answer is given to become readable before
    #: it is read back (the server queues it: 5 s, 15 s around midnight UTC, then batch writes);
    #: reading sooner could miss it and post it twice. LANGFUSE_READBACK_DELAY overrides.
    readback_delay: float = 60.0
    lock_timeout: float = 1800.0  # seconds to wait for another publication of the same suite (suite_lock.py)

    @classmethod
    def from_env(cls) -> PublishOptions:
        options = cls()
        for name, field in (("LANGFUSE_TIMEOUT", "timeout"), ("LANGFUSE_READBACK_DELAY", "readback_delay")):
            raw = os.environ.get(name)
            if raw:
                try:
                    value = float(raw)
                except ValueError:
                    value = -1.0
                if value >= 0:
                    setattr(options, field, value)
                else:
                    log.warning("%s is not a number of seconds; using %.0f s", name, getattr(options, field))
        return options


class DeliveryFailure(Exception):
    """One request failed for good. ``in_doubt``: it may have been stored (no answer)."""

    def __init__(self, what: str, detail: str, *, in_doubt: bool = False, status: int | None = None):
        super().__init__(f"{what}: {detail}")
        self.what = what
        self.detail = detail
        self.in_doubt = in_doubt
        self.status = status


class _Retryable(Exception):
    """A failed attempt the retry policy may repeat (no answer, or a retryable status)."""

    def __init__(self, failure: DeliveryFailure, retry_after: float | None = None):
        super().__init__(str(failure))
        self.failure, self.retry_after = failure, retry_after


def _retry_after(headers: Any) -> float | None:
    if not headers:
        return None
    raw = None
    for key in ("retry-after", "Retry-After"):
        if key in headers:
            raw = headers[key]
            break
    try:
        return max(0.0, float(raw)) if raw is not None else None
    except (TypeError, ValueError):
        return None


class _RedactUrl(logging.Filter):
    """Replaces the Langfuse URL in httpx's request log lines ("HTTP Request: POST <url> ...")."""

    def __init__(self, url: str):
        super().__init__()
        self.url = url

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and any(self.url in str(a) for a in record.args):
            record.args = tuple(str(a).replace(self.url, "<langfuse>") if self.url in str(a) else a
                                for a in record.args)
        return True


def _short(text: Any, limit: int = 300) -> str:
    s = text if isinstance(text, str) else repr(text)
    return s if len(s) <= limit else s[:limit] + "..."


def _ssl_context() -> ssl.SSLContext:
    """The certificates httpx would trust: SSL_CERT_FILE / SSL_CERT_DIR when set, else certifi's."""
    if os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE"),
                                          capath=os.environ.get("SSL_CERT_DIR"))
    try:
        import certifi

        return ssl.create_default_context(cafile=certifi.where())
    except ImportError:  # pragma: no cover - httpx depends on certifi
        return ssl.create_default_context()


class _FastPosts:
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
        self._context = _ssl_context() if self.https else None

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


class LangfuseHttp:
    """The SDK's API client plus raw bulk endpoints, one retry policy and a request counter."""

    def __init__(self, settings: LangfuseSettings, options: PublishOptions):
        self.settings = settings
        self.options = options
        self.base_url = settings.url
        self._lock = threading.Lock()
        self.requests = 0
        self.by_route: dict[str, int] = {}
        # per endpoint: requests in a row that failed for good with a transient error, the last detail
        self._failing: dict[str, int] = {}
        self._last_failure: dict[str, str] = {}
        self._secrets = [s.encode("utf-8") for s in (settings.secret_key,) if s]
        # rate limiting (429): per endpoint, no request goes out before this (monotonic) time, so
        # that the workers wait for the server's window together instead of each using up its
        # tries (the server limits per resource); on_rate_limit(text) is told when a wait starts
        # (at most every 30 s)
        self._resume_at: dict[str, float] = {}
        self._told_at = -math.inf
        self.on_rate_limit: Callable[[str], None] | None = None
        self.rate_limited = 0  # 429 answers received
        self.http = httpx.Client(
            timeout=options.timeout,
            limits=httpx.Limits(max_connections=options.workers + 4, max_keepalive_connections=options.workers + 4),
            event_hooks={"request": [self._count]},
        )
        self.api = LangfuseAPI(
            base_url=self.base_url,
            username=settings.public_key,
            password=settings.secret_key,
            x_langfuse_sdk_name="python",
            x_langfuse_sdk_version=_SDK_VERSION,
            x_langfuse_public_key=settings.public_key,
            httpx_client=self.http,
            timeout=options.timeout,
        )
        self._auth = httpx.BasicAuth(settings.public_key or "", settings.secret_key or "")
        self._log_filter = _RedactUrl(self.base_url)
        logging.getLogger("httpx").addFilter(self._log_filter)
        self._headers = {
            "x-langfuse-sdk-name": "python",
            "x-langfuse-sdk-version": _SDK_VERSION,
            "x-langfuse-public-key": settings.public_key or "",
        }
        token = base64.b64encode(f"{settings.public_key or ''}:{settings.secret_key or ''}".encode()).decode()
        self._fast = _FastPosts(self.base_url, options.timeout, {
            **self._headers, "authorization": f"Basic {token}", "content-type": "application/json",
            "accept": "application/json"}) if _FastPosts.usable(self.base_url) else None

    # ------------------------------------------------------------------ bookkeeping
    def _count(self, request: httpx.Request) -> None:
        route = f"{request.method} {request.url.path}"
        with self._lock:
            self.requests += 1
            self.by_route[route] = self.by_route.get(route, 0) + 1

    def _count_route(self, method: str, path: str) -> None:
        route = f"{method} {path}"
        with self._lock:
            self.requests += 1
            self.by_route[route] = self.by_route.get(route, 0) + 1

    def close(self) -> None:
        self.http.close()
        if self._fast is not None:
            self._fast.close()
        logging.getLogger("httpx").removeFilter(self._log_filter)

    def guard(self, body: bytes, what: str) -> None:
        """Refuse to send a payload that contains the secret key (it never should)."""
        for secret in self._secrets:
            if secret and secret in body:
                raise DeliveryFailure(what, "refused: the payload contains the Langfuse secret key")

    def _check_breaker(self, what: str, route: str) -> None:
        """Once an endpoint failed ``give_up_after`` requests in a row, its other requests of
        this call are not tried (the other endpoints go on)."""
        failing = self._failing.get(route, 0)
        if failing >= self.options.give_up_after:
            raise DeliveryFailure(
                what, f"not attempted: {failing} requests in a row failed (last: {self._last_failure.get(route)})")

    def _outcome(self, route: str, failure: DeliveryFailure | None) -> None:
        with self._lock:
            if failure is None:
                self._failing[route] = 0
            else:
                self._failing[route] = self._failing.get(route, 0) + 1
                self._last_failure[route] = failure.detail

    def _hold(self, route: str) -> None:
        """Wait while the server's rate limit window for this endpoint is closed (``_rate_limited``)."""
        while True:
            with self._lock:
                delay = self._resume_at.get(route, 0.0) - time.monotonic()
            if delay <= 0:
                return
            time.sleep(delay)

    def _rate_limited(self, what: str, route: str, retry_after: float | None, tries: int) -> None:
        """A 429: close the window for every request to this endpoint for Retry-After seconds
        (capped; exponential backoff without one)."""
        delay = min(retry_after if retry_after is not None else self.options.backoff * (2 ** min(tries, 8)),
                    self.options.max_retry_after)
        now = time.monotonic()
        with self._lock:
            self.rate_limited += 1
            self._resume_at[route] = max(self._resume_at.get(route, 0.0), now + delay)
            tell = delay >= 5 and now - self._told_at >= 30
            if tell:
                self._told_at = now
        if tell:
            text = (f"langfuse: rate limited by the server ({route}: HTTP 429); waiting {delay:.0f} s "
                    f"({self.rate_limited} such answer(s) so far)")
            log.info("%s", text)
            if self.on_rate_limit is not None:
                self.on_rate_limit(text)

    def wait(self, attempt: int, retry_after: float | None) -> None:
        """Sleep before try ``attempt + 1``: Retry-After (capped) or exponential backoff."""
        delay = self.options.backoff * (2 ** attempt)
        if retry_after is not None:
            delay = min(retry_after, self.options.max_retry_after)
        if delay > 0:
            time.sleep(delay)

    # ------------------------------------------------------------------ retry policy
    def _with_retries(self, what: str, once: Callable[[], T], *, retry_unanswered: bool = True,
                      route: str = "sdk") -> T:
        """``once()`` under the retry policy; returns its result or raises DeliveryFailure.

        ``once`` raises _Retryable for a request without an answer or with a retryable
        status (408/425/429/5xx), and DeliveryFailure for a definite refusal, which ends the
        attempts at once. With ``retry_unanswered=False`` a request without an answer is not
        repeated either (the caller reads back first: the failure is ``in_doubt``).
        """
        self._check_breaker(what, route)
        last: DeliveryFailure | None = None
        attempt = limited = 0
        while True:
            self._hold(route)
            try:
                result = once()
            except _Retryable as retryable:
                last = retryable.failure
                if last.status == 429:  # up and busy: wait for the window with the other requests
                    limited += 1
                    if limited >= self.options.rate_limited_tries:
                        self._outcome(route, None)
                        raise DeliveryFailure(last.what, f"{last.detail} (rate limited {limited} times in a row)",
                                              status=429) from None
                    self._rate_limited(what, route, retryable.retry_after, limited)
                    continue
                if last.in_doubt and not retry_unanswered:
                    self._outcome(route, last)
                    raise last from None
                retry_after = retryable.retry_after
            except DeliveryFailure:
                self._outcome(route, None)  # the service answered: it is up
                raise
            else:
                self._outcome(route, None)
                return result
            if attempt >= self.options.retries:
                break
            log.info("%s failed (%s); retrying", what, last.detail)
            self.wait(attempt, retry_after)
            attempt += 1
        assert last is not None
        self._outcome(route, last)
        raise last

    # ------------------------------------------------------------------ SDK calls
    def call(self, what: str, fn: Callable[[dict], T]) -> T:
        """Run ``fn(request_options)`` (an SDK API call) with the retry policy.

        Retries transport errors and 408/425/429/5xx answers; raises DeliveryFailure.
        Only idempotent calls (reads, upserts by id) are passed here.
        """
        request_options = {"max_retries": 0}

        def once() -> T:
            try:
                return fn(request_options)
            except httpx.TransportError as exc:
                raise _Retryable(DeliveryFailure(what, f"no answer ({type(exc).__name__})", in_doubt=True)) from None
            except ApiError as exc:
                status = exc.status_code
                failure = DeliveryFailure(what, f"HTTP {status}: {_short(exc.body)}", status=status)
                if status not in RETRYABLE_STATUS:
                    raise failure from None
                raise _Retryable(failure, _retry_after(exc.headers)) from None

        return self._with_retries(what, once)

    # ------------------------------------------------------------------ raw requests
    def _raw(self, what: str, method: str, path: str, *, body: bytes | None = None,
             params: dict | None = None, headers: dict[str, str] | None = None,
             retry_unanswered: bool = True, doubtful: frozenset[int] = frozenset(),
             accept: frozenset[int] = frozenset()) -> httpx.Response:
        """One raw request under the retry policy; returns a 2xx response (or one whose status
        is in ``accept``) or raises DeliveryFailure. A status in ``doubtful`` means "may have
        been stored": it is reported ``in_doubt`` and, like a request without an answer, not
        repeated when ``retry_unanswered`` is False."""
        if body is not None:
            self.guard(body, what)
        url = f"{self.base_url}{path}"
        all_headers = {**self._headers, **(headers or {})}

        def once() -> httpx.Response:
            try:
                response = self.http.request(method, url, content=body, params=params, headers=all_headers,
                                             auth=self._auth)
            except httpx.TransportError as exc:
                raise _Retryable(DeliveryFailure(what, f"no answer ({type(exc).__name__})", in_doubt=True)) from None
            if 200 <= response.status_code < 300 or response.status_code in accept:
                return response
            failure = DeliveryFailure(what, f"HTTP {response.status_code}: {_short(response.text)}",
                                      status=response.status_code, in_doubt=response.status_code in doubtful)
            if response.status_code not in RETRYABLE_STATUS:
                raise failure
            raise _Retryable(failure, _retry_after(response.headers))

        return self._with_retries(what, once, retry_unanswered=retry_unanswered, route=f"{method} {path}")

    def get_json(self, what: str, path: str, params: dict | None = None, *,
                 accept: frozenset[int] = frozenset()) -> tuple[int, Any]:
        """GET a JSON resource: (status, body). 4xx other than ``accept`` raise DeliveryFailure."""
        response = self._raw(what, "GET", path, params=params, accept=accept)
        try:
            return response.status_code, response.json() if response.content else None
        except ValueError:
            raise DeliveryFailure(what, f"HTTP {response.status_code}: the answer is not JSON",
                                  status=response.status_code) from None

    def post(self, what: str, path: str, body: bytes, headers: dict[str, str], *,
             retry_unanswered: bool = True, doubtful: frozenset[int] = frozenset(),
             accept: frozenset[int] = frozenset()) -> httpx.Response:
        """POST raw bytes with the retry policy; returns the 2xx response or raises DeliveryFailure.

        Callers only send idempotent bodies (fixed ids, fixed score timestamps), except dataset
        run items (``retry_unanswered=False``): a request without an answer is then not
        repeated; the caller reads back first (DeliveryFailure with ``in_doubt``).
        """
        return self._raw(what, "POST", path, body=body, headers=headers, retry_unanswered=retry_unanswered,
                         doubtful=doubtful, accept=accept)

    def post_json(self, what: str, path: str, body: bytes, *, retry_unanswered: bool = True,
                  doubtful: frozenset[int] = frozenset()) -> Any:
        """POST a JSON body (already encoded) and return the decoded 2xx answer, with the retry
        policy of ``post`` (over the keep-alive connections of ``_FastPosts`` when usable)."""
        if self._fast is None:
            response = self.post(what, path, body, {"content-type": "application/json"},
                                 retry_unanswered=retry_unanswered, doubtful=doubtful)
            try:
                return response.json() if response.content else None
            except ValueError:
                raise DeliveryFailure(what, f"HTTP {response.status_code}: the answer is not JSON",
                                      status=response.status_code, in_doubt=True) from None
        self.guard(body, what)
        fast = self._fast

        def once() -> Any:
            self._count_route("POST", fast.prefix + path)
            try:
                status, headers, data = fast.post(path, body)
            except (OSError, http.client.HTTPException) as exc:
                raise _Retryable(DeliveryFailure(what, f"no answer ({type(exc).__name__})", in_doubt=True)) from None
            if 200 <= status < 300:
                try:
                    return orjson.loads(data) if data else None
                except orjson.JSONDecodeError:
                    raise DeliveryFailure(what, f"HTTP {status}: the answer is not JSON", status=status,
                                          in_doubt=True) from None
            failure = DeliveryFailure(what, f"HTTP {status}: {_short(data.decode('utf-8', 'replace'))}",
                                      status=status, in_doubt=status in doubtful)
            if status not in RETRYABLE_STATUS:
                raise failure
            raise _Retryable(failure, _retry_after(headers))

        return self._with_retries(what, once, retry_unanswered=retry_unanswered, route=f"POST {path}")

    def send_ingestion(self, what: str, events: list[bytes]) -> None:
        """POST /api/public/ingestion ``{"batch": [...]}`` (events already encoded).

        The server answers 207 with ``successes`` and ``errors`` per event
        (``packages/shared/src/server/ingestion/processEventBatch.ts``); success only when
        every event is among the successes."""
        body = b'{"batch":[' + b",".join(events) + b"]}"
        response = self.post(what, "/api/public/ingestion", body, {"content-type": "application/json"})
        try:
            result = response.json()
        except ValueError:
            raise DeliveryFailure(what, f"HTTP {response.status_code}: the answer is not JSON",
                                  status=response.status_code) from None
        errors = (result or {}).get("errors") or []
        successes = (result or {}).get("successes") or []
        if errors or len(successes) != len(events):
            raise DeliveryFailure(
                what, f"HTTP {response.status_code}: {len(errors)} of {len(events)} event(s) rejected: "
                      f"{_short(errors)}", status=response.status_code)

    def send_scores(self, what: str, scores: list[bytes]) -> None:
        """SDK 5's POST /api/public/scores with a JSON array (scores already encoded); success
        only when every score was accepted (202; 207 = some rejected)."""
        body = b"[" + b",".join(scores) + b"]"
        response = self.post(what, "/api/public/scores", body, {"content-type": "application/json"})
        if response.status_code == 207:
            try:
                body = response.json()
            except ValueError:
                body = {}
            rejected = body.get("rejected")
            errors = body.get("errors") or []
            raise DeliveryFailure(
                what, f"HTTP 207: {rejected} of {len(scores)} score(s) rejected: {_short(errors)}", status=207
            )

    def send_spans(self, what: str, raw: bytes) -> None:
        """POST /api/public/otel/v1/traces (OTLP/JSON bytes, sent gzipped); success only without
        rejected spans."""
        self.guard(raw, what)
        response = self.post(
            what,
            "/api/public/otel/v1/traces",
            gzip.compress(raw, compresslevel=1),
            {
                "content-type": "application/json",
                "content-encoding": "gzip",
                "x-langfuse-ingestion-version": "4",
            },
            retry_unanswered=False,  # spans are checked by reading back before a resend
        )
        try:
            body = response.json() if response.content else {}
        except ValueError:
            body = {}
        partial = (body or {}).get("partialSuccess") or (body or {}).get("partial_success") or {}
        rejected = partial.get("rejectedSpans") or partial.get("rejected_spans") or 0
        if int(rejected or 0) > 0:
            raise DeliveryFailure(what, f"{rejected} span(s) rejected: {_short(partial.get('errorMessage'))}")
