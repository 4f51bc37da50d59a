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
DELETE   /api/public/scores/{id}                   yes     yes     yes     scores/[scoreId].ts
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

import base64
import binascii
import hashlib
import json
import math
import re
import socket
import threading
import time
import typing
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
import socketserver
from http import HTTPStatus
from typing import Any, Callable, Dict, List, Optional, Set, Tuple
from urllib.parse import parse_qs, unquote, urlsplit

import orjson
import pydantic
from langfuse.api.core.pydantic_utilities import parse_obj_as
from langfuse.api.core.serialization import FieldMetadata
from langfuse.api.scores.types.create_score_request import CreateScoreRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceResponse,
)

from . import rules
from .faults import Fault, FaultPlan
from .otlp import OtlpDecodeError, decode_json, decode_protobuf, decompress, nanos_to_iso

SCORES_BODY_LIMIT_BYTES = 1_048_576  # Next.js default "1mb" body limit on /api/public/scores
MAX_DATASET_ITEM_ID_LENGTH = 255

# Span attribute keys (langfuse/_client/attributes.py, LangfuseOtelSpanAttributes)
A_TRACE_NAME = "langfuse.trace.name"
A_USER_ID = "user.id"
A_SESSION_ID = "session.id"
A_TRACE_TAGS = "langfuse.trace.tags"
A_TRACE_PUBLIC = "langfuse.trace.public"
A_TRACE_METADATA = "langfuse.trace.metadata"
A_TYPE = "langfuse.observation.type"
A_METADATA = "langfuse.observation.metadata"
A_LEVEL = "langfuse.observation.level"
A_STATUS_MESSAGE = "langfuse.observation.status_message"
A_INPUT = "langfuse.observation.input"
A_OUTPUT = "langfuse.observation.output"
A_MODEL = "langfuse.observation.model.name"
A_MODEL_PARAMETERS = "langfuse.observation.model.parameters"
A_USAGE = "langfuse.observation.usage_details"
A_COST = "langfuse.observation.cost_details"
A_PROMPT_NAME = "langfuse.observation.prompt.name"
A_PROMPT_VERSION = "langfuse.observation.prompt.version"
A_COMPLETION_START = "langfuse.observation.completion_start_time"
A_ENVIRONMENT = "langfuse.environment"
A_RELEASE = "langfuse.release"
A_VERSION = "langfuse.version"
A_AS_ROOT = "langfuse.internal.as_root"
A_IS_APP_ROOT = "langfuse.internal.is_app_root"
A_EXP_ID = "langfuse.experiment.id"
A_EXP_NAME = "langfuse.experiment.name"
A_EXP_DESCRIPTION = "langfuse.experiment.description"
A_EXP_METADATA = "langfuse.experiment.metadata"
A_EXP_DATASET_ID = "langfuse.experiment.dataset.id"
A_EXP_ITEM_ID = "langfuse.experiment.item.id"
A_EXP_ITEM_VERSION = "langfuse.experiment.item.version"
A_EXP_ITEM_EXPECTED = "langfuse.experiment.item.expected_output"
A_EXP_ITEM_METADATA = "langfuse.experiment.item.metadata"
A_EXP_ITEM_ROOT = "langfuse.experiment.item.root_observation_id"

SpanKey = Tuple[str, str]


# =============================================================================== helpers


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


_ISO_CACHE: Dict[datetime, str] = {}


def _iso(dt: datetime) -> str:
    text = _ISO_CACHE.get(dt)
    if text is None:
        utc = dt.astimezone(timezone.utc)
        text = utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
        if len(_ISO_CACHE) < 100_000:
            _ISO_CACHE[dt] = text
    return text


def _parse_iso(value: str) -> datetime:
    return datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))


def _span_start(span: Dict[str, Any]) -> datetime:
    return datetime.fromtimestamp(span["start_time_unix_nano"] / 1e9, tz=timezone.utc)


def _span_end(span: Dict[str, Any]) -> Optional[datetime]:
    end = span.get("end_time_unix_nano") or 0
    return datetime.fromtimestamp(end / 1e9, tz=timezone.utc) if end else None


def _maybe_json(value: Any) -> Any:
    """Decode a JSON string attribute; leave anything else (or non-JSON text) as it is."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _csv(query: Dict[str, str], key: str, *, upper: bool = False) -> Optional[Set[str]]:
    raw = query.get(key)
    if raw is None or raw == "":
        return None
    values = {v.strip() for v in raw.split(",") if v.strip()}
    return {v.upper() for v in values} if upper else values


class ApiError(Exception):
    def __init__(self, status: int, message: str, details: Any = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.details = details


@dataclass
class Response:
    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: Dict[str, str] = field(default_factory=dict)


def _json(status: int, obj: Any, headers: Optional[Dict[str, str]] = None) -> Response:
    try:
        body = orjson.dumps(obj, default=str)
    except TypeError:  # e.g. integers beyond 64 bits
        body = json.dumps(obj, separators=(",", ":"), default=str).encode("utf-8")
    return Response(status, body, "application/json", dict(headers or {}))


@dataclass
class RequestLog:
    method: str
    path: str
    query: Dict[str, str]
    status: Optional[int]  # None when dropped without a response (or still in flight)
    bytes: int  # request body size on the wire (before gzip decoding)
    response_bytes: int = 0
    headers: Dict[str, str] = field(default_factory=dict)  # lower-cased names
    route: Optional[str] = None  # None: unknown endpoint / method (see unknown_requests())
    fault: Optional[str] = None  # "status" | "delay" | "drop" when a fault fired
    error: Optional[str] = None  # message of a 4xx/5xx answer
    duration: float = 0.0
    completed: bool = False  # False while the request is still being handled (e.g. delayed)


# ------------------------------------------------------------------- request validation


def _aliases(model: type) -> Dict[str, str]:
    """python field name -> wire alias, read from the generated model's FieldMetadata."""
    out: Dict[str, str] = {}
    hints = typing.get_type_hints(model, include_extras=True)
    for name, hint in hints.items():
        for meta in getattr(hint, "__metadata__", ()):
            if isinstance(meta, FieldMetadata):
                out[name] = meta.alias
    return out


_ALIAS_CACHE: Dict[type, Dict[str, str]] = {}


def _validate(model: type, body: Any, what: str) -> Any:
    """Validate a JSON body with an SDK-generated request type; raise ApiError(400)."""
    if not isinstance(body, dict):
        raise ApiError(400, f"Invalid request data: {what} must be a JSON object")
    aliases = _ALIAS_CACHE.setdefault(model, _aliases(model))
    wrong = [f"{py!r} (expected {alias!r})" for py, alias in aliases.items() if py in body and alias not in body]
    if wrong:
        raise ApiError(400, f"Invalid request data: unknown field(s) {', '.join(wrong)} in {what}")
    try:
        return parse_obj_as(model, body)
    except pydantic.ValidationError as exc:
        issues = [
            {"path": list(err.get("loc", ())), "message": err.get("msg"), "code": err.get("type")}
            for err in exc.errors()
        ]
        summary = "; ".join(f"{'.'.join(map(str, i['path']))}: {i['message']}" for i in issues)
        raise ApiError(400, f"Invalid request data for {what}: {summary}", issues) from exc


_ENV_RE = re.compile(r"^(?!langfuse)[a-z0-9_-]{1,40}$")


# =============================================================================== server


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr: Tuple[str, int], standin: "LangfuseStandIn"):
        self.standin = standin
        self.open_connections: Set[socket.socket] = set()
        self.conn_lock = threading.Lock()
        super().__init__(addr, _Handler)


_REASONS = {code: phrase for code, phrase in ((s.value, s.phrase) for s in HTTPStatus)}


class _Handler(socketserver.StreamRequestHandler):
    """A lean HTTP/1.1 server loop (keep-alive, Content-Length or chunked bodies): parsing a
    request costs a few microseconds, so a 10,000-attempt publication measures the publisher,
    not ``http.server``'s header parsing."""

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
            self.server.standin._serve_http(self)  # type: ignore[attr-defined]

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


