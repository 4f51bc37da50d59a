"""A local Langfuse stand-in server, one mode per server generation (``rules.py``).

No Langfuse server can run here, so tests run the REAL ``langfuse`` SDK over REAL HTTP
against this standard-library server (``http.server.ThreadingHTTPServer`` on 127.0.0.1,
ephemeral port, background thread). Request bodies are validated by the rules the real
server applies, read in its source (langfuse/langfuse, August 2026, v4.16.0; ``rules.py``
names each file), and, for the SDK 5 forms, with the SDK's own generated request types
(``langfuse/api/**/types``); responses are shaped so the SDK's pydantic types parse them.

Endpoints by mode (``v4`` = v4 events_only with the v4 reads, ``v3`` = v3 legacy mode,
``sdk5`` = what SDK 5.0.4 targets; "404" = answered like the real server answers there):

=======  ========================================  ======  ======  ======  ===========================================
method   path                                      v4      v3      sdk5    source (web/src/pages/api/public/...)
=======  ========================================  ======  ======  ======  ===========================================
GET      /api/public/health (no auth)              yes     yes     yes     health.ts: {status, version}
GET      /api/public/projects                      yes     yes     yes     projects/index.ts
GET/POST /api/public/v2/datasets[/{name}]          yes     yes     yes     v2/datasets/** (upsert by name)
*        /api/public/dataset-items[/{id}]          yes     yes     yes     dataset-items/** (upsert by id, merge)
POST     /api/public/otel/v1/traces                yes     yes     yes     otel/v1/traces/index.ts
POST     /api/public/ingestion                     scores  scores  404     ingestion.ts (events_only: score-create
                                                                           and sdk-log only; v3: the stand-in
                                                                           models score-create only)
POST     /api/public/scores                        object  object  array   scores/index.ts (PostScoresBodyV1: one
                                                                           object, timestamp = arrival); sdk5: the
                                                                           SDK's array form, 202/207
DELETE   /api/public/scores/{id}                   yes     yes     yes     scores/[scoreId].ts (202, queued for
                                                                           any id: scores-api-service.ts)
GET      /api/public/scores                        404     yes     404     scores/index.ts (rejectInEventsOnlyMode)
GET      /api/public/v2/scores                     404     yes     404     v2/scores/index.ts (rejectInEventsOnlyMode)
GET      /api/public/v3/scores                     yes     yes     yes     v3/scores/index.ts
POST     /api/public/dataset-run-items             id      yes     404     dataset-run-items.ts (events_only: a
                                                                           stable id, nothing stored)
GET      /api/public/dataset-run-items             404     yes     404     dataset-run-items.ts (rejectInEventsOnly)
GET      /api/public/experiments                   yes     404     yes     experiments/index.ts (v4 opt-in)
GET      /api/public/experiment-items              yes     404     yes     experiment-items/index.ts (v4 opt-in)
GET      /api/public/v2/observations               yes     404     yes     v2/observations/index.ts (v4 opt-in)
GET      /api/public/observations[/{id}]           404     yes     404     observations/** (rejectInEventsOnlyMode)
GET      /api/public/traces/{id}                   404     yes     404     traces/[traceId].ts (rejectInEventsOnly)
=======  ========================================  ======  ======  ======  ===========================================

Anything else answers 404 and is recorded as unknown (``unknown_requests()``), so tests notice.

Semantics mirrored from the real service: datasets upsert by name; items upsert by id and
keep the fields a request omits (ids unique per project, <= 255 chars; an id already used in
another dataset is a 409); spans are stored by (trace_id, span_id) and every receipt is
counted in ``span_receipts``; a score is a row keyed by (id, UTC day of its timestamp, name)
(``rules.score_day_key``): re-sending it replaces it, another day makes a second row (a
duplicate in reads); v3 dataset run items are never de-duplicated (each POST adds one).
Reads answer at once (a real server lags ingestion by seconds), except, with
``run_item_lag``, v3 dataset run items: those are readable only that many seconds after they
were accepted, as on the real server (the one write there that is not idempotent).
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
from datetime import datetime
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, unquote, urlsplit

from . import rules
from .auth import DatasetRateLimit, basic_auth, check_auth
from .faults import Fault, FaultPlan
from .http_server import Handler, Server
from .messages import ApiError, RequestLog, Response, json_response
from .otlp import nanos_to_iso
from .routes import ROUTES
from .routing import gate_response
from .spans import A_ENVIRONMENT, A_INPUT, A_OUTPUT, A_TRACE_NAME, A_TYPE
from .storage import Storage
from .timestamps import iso, utcnow


class LangfuseStandIn(Storage):
    """In-process Langfuse stand-in.  See the module docstring for the endpoints and
    ``storage.py`` for the stored state tests assert on; besides that:

    * ``requests``: list of :class:`RequestLog`
    * ``internal_errors``: stand-in bugs met while answering (each answered 500)
    * ``faults``: :class:`FaultPlan`
    """

    def __init__(
        self,
        public_key: str = "pk-lf-test",
        secret_key: str = "sk-lf-test",
        project_id: str = "proj-test",
        project_name: str = "stand-in project",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        mode: str = "v4",
        server_version: Optional[str] = None,
        run_item_lag: float = 0.0,
        dataset_rate_limit: Optional[Tuple[int, float]] = None,
    ):
        if mode not in rules.MODES:
            raise ValueError(f"mode must be one of {sorted(rules.MODES)}")
        self.mode = rules.MODES[mode]
        self.public_key = public_key
        self.secret_key = secret_key
        self.project_id = project_id
        self.project_name = project_name
        self.server_version = server_version or self.mode.default_version
        # v3: a dataset run item is an ingestion event (publicDatasetService.ts
        # createDatasetRunItemForApi -> processEventBatch), queued with a delay of
        # min(5 s, LANGFUSE_INGESTION_QUEUE_DELAY_MS) - 15 s around midnight UTC -
        # (packages/shared/src/server/ingestion/processEventBatch.ts getDelay), then written to
        # ClickHouse in batches (worker/src/env.ts LANGFUSE_INGESTION_CLICKHOUSE_WRITE_INTERVAL_MS):
        # GET /api/public/dataset-run-items does not see it for that long.
        self.run_item_lag = run_item_lag
        self.dataset_rate_limit = dataset_rate_limit  # (points, seconds): see auth.DatasetRateLimit
        self._rate_limit = DatasetRateLimit(*dataset_rate_limit) if dataset_rate_limit is not None else None
        self._host = host
        self._port = port
        self._server: Optional[Server] = None
        self._thread: Optional[threading.Thread] = None
        self._good_auth = basic_auth(public_key, secret_key)
        self.faults = FaultPlan()
        self.requests: List[RequestLog] = []
        super().__init__()

    # ------------------------------------------------------------------ lifecycle
    def clear(self) -> None:
        """Forget all stored data, request logs and pending faults."""
        with self._lock:
            super().clear()
            self.requests = []
            self.internal_errors: List[str] = []
            self.faults.clear()

    def start(self) -> "LangfuseStandIn":
        if self._server is not None:
            return self
        self._server = Server((self._host, self._port), self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
            name="langfuse-standin", daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        with server.conn_lock:
            conns = list(server.open_connections)
        for conn in conns:  # end keep-alive connections so nothing is served after stop()
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> "LangfuseStandIn":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("LangfuseStandIn is not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self.port}"

    # ------------------------------------------------------------------ test helpers
    def add_trace(
        self,
        trace_id: str,
        root_span_id: str,
        name: str = "agent-run",
        *,
        start_time: Optional[datetime] = None,
        end_time: Optional[datetime] = None,
        environment: str = "default",
        input: Any = None,
        output: Any = None,
        attributes: Optional[Dict[str, Any]] = None,
    ) -> Dict[str, Any]:
        """Pre-seed an existing execution trace (e.g. the Agent's own telemetry).

        The root span is visible to every read endpoint (v2 observations, v1 traces /
        observations, experiment derivation) but is kept out of ``spans`` and
        ``span_receipts`` so tests only see what the code under test sent.
        """
        if not re.fullmatch(r"[0-9a-f]{32}", trace_id):
            raise ValueError("trace_id must be 32 lowercase hex chars")
        if not re.fullmatch(r"[0-9a-f]{16}", root_span_id):
            raise ValueError("root_span_id must be 16 lowercase hex chars")
        start = start_time or utcnow()
        end = end_time or start
        attrs: Dict[str, Any] = {A_TYPE: "agent", A_TRACE_NAME: name, A_ENVIRONMENT: environment}
        if input is not None:
            attrs[A_INPUT] = input if isinstance(input, str) else json.dumps(input)
        if output is not None:
            attrs[A_OUTPUT] = output if isinstance(output, str) else json.dumps(output)
        attrs.update(attributes or {})
        s_ns, e_ns = int(start.timestamp() * 1e9), int(end.timestamp() * 1e9)
        span = {
            "trace_id": trace_id, "span_id": root_span_id, "parent_span_id": None, "name": name,
            "kind": 1, "start_time_unix_nano": s_ns, "end_time_unix_nano": e_ns,
            "start_time": nanos_to_iso(s_ns), "end_time": nanos_to_iso(e_ns), "attributes": attrs,
            "status": {"code": 0, "message": ""}, "events": [], "resource_attributes": {},
            "scope": {"name": "seed", "version": "", "attributes": {}}, "seeded": True,
            "ingestion_version": None, "received_at": iso(utcnow()),
        }
        self.seed_span(span)
        return span

    def experiment_id(self, dataset_id: str, run_name: str) -> str:
        """The deterministic experiment id the SDK/server derive (client.py _create_experiment_id)."""
        payload = json.dumps(
            ["langfuse-experiment-v1", self.project_id, dataset_id, run_name],
            separators=(",", ":"), ensure_ascii=False,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]

    def unknown_requests(self) -> List[RequestLog]:
        with self._lock:
            return [r for r in self.requests if r.route is None and r.fault not in ("status", "drop")]

    def requests_to(self, path_prefix: str, method: Optional[str] = None) -> List[RequestLog]:
        with self._lock:
            return [
                r for r in self.requests
                if r.path.startswith(path_prefix) and (method is None or r.method == method.upper())
            ]

    # ------------------------------------------------------------------ serving
    def serve_request(self, h: Handler) -> None:
        """One request read by the HTTP loop: logged, faults applied, routed, answered."""
        started = time.monotonic()
        method = h.command.upper()
        split = urlsplit(h.path)
        headers = h.headers
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        try:
            body = h.read_body()
        except (OSError, ValueError):
            h.close_connection = True
            return
        log = RequestLog(method, split.path, query, None, len(body), headers=headers)
        with self._lock:  # logged in arrival order; status/completed are filled in below
            self.requests.append(log)
        fault: Optional[Fault] = self.faults.take(method, split.path, len(body))
        resp: Optional[Response] = None
        try:
            if fault is not None:
                log.fault = fault.kind
            if fault is not None and fault.kind == "delay":
                time.sleep(fault.seconds)
            if fault is not None and fault.kind == "status":
                extra = {}
                if fault.retry_after is not None or fault.status == 429:
                    ra = fault.retry_after if fault.retry_after is not None else 1
                    extra["Retry-After"] = str(int(ra)) if float(ra).is_integer() else str(ra)
                resp = json_response(fault.status, {"message": f"stand-in injected fault: HTTP {fault.status}"}, extra)
            elif fault is not None and fault.kind == "drop" and not fault.after_processing:
                resp = None
            else:
                resp, log.route = self.handle(method, h.path, headers, body)
            if fault is not None and fault.kind == "drop":
                resp = None
            else:
                assert resp is not None
                log.status = resp.status
                log.response_bytes = len(resp.body)
                if resp.status >= 400:
                    try:
                        log.error = json.loads(resp.body).get("message")
                    except (ValueError, AttributeError):
                        log.error = None
        finally:
            # Completed before answering, so a client that got its answer sees the final log.
            log.duration = time.monotonic() - started
            log.completed = True
        if resp is None:  # drop: close the socket without any response
            h.drop()
            return
        h.write_response(resp, head=method == "HEAD")

    def handle(self, method: str, raw_path: str, headers: Dict[str, str], body: bytes
               ) -> Tuple[Response, Optional[str]]:
        """Route one request; returns (response, route name or None for unknown)."""
        split = urlsplit(raw_path)
        path = split.path
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        if method == "HEAD":
            method = "GET"
        path_known = False
        for r_method, pattern, name, fn, needs_auth, gate in ROUTES:
            m = pattern.match(path)
            if not m:
                continue
            path_known = True
            if r_method != method:
                continue
            try:
                gated = gate_response(self.mode, gate, "before")
                if gated is not None:
                    return gated, name
                if needs_auth:
                    check_auth(headers, self.public_key, self.secret_key, self._good_auth)
                    limited = self._rate_limit.check(path) if self._rate_limit is not None else None
                    if limited is not None:
                        return limited, name
                gated = gate_response(self.mode, gate, "after")
                if gated is not None:
                    return gated, name
                params = {k: unquote(v) for k, v in m.groupdict().items()}
                with self._lock:
                    return fn(self, query=query, headers=headers, body=body, **params), name
            except ApiError as exc:
                payload: Dict[str, Any] = {"message": exc.message}
                if exc.details is not None:
                    payload["error"] = exc.details
                extra = {"WWW-Authenticate": 'Basic realm="Langfuse"'} if exc.status == 401 else {}
                return json_response(exc.status, payload, extra), name
            except Exception as exc:  # a stand-in bug: answer 500 and keep it for assertions
                self.internal_errors.append(f"{method} {path}: {exc!r}")
                return json_response(500, {"message": f"stand-in internal error: {exc!r}"}), name
        if path_known:
            return json_response(405, {"message": f"Method {method} not allowed on {path}"}), None
        return json_response(404, {"message": f"stand-in: no endpoint {method} {path}"}), None
