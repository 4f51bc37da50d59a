"""``publication.json``: what a publication of a run had confirmed, so that the next call
sends only what is missing or changed (docs/langfuse.md, "Idempotency and confirmed delivery").

Each confirmed attempt's scores and the run's scores keep their names (``names``: the key of
the set in ``score_names``, {key: [names]}, each distinct set once); a score confirmed once and
left out of a later publication (its value became unknown) is kept in ``stale_scores``
({score id: what it was}) until its deletion is accepted.

States of a span (``state``) and of a v3 dataset run item (``run_item``) in the record:
``planned`` (decided, not stored), ``confirmed`` (accepted: 2xx) and ``in_doubt`` (sent without
an answer: it may exist, and is read back before anything is sent again).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from pathlib import Path

import orjson

from ..jsonio import write_atomic
from .plan import RunPlan
from .settings import LangfuseSettings
from .timestamps import iso_ms

log = logging.getLogger("bench_pipeline.publication")

RECORD_NAME = "publication.json"
RECORD_SCHEMA = 2

CONFIRMED = "confirmed"  # accepted by the server (2xx); Langfuse stores it asynchronously
PLANNED = "planned"  # decided, not stored (never sent, or refused with an HTTP error)
IN_DOUBT = "in_doubt"  # sent without an answer: may exist; resolved by reading back


def now_iso() -> str:
    """The current UTC time as the record (and the servers' score store) keeps it."""
    return iso_ms(dt.datetime.now(dt.UTC))


def target_fingerprint(settings: LangfuseSettings) -> str:
    """Identifies the Langfuse target (URL + public key) without storing either."""
    return hashlib.sha256(f"{settings.url}\n{settings.public_key}".encode()).hexdigest()[:16]


def fresh_record(plan: RunPlan, target: str) -> dict:
    return {
        "schema_version": RECORD_SCHEMA, "run_id": plan.run_id, "dataset": plan.suite, "target": target,
        "server": None, "project_id": None, "dataset_id": None, "dataset_hash": None, "experiment_id": None,
        "run_name": plan.run_id, "status": "incomplete", "first_published_at": None, "updated_at": None,
        "anchor": None, "items": {}, "bindings": {}, "attempt_scores": {}, "run_scores": None, "sessions": [],
        "score_names": {}, "stale_scores": {},
    }


def load_record(path: Path, plan: RunPlan, target: str) -> dict:
    fresh = fresh_record(plan, target)
    try:
        data = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return fresh
    except (OSError, orjson.JSONDecodeError) as exc:
        log.warning("publication record %s is unreadable (%s); starting a new one", path.name, exc)
        return fresh
    if (
        not isinstance(data, dict) or data.get("schema_version") != RECORD_SCHEMA
        or data.get("run_id") != plan.run_id or data.get("dataset") != plan.suite
    ):
        log.warning("publication record %s belongs to another run or record version; starting a new one",
                    path.name)
        return fresh
    if data.get("target") != target:
        log.info("publication record %s is for another Langfuse target; starting a new one", path.name)
        return fresh
    for key, value in fresh.items():
        data.setdefault(key, value)
    return data


def save_record(path: Path, record: dict) -> None:
    """Write the record before anything is sent: what is not confirmed may be sent before the
    next save, so it is on disk as ``in_doubt`` (read back next time, never re-sent blindly)."""
    on_disk = dict(record)
    on_disk["bindings"] = {
        k: {**v, "state": IN_DOUBT if v.get("state") == PLANNED else v.get("state"),
            **({"run_item": IN_DOUBT} if v.get("run_item") == PLANNED else {})}
        for k, v in record["bindings"].items()
    }
    on_disk["updated_at"] = now_iso()
    write_record(path, on_disk)


def write_record(path: Path, record: dict) -> None:
    """The record as it is (atomically: a failed write leaves the previous one)."""
    write_atomic(path, orjson.dumps(record, option=orjson.OPT_INDENT_2) + b"\n")