class LangfuseStandIn:
    """In-process Langfuse stand-in.  See the module docstring for the endpoints.

    State for assertions (all plain dicts in the API's JSON shape, camelCase keys):

    * ``datasets``: name -> Dataset
    * ``dataset_items``: id -> DatasetItem
    * ``spans``: (trace_id, span_id) -> decoded span (hex ids, ``attributes`` as Python values)
    * ``span_receipts``: Counter (trace_id, span_id) -> how many times the span was received
    * ``seeded_spans``: spans added with :meth:`add_trace` (served by reads, not in ``spans``)
    * ``scores``: id -> latest stored score; ``score_rows``: (id, UTC day, name) -> score (what
      reads return); ``score_receipts``: Counter id -> receipts
    * ``dataset_runs`` / ``dataset_run_items`` (v3 mode): runs by (dataset id, name), and every
      run item accepted (a duplicate POST is a second entry, as on the real server)
    * ``ingestion_events``: Counter event type -> events accepted at /api/public/ingestion
    * ``requests``: list of :class:`RequestLog`
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
        self.dataset_rate_limit = dataset_rate_limit  # (points, seconds): see _rate_limit
        self._window_ends, self._window_used = 0.0, 0
        self._host = host
        self._port = port
        self._server: Optional[_Server] = None
        self._thread: Optional[threading.Thread] = None
        self._route_table: Optional[list] = None
        self._good_auth = "Basic " + base64.b64encode(f"{public_key}:{secret_key}".encode()).decode()
        self._lock = threading.RLock()
        self.faults = FaultPlan()
        self.requests: List[RequestLog] = []
        self.clear()

    # ------------------------------------------------------------------ lifecycle
    def clear(self) -> None:
        """Forget all stored data, request logs and pending faults."""
        with self._lock:
            self.datasets: Dict[str, Dict[str, Any]] = {}
            self.dataset_items: Dict[str, Dict[str, Any]] = {}
            self.spans: Dict[SpanKey, Dict[str, Any]] = {}
            self._by_trace: Dict[str, Dict[SpanKey, Dict[str, Any]]] = {}  # spans and seeded spans by trace id
            self.span_receipts: typing.Counter[SpanKey] = Counter()
            self.seeded_spans: Dict[SpanKey, Dict[str, Any]] = {}
            self.scores: Dict[str, Dict[str, Any]] = {}
            self.score_rows: Dict[Tuple[str, str, str], Dict[str, Any]] = {}
            self.score_receipts: typing.Counter[str] = Counter()
            self.dataset_runs: Dict[Tuple[str, str], Dict[str, Any]] = {}  # (dataset id, run name) -> run (v3)
            self.dataset_run_items: List[Dict[str, Any]] = []  # every accepted POST (v3): duplicates show
            self._run_item_visible: Dict[str, float] = {}  # run item id -> when reads see it (monotonic)
            self.ingestion_events: typing.Counter[str] = Counter()  # event type -> accepted events
            self.requests = []
            self.internal_errors: List[str] = []
            self.faults.clear()

    def start(self) -> "LangfuseStandIn":
        if self._server is not None:
            return self
        self._server = _Server((self._host, self._port), self)
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
        start = start_time or _utcnow()
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
            "ingestion_version": None, "received_at": _iso(_utcnow()),
        }
        with self._lock:
            self.seeded_spans[(trace_id, root_span_id)] = span
            self._by_trace.setdefault(trace_id, {}).setdefault((trace_id, root_span_id), span)
        return span

    def experiment_id(self, dataset_id: str, run_name: str) -> str:
        """The deterministic experiment id the SDK/server derive (client.py _create_experiment_id)."""
        payload = json.dumps(
            ["langfuse-experiment-v1", self.project_id, dataset_id, run_name],
            separators=(",", ":"), ensure_ascii=False,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]

    def find_spans(self, *, name: Optional[str] = None, trace_id: Optional[str] = None,
                   **attributes: Any) -> List[Dict[str, Any]]:
        """Received spans filtered by name / trace id / exact attribute values.

        Attribute keys use ``__`` for ``.``: ``find_spans(langfuse__experiment__id="abc")``.
        """
        want = {k.replace("__", "."): v for k, v in attributes.items()}
        with self._lock:
            spans = list(self.spans.values())
        return [
            s for s in spans
            if (name is None or s["name"] == name)
            and (trace_id is None or s["trace_id"] == trace_id)
            and all(s["attributes"].get(k) == v for k, v in want.items())
        ]

    def duplicate_span_receipts(self) -> Dict[SpanKey, int]:
        with self._lock:
            return {k: n for k, n in self.span_receipts.items() if n > 1}

    def unknown_requests(self) -> List[RequestLog]:
        with self._lock:
            return [r for r in self.requests if r.route is None and r.fault not in ("status", "drop")]

    def requests_to(self, path_prefix: str, method: Optional[str] = None) -> List[RequestLog]:
        with self._lock:
            return [
                r for r in self.requests
                if r.path.startswith(path_prefix) and (method is None or r.method == method.upper())
            ]

    # ------------------------------------------------------------------ HTTP plumbing
    def _serve_http(self, h: _Handler) -> None:
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
                resp = _json(fault.status, {"message": f"stand-in injected fault: HTTP {fault.status}"}, extra)
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
            h.close_connection = True
            try:
                h.wfile.flush()
                h.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        self._write(h, resp, head=method == "HEAD")

    @staticmethod
    def _write(h: _Handler, resp: Response, head: bool = False) -> None:
        lines = [f"HTTP/1.1 {resp.status} {_REASONS.get(resp.status, '')}",
                 "Server: LangfuseStandIn/5", f"Content-Type: {resp.content_type}",
                 f"Content-Length: {len(resp.body)}"]
        lines += [f"{k}: {v}" for k, v in resp.headers.items()]
        if h.close_connection:
            lines.append("Connection: close")
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        try:
            h.wfile.write(data + resp.body if not head and resp.body else data)
            h.wfile.flush()
        except OSError:  # client went away (e.g. timed out during a delay fault)
            h.close_connection = True

    # ------------------------------------------------------------------ routing
    def _routes(self) -> List[Tuple[str, "re.Pattern[str]", str, Callable[..., Response], bool, Optional[str]]]:
        if self._route_table is None:
            self._route_table = self._make_routes()
        return self._route_table

    def _make_routes(self) -> List[Tuple[str, "re.Pattern[str]", str, Callable[..., Response], bool, Optional[str]]]:
        """(method, path, name, handler, needs auth, gate). Gates (``rules.py``): ``legacy`` -
        404 before auth in events_only mode (``rejectInEventsOnlyMode``); ``v4`` - 404 after
        auth without the v4 opt-in; ``ingestion`` / ``run_items`` - the endpoint exists only in
        modes that have it."""
        R = re.compile
        return [
            ("GET", R(r"^/api/public/health/?$"), "health", self._health, False, None),
            ("GET", R(r"^/api/public/projects$"), "projects.get", self._projects, True, None),
            ("GET", R(r"^/api/public/v2/datasets$"), "datasets.list", self._datasets_list, True, None),
            ("POST", R(r"^/api/public/v2/datasets$"), "datasets.create", self._datasets_create, True, None),
            ("GET", R(r"^/api/public/v2/datasets/(?P<name>[^/]+)$"), "datasets.get", self._datasets_get, True, None),
            ("GET", R(r"^/api/public/dataset-items$"), "dataset_items.list", self._items_list, True, None),
            ("POST", R(r"^/api/public/dataset-items$"), "dataset_items.create", self._items_create, True, None),
            ("GET", R(r"^/api/public/dataset-items/(?P<id>[^/]+)$"), "dataset_items.get", self._items_get, True, None),
            ("DELETE", R(r"^/api/public/dataset-items/(?P<id>[^/]+)$"), "dataset_items.delete",
             self._items_delete, True, None),
            ("POST", R(r"^/api/public/otel/v1/traces$"), "otel.traces", self._otel, True, None),
            ("POST", R(r"^/api/public/ingestion$"), "ingestion.batch", self._ingestion, True, "ingestion"),
            ("POST", R(r"^/api/public/scores$"), "scores.create", self._scores_create, True, None),
            ("GET", R(r"^/api/public/scores$"), "scores.list_v1", self._scores_v1, True, "legacy"),
            ("DELETE", R(r"^/api/public/scores/(?P<id>[^/]+)$"), "scores.delete", self._scores_delete, True, None),
            ("GET", R(r"^/api/public/v2/scores$"), "scores.list_v2", self._scores_v2, True, "legacy"),
            ("GET", R(r"^/api/public/v3/scores$"), "scores.get_many", self._scores_v3, True, None),
            ("POST", R(r"^/api/public/dataset-run-items$"), "dataset_run_items.create", self._run_items_create,
             True, "run_items"),
            ("GET", R(r"^/api/public/dataset-run-items$"), "dataset_run_items.list", self._run_items_list, True,
             "legacy"),
            ("GET", R(r"^/api/public/experiments$"), "experiments.list", self._experiments, True, "v4:experiments"),
            ("GET", R(r"^/api/public/experiment-items$"), "experiments.list_items", self._experiment_items, True,
             "v4:experiment items"),
            ("GET", R(r"^/api/public/v2/observations$"), "observations.get_many", self._observations_v2, True,
             "v4:observations v2"),
            ("GET", R(r"^/api/public/observations$"), "observations.list_v1", self._observations_v1_list, True,
             "legacy"),
            ("GET", R(r"^/api/public/traces/(?P<id>[^/]+)$"), "traces.get_v1", self._trace_v1, True, "legacy"),
            ("GET", R(r"^/api/public/observations/(?P<id>[^/]+)$"), "observations.get_v1",
             self._observation_v1_route, True, "legacy"),
        ]

    def _gate(self, gate: Optional[str], stage: str) -> Optional[Response]:
        """The 404 a gated route answers in this mode at this stage ("before"/"after" auth), if any."""
        if gate is None:
            return None
        mode = self.mode
        if gate == "legacy" and mode.events_only and stage == "before":
            return _json(404, {"message": rules.EVENTS_ONLY_404})
        if gate.startswith("v4:") and not mode.v4_reads and stage == "after":
            return _json(404, {"message": rules.V4_ONLY_404.format(what=gate[3:])})
        if gate == "ingestion" and not mode.ingestion and stage == "before":
            return _json(404, {"message": "stand-in (sdk5 mode): POST /api/public/ingestion is not offered"})
        if gate == "run_items" and not mode.run_item_writes and stage == "before":
            return _json(404, {"message": "stand-in (sdk5 mode): POST /api/public/dataset-run-items is not offered"})
        return None

    def handle(self, method: str, raw_path: str, headers: Dict[str, str], body: bytes
               ) -> Tuple[Response, Optional[str]]:
        """Route one request; returns (response, route name or None for unknown)."""
        split = urlsplit(raw_path)
        path = split.path
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        if method == "HEAD":
            method = "GET"
        path_known = False
        for r_method, pattern, name, fn, needs_auth, gate in self._routes():
            m = pattern.match(path)
            if not m:
                continue
            path_known = True
            if r_method != method:
                continue
            try:
                gated = self._gate(gate, "before")
                if gated is not None:
                    return gated, name
                if needs_auth:
                    self._check_auth(headers)
                    limited = self._rate_limit(path)
                    if limited is not None:
                        return limited, name
                gated = self._gate(gate, "after")
                if gated is not None:
                    return gated, name
                params = {k: unquote(v) for k, v in m.groupdict().items()}
                with self._lock:
                    return fn(query=query, headers=headers, body=body, **params), name
            except ApiError as exc:
                payload: Dict[str, Any] = {"message": exc.message}
                if exc.details is not None:
                    payload["error"] = exc.details
                extra = {"WWW-Authenticate": 'Basic realm="Langfuse"'} if exc.status == 401 else {}
                return _json(exc.status, payload, extra), name
            except Exception as exc:  # a stand-in bug: answer 500 and keep it for assertions
                self.internal_errors.append(f"{method} {path}: {exc!r}")
                return _json(500, {"message": f"stand-in internal error: {exc!r}"}), name
        if path_known:
            return _json(405, {"message": f"Method {method} not allowed on {path}"}), None
        return _json(404, {"message": f"stand-in: no endpoint {method} {path}"}), None

    def _check_auth(self, headers: Dict[str, str]) -> None:
        auth = headers.get("authorization") or ""
        if auth == self._good_auth:
            return
        if not auth.lower().startswith("basic "):
            raise ApiError(401, "No authorization header")
        try:
            decoded = base64.b64decode(auth[6:].strip(), validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            raise ApiError(401, "Invalid authorization header") from None
        pk, _, sk = decoded.partition(":")
        if pk != self.public_key or sk != self.secret_key:
            raise ApiError(401, "Invalid credentials. Confirm that you've configured the correct host.")

    #: routes whose handler declares ``rateLimitResource: "datasets"`` (web/src/pages/api/public/
    #: dataset-items/*, dataset-run-items.ts, datasets/**, v2/datasets/**)
    _DATASETS_RESOURCE = ("/api/public/dataset-items", "/api/public/dataset-run-items", "/api/public/datasets",
                          "/api/public/v2/datasets")

    def _rate_limit(self, path: str) -> Optional[Response]:
        """Langfuse Cloud's limit on the "datasets" resource, when ``dataset_rate_limit`` =
        (points, seconds) is set (web/src/features/public-api/server/RateLimitService.ts: off
        without NEXT_PUBLIC_LANGFUSE_CLOUD_REGION, i.e. on self-hosted servers; cloud:hobby 100
        per 60 s, core/pro/team/enterprise 1000 per 60 s; a fixed window per organisation,
        RateLimiterRedis, checked after authentication; a refused request answers 429 with
        ``Retry-After: ceil(msBeforeNext / 1000)``)."""
        if self.dataset_rate_limit is None or not path.startswith(self._DATASETS_RESOURCE):
            return None
        points, seconds = self.dataset_rate_limit
        now = time.monotonic()
        with self._lock:
            if now >= self._window_ends:
                self._window_ends, self._window_used = now + seconds, 0
            self._window_used += 1
            if self._window_used <= points:
                return None
            wait = self._window_ends - now
        return _json(429, {"message": "Rate limit exceeded"}, {"Retry-After": str(max(1, math.ceil(wait)))})

    @staticmethod
    def _body_json(body: bytes, headers: Dict[str, str]) -> Any:
        try:
            raw = decompress(body, headers.get("content-encoding"))
        except OtlpDecodeError as exc:
            raise ApiError(400, str(exc)) from exc
        if not raw:
            raise ApiError(400, "Invalid request data: empty body")
        try:
            return orjson.loads(raw)
        except ValueError as exc:
            raise ApiError(400, f"Invalid request data: body is not JSON ({exc})") from exc

    @staticmethod
    def _page(query: Dict[str, str], default_limit: int = 50, max_limit: Optional[int] = None) -> Tuple[int, int]:
        try:
            page = int(query.get("page") or 1)
            limit = int(query.get("limit") or default_limit)
        except ValueError:
            raise ApiError(400, "page and limit must be integers") from None
        if page < 1 or limit < 1 or (max_limit is not None and limit > max_limit):
            raise ApiError(400, f"invalid page/limit ({page}/{limit})")
        return page, limit

    @staticmethod
    def _paginate(rows: List[Any], page: int, limit: int) -> Tuple[List[Any], Dict[str, int]]:
        total = len(rows)
        meta = {"page": page, "limit": limit, "totalItems": total, "totalPages": math.ceil(total / limit)}
        return rows[(page - 1) * limit: page * limit], meta

    @staticmethod
    def _cursor_page(rows: List[Any], query: Dict[str, str], default_limit: int, max_limit: int
                     ) -> Tuple[List[Any], Dict[str, Any]]:
        try:
            limit = int(query.get("limit") or default_limit)
        except ValueError:
            raise ApiError(400, "limit must be an integer") from None
        if limit < 1 or limit > max_limit:
            raise ApiError(400, f"limit must be between 1 and {max_limit}")
        offset = 0
        if query.get("cursor"):
            try:
                raw = query["cursor"]
                offset = int(json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))["offset"])
            except (ValueError, KeyError, TypeError, binascii.Error):
                raise ApiError(400, "invalid cursor") from None
        chunk = rows[offset: offset + limit]
        meta: Dict[str, Any] = {"limit": limit}
        if offset + limit < len(rows):
            meta["cursor"] = base64.urlsafe_b64encode(
                json.dumps({"v": 1, "offset": offset + limit}).encode()
            ).decode().rstrip("=")
        return chunk, meta

    @staticmethod
    def _query_dt(query: Dict[str, str], key: str, required: bool = False) -> Optional[datetime]:
        raw = query.get(key)
        if not raw:
            if required:
                raise ApiError(400, f"Invalid request data: {key} is required")
            return None
        try:
            dt = _parse_iso(raw)
        except ValueError:
            raise ApiError(400, f"Invalid request data: {key} is not an ISO 8601 datetime") from None
        return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)

    @staticmethod
    def _fields(query: Dict[str, str], allowed: Set[str], default: Set[str]) -> Set[str]:
        raw = query.get("fields")
        if not raw:
            return set(default)
        groups = {g.strip() for g in raw.split(",") if g.strip()}
        unknown = groups - allowed
        if unknown:
            raise ApiError(400, f"Invalid fields: {sorted(unknown)}; allowed: {sorted(allowed)}")
        return groups

    # ------------------------------------------------------------------ health / projects
    def _health(self, **_: Any) -> Response:
        return _json(200, {"status": "OK", "version": self.server_version})

    def _projects(self, **_: Any) -> Response:
        return _json(200, {"data": [{
            "id": self.project_id, "name": self.project_name,
            "organization": {"id": "org-standin", "name": "stand-in org"},
            "metadata": {},
        }]})

    # ------------------------------------------------------------------ datasets
    def _datasets_list(self, query: Dict[str, str], **_: Any) -> Response:
        page, limit = self._page(query)
        rows, meta = self._paginate(list(self.datasets.values()), page, limit)
        return _json(200, {"data": rows, "meta": meta})

    def _datasets_create(self, body: bytes, headers: Dict[str, str], **_: Any) -> Response:
        payload = self._body_json(body, headers)
        try:
            rules.validate_dataset(payload)
        except rules.RuleError as exc:
            raise ApiError(exc.status, exc.message) from None
        name = payload["name"]
        now = _iso(_utcnow())
        ds = self.datasets.get(name)
        if ds is None:
            ds = {
                "id": "ds-" + uuid.uuid4().hex[:20], "name": name, "description": None,
                "metadata": None, "inputSchema": None, "expectedOutputSchema": None,
                "projectId": self.project_id, "createdAt": now, "updatedAt": now,
            }
            self.datasets[name] = ds
        for key in ("description", "metadata", "inputSchema", "expectedOutputSchema"):
            if payload.get(key) is not None:
                ds[key] = payload[key]
        ds["updatedAt"] = now
        return _json(200, ds)

    def _datasets_get(self, name: str, **_: Any) -> Response:
        ds = self.datasets.get(name)
        if ds is None:
            raise ApiError(404, f"Dataset not found: {name!r}")
        return _json(200, ds)

    # ------------------------------------------------------------------ dataset items
    def _items_create(self, body: bytes, headers: Dict[str, str], **_: Any) -> Response:
        payload = self._body_json(body, headers)
        try:
            req = rules.validate_dataset_item(payload)
        except rules.RuleError as exc:
            raise ApiError(exc.status, exc.message) from None
        ds = self.datasets.get(req["datasetName"])
        if ds is None:
            raise ApiError(404, f"Dataset not found: {req['datasetName']!r}")
        item_id = req["id"] or str(uuid.uuid4())
        if len(item_id) > MAX_DATASET_ITEM_ID_LENGTH:
            raise ApiError(400, f"Invalid request data: id is longer than {MAX_DATASET_ITEM_ID_LENGTH} chars")
        now = _iso(_utcnow())
        item = self.dataset_items.get(item_id)
        if item is not None and item["datasetId"] != ds["id"]:  # dataset-items.ts upsertDatasetItem: 409
            raise ApiError(409, f"Dataset item id {item_id!r} already exists in another dataset "
                                f"(id {item['datasetId']}) in this project")
        if item is None:
            item = {
                "id": item_id, "status": "ACTIVE", "input": None, "expectedOutput": None, "metadata": None,
                "sourceTraceId": None, "sourceObservationId": None, "datasetId": ds["id"],
                "datasetName": ds["name"], "createdAt": now, "updatedAt": now, "version": now,
                "mediaReferences": [],
            }
            self.dataset_items[item_id] = item
        for key in ("input", "expectedOutput", "metadata", "sourceTraceId", "sourceObservationId", "status"):
            if payload.get(key) is not None:
                item[key] = payload[key]
        item["updatedAt"] = now
        item["version"] = now
        return _json(200, item)

    def _items_list(self, query: Dict[str, str], **_: Any) -> Response:
        page, limit = self._page(query, 50, 100)  # utils/zod.ts publicApiPaginationZod: limit <= 100
        self._query_dt(query, "version")  # accepted (validated) but items are not versioned here
        rows = list(self.dataset_items.values())
        name = query.get("datasetName")
        if name is not None:
            if name not in self.datasets:
                raise ApiError(404, f"Dataset not found: {name!r}")
            rows = [r for r in rows if r["datasetName"] == name]
        for param, key in (("sourceTraceId", "sourceTraceId"), ("sourceObservationId", "sourceObservationId")):
            if query.get(param):
                rows = [r for r in rows if r[key] == query[param]]
        rows, meta = self._paginate(rows, page, limit)
        return _json(200, {"data": rows, "meta": meta})

    def _items_get(self, id: str, **_: Any) -> Response:  # noqa: A002
        item = self.dataset_items.get(id)
        if item is None:
            raise ApiError(404, f"Dataset item not found: {id!r}")
        return _json(200, item)

    def _items_delete(self, id: str, **_: Any) -> Response:  # noqa: A002
        if self.dataset_items.pop(id, None) is None:
            raise ApiError(404, f"Dataset item not found: {id!r}")
        return _json(200, {"message": "Dataset item successfully deleted"})

    # ------------------------------------------------------------------ OTLP traces
    def _otel(self, body: bytes, headers: Dict[str, str], **_: Any) -> Response:
        ctype = (headers.get("content-type") or "").split(";")[0].strip().lower()
        try:
            raw = decompress(body, headers.get("content-encoding"))
            if ctype in ("application/x-protobuf", "application/protobuf"):
                spans = decode_protobuf(raw)
                resp = Response(200, ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf")
            elif ctype == "application/json":
                try:
                    payload = orjson.loads(raw)
                except ValueError as exc:
                    raise OtlpDecodeError(f"body is not JSON: {exc}") from exc
                spans = decode_json(payload)
                resp = _json(200, {})
            else:
                raise ApiError(415, f"Unsupported Content-Type {ctype!r}; use application/x-protobuf or application/json")
        except OtlpDecodeError as exc:
            raise ApiError(400, str(exc)) from exc
        received = _iso(_utcnow())
        for span in spans:
            span["ingestion_version"] = headers.get("x-langfuse-ingestion-version")
            span["received_at"] = received
            key = (span["trace_id"], span["span_id"])
            self.spans[key] = span
            self._by_trace.setdefault(span["trace_id"], {})[key] = span
            self.span_receipts[key] += 1
        return resp

    # ------------------------------------------------------------------ scores
    def _normalize_score(self, body: Any) -> Dict[str, Any]:
        """Validate one score (CreateScoreRequest + the server's extra rules); raise ApiError(400)."""
        if not isinstance(body, dict):
            raise ApiError(400, "score must be a JSON object")
        # The generated model types metadata as a dict, but the API accepts any JSON value
        # there (see score_consumer.py), so metadata is left out of the type check.
        probe = {k: v for k, v in body.items() if k != "metadata"}
        req = _validate(CreateScoreRequest, probe, "CreateScoreRequest")
        if not req.name:
            raise ApiError(400, "name must not be empty")
        if not (req.trace_id or req.session_id or req.dataset_run_id):
            raise ApiError(400, "score needs one of traceId, sessionId or datasetRunId")
        if req.observation_id and not req.trace_id:
            raise ApiError(400, "observationId requires traceId")
        value = body.get("value")
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ApiError(400, "value must be a number or a string")
        data_type = body.get("dataType") or ("CATEGORICAL" if isinstance(value, str) else "NUMERIC")
        if data_type in ("NUMERIC", "BOOLEAN"):
            if isinstance(value, str) or not math.isfinite(value):
                raise ApiError(400, f"{data_type} score value must be a finite number")
            value = float(value)
            if data_type == "BOOLEAN" and value not in (0.0, 1.0):
                raise ApiError(400, "BOOLEAN score value must be 0 or 1")
        else:
            if not isinstance(value, str):
                raise ApiError(400, f"{data_type} score value must be a string")
            if data_type == "TEXT" and not 1 <= len(value) <= 500:
                raise ApiError(400, "TEXT score value must have 1 to 500 characters")
        ts_raw = body.get("timestamp")
        if ts_raw is None:
            ts = _utcnow()
        else:
            try:
                ts = _parse_iso(ts_raw)
            except (ValueError, AttributeError):
                raise ApiError(400, f"timestamp {ts_raw!r} is not an ISO 8601 datetime") from None
            if ts.tzinfo is None:
                raise ApiError(400, f"timestamp {ts_raw!r} has no UTC offset")
        env = body.get("environment")
        if env is not None and not _ENV_RE.match(env):
            raise ApiError(400, f"invalid environment {env!r}")
        now = _iso(_utcnow())
        return {
            "id": body.get("id") or str(uuid.uuid4()), "projectId": self.project_id, "name": req.name,
            "value": value, "dataType": data_type, "source": body.get("source") or "API",
            "timestamp": _iso(ts), "environment": env or "default",
            "traceId": req.trace_id, "observationId": req.observation_id, "sessionId": req.session_id,
            "datasetRunId": req.dataset_run_id, "comment": req.comment, "metadata": body.get("metadata"),
            "configId": req.config_id, "queueId": req.queue_id, "authorUserId": None,
            "createdAt": now, "updatedAt": now,
        }

    def _score_row(self, score: Dict[str, Any], timestamp: datetime, now: Optional[str] = None) -> Dict[str, Any]:
        """A stored score row from a validated body (``rules.validate_score``)."""
        now = now or _iso(_utcnow())
        return {**score, "id": score["id"] or str(uuid.uuid4()), "projectId": self.project_id,
                "timestamp": _iso(timestamp), "authorUserId": None, "createdAt": now, "updatedAt": now}

    def _store_score(self, score: Dict[str, Any]) -> None:
        key = rules.score_day_key(score)
        previous = self.score_rows.get(key)
        if previous is not None:
            score["createdAt"] = previous["createdAt"]
        self.score_rows[key] = score
        self.scores[score["id"]] = score
        self.score_receipts[score["id"]] += 1

    def _scores_create(self, body: bytes, headers: Dict[str, str], **_: Any) -> Response:
        if len(body) > SCORES_BODY_LIMIT_BYTES:
            raise ApiError(413, f"Body exceeded {SCORES_BODY_LIMIT_BYTES} bytes limit")
        payload = self._body_json(body, headers)
        if not self.mode.score_arrays:
            # scores/index.ts: bodySchema PostScoresBodyV1 (one object; an array fails the schema);
            # scores-api-service.ts createScore: the event timestamp is ``new Date()`` (arrival),
            # a ``timestamp`` in the body is not part of the schema and is dropped.
            if not isinstance(payload, dict):
                raise ApiError(400, "Invalid request data: expected a score object (PostScoresBodyV1)")
            try:
                score = rules.validate_score(payload, api="scores")
            except rules.RuleError as exc:
                raise ApiError(exc.status, exc.message) from None
            row = self._score_row(score, _utcnow())
            self._store_score(row)
            return _json(200, {"id": row["id"]})
        if isinstance(payload, dict):  # single score: 200 {id} or 400
            score = self._normalize_score(payload)
            self._store_score(score)
            return _json(200, {"id": score["id"]})
        if not isinstance(payload, list) or not payload:
            raise ApiError(400, "Invalid request data: expected a non-empty JSON array of scores")
        accepted, errors = 0, []
        for i, item in enumerate(payload):
            try:
                score = self._normalize_score(item)
            except ApiError as exc:
                sid = item.get("id") if isinstance(item, dict) else None
                errors.append({"message": f"score[{i}] id={sid!r}: {exc.message}"})
                continue
            self._store_score(score)
            accepted += 1
        if errors:
            return _json(207, {"accepted": accepted, "rejected": len(errors), "errors": errors})
        return _json(202, {"message": "Accepted"})

    def _ingestion(self, body: bytes, headers: Dict[str, str], **_: Any) -> Response:
        """ingestion.ts: ``{"batch": [...], "metadata"?}`` (4.5 MB), 207 with ``successes`` /
        ``errors`` per event (processEventBatch.ts ``aggregateBatchResult``: 201 / 400)."""
        if len(body) > rules.INGESTION_BODY_LIMIT:
            raise ApiError(413, "Body exceeded 4.5mb limit")
        payload = self._body_json(body, headers)
        if not isinstance(payload, dict) or not isinstance(payload.get("batch"), list):
            return _json(400, {"message": "Invalid request data", "errors": ["batch: expected an array"]})
        successes, errors = [], []
        now = _iso(_utcnow())
        for event in payload["batch"]:
            eid = event.get("id") if isinstance(event, dict) and isinstance(event.get("id"), str) else "unknown"
            try:
                eid, etype, ts = rules.validate_event_envelope(event)
                if self.mode.events_only and etype not in rules.EVENTS_ONLY_ALLOWED_TYPES:
                    errors.append({"id": eid, "status": 400, "message": "Event type not accepted",
                                   "error": f'Event type "{etype}" is not accepted by /api/public/ingestion when '
                                            f"LANGFUSE_MIGRATION_V4_WRITE_MODE is events_only."})
                    continue
                if etype == "sdk-log":
                    successes.append({"id": eid, "status": 201})
                    continue
                if etype != "score-create":
                    raise rules.RuleError(400, f"stand-in: event type {etype!r} is not modelled")
                score = rules.validate_score(event.get("body"), api="ingestion")
            except rules.RuleError as exc:
                errors.append({"id": eid, "status": exc.status, "message": "Invalid request data",
                               "error": exc.message})
                continue
            successes.append({"id": eid, "status": 201})
            self.ingestion_events[etype] += 1
            if not score["id"]:  # processEventBatch.ts: an event without body.id is never queued
                continue
            # worker IngestionService.processScoreEventList: the score's timestamp is the event's
            self._store_score(self._score_row(score, ts, now))
        return _json(207, {"successes": successes, "errors": errors})

    def _scores_list_rows(self, query: Dict[str, str]) -> List[Dict[str, Any]]:
        rows = list(self.score_rows.values())
        for param, key in (("name", "name"), ("traceId", "traceId"), ("observationId", "observationId"),
                           ("datasetRunId", "datasetRunId"), ("sessionId", "sessionId")):
            if query.get(param):
                rows = [r for r in rows if r[key] == query[param]]
        frm, to = self._query_dt(query, "fromTimestamp"), self._query_dt(query, "toTimestamp")
        if frm is not None:
            rows = [r for r in rows if _parse_iso(r["timestamp"]) >= frm]
        if to is not None:
            rows = [r for r in rows if _parse_iso(r["timestamp"]) < to]
        rows.sort(key=lambda r: (r["timestamp"], r["id"]), reverse=True)
        return rows

    def _scores_v1(self, query: Dict[str, str], **_: Any) -> Response:
        """scores/index.ts GET (legacy reads): trace scores only (filterAndValidateLegacyV1GetScoreList)."""
        page, limit = self._page(query, 50, 100)
        rows = [r for r in self._scores_list_rows(query) if r["traceId"]]
        chunk, meta = self._paginate(rows, page, limit)
        return _json(200, {"data": [{**self._score_v3(r, {"details"}), "traceId": r["traceId"],
                                     "observationId": r["observationId"], "trace": {}} for r in chunk], "meta": meta})

    def _scores_v2(self, query: Dict[str, str], **_: Any) -> Response:
        """v2/scores/index.ts GET (legacy reads): trace, session and dataset run scores."""
        page, limit = self._page(query, 50, 100)
        chunk, meta = self._paginate(self._scores_list_rows(query), page, limit)
        data = [{**self._score_v3(r, {"details"}), "traceId": r["traceId"], "observationId": r["observationId"],
                 "sessionId": r["sessionId"], "datasetRunId": r["datasetRunId"]} for r in chunk]
        return _json(200, {"data": data, "meta": meta})

    # ------------------------------------------------------------------ dataset run items
    def _run_items_create(self, body: bytes, headers: Dict[str, str], **_: Any) -> Response:
        """dataset-run-items.ts POST. v3 (legacy): publicDatasetService.ts createDatasetRunItemForApi -
        the item must exist and be ACTIVE; the run is created on first use (dataset-runs.ts
        createOrFetchDatasetRun: a uuid, description/metadata/createdAt of that first call);
        every call adds a run item with a new id (no de-duplication). events_only (v4):
        buildStableDatasetRunItemResponseEventsOnly - nothing is stored, the run id is the
        SDK's experiment id formula."""
        payload = self._body_json(body, headers)
        try:
            req = rules.validate_run_item(payload, self.server_version)
        except rules.RuleError as exc:
            raise ApiError(exc.status, exc.message) from None
        item = self.dataset_items.get(req["datasetItemId"])
        if item is None or item["status"] != "ACTIVE":
            raise ApiError(404, "Dataset item not found")
        created = _iso(_parse_iso(req["createdAt"])) if req.get("createdAt") else _iso(_utcnow())
        if self.mode.events_only:
            return _json(200, {
                "id": str(uuid.uuid4()), "datasetRunId": self.experiment_id(item["datasetId"], req["runName"]),
                "datasetRunName": req["runName"], "datasetItemId": item["id"], "traceId": req.get("traceId") or "",
                "observationId": req.get("observationId"), "createdAt": created, "updatedAt": created})
        trace_id = req.get("traceId")
        if not trace_id:
            span = self._observation_v1_get(req["observationId"])
            if span is None:
                raise ApiError(404, "Observation not found")
            trace_id = span["trace_id"]
        key = (item["datasetId"], req["runName"])
        run = self.dataset_runs.get(key)
        if run is None:
            run = {"id": str(uuid.uuid4()), "name": req["runName"], "description": req.get("runDescription"),
                   "metadata": req.get("metadata") or {}, "datasetId": item["datasetId"],
                   "datasetName": item["datasetName"], "createdAt": created, "updatedAt": created}
            self.dataset_runs[key] = run
        run_item = {"id": str(uuid.uuid4()), "datasetRunId": run["id"], "datasetRunName": run["name"],
                    "datasetItemId": item["id"], "traceId": trace_id, "observationId": req.get("observationId"),
                    "createdAt": created, "updatedAt": created}
        self.dataset_run_items.append(run_item)
        self._run_item_visible[run_item["id"]] = time.monotonic() + self.run_item_lag
        return _json(200, run_item)

    def _run_items_list(self, query: Dict[str, str], **_: Any) -> Response:
        """dataset-run-items.ts GET (legacy reads): ``datasetId`` and ``runName`` required; 404
        when the run does not exist (publicDatasetService.ts listDatasetRunItemsForApi)."""
        for key in ("datasetId", "runName"):
            if not query.get(key):
                raise ApiError(400, f"Invalid request data: {key} is required")
        page, limit = self._page(query, 50, 100)
        run = self.dataset_runs.get((query["datasetId"], query["runName"]))
        if run is None:
            raise ApiError(404, "Dataset run not found for the given project and dataset id")
        now = time.monotonic()
        rows = [r for r in self.dataset_run_items if r["datasetRunId"] == run["id"]
                and self._run_item_visible.get(r["id"], 0.0) <= now]  # written after the queue's delay
        chunk, meta = self._paginate(rows, page, limit)
        return _json(200, {"data": chunk, "meta": meta})

    def run_items_of(self, run_name: str) -> List[Dict[str, Any]]:
        """Test helper: every accepted run item of the v3 dataset run named ``run_name``."""
        ids = {r["id"] for r in self.dataset_runs.values() if r["name"] == run_name}
        return [r for r in self.dataset_run_items if r["datasetRunId"] in ids]

    def _scores_delete(self, id: str, **_: Any) -> Response:  # noqa: A002
        keys = [k for k in self.score_rows if k[0] == id]
        if not keys:
            raise ApiError(404, f"Score not found: {id!r}")
        for k in keys:
            del self.score_rows[k]
        self.scores.pop(id, None)
        return Response(204, b"")

    def _score_v3(self, s: Dict[str, Any], fields: Set[str]) -> Dict[str, Any]:
        value: Any = s["value"]
        if s["dataType"] == "BOOLEAN":
            value = bool(value)
        out = {k: s[k] for k in ("id", "projectId", "name", "dataType", "source", "timestamp",
                                 "environment", "createdAt", "updatedAt")}
        out["value"] = value
        if "details" in fields:
            out["comment"] = s["comment"]
            out["configId"] = s["configId"]
            out["metadata"] = s["metadata"] if isinstance(s["metadata"], dict) else None
        if "annotation" in fields:
            out["authorUserId"] = s["authorUserId"]
            out["queueId"] = s["queueId"]
        if "subject" in fields:
            if s["observationId"]:
                out["subject"] = {"kind": "observation", "id": s["observationId"], "traceId": s["traceId"]}
            elif s["traceId"]:
                out["subject"] = {"kind": "trace", "id": s["traceId"]}
            elif s["sessionId"]:
                out["subject"] = {"kind": "session", "id": s["sessionId"]}
            elif s["datasetRunId"]:
                out["subject"] = {"kind": "experiment", "id": s["datasetRunId"]}
        return out

    def _scores_v3(self, query: Dict[str, str], **_: Any) -> Response:
        fields = self._fields(query, {"details", "subject", "annotation"}, set())
        if query.get("observationId") and not query.get("traceId"):
            raise ApiError(400, "observationId requires traceId")
        if query.get("sessionId") and (query.get("traceId") or query.get("observationId") or query.get("experimentId")):
            raise ApiError(400, "sessionId is mutually exclusive with traceId, observationId, experimentId")
        if query.get("experimentId") and (query.get("traceId") or query.get("observationId")):
            raise ApiError(400, "experimentId is mutually exclusive with traceId, observationId")
        data_types = _csv(query, "dataType", upper=True)
        if query.get("value") is not None and (not data_types or len(data_types) != 1
                                               or next(iter(data_types)) not in ("NUMERIC", "BOOLEAN", "CATEGORICAL")):
            raise ApiError(400, "value filter requires a single dataType of NUMERIC, BOOLEAN or CATEGORICAL")
        if (query.get("valueMin") or query.get("valueMax")) and data_types != {"NUMERIC"}:
            raise ApiError(400, "valueMin/valueMax require dataType=NUMERIC")
        frm, to = self._query_dt(query, "fromTimestamp"), self._query_dt(query, "toTimestamp")
        rows = list(self.score_rows.values())
        simple = {"id": "id", "name": "name", "environment": "environment", "configId": "configId",
                  "queueId": "queueId", "authorUserId": "authorUserId", "traceId": "traceId",
                  "sessionId": "sessionId", "observationId": "observationId", "experimentId": "datasetRunId"}
        for param, key in simple.items():
            wanted = _csv(query, param)
            if wanted is not None:
                rows = [r for r in rows if r[key] in wanted]
        sources = _csv(query, "source", upper=True)
        if sources is not None:
            rows = [r for r in rows if r["source"].upper() in sources]
        if data_types is not None:
            rows = [r for r in rows if r["dataType"] in data_types]
        if query.get("value") is not None:
            dt = next(iter(data_types or {"NUMERIC"}))
            wanted_vals = [v.strip() for v in query["value"].split(",")]
            if dt == "BOOLEAN":
                allowed = {1.0 if v.lower() == "true" else 0.0 for v in wanted_vals}
                rows = [r for r in rows if r["value"] in allowed]
            elif dt == "NUMERIC":
                rows = [r for r in rows if r["value"] in {float(v) for v in wanted_vals}]
            else:
                rows = [r for r in rows if r["value"] in set(wanted_vals)]
        if query.get("valueMin"):
            rows = [r for r in rows if r["value"] >= float(query["valueMin"])]
        if query.get("valueMax"):
            rows = [r for r in rows if r["value"] <= float(query["valueMax"])]
        if frm is not None:
            rows = [r for r in rows if _parse_iso(r["timestamp"]) >= frm]
        if to is not None:
            rows = [r for r in rows if _parse_iso(r["timestamp"]) < to]
        rows.sort(key=lambda r: (r["timestamp"], r["id"]), reverse=True)
        chunk, meta = self._cursor_page(rows, query, 50, 100)
        return _json(200, {"data": [self._score_v3(r, fields) for r in chunk], "meta": meta})

    # ------------------------------------------------------------------ span views
    def _all_spans(self) -> Dict[SpanKey, Dict[str, Any]]:
        return {**self.seeded_spans, **self.spans}

    @staticmethod
    def _environment(span: Dict[str, Any]) -> str:
        return (span["attributes"].get(A_ENVIRONMENT)
                or span.get("resource_attributes", {}).get(A_ENVIRONMENT) or "default")

    @staticmethod
    def _obs_metadata(attrs: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        out: Dict[str, Any] = {}
        prefix = A_METADATA + "."
        for k, v in attrs.items():
            if k.startswith(prefix):
                out[k[len(prefix):]] = _maybe_json(v)
        if A_METADATA in attrs:
            whole = _maybe_json(attrs[A_METADATA])
            if isinstance(whole, dict):
                out.update(whole)
            else:
                out["metadata"] = whole
        return out or None

    @staticmethod
    def _is_root(span: Dict[str, Any]) -> bool:
        a = span["attributes"]
        return span["parent_span_id"] is None or bool(a.get(A_IS_APP_ROOT)) or bool(a.get(A_AS_ROOT))

    def _observation_v2(self, span: Dict[str, Any], fields: Set[str]) -> Dict[str, Any]:
        a = span["attributes"]
        end = _span_end(span)
        out: Dict[str, Any] = {
            "id": span["span_id"], "traceId": span["trace_id"], "startTime": _iso(_span_start(span)),
            "endTime": _iso(end) if end else None, "projectId": self.project_id,
            "parentObservationId": span["parent_span_id"],
            "type": str(a.get(A_TYPE) or "span").upper(),
        }
        if "basic" in fields:
            out.update({
                "name": span["name"], "level": a.get(A_LEVEL) or "DEFAULT",
                "statusMessage": a.get(A_STATUS_MESSAGE), "version": a.get(A_VERSION),
                "environment": self._environment(span), "bookmarked": False, "public": bool(a.get(A_TRACE_PUBLIC)),
                "userId": a.get(A_USER_ID), "sessionId": a.get(A_SESSION_ID), "isRootObservation": self._is_root(span),
            })
        if "time" in fields:
            out.update({"completionStartTime": _maybe_json(a.get(A_COMPLETION_START)),
                        "createdAt": span.get("received_at"), "updatedAt": span.get("received_at")})
        if "io" in fields:  # raw strings, like the real v2 API
            out.update({"input": a.get(A_INPUT), "output": a.get(A_OUTPUT)})
        if "metadata" in fields:
            out["metadata"] = self._obs_metadata(a)
        if "model" in fields:
            out.update({"model": a.get(A_MODEL), "internalModelId": None,
                        "modelParameters": _maybe_json(a.get(A_MODEL_PARAMETERS))})
        if "usage" in fields:
            out.update({"usageDetails": _maybe_json(a.get(A_USAGE)) or {},
                        "costDetails": _maybe_json(a.get(A_COST)) or {}, "totalCost": None})
        if "prompt" in fields:
            out.update({"promptId": None, "promptName": a.get(A_PROMPT_NAME),
                        "promptVersion": a.get(A_PROMPT_VERSION)})
        if "metrics" in fields:
            out.update({"latency": (end - _span_start(span)).total_seconds() if end else None,
                        "timeToFirstToken": None})
        if "trace_context" in fields:
            out.update({"tags": list(a.get(A_TRACE_TAGS) or []), "release": a.get(A_RELEASE),
                        "traceName": a.get(A_TRACE_NAME)})
        return out

    def _observations_v2(self, query: Dict[str, str], **_: Any) -> Response:
        fields = self._fields(
            query, {"core", "basic", "time", "io", "metadata", "model", "usage", "prompt", "metrics", "trace_context"},
            {"core", "basic"})
        if (query.get("parseIoAsJson") or "").lower() == "true":
            raise ApiError(400, "parseIoAsJson=true is no longer supported")
        frm, to = self._query_dt(query, "fromStartTime"), self._query_dt(query, "toStartTime")
        rows = self._filtered_spans(query.get("filter"), v2=True)
        if query.get("traceId"):
            rows = [s for s in rows if s["trace_id"] == query["traceId"]]
        if query.get("name"):
            rows = [s for s in rows if s["name"] == query["name"]]
        if query.get("type"):
            rows = [s for s in rows if str(s["attributes"].get(A_TYPE) or "span").upper() == query["type"].upper()]
        if "parentObservationId" in query:
            want = query["parentObservationId"] or None
            rows = [s for s in rows if s["parent_span_id"] == want]
        if query.get("isRootObservation"):
            want_root = query["isRootObservation"].lower() == "true"
            rows = [s for s in rows if self._is_root(s) == want_root]
        if query.get("level"):
            rows = [s for s in rows if (s["attributes"].get(A_LEVEL) or "DEFAULT") == query["level"]]
        if query.get("environment"):
            envs = set(query["environment"].split(","))
            rows = [s for s in rows if self._environment(s) in envs]
        for param, attr in (("userId", A_USER_ID), ("sessionId", A_SESSION_ID), ("version", A_VERSION)):
            if query.get(param):
                rows = [s for s in rows if s["attributes"].get(attr) == query[param]]
        if frm is not None:
            rows = [s for s in rows if _span_start(s) >= frm]
        if to is not None:
            rows = [s for s in rows if _span_start(s) < to]
        rows.sort(key=lambda s: (s["start_time_unix_nano"], s["span_id"]), reverse=True)
        chunk, meta = self._cursor_page(rows, query, 50, 1000)
        return _json(200, {"data": [self._observation_v2(s, fields) for s in chunk], "meta": meta})

    def _observation_v1(self, span: Dict[str, Any]) -> Dict[str, Any]:
        a = span["attributes"]
        end = _span_end(span)
        return {
            "id": span["span_id"], "traceId": span["trace_id"], "type": str(a.get(A_TYPE) or "span").upper(),
            "name": span["name"], "startTime": _iso(_span_start(span)), "endTime": _iso(end) if end else None,
            "completionStartTime": _maybe_json(a.get(A_COMPLETION_START)), "model": a.get(A_MODEL),
            "modelParameters": _maybe_json(a.get(A_MODEL_PARAMETERS)), "input": _maybe_json(a.get(A_INPUT)),
            "output": _maybe_json(a.get(A_OUTPUT)), "version": a.get(A_VERSION),
            "metadata": self._obs_metadata(a), "level": a.get(A_LEVEL) or "DEFAULT",
            "statusMessage": a.get(A_STATUS_MESSAGE), "parentObservationId": span["parent_span_id"],
            "environment": self._environment(span), "usageDetails": _maybe_json(a.get(A_USAGE)) or {},
            "costDetails": _maybe_json(a.get(A_COST)) or {}, "promptId": None,
            "projectId": self.project_id,
        }

    def _filtered_spans(self, raw: Optional[str], *, v2: bool) -> List[Dict[str, Any]]:
        """All spans, narrowed by a structured ``filter`` (JSON list). The stand-in models the
        filters the publisher sends: ``stringOptions`` on ``traceId`` (``any of``), and in v1
        ``null`` on ``parentObservationId`` (``is null``); column names from
        packages/shared/src/server/tableMappings/mapEventsTable.ts (v2) and
        mapObservationsTable.ts (v1), filter shapes from packages/shared/src/interfaces/filters.ts."""
        if not raw:
            return list(self._all_spans().values())
        try:
            filters = json.loads(raw)
        except ValueError:
            raise ApiError(400, "Invalid JSON in filter parameter") from None
        if not isinstance(filters, list):
            raise ApiError(400, "Invalid request data: filter must be an array")
        first = filters[0] if filters else None
        if isinstance(first, dict) and first.get("type") == "stringOptions" and first.get("column") == "traceId" \
                and first.get("operator") == "any of" and isinstance(first.get("value"), list):
            rows = [s for t in set(first["value"]) if isinstance(t, str) for s in self._by_trace.get(t, {}).values()]
        else:
            rows = list(self._all_spans().values())
        for f in filters:
            if not isinstance(f, dict):
                raise ApiError(400, "Invalid request data: filter entries must be objects")
            kind, column, op = f.get("type"), f.get("column"), f.get("operator")
            if kind == "stringOptions" and column == "traceId" and op in ("any of", "none of"):
                values = f.get("value")
                if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
                    raise ApiError(400, "Invalid request data: stringOptions value must be a non-empty string list")
                wanted = set(values)
                rows = [r for r in rows if (r["trace_id"] in wanted) == (op == "any of")]
            elif not v2 and kind == "null" and column == "parentObservationId" and op in ("is null", "is not null"):
                if f.get("value") != "":
                    raise ApiError(400, "Invalid request data: null filter value must be ''")
                rows = [r for r in rows if (r["parent_span_id"] is None) == (op == "is null")]
            else:
                raise ApiError(400, f"stand-in: filter {f!r} is not modelled")
        return rows

    def _observations_v1_list(self, query: Dict[str, str], **_: Any) -> Response:
        """observations/index.ts GET (legacy reads): page/limit (<= 100), traceId, name, type,
        parentObservationId, fromStartTime, toStartTime, filter."""
        page, limit = self._page(query, 50, 100)
        rows = self._filtered_spans(query.get("filter"), v2=False)
        if query.get("traceId"):
            rows = [s for s in rows if s["trace_id"] == query["traceId"]]
        if query.get("name"):
            rows = [s for s in rows if s["name"] == query["name"]]
        if query.get("parentObservationId"):
            rows = [s for s in rows if s["parent_span_id"] == query["parentObservationId"]]
        if query.get("type"):
            rows = [s for s in rows if str(s["attributes"].get(A_TYPE) or "span").upper() == query["type"].upper()]
        frm, to = self._query_dt(query, "fromStartTime"), self._query_dt(query, "toStartTime")
        if frm is not None:
            rows = [s for s in rows if _span_start(s) >= frm]
        if to is not None:
            rows = [s for s in rows if _span_start(s) < to]
        rows.sort(key=lambda s: (s["start_time_unix_nano"], s["span_id"]), reverse=True)
        chunk, meta = self._paginate(rows, page, limit)
        return _json(200, {"data": [self._observation_v1(s) for s in chunk], "meta": meta})

    def _observation_v1_get(self, id: str) -> Optional[Dict[str, Any]]:  # noqa: A002
        for span in self._all_spans().values():
            if span["span_id"] == id:
                return span
        return None

    def _observation_v1_route(self, id: str, **_: Any) -> Response:  # noqa: A002
        span = self._observation_v1_get(id)
        if span is None:
            raise ApiError(404, f"Observation not found: {id!r}")
        return _json(200, self._observation_v1(span))

    def _trace_v1(self, id: str, **_: Any) -> Response:  # noqa: A002
        spans = list(self._by_trace.get(id, {}).values())
        if not spans:
            raise ApiError(404, f"Trace not found: {id!r}")
        spans.sort(key=lambda s: s["start_time_unix_nano"])
        roots = [s for s in spans if s["parent_span_id"] is None] or spans
        root = roots[0]
        ra = root["attributes"]
        name = next((s["attributes"][A_TRACE_NAME] for s in spans if s["attributes"].get(A_TRACE_NAME)), root["name"])
        ends = [e for e in (_span_end(s) for s in spans) if e]
        start = _span_start(spans[0])
        low = _span_start(root) - rules.TRACE_SCORE_INTERVAL  # rules.TRACE_SCORE_INTERVAL (scores.ts)
        scores = [self._score_v3(s, {"details"}) for s in self.score_rows.values()
                  if s["traceId"] == id and s["dataType"] in rules.LISTABLE_SCORE_TYPES
                  and _parse_iso(s["timestamp"]) >= low]
        return _json(200, {
            "id": id, "projectId": self.project_id, "name": name, "timestamp": _iso(_span_start(root)),
            "environment": self._environment(root), "input": _maybe_json(ra.get(A_INPUT)),
            "output": _maybe_json(ra.get(A_OUTPUT)), "sessionId": ra.get(A_SESSION_ID), "userId": ra.get(A_USER_ID),
            "release": ra.get(A_RELEASE), "version": ra.get(A_VERSION), "metadata": _maybe_json(ra.get(A_TRACE_METADATA)),
            "tags": list(ra.get(A_TRACE_TAGS) or []), "public": bool(ra.get(A_TRACE_PUBLIC)), "bookmarked": False,
            "htmlPath": f"/project/{self.project_id}/traces/{id}",
            "latency": (max(ends) - start).total_seconds() if ends else 0.0, "totalCost": 0.0,
            "createdAt": root.get("received_at"), "updatedAt": root.get("received_at"),
            "observations": [self._observation_v1(s) for s in spans], "scores": scores,
        })

    # ------------------------------------------------------------------ experiments
    def experiment_item_spans(self) -> List[Dict[str, Any]]:
        """Spans that are experiment items: they carry experiment id + item id and are the
        item's root observation (``...item.root_observation_id`` equals their span id, or
        is absent).  Duplicated publication shows up as several spans for one item id."""
        out = []
        for span in self._all_spans().values():
            a = span["attributes"]
            if not a.get(A_EXP_ID) or not a.get(A_EXP_ITEM_ID):
                continue
            root = a.get(A_EXP_ITEM_ROOT)
            if root is not None and root != span["span_id"]:
                continue
            out.append(span)
        out.sort(key=lambda s: (s["start_time_unix_nano"], s["span_id"]), reverse=True)
        return out

    def _item_in_window(self, span: Dict[str, Any], frm: datetime, to: Optional[datetime]) -> bool:
        st = _span_start(span)
        return st >= frm and (to is None or st < to)

    @staticmethod
    def _score_limit(query: Dict[str, str]) -> int:
        """types/experiments.ts ``experimentScoreLimitZod``: an integer 1..50, default 50."""
        raw = query.get("scoreLimit")
        try:
            limit = int(raw) if raw not in (None, "") else 50
        except ValueError:
            raise ApiError(400, "scoreLimit must be an integer") from None
        if not 1 <= limit <= rules.EXPERIMENT_SCORE_LIMIT_MAX:
            raise ApiError(400, f"scoreLimit must be between 1 and {rules.EXPERIMENT_SCORE_LIMIT_MAX}")
        return limit

    @staticmethod
    def _score_window(newest: datetime, oldest: datetime) -> Tuple[datetime, datetime]:
        """repository.ts ``scoreTimestampBoundsFromRows``: [oldest - 1 day, min(now, newest + 1 day))."""
        return oldest - rules.EXPERIMENT_SCORE_WINDOW, min(_utcnow(), newest + rules.EXPERIMENT_SCORE_WINDOW)

    def _latest_by_id(self, rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        """scores.ts: ``ORDER BY s.event_ts DESC LIMIT 1 BY s.id`` (one row per score id)."""
        out: Dict[str, Dict[str, Any]] = {}
        for r in sorted(rows, key=lambda r: r["updatedAt"]):
            out[r["id"]] = r
        return sorted(out.values(), key=lambda r: (r["updatedAt"], r["id"]), reverse=True)

    def _experiments(self, query: Dict[str, str], **_: Any) -> Response:
        fields = self._fields(query, {"core", "metadata", "scores"}, {"core"})
        frm = self._query_dt(query, "fromStartTime", required=True)
        to = self._query_dt(query, "toStartTime")
        if query.get("filter"):
            raise ApiError(400, "the structured 'filter' parameter is not supported by the stand-in")
        score_limit = self._score_limit(query)
        groups: Dict[str, List[Dict[str, Any]]] = {}
        for span in self.experiment_item_spans():
            if self._item_in_window(span, frm, to):  # type: ignore[arg-type]
                groups.setdefault(span["attributes"][A_EXP_ID], []).append(span)
        ids, names, datasets = _csv(query, "id"), _csv(query, "name"), _csv(query, "datasetId")
        rows = []
        for exp_id, spans in groups.items():
            a = spans[0]["attributes"]
            if ids is not None and exp_id not in ids:
                continue
            if names is not None and a.get(A_EXP_NAME) not in names:
                continue
            if datasets is not None and a.get(A_EXP_DATASET_ID) not in datasets:
                continue
            starts = [_span_start(s) for s in spans]
            ends = [_span_end(s) or _span_start(s) for s in spans]
            row: Dict[str, Any] = {
                "id": exp_id, "name": a.get(A_EXP_NAME) or exp_id, "description": a.get(A_EXP_DESCRIPTION),
                "startTime": _iso(max(min(starts), frm)), "endTime": _iso(max(ends)), "itemCount": len(spans),
                "datasetId": a.get(A_EXP_DATASET_ID),
            }
            if "metadata" in fields:
                md = _maybe_json(a.get(A_EXP_METADATA))
                row["metadata"] = md if isinstance(md, dict) else None
            rows.append((max(starts), row))  # cursor_time: the latest item start
        rows.sort(key=lambda t: t[0], reverse=True)
        chunk, meta = self._cursor_page(rows, query, 50, 100)
        if "scores" in fields and chunk:
            low, high = self._score_window(chunk[0][0], chunk[-1][0])
            page_ids = {r["id"] for _, r in chunk}
            candidates = self._latest_by_id([
                s for s in self.score_rows.values()
                if s["datasetRunId"] in page_ids and not s["traceId"] and not s["observationId"]
                and not s["sessionId"] and s["dataType"] in rules.LISTABLE_SCORE_TYPES
                and rules.in_window(_parse_iso(s["timestamp"]), low, high)])
            for _, row in chunk:
                mine = [s for s in candidates if s["datasetRunId"] == row["id"]][:score_limit]
                row["scores"] = [self._score_v3(s, set()) for s in mine]
        return _json(200, {"data": [r for _, r in chunk], "meta": meta})

    def _experiment_items(self, query: Dict[str, str], **_: Any) -> Response:
        fields = self._fields(
            query, {"core", "dataset", "io", "metadata", "itemMetadata", "experimentMetadata", "scores"},
            {"core", "dataset"})
        frm = self._query_dt(query, "fromStartTime", required=True)
        to = self._query_dt(query, "toStartTime")
        if query.get("filter"):
            raise ApiError(400, "the structured 'filter' parameter is not supported by the stand-in")
        score_limit = self._score_limit(query)
        exp_ids, exp_names = _csv(query, "experimentId"), _csv(query, "experimentName")
        item_ids, datasets = _csv(query, "experimentItemId"), _csv(query, "datasetId")
        spans = []
        for span in self.experiment_item_spans():
            a = span["attributes"]
            if not self._item_in_window(span, frm, to):  # type: ignore[arg-type]
                continue
            if exp_ids is not None and a[A_EXP_ID] not in exp_ids:
                continue
            if exp_names is not None and a.get(A_EXP_NAME) not in exp_names:
                continue
            if item_ids is not None and a[A_EXP_ITEM_ID] not in item_ids:
                continue
            if datasets is not None and a.get(A_EXP_DATASET_ID) not in datasets:
                continue
            spans.append(span)
        chunk, meta = self._cursor_page(spans, query, 50, 100)
        by_trace: Dict[str, List[Dict[str, Any]]] = {}
        if "scores" in fields and chunk:
            # repository.ts queryExperimentItemsForPublicApi + scores.ts
            # queryScoreRecordsForExperimentItems: scores on the page's observations, or trace-level
            # scores of its traces, in the window, one row per id, ``LIMIT scoreLimit BY trace_id``;
            # each item gets the scores of its trace.
            low, high = self._score_window(_span_start(chunk[0]), _span_start(chunk[-1]))
            obs_ids = {s["span_id"] for s in chunk}
            trace_ids = {s["trace_id"] for s in chunk}
            for sc in self._latest_by_id([
                s for s in self.score_rows.values()
                if s["dataType"] in rules.LISTABLE_SCORE_TYPES
                and rules.in_window(_parse_iso(s["timestamp"]), low, high)
                and (s["observationId"] in obs_ids or (s["traceId"] in trace_ids and not s["observationId"]
                                                       and not s["sessionId"] and not s["datasetRunId"]))]):
                group = by_trace.setdefault(sc["traceId"] or "", [])
                if len(group) < score_limit:
                    group.append(sc)
        rows = []
        for span in chunk:
            a = span["attributes"]
            end = _span_end(span)
            row: Dict[str, Any] = {
                "id": span["span_id"], "traceId": span["trace_id"], "startTime": _iso(_span_start(span)),
                "endTime": _iso(end) if end else None, "level": a.get(A_LEVEL) or "DEFAULT",
                "environment": self._environment(span), "experimentId": a[A_EXP_ID],
                "experimentName": a.get(A_EXP_NAME) or a[A_EXP_ID], "experimentItemId": a[A_EXP_ITEM_ID],
            }
            if "dataset" in fields:
                row["experimentDatasetId"] = a.get(A_EXP_DATASET_ID)
                row["experimentItemVersion"] = a.get(A_EXP_ITEM_VERSION)
            if "io" in fields:
                row["input"] = _maybe_json(a.get(A_INPUT))
                row["output"] = _maybe_json(a.get(A_OUTPUT))
                row["expectedOutput"] = _maybe_json(a.get(A_EXP_ITEM_EXPECTED))
            if "metadata" in fields:
                row["metadata"] = self._obs_metadata(a)
            if "itemMetadata" in fields:
                md = _maybe_json(a.get(A_EXP_ITEM_METADATA))
                row["experimentItemMetadata"] = md if isinstance(md, dict) else None
            if "experimentMetadata" in fields:
                md = _maybe_json(a.get(A_EXP_METADATA))
                row["experimentMetadata"] = md if isinstance(md, dict) else None
                row["experimentDescription"] = a.get(A_EXP_DESCRIPTION)
            if "scores" in fields:
                row["scores"] = [self._score_v3(s, set()) for s in by_trace.get(span["trace_id"], [])]
            rows.append(row)
        return _json(200, {"data": rows, "meta": meta})
