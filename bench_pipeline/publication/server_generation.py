"""Which Langfuse server generation a publication talks to: a cheap probe, once per publication.

Two generations are in use, and they keep an experiment in different places (read in the
server's source, langfuse/langfuse, ``web/src/pages/api/public/**``, August 2026):

=============  ==================================================================================
generation     what the publisher does there
=============  ==================================================================================
``v4``         Langfuse v4 and Langfuse Cloud: write mode ``events_only`` with the v4 reads
               (the v4 defaults). The SDK 5 model: an experiment item is a span carrying the SDK's
               ``langfuse.experiment.*`` attributes; experiment items are read back through
               ``GET /api/public/experiment-items``, execution traces through
               ``GET /api/public/v2/observations``.
``v3``         Langfuse v3 in its legacy write mode (self-hosted 3.x, the v3 default), and any
               server still writing its legacy tables (``legacy`` or ``dual``, with or without
               the v4 opt-in): a dataset
               run exists only through ``POST /api/public/dataset-run-items`` (one per attempt;
               the run gets a server-made id); run items are read back through
               ``GET /api/public/dataset-run-items``, execution traces through the v1
               ``GET /api/public/observations``.
=============  ==================================================================================

Both take spans at ``POST /api/public/otel/v1/traces`` and scores as ``score-create`` events at
``POST /api/public/ingestion`` (``ingestion.ts``: in v4 ``events_only`` mode that endpoint still
accepts ``score-create``). A server without the ingestion endpoint but with the v4 reads gets
SDK 5's array form of ``POST /api/public/scores`` instead.

The probe (5 requests, nothing written):

1. ``GET /api/public/health``: the server version (informative; it also decides whether a
   dataset run item may carry ``createdAt``, accepted since 3.160.0);
2. ``GET /api/public/experiment-items?fromStartTime=<now>&limit=1``: 2xx = the v4 reads exist;
   404 = absent (``experiment-items/index.ts`` answers 404 unless the v4 opt-in is on);
3. ``GET /api/public/scores?limit=1``: 2xx = the legacy tables are written and served (the
   route carries ``rejectInEventsOnlyMode``, like ``GET /api/public/dataset-run-items``);
4. ``POST /api/public/ingestion`` with an empty batch: 207 = present;
5. ``POST /api/public/otel/v1/traces`` with an empty OTLP/JSON export: 2xx = present.

``decide``: legacy reads -> v3 (also when the v4 reads exist: write mode ``legacy`` or
``dual``); else v4 reads -> v4; else neither.

A 404 there means "this endpoint does not exist here", never "no such object". Anything
else than 2xx/404 (a 401, a 5xx after retries) is a failure of the probe, not an answer.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from .retry import DeliveryFailure
from .transport import LangfuseHttp

V4 = "v4"
V3 = "v3"
INGESTION = "ingestion"
SCORES_ARRAY = "scores-array"
#: first version whose ``POST /api/public/dataset-run-items`` accepts ``createdAt`` (the body is
#: ``.strict()``: an older server refuses the key; langfuse PR #12637, ``types/datasets.ts``)
RUN_ITEM_CREATED_AT_SINCE = (3, 160, 0)

WORKING_VERSIONS = (
    "Publication works with Langfuse v3 servers from 3.21 in their legacy (or dual) write mode, the v3 "
    "default (needs POST /api/public/dataset-run-items, GET /api/public/scores, POST /api/public/ingestion "
    "and POST /api/public/otel/v1/traces), and with Langfuse v4 / Langfuse Cloud in events_only mode with "
    "LANGFUSE_MIGRATION_V4_ALLOW_PREVIEW_OPT_IN=true, the v4 defaults (needs GET /api/public/experiment-items, "
    "GET /api/public/v2/observations and POST /api/public/otel/v1/traces)."
)


class UnsupportedServer(Exception):
    """The server offers neither publication path (nothing was written)."""


@dataclass
class ServerProfile:
    generation: str  # V4 | V3
    version: str | None  # from GET /api/public/health
    scores_via: str  # INGESTION | SCORES_ARRAY
    probed: dict[str, int | None] = field(default_factory=dict)  # endpoint -> HTTP status of the probe

    @property
    def run_item_created_at(self) -> bool:
        parsed = parse_version(self.version)
        return parsed is not None and parsed >= RUN_ITEM_CREATED_AT_SINCE

    def describe(self) -> str:
        version = f"Langfuse {self.version}" if self.version else "Langfuse (version not reported)"
        if self.generation == V4:
            how = "v4 events mode: experiment items are spans with experiment attributes"
        else:
            how = "v3 legacy mode: dataset runs through /api/public/dataset-run-items"
        scores = "scores through /api/public/ingestion" if self.scores_via == INGESTION else \
            "scores through the /api/public/scores array form"
        return f"{version}, {how}; {scores}"

    def to_json(self) -> dict:
        return {"generation": self.generation, "version": self.version, "scores_via": self.scores_via,
                "probed": dict(self.probed), "description": self.describe()}


def parse_version(text: str | None) -> tuple[int, int, int] | None:
    match = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", (text or "").strip())
    return tuple(int(part) for part in match.groups()) if match else None  # type: ignore[return-value]


def _status(http: LangfuseHttp, what: str, method: str, path: str, **kw) -> int:
    """The probe answer: a 2xx status, or 404 (absent). Anything else raises DeliveryFailure."""
    return http.request(what, method, path, accept=frozenset({404}), **kw).status_code


def probe(http: LangfuseHttp) -> ServerProfile:
    """Find out which generation the server is (see the module docstring); raises
    UnsupportedServer when it offers neither path, DeliveryFailure when it cannot be asked."""
    probed: dict[str, int | None] = {}
    version = None
    try:
        code, body = http.get_json("server probe (GET /api/public/health)", "/api/public/health",
                                   accept=frozenset({404, 503}))
        probed["GET /api/public/health"] = code
        if isinstance(body, dict) and isinstance(body.get("version"), str):
            version = body["version"]
    except DeliveryFailure as exc:  # informative only
        probed["GET /api/public/health"] = exc.status
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    probed["GET /api/public/experiment-items"] = _status(
        http, "server probe (GET /api/public/experiment-items)", "GET", "/api/public/experiment-items",
        params={"fromStartTime": now, "limit": "1"})
    probed["GET /api/public/scores"] = _status(http, "server probe (GET /api/public/scores)", "GET",
                                               "/api/public/scores", params={"limit": "1"})
    probed["POST /api/public/ingestion"] = _status(
        http, "server probe (POST /api/public/ingestion)", "POST", "/api/public/ingestion",
        body=b'{"batch":[]}', headers={"content-type": "application/json"})
    probed["POST /api/public/otel/v1/traces"] = _status(
        http, "server probe (POST /api/public/otel/v1/traces)", "POST", "/api/public/otel/v1/traces",
        body=b'{"resourceSpans":[]}', headers={"content-type": "application/json", "x-langfuse-ingestion-version": "4"})
    return decide(probed, version)


def decide(probed: dict[str, int | None], version: str | None) -> ServerProfile:
    """The generation from the probe's answers (2xx or 404 per endpoint; see the module docstring).

    The legacy reads (``GET /api/public/scores``) answer exactly when the server still writes
    its legacy tables (write mode ``legacy`` or ``dual``): then the v3 path is the one that is
    read everywhere, even when the v4 reads exist too (with the write mode ``legacy`` and the
    opt-in on, the v4 reads would look at an events table nobody writes). The v4 path is taken
    when the server writes events only and offers the v4 reads."""
    v4_reads = probed.get("GET /api/public/experiment-items") not in (None, 404)
    legacy_reads = probed.get("GET /api/public/scores") not in (None, 404)
    ingestion = probed.get("POST /api/public/ingestion") not in (None, 404)
    otel = probed.get("POST /api/public/otel/v1/traces") not in (None, 404)
    missing: list[str] = []
    if not otel:
        missing.append("POST /api/public/otel/v1/traces (spans)")
    if legacy_reads:
        generation, scores_via = V3, INGESTION
        if not ingestion:
            missing.append("POST /api/public/ingestion (scores)")
    elif v4_reads:
        generation, scores_via = V4, INGESTION if ingestion else SCORES_ARRAY
    else:
        generation = scores_via = ""
        missing.insert(0, "GET /api/public/experiment-items (v4 reads) and GET /api/public/scores "
                          "(legacy reads: the server runs LANGFUSE_MIGRATION_V4_WRITE_MODE=events_only "
                          "without the v4 opt-in, or is older)")
    if missing:
        shown = f"Langfuse {version}" if version else "this Langfuse server (no version reported)"
        raise UnsupportedServer(
            f"{shown} offers neither publication path; missing: {'; '.join(missing)}. {WORKING_VERSIONS} "
            f"Nothing was written.")
    return ServerProfile(generation, version, scores_via, dict(probed))
