"""What the real Langfuse server accepts and refuses, per server generation, read in its source.

Source: repository langfuse/langfuse, newest stored snapshot (August 2026, ``web/src/constants/
VERSION.ts`` = v4.16.0). Every rule below names the file it comes from; nothing of that code is
copied, the rules are restated. Where the stand-in is stricter than the server (it refuses what
the publisher never sends), the rule says "stand-in".

Modes (``LangfuseStandIn(mode=...)``):

``v4``   Langfuse v4 as the snapshot ships it: ``LANGFUSE_MIGRATION_V4_WRITE_MODE=events_only``
         and ``LANGFUSE_MIGRATION_V4_ALLOW_PREVIEW_OPT_IN=true`` (the defaults in ``web/src/env.mjs``).
``v3``   a self-hosted Langfuse v3 server: ``WRITE_MODE=legacy``, opt-in ``false`` (what v3
         shipped, ``web/src/env.mjs`` comments), reporting a 3.x version.
``sdk5`` the server langfuse SDK 5.0.4 is written against (newer than the snapshot): v4, plus
         ``POST /api/public/scores`` with a JSON array answering 202/207 (the SDK's
         ``api/scores/raw_client.py`` docstring), and without the legacy write endpoints
         ``POST /api/public/ingestion`` and ``/api/public/dataset-run-items`` (deprecated in
         ``web/public/generated/api/openapi.yml``: "becomes unavailable when they upgrade to
         Langfuse v4"; langfuse-notes.md: dataset-run-items removed from the cloud 2026-11-16).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, Optional, Tuple


@dataclass(frozen=True)
class Mode:
    name: str
    default_version: str
    write_mode: str  # LANGFUSE_MIGRATION_V4_WRITE_MODE: legacy | events_only
    v4_reads: bool  # LANGFUSE_MIGRATION_V4_ALLOW_PREVIEW_OPT_IN == "true"
    ingestion: bool  # POST /api/public/ingestion exists
    score_arrays: bool  # POST /api/public/scores takes SDK 5's JSON array (202/207)
    run_item_writes: bool  # POST /api/public/dataset-run-items exists

    @property
    def events_only(self) -> bool:
        return self.write_mode == "events_only"


MODES: Dict[str, Mode] = {
    "v4": Mode("v4", "4.16.0", "events_only", True, True, False, True),
    "v3": Mode("v3", "3.172.0", "legacy", False, True, False, True),
    "sdk5": Mode("sdk5", "4.16.0", "events_only", True, False, True, False),
}

# web/src/features/public-api/server/createAuthedProjectAPIRoute.ts: routes flagged
# ``rejectInEventsOnlyMode`` answer 404 with this message, before authentication.
EVENTS_ONLY_404 = ("This endpoint is not available on deployments running in Langfuse v4 events_only mode. "
                   "Learn more about Langfuse v4 at: https://langfuse.com/docs/v4")
# web/src/pages/api/public/{experiments,experiment-items}/index.ts, v2/observations/index.ts:
# without the v4 opt-in they throw LangfuseNotFoundError (404) after authentication.
V4_ONLY_404 = "The {what} API is only available in a Langfuse v4 write mode. Learn more at: https://langfuse.com/docs/v4"

# web/src/pages/api/public/ingestion.ts: ``config.api.bodyParser.sizeLimit = "4.5mb"``
INGESTION_BODY_LIMIT = int(4.5 * 1024 * 1024)
# web/src/pages/api/public/ingestion.ts ``EVENTS_ONLY_ALLOWED_TYPES``
EVENTS_ONLY_ALLOWED_TYPES = frozenset({"score-create", "sdk-log"})
# packages/shared/src/domain/scores.ts ``LISTABLE_SCORE_TYPES`` (what score reads return)
LISTABLE_SCORE_TYPES = frozenset({"NUMERIC", "BOOLEAN", "CATEGORICAL", "TEXT"})
# packages/shared/src/domain/scores.ts ``TEXT_SCORE_MAX_LENGTH``
TEXT_SCORE_MAX_LENGTH = 500
# web/src/features/experiments/server/public/repository.ts ``EXPERIMENT_SCORE_TIMESTAMP_WINDOW_MS``:
# experiment and experiment-item reads return scores within [oldest row - 1 day, min(now,
# newest row + 1 day)) of the page's rows (items: start_time; experiments: latest item start).
EXPERIMENT_SCORE_WINDOW = timedelta(days=1)
# packages/shared/src/server/repositories/constants.ts ``SCORE_TO_TRACE_OBSERVATIONS_INTERVAL``,
# used by scores.ts ``getScoresForTracesInternal`` for GET /api/public/traces/{id}: scores with
# ``timestamp >= trace.timestamp - 1 hour``.
TRACE_SCORE_INTERVAL = timedelta(hours=1)
# web/src/features/public-api/types/experiments.ts ``experimentScoreLimitZod``: 1..50, default 50
EXPERIMENT_SCORE_LIMIT_MAX = 50
# web/src/features/public-api/types/datasets.ts ``PostDatasetRunItemsV1Body`` (``.strict()``);
# in that file's history ``datasetVersion`` appears in 3.150.0, ``createdAt`` in 3.160.0 (PR #12637).
RUN_ITEM_KEYS = frozenset({"runName", "runDescription", "metadata", "datasetItemId", "observationId", "traceId"})
RUN_ITEM_DATASET_VERSION_SINCE = (3, 150, 0)
RUN_ITEM_CREATED_AT_SINCE = (3, 160, 0)

# packages/shared/src/server/ingestion/types.ts ``idSchema``: 1..800 characters, no "\r"
_ID_MAX = 800
# packages/shared/src/domain/scores.ts ``PublicApiCreateScoreSourceDomain`` (POST /scores) and
# ingestion/types.ts ``BaseScoreBody.source`` (score-create events)
SCORES_API_SOURCES = frozenset({"API", "ANNOTATION"})
INGESTION_SOURCES = frozenset({"API", "EVAL", "ANNOTATION"})
ENV_RE = re.compile(r"^(?!langfuse)[a-z0-9_-]{1,40}$")
_ISO_OFFSET = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


class RuleError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def parse_version(text: str) -> Optional[Tuple[int, int, int]]:
    match = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", text or "")
    return tuple(int(g) for g in match.groups()) if match else None  # type: ignore[return-value]


def iso_with_offset(value: Any) -> Optional[datetime]:
    """``z.iso.datetime({ offset: true })``: an ISO 8601 date-time with ``Z`` or an offset."""
    return _iso_with_offset(value) if isinstance(value, str) else None


@functools.lru_cache(maxsize=4096)
def _iso_with_offset(value: str) -> Optional[datetime]:
    if not _ISO_OFFSET.match(value.strip()):
        return None
    return datetime.fromisoformat(value.strip().replace("Z", "+00:00"))


def score_day_key(score: Dict[str, Any]) -> Tuple[str, str, str]:
    """The row a score replaces: packages/shared/clickhouse/migrations/clustered/0003_scores.up.sql,
    ``ReplacingMergeTree ... ORDER BY (project_id, toDate(timestamp), name, id)``: a score sent
    again replaces itself only with the same id, name and UTC day of its timestamp."""
    return score["id"], score["timestamp"][:10], score["name"]


_SUBJECT_KEYS = ("traceId", "sessionId", "datasetRunId", "observationId", "comment", "configId", "queueId",
                 "executionTraceId")


def validate_score(body: Any, *, api: str) -> Dict[str, Any]:
    """One score body, as ``POST /api/public/scores`` (``api="scores"``: ``PostScoresBody`` in
    packages/shared/src/features/scores/interfaces/api/shared.ts) or a ``score-create`` event
    body (``api="ingestion"``: ``ScoreBody`` in packages/shared/src/server/ingestion/types.ts)
    validates it. Unknown keys are dropped, like zod does (a ``timestamp`` in the body is not
    part of either schema). Returns the normalised body; raises RuleError(400)."""
    if not isinstance(body, dict):
        raise RuleError(400, "Invalid request data: expected an object")
    get = body.get
    name = get("name")
    if type(name) is not str or not name:
        raise RuleError(400, "Invalid request data: name must be a non-empty string")
    sid = get("id")
    if sid is not None and (type(sid) is not str or (api == "ingestion" and (not sid or len(sid) > _ID_MAX
                                                                               or "\r" in sid))):
        raise RuleError(400, "Invalid request data: id")
    for key in _SUBJECT_KEYS:
        value = get(key)
        if value is not None and type(value) is not str:
            raise RuleError(400, f"Invalid request data: {key} must be a string")
    trace_id, session_id, run_id, obs_id = get("traceId"), get("sessionId"), get("datasetRunId"), get("observationId")
    # packages/shared/src/utils/scores.ts applyScoreValidation: exactly one subject.
    trace, session, run, obs = bool(trace_id), bool(session_id), bool(run_id), bool(obs_id)
    if not ((trace and not session and not run) or (session and not trace and not run and not obs)
            or (run and not trace and not session and not obs)):
        raise RuleError(400, "Provide exactly one of the following: traceId (with optional observationId), "
                             "sessionId or datasetRunId. ObservationId requires traceId.")
    source = get("source") or "API"
    if source not in (SCORES_API_SOURCES if api == "scores" else INGESTION_SOURCES):
        raise RuleError(400, f"Invalid request data: source {source!r} is not allowed here")
    env = get("environment") or "default"
    if env != "default" and (type(env) is not str or not ENV_RE.match(env)):
        raise RuleError(400, f"Invalid request data: environment {env!r}")
    value, data_type = get("value"), get("dataType")
    number = type(value) in (int, float) or (isinstance(value, (int, float)) and not isinstance(value, bool))
    if data_type == "NUMERIC" or data_type == "BOOLEAN":
        if not number or not math.isfinite(value):
            raise RuleError(400, f"Invalid request data: {data_type} score value must be a number")
        if data_type == "BOOLEAN" and value not in (0, 1):
            raise RuleError(400, "Value must be a number equal to either 0 or 1 for data type BOOLEAN")
    elif data_type == "CATEGORICAL" or data_type == "CORRECTION":
        if type(value) is not str:
            raise RuleError(400, f"Invalid request data: {data_type} score value must be a string")
    elif data_type == "TEXT":
        if type(value) is not str or not 1 <= len(value) <= TEXT_SCORE_MAX_LENGTH:
            raise RuleError(400, "Invalid request data: TEXT score value must have 1 to 500 characters")
    elif data_type is None:
        if not (number or type(value) is str):
            raise RuleError(400, "Invalid request data: value must be a number or a string")
        data_type = "NUMERIC" if number else "CATEGORICAL"  # validateAndInflateScore.ts inferDataType
    else:
        raise RuleError(400, f"Invalid request data: unknown dataType {data_type!r}")
    if source == "ANNOTATION" and not get("configId"):  # domain/scores.ts isAnnotationScoreMissingConfigId
        raise RuleError(400, "Annotation scores require a configId")
    return {
        "id": sid, "name": name, "value": float(value) if number else value, "dataType": data_type,
        "source": source, "environment": env, "traceId": trace_id, "observationId": obs_id,
        "sessionId": session_id, "datasetRunId": run_id, "comment": get("comment"), "metadata": get("metadata"),
        "configId": get("configId"), "queueId": get("queueId"),
    }


def validate_event_envelope(event: Any) -> Tuple[str, str, datetime]:
    """(id, type, timestamp) of an ingestion event (ingestion/types.ts ``base``: id idSchema,
    ``timestamp: z.iso.datetime({ offset: true })``); raises RuleError(400)."""
    if not isinstance(event, dict):
        raise RuleError(400, "Invalid request data: an event must be an object")
    eid = event.get("id")
    if not isinstance(eid, str) or not eid or len(eid) > _ID_MAX or "\r" in eid:
        raise RuleError(400, "Invalid request data: event id")
    ts = iso_with_offset(event.get("timestamp"))
    if ts is None:
        raise RuleError(400, "Invalid request data: timestamp must be an ISO 8601 date-time with an offset")
    etype = event.get("type")
    if not isinstance(etype, str):
        raise RuleError(400, "Invalid request data: type")
    return eid, etype, ts


def validate_run_item(body: Any, version: str) -> Dict[str, Any]:
    """``POST /api/public/dataset-run-items`` body (types/datasets.ts ``PostDatasetRunItemsV1Body``,
    ``.strict()``: unknown keys are refused); raises RuleError(400)."""
    if not isinstance(body, dict):
        raise RuleError(400, "Invalid request data: expected an object")
    allowed = set(RUN_ITEM_KEYS)
    parsed = parse_version(version)
    if parsed is None or parsed >= RUN_ITEM_DATASET_VERSION_SINCE:
        allowed.add("datasetVersion")
    if parsed is None or parsed >= RUN_ITEM_CREATED_AT_SINCE:
        allowed.add("createdAt")
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise RuleError(400, f"Invalid request data: Unrecognized key(s) in object: {', '.join(map(repr, unknown))}")
    for key in ("runName", "datasetItemId"):
        if not isinstance(body.get(key), str):
            raise RuleError(400, f"Invalid request data: {key} is required")
    if not (body.get("observationId") or body.get("traceId")):
        raise RuleError(400, "observationId or traceId must be provided")
    if body.get("createdAt") is not None and iso_with_offset(body["createdAt"]) is None:
        raise RuleError(400, "Invalid request data: createdAt")
    return body


def in_window(ts: datetime, low: datetime, high: datetime) -> bool:
    return low <= ts < high


def now_utc() -> datetime:
    return datetime.now(timezone.utc)


def validate_dataset_item(body: Any) -> Dict[str, Any]:
    """``POST /api/public/dataset-items`` (web/src/features/public-api/types/datasets.ts
    ``PostDatasetItemsV1Body``): datasetName required; input/expectedOutput/metadata any JSON;
    id 1..255 characters (``publicApiIdSchema``); sourceTraceId/sourceObservationId strings;
    status ACTIVE | ARCHIVED. Unknown keys are dropped (zod). Raises RuleError(400)."""
    if not isinstance(body, dict):
        raise RuleError(400, "Invalid request data: expected an object")
    if not isinstance(body.get("datasetName"), str):
        raise RuleError(400, "Invalid request data: datasetName: Required (a string)")
    item_id = body.get("id")
    if item_id is not None and (not isinstance(item_id, str) or not 1 <= len(item_id) <= 255):
        raise RuleError(400, "Invalid request data: id must be 1 to 255 characters")
    for key in ("sourceTraceId", "sourceObservationId"):
        if body.get(key) is not None and not isinstance(body[key], str):
            raise RuleError(400, f"Invalid request data: {key} must be a string")
    if body.get("status") is not None and body["status"] not in ("ACTIVE", "ARCHIVED"):
        raise RuleError(400, "Invalid request data: status must be ACTIVE or ARCHIVED")
    return {k: body.get(k) for k in ("datasetName", "id", "input", "expectedOutput", "metadata", "sourceTraceId",
                                     "sourceObservationId", "status")}


def validate_dataset(body: Any) -> Dict[str, Any]:
    """``POST /api/public/v2/datasets`` (types/datasets.ts ``PostDatasetsV2Body``): a name;
    description string; metadata JSON; input/expected output schemas. Raises RuleError(400)."""
    if not isinstance(body, dict):
        raise RuleError(400, "Invalid request data: expected an object")
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise RuleError(400, "Invalid request data: name: Required (a non-empty string)")
    if body.get("description") is not None and not isinstance(body["description"], str):
        raise RuleError(400, "Invalid request data: description must be a string")
    return body
