"""HTTP access to Langfuse (``LangfuseHttp``): the SDK's API client and the raw endpoints over
one ``httpx`` client, one retry policy (``retry``) and request counting.

Reads and the per-item dataset calls the SDK wraps go through its generated client
(``langfuse.api.client.LangfuseAPI``, with its own retries switched off so that one retry
policy applies). Everything else goes to the raw endpoints (``endpoints``, the server probe in
``server_generation``, the reads in ``steps``), because SDK 5.0.4 has no call for it or its
paths hide failures (span exporter, score queue); the per-item POSTs go over keep-alive
connections of their own (``fast_posts``) when no proxy is configured.

A 2xx answer means the server accepted (queued) the data; Langfuse writes it asynchronously.
No credential is ever logged or put in an exception message (``redaction``).
"""

from __future__ import annotations

import base64
import http.client
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import httpx
import orjson
from langfuse import __version__ as SDK_VERSION
from langfuse.api.client import LangfuseAPI
from langfuse.api.core.api_error import ApiError

from .fast_posts import FastPosts
from .redaction import RedactUrl, holds_secret, short
from .retry import RETRYABLE_STATUS, DeliveryFailure, Retryable, RetryPolicy, retry_after_seconds
from .settings import LangfuseSettings, PublishOptions

T = TypeVar("T")


class LangfuseHttp:
    """The SDK's API client plus raw requests, one retry policy and a request counter."""

    def __init__(self, settings: LangfuseSettings, options: PublishOptions):
        self.settings = settings
        self.options = options
        self.base_url = settings.url
        self._lock = threading.Lock()
        self.requests = 0
        self.by_route: dict[str, int] = {}
        self._secrets = [s.encode("utf-8") for s in (settings.secret_key,) if s]
        self.retry = RetryPolicy(options)
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
            x_langfuse_sdk_version=SDK_VERSION,
            x_langfuse_public_key=settings.public_key,
            httpx_client=self.http,
            timeout=options.timeout,
        )
        self._auth = httpx.BasicAuth(settings.public_key or "", settings.secret_key or "")
        self._log_filter = RedactUrl(self.base_url)
        logging.getLogger("httpx").addFilter(self._log_filter)
        self._headers = {
            "x-langfuse-sdk-name": "python",
            "x-langfuse-sdk-version": SDK_VERSION,
            "x-langfuse-public-key": settings.public_key or "",
        }
        token = base64.b64encode(f"{settings.public_key or ''}:{settings.secret_key or ''}".encode()).decode()
        self._fast = FastPosts(self.base_url, options.timeout, {
            **self._headers, "authorization": f"Basic {token}", "content-type": "application/json",
            "accept": "application/json"}) if FastPosts.usable(self.base_url) else None

    @property
    def on_rate_limit(self) -> Callable[[str], None] | None:
        """Told (text) when a long wait for a rate limit window starts."""
        return self.retry.limits.on_rate_limit

    @on_rate_limit.setter
    def on_rate_limit(self, tell: Callable[[str], None] | None) -> None:
        self.retry.limits.on_rate_limit = tell

    @property
    def rate_limited(self) -> int:
        """429 answers received."""
        return self.retry.limits.count

    def wait(self, attempt: int, retry_after: float | None) -> None:
        """Sleep before try ``attempt + 1`` (``RetryPolicy.wait``)."""
        self.retry.wait(attempt, retry_after)

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
        if holds_secret(body, self._secrets):
            raise DeliveryFailure(what, "refused: the payload contains the Langfuse secret key")

    # ------------------------------------------------------------------ SDK calls
    def call(self, what: str, fn: Callable[[dict], T], *, route: str = "sdk", wait_when_limited: bool = True) -> T:
        """Run ``fn(request_options)`` (an SDK API call) with the retry policy.

        Retries transport errors and 408/425/429/5xx answers; raises DeliveryFailure.
        Only idempotent calls (reads, upserts by id, deletions by id) are passed here.
        ``route`` names the endpoint for the policy's failure count and rate limit window;
        ``wait_when_limited=False``: a 429 fails at once (``RetryPolicy.run``).
        """
        request_options = {"max_retries": 0}

        def once() -> T:
            try:
                return fn(request_options)
            except httpx.TransportError as exc:
                raise Retryable(DeliveryFailure(what, f"no answer ({type(exc).__name__})", in_doubt=True)) from None
            except ApiError as exc:
                status = exc.status_code
                failure = DeliveryFailure(what, f"HTTP {status}: {short(exc.body)}", status=status)
                if status not in RETRYABLE_STATUS:
                    raise failure from None
                raise Retryable(failure, retry_after_seconds(exc.headers)) from None

        return self.retry.run(what, once, route=route, wait_when_limited=wait_when_limited)

    # ------------------------------------------------------------------ raw requests
    def request(self, what: str, method: str, path: str, *, body: bytes | None = None,
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
                raise Retryable(DeliveryFailure(what, f"no answer ({type(exc).__name__})", in_doubt=True)) from None
            if 200 <= response.status_code < 300 or response.status_code in accept:
                return response
            failure = DeliveryFailure(what, f"HTTP {response.status_code}: {short(response.text)}",
                                      status=response.status_code, in_doubt=response.status_code in doubtful)
            if response.status_code not in RETRYABLE_STATUS:
                raise failure
            raise Retryable(failure, retry_after_seconds(response.headers))

        return self.retry.run(what, once, retry_unanswered=retry_unanswered, route=f"{method} {path}")

    def get_json(self, what: str, path: str, params: dict | None = None, *,
                 accept: frozenset[int] = frozenset()) -> tuple[int, Any]:
        """GET a JSON resource: (status, body). 4xx other than ``accept`` raise DeliveryFailure."""
        response = self.request(what, "GET", path, params=params, accept=accept)
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
        return self.request(what, "POST", path, body=body, headers=headers, retry_unanswered=retry_unanswered,
                         doubtful=doubtful, accept=accept)

    def post_json(self, what: str, path: str, body: bytes, *, retry_unanswered: bool = True,
                  doubtful: frozenset[int] = frozenset()) -> Any:
        """POST a JSON body (already encoded) and return the decoded 2xx answer, with the retry
        policy of ``post`` (over the keep-alive connections of ``FastPosts`` when usable)."""
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
                raise Retryable(DeliveryFailure(what, f"no answer ({type(exc).__name__})", in_doubt=True)) from None
            if 200 <= status < 300:
                try:
                    return orjson.loads(data) if data else None
                except orjson.JSONDecodeError:
                    raise DeliveryFailure(what, f"HTTP {status}: the answer is not JSON", status=status,
                                          in_doubt=True) from None
            failure = DeliveryFailure(what, f"HTTP {status}: {short(data.decode('utf-8', 'replace'))}",
                                      status=status, in_doubt=status in doubtful)
            if status not in RETRYABLE_STATUS:
                raise failure
            raise Retryable(failure, retry_after_seconds(headers))

        return self.retry.run(what, once, retry_unanswered=retry_unanswered, route=f"POST {path}")
