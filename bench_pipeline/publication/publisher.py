"""Publish one processed run to Langfuse with confirmed, idempotent delivery.

Order of a publication (docs/langfuse.md has the full story):

1. plan (pure, ``mapping.plan_run``): ids, item bodies, score values;
2. project id (``GET /api/public/projects``) and the Dataset (upsert by suite name);
3. Dataset Items (upsert by deterministic id; on a run's first publication the dataset is
   listed first so unchanged items are not rewritten);
4. experiment id (SDK formula); the binding of every new experiment item: experiment items
   that already exist in Langfuse keep theirs, otherwise the execution trace is looked up
   (``GET /api/public/v2/observations?traceId=..&isRootObservation=true``) and a found root
   makes the item ``available`` under it, else it goes under its deterministic replay trace;
5. per chunk of attempts: spans (OTLP/JSON, confirmed by the HTTP answer; an unanswered
   batch is resolved by reading back before anything is re-sent), then the attempts'
   scores (confirmed by 202; 207 is a failure);
6. run-level scores on the experiment (with the last chunk's scores when they fit);
7. ``publication.json``: what was confirmed, with ids and times, so that the next call
   sends only what is missing or changed. Failures raise ``PublicationError``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import logging
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson

from ..jsonio import write_atomic
from . import mapping as m
from .client import DeliveryFailure, LangfuseHttp, LangfuseSettings, PublishOptions

log = logging.getLogger("bench_pipeline.publication")

RECORD_NAME = "publication.json"
OUTBOX_NAME = "langfuse_outbox.jsonl"
RECORD_SCHEMA = 1
DATASET_ID_PLACEHOLDER = "{{dataset_id}}"
EXPERIMENT_ID_PLACEHOLDER = "{{experiment_id}}"

# binding states in the record
CONFIRMED = "confirmed"
PLANNED = "planned"  # decided, not stored (never sent, or refused with an HTTP error)
IN_DOUBT = "in_doubt"  # sent without an answer: may exist; resolved by reading back


class PublicationError(Exception):
    """Delivery to Langfuse failed. The message says what failed and how many objects; the
    publication record keeps what was confirmed, so a retry resends only what is missing."""


@dataclass
class PublicationResult:
    status: Literal["published", "not_configured"]
    dataset: str
    experiment_id: str | None
    items: int  # dataset items created/updated by this call (outbox: items written)
    scores: int  # scores confirmed by this call (outbox: scores written)
    spans: int  # spans confirmed by this call (outbox: spans written)
    skipped_existing: int  # attempts whose experiment item already existed and was not re-sent
    record_path: Path | None
    outbox_path: Path | None
    http_requests: int | None  # None when nothing was configured (no HTTP at all)


def _now() -> str:
    return m.iso_ms(dt.datetime.now(dt.UTC))


def _target_fingerprint(settings: LangfuseSettings) -> str:
    """Identifies the Langfuse target (URL + public key) without storing either."""
    return hashlib.sha256(f"{settings.url}\n{settings.public_key}".encode()).hexdigest()[:16]


def _dataset_body(suite: str) -> dict:
    return {
        "name": suite,
        "description": f"Benchmark suite {suite}: one item per task attempt (bench_pipeline).",
        "metadata": {"source": "bench_pipeline", "suite": suite},
    }


# =============================================================================== public API


def publish_run(
    *,
    run_id: str,
    metrics: dict,
    attempts: list[dict],
    manifest: dict,
    suite_def: dict,
    out_dir: Path,
    settings: LangfuseSettings | None = None,
    progress: Callable[[int, int], None] | None = None,
    options: PublishOptions | None = None,
) -> PublicationResult:
    """Publish a processed run (metrics.json dict + attempts.jsonl records) to Langfuse.

    Without configured keys the exact payloads go to ``out_dir/langfuse_outbox.jsonl`` and
    the status is ``not_configured`` (no HTTP). Raises PublicationError when anything could
    not be delivered; calling again sends only what is missing.
    """
    settings = settings if settings is not None else LangfuseSettings.from_env()
    options = options or PublishOptions.from_env()
    out_dir = Path(out_dir)
    plan = m.plan_run(run_id=run_id, metrics=metrics, attempts=attempts, manifest=manifest, suite_def=suite_def)
    if plan.duplicates:
        log.warning("%d duplicate task/attempt record(s) ignored (the later line wins)", len(plan.duplicates))
    if not settings.configured:
        return _write_outbox(plan, out_dir, settings, options, progress)
    out_dir.mkdir(parents=True, exist_ok=True)
    return _Publication(plan, settings, options, out_dir, progress).run()


# =============================================================================== outbox


def _write_outbox(plan: m.RunPlan, out_dir: Path, settings: LangfuseSettings, options: PublishOptions,
                  progress: Callable[[int, int], None] | None) -> PublicationResult:
    """The exact requests a configured publication would send, one JSON line each.

    Server-assigned values are placeholders (``{{dataset_id}}``, ``{{experiment_id}}``);
    execution traces cannot be looked up offline, so a known episode is ``pending_or_missing``.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    now = _now()
    ctx = m.ExperimentContext(DATASET_ID_PLACEHOLDER, EXPERIMENT_ID_PLACEHOLDER, None, None)
    ts = plan.run_timestamp or now
    counts = {"spans": 0, "scores": 0}
    secrets = [key.encode("utf-8") for key in (settings.secret_key, settings.public_key) if key]

    def requests() -> Iterator[tuple[str, str, Any, dict | None, tuple]]:
        """(kind, path, body, headers, placeholders) of each request, in order; the spans and
        scores are made attempt by attempt and grouped as they come (nothing is held for the
        whole run but the plan)."""
        yield "dataset", "/api/public/v2/datasets", _dataset_body(plan.suite), None, ()
        for a in plan.attempts:
            yield "dataset_item", "/api/public/dataset-items", a.item, None, ()
        otlp_headers = {"content-type": "application/json", "x-langfuse-ingestion-version": "4"}
        spans = ((span, len(orjson.dumps(span))) for a in plan.attempts
                 for span in m.attempt_spans(a, m.decide_binding(a, None), plan, ctx, now, now))
        for group in m.greedy_groups(spans, options.max_span_bytes, options.max_spans_per_request):
            counts["spans"] += len(group)
            yield ("spans", "/api/public/otel/v1/traces", m.otlp_body(group), otlp_headers,
                   (DATASET_ID_PLACEHOLDER, EXPERIMENT_ID_PLACEHOLDER))
        scores = itertools.chain(
            (score for a in plan.attempts for score in m.attempt_score_payloads(a, m.decide_binding(a, None), plan, ts)),
            m.run_score_payloads(plan, EXPERIMENT_ID_PLACEHOLDER, ts))
        sized = ((score, len(orjson.dumps(score)) + 1) for score in scores)
        for batch in m.greedy_groups(sized, options.max_score_bytes, options.max_scores_per_request):
            counts["scores"] += len(batch)
            yield ("scores", "/api/public/scores", batch, None,
                   (EXPERIMENT_ID_PLACEHOLDER,) if any("datasetRunId" in s for s in batch) else ())

    def encoded() -> Iterator[bytes]:
        for seq, (kind, path, body, headers, placeholders) in enumerate(requests(), start=1):
            line = {"seq": seq, "kind": kind, "method": "POST", "path": path}
            if headers:
                line["headers"] = headers
            line["body"] = body
            if placeholders:
                line["placeholders"] = list(placeholders)
            data = orjson.dumps(line) + b"\n"
            if any(secret in data for secret in secrets):  # partial configuration: never write a key
                raise PublicationError("refusing to write the outbox: a payload contains a Langfuse key")
            yield data

    path = out_dir / OUTBOX_NAME
    write_atomic(path, encoded())
    total = len(plan.attempts)
    if progress is not None:
        progress(total, total)
    log.info("Langfuse not configured: requests for %d attempt(s) written to the outbox", total)
    return PublicationResult(
        status="not_configured", dataset=plan.suite, experiment_id=None, items=len(plan.attempts),
        scores=counts["scores"], spans=counts["spans"], skipped_existing=0, record_path=None,
        outbox_path=path, http_requests=None,
    )


# =============================================================================== record


def _load_record(path: Path, plan: m.RunPlan, target: str) -> dict:
    fresh = {
        "schema_version": RECORD_SCHEMA, "run_id": plan.run_id, "dataset": plan.suite, "target": target,
        "project_id": None, "dataset_id": None, "dataset_hash": None, "experiment_id": None,
        "run_name": plan.run_id, "status": "incomplete", "first_published_at": None, "updated_at": None,
        "score_timestamp": None, "items": {}, "bindings": {}, "attempt_scores": {}, "run_scores": None,
        "sessions": [],
    }
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
        log.warning("publication record %s belongs to another run; starting a new one", path.name)
        return fresh
    if data.get("target") != target:
        log.info("publication record %s is for another Langfuse target; starting a new one", path.name)
        return fresh
    for key, value in fresh.items():
        data.setdefault(key, value)
    return data


# =============================================================================== publication


class _Publication:
    def __init__(self, plan: m.RunPlan, settings: LangfuseSettings, options: PublishOptions, out_dir: Path,
                 progress: Callable[[int, int], None] | None):
        self.plan = plan
        self.settings = settings
        self.options = options
        self.progress = progress
        self.record_path = out_dir / RECORD_NAME
        self.record = _load_record(self.record_path, plan, _target_fingerprint(settings))
        self.errors: list[tuple[str, int, str]] = []  # (what, how many attempts/objects, detail)
        self.blocked: set[str] = set()  # item ids that cannot progress in this call
        self.sent = {"items": 0, "spans": 0, "scores": 0}
        self.skipped_existing = 0
        self.session = {"started_at": _now()}
        self.http: LangfuseHttp | None = None
        self.total = len(plan.attempts)
        self.done: set[str] = set()  # item ids whose item, experiment item and scores are confirmed

    # ------------------------------------------------------------------ driver
    def run(self) -> PublicationResult:
        rec = self.record
        rec["first_published_at"] = rec["first_published_at"] or self.session["started_at"]
        if rec["experiment_id"]:
            self.done = {a.item_id for a in self.plan.attempts if self._attempt_done(a)}
        self._report()
        try:
            if self._nothing_to_do():
                self.skipped_existing = self.total
                log.info("run %s already published; nothing to send", self.plan.run_id)
            else:
                self.http = LangfuseHttp(self.settings, self.options)
                self._publish()
        except PublicationError:
            raise
        except DeliveryFailure as exc:  # a step nothing else can proceed without
            self.errors.append((exc.what, self.total, exc.detail))
        finally:
            self._finish_record()
            if self.http is not None:
                self.http.close()
        if self.errors:
            raise PublicationError(self._error_message())
        self._report()
        return PublicationResult(
            status="published", dataset=self.plan.suite, experiment_id=rec["experiment_id"],
            items=self.sent["items"], scores=self.sent["scores"], spans=self.sent["spans"],
            skipped_existing=self.skipped_existing, record_path=self.record_path, outbox_path=None,
            http_requests=self.http.requests if self.http is not None else 0,
        )

    def _nothing_to_do(self) -> bool:
        rec = self.record
        if not (rec["project_id"] and rec["dataset_id"] and rec["experiment_id"]):
            return False
        if rec["dataset_hash"] != m.content_hash(_dataset_body(self.plan.suite)):
            return False
        if rec["run_scores"] is None or rec["run_scores"].get("hash") != m.content_hash(self.plan.run_scores):
            return False
        return len(self.done) == self.total

    def _attempt_done(self, a: m.AttemptPlan) -> bool:
        rec = self.record
        item = rec["items"].get(a.item_id)
        binding = rec["bindings"].get(a.item_id)
        scores = rec["attempt_scores"].get(a.item_id)
        return (
            item is not None and item.get("hash") == a.item_hash
            and binding is not None and binding.get("state") == CONFIRMED
            and binding.get("span_hash") in (None, self._span_hash(a, binding))
            and scores is not None and scores.get("hash") == self._scores_hash(a, binding)
        )

    def _publish(self) -> None:
        http = self.http
        assert http is not None
        rec = self.record
        # 1. project and dataset
        if not rec["project_id"]:
            projects = http.call("project lookup (GET /api/public/projects)",
                                 lambda ro: http.api.projects.get(request_options=ro))
            if not projects.data:
                raise PublicationError("Langfuse returned no project for these keys; nothing was published.")
            rec["project_id"] = projects.data[0].id
        dataset_hash = m.content_hash(_dataset_body(self.plan.suite))
        if not rec["dataset_id"] or rec["dataset_hash"] != dataset_hash:
            body = _dataset_body(self.plan.suite)
            dataset = http.call(f"dataset {self.plan.suite!r} upsert",
                                lambda ro: http.api.datasets.create(**body, request_options=ro))
            rec["dataset_id"], rec["dataset_hash"] = dataset.id, dataset_hash
        rec["experiment_id"] = m.experiment_id(rec["project_id"], rec["dataset_id"], self.plan.run_id)
        self.ctx = m.ExperimentContext(rec["dataset_id"], rec["experiment_id"], rec["project_id"], http.base_url)
        self.score_ts = self._score_timestamp()

        # 2. dataset items, 3. bindings, 4. spans + scores, 5. run scores
        self._items()
        self._bindings()
        self._save()  # planned bindings are on disk before any span is sent
        self._spans_and_scores()
        self._run_scores()

    # ------------------------------------------------------------------ helpers
    def _report(self) -> None:
        done = len(self.done)
        if self.progress is not None:
            self.progress(done, self.total)
        log.info("Langfuse publication of %s: %d/%d attempts published", self.plan.run_id, done, self.total)

    def _score_timestamp(self) -> str:
        """Fixed timestamp for scores (a resend with the same id and timestamp replaces)."""
        rec = self.record
        if self.plan.run_timestamp:
            ts = self.plan.run_timestamp
        elif rec["score_timestamp"]:
            ts = rec["score_timestamp"]
        else:  # no run timestamp and no record: reuse what an earlier publication used, if any
            ts = None
            http = self.http
            assert http is not None
            try:
                found = http.call("score timestamp read-back", lambda ro: http.api.scores.get_many(
                    experiment_id=rec["experiment_id"], limit=1, request_options=ro))
                if found.data:
                    ts = m.iso_ms(found.data[0].timestamp)
            except DeliveryFailure as exc:
                log.warning("could not read earlier scores (%s); using the first publication time", exc.detail)
            ts = ts or rec["first_published_at"]
        rec["score_timestamp"] = ts
        return ts

    def _span_hash(self, a: m.AttemptPlan, binding: dict) -> str:
        b = m.Binding.from_json(binding)
        ctx = getattr(self, "ctx", None) or m.ExperimentContext(
            self.record["dataset_id"], self.record["experiment_id"], self.record["project_id"], self.settings.url)
        return m.span_content_hash(m.attempt_spans(a, b, self.plan, ctx, "1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z"))

    def _scores_hash(self, a: m.AttemptPlan, binding: dict) -> str:
        ts = self.record["score_timestamp"] or ""
        return m.content_hash(m.attempt_score_payloads(a, m.Binding.from_json(binding), self.plan, ts))

    def _pool(self) -> ThreadPoolExecutor:
        return ThreadPoolExecutor(max_workers=max(1, self.options.workers), thread_name_prefix="langfuse-publish")

    # ------------------------------------------------------------------ dataset items
    def _items(self) -> None:
        http = self.http
        assert http is not None
        rec = self.record
        need = [a for a in self.plan.attempts if rec["items"].get(a.item_id, {}).get("hash") != a.item_hash]
        if not need:
            return
        if not rec["items"]:  # first publication of this run: items may exist from earlier runs
            existing = self._list_items()
            now = _now()
            still = []
            for a in need:
                server = existing.get(a.item_id)
                if server is not None and m.content_hash(server) == m.content_hash(
                        {k: a.item[k] for k in ("input", "expectedOutput", "metadata")}):
                    rec["items"][a.item_id] = {"task_id": a.task_id, "attempt": a.attempt, "hash": a.item_hash,
                                               "confirmed_at": now, "existing": True}
                else:
                    still.append(a)
            need = still

        def upsert(a: m.AttemptPlan) -> tuple[m.AttemptPlan, DeliveryFailure | None]:
            body = a.item
            try:
                http.guard(orjson.dumps(body), f"dataset item {a.item_id}")
                http.call(f"dataset item {a.item_id} upsert", lambda ro: http.api.dataset_items.create(
                    dataset_name=body["datasetName"], id=body["id"], input=body["input"],
                    expected_output=body["expectedOutput"], metadata=body["metadata"], status=body["status"],
                    request_options=ro))
            except DeliveryFailure as exc:
                return a, exc
            return a, None

        failures: list[tuple[m.AttemptPlan, DeliveryFailure]] = []
        with self._pool() as pool:
            for a, failure in pool.map(upsert, need):
                if failure is None:
                    rec["items"][a.item_id] = {"task_id": a.task_id, "attempt": a.attempt, "hash": a.item_hash,
                                               "confirmed_at": _now()}
                    self.sent["items"] += 1
                else:
                    failures.append((a, failure))
                    self.blocked.add(a.item_id)
        if failures:
            self.errors.append(("dataset items", len(failures), failures[0][1].detail))

    def _list_items(self) -> dict[str, dict]:
        http = self.http
        assert http is not None
        out: dict[str, dict] = {}
        page = 1
        while True:
            result = http.call(f"dataset items list (page {page})", lambda ro, page=page: http.api.dataset_items.list(
                dataset_name=self.plan.suite, page=page, limit=self.options.page_size, request_options=ro))
            for item in result.data:
                out[item.id] = {"input": item.input, "expectedOutput": item.expected_output, "metadata": item.metadata}
            if page >= (result.meta.total_pages or 0) or not result.data:
                return out
            page += 1

    # ------------------------------------------------------------------ bindings
    def _bindings(self) -> None:
        rec = self.record
        bindings = rec["bindings"]
        candidates = [a for a in self.plan.attempts if a.item_id not in self.blocked]
        unknown = [a for a in candidates if a.item_id not in bindings]
        in_doubt = [a for a in candidates if bindings.get(a.item_id, {}).get("state") == IN_DOUBT]
        if unknown and not any(b.get("state") == CONFIRMED for b in bindings.values()):
            # no record of this run (first call, or the record was lost): what exists already?
            by_id = {a.item_id: a for a in candidates}
            for item_id, (trace_id, obs_id) in self._server_items(candidates).items():
                a = by_id[item_id]
                if a.item_id in bindings and bindings[a.item_id].get("state") == CONFIRMED:
                    continue
                b = m.binding_from_server(a, trace_id, obs_id)
                bindings[a.item_id] = {**b.to_json(), "task_id": a.task_id, "attempt": a.attempt,
                                       "state": CONFIRMED, "span_hash": None, "source": "server",
                                       "confirmed_at": _now()}
            unknown = [a for a in candidates if a.item_id not in bindings]
            in_doubt = [a for a in in_doubt if bindings[a.item_id].get("state") == IN_DOUBT]
        if in_doubt:
            self._resolve_in_doubt(in_doubt)

        # new bindings: look the execution traces up
        roots = self._lookup_roots(sorted({a.execution_trace_id for a in unknown if a.execution_trace_id}))
        now = _now()
        for a in unknown:
            if a.execution_trace_id is not None and a.execution_trace_id not in roots:
                self.blocked.add(a.item_id)  # look-up failed: decide next time, never guess
                continue
            b = m.decide_binding(a, roots.get(a.execution_trace_id) if a.execution_trace_id else None)
            bindings[a.item_id] = {**b.to_json(), "task_id": a.task_id, "attempt": a.attempt, "state": PLANNED,
                                   "span_hash": None, "source": "publisher", "planned_at": now,
                                   "start": self.session["started_at"], "end": None}

    def _lookup_roots(self, trace_ids: list[str]) -> dict[str, str | None]:
        """trace id -> root span id found in Langfuse, or None when the trace has no root there.
        A trace whose look-up failed is absent from the result (its attempts wait)."""
        if not trace_ids:
            return {}
        http = self.http
        assert http is not None

        def lookup(trace_id: str) -> tuple[str, str | None, DeliveryFailure | None]:
            try:
                result = http.call(f"execution trace {trace_id} look-up", lambda ro: http.api.observations.get_many(
                    trace_id=trace_id, is_root_observation=True, fields="core,basic", limit=50, request_options=ro))
            except DeliveryFailure as exc:
                if exc.status == 404:
                    return trace_id, None, None
                return trace_id, None, exc
            rows = [o for o in result.data if o.trace_id == trace_id]
            rows.sort(key=lambda o: (o.parent_observation_id is not None, getattr(o, "name", None) != "agent-run",
                                     o.start_time))
            return trace_id, (rows[0].id if rows else None), None

        found: dict[str, str | None] = {}
        failures: dict[str, DeliveryFailure] = {}
        with self._pool() as pool:
            for trace_id, root, failure in pool.map(lookup, trace_ids):
                if failure is None:
                    found[trace_id] = root
                else:
                    failures[trace_id] = failure
        if failures:
            affected = sum(1 for a in self.plan.attempts if a.execution_trace_id in failures)
            self.errors.append(("execution trace look-ups", affected, next(iter(failures.values())).detail))
        log.info("execution traces: %d looked up, %d found", len(trace_ids), sum(1 for v in found.values() if v))
        return found

    def _server_items(self, candidates: list[m.AttemptPlan]) -> dict[str, tuple[str, str]]:
        """Experiment items of this run that already exist in Langfuse (paged read-back)."""
        http = self.http
        assert http is not None
        by_id = {a.item_id: a for a in candidates}
        since = self._since()
        out: dict[str, tuple[str, str]] = {}  # item id -> (trace id, observation id)
        cursor = None
        page = 0
        while True:
            page += 1
            result = http.call(f"experiment items read-back (page {page})", lambda ro, cursor=cursor: http.api.experiments.list_items(
                from_start_time=since, experiment_id=self.record["experiment_id"], fields="core",
                limit=self.options.page_size, cursor=cursor, request_options=ro))
            for row in result.data:
                a = by_id.get(row.experiment_item_id)
                if a is None:
                    continue
                if a.item_id in out and out[a.item_id] != (row.trace_id, row.id):
                    log.warning("experiment item %s exists more than once in Langfuse; keeping one", a.item_id)
                    continue
                out[a.item_id] = (row.trace_id, row.id)
            cursor = getattr(result.meta, "cursor", None)
            if not cursor or not result.data:
                return out

    def _since(self) -> dt.datetime:
        """Lower time bound for experiment-item reads: before the run (and any publication) began."""
        stamps = [m.parse_timestamp(self.record.get("first_published_at"))]
        stamps += [m.parse_timestamp(self.plan.experiment_metadata.get("started_at"))]
        stamps += [m.parse_timestamp(a.evidence.get("started_at")) for a in self.plan.attempts[:1000]]
        known = [s for s in stamps if s is not None]
        base = min(known) if known else dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
        return base - dt.timedelta(days=1)

    def _resolve_in_doubt(self, attempts: list[m.AttemptPlan]) -> None:
        """Spans sent without an answer: find out which exist before anything is re-sent.

        Up to ``in_doubt_lookup_limit`` items are looked up in their own trace, more through
        the experiment's item list. An item found under another binding keeps that one.
        """
        http = self.http
        assert http is not None
        bindings = self.record["bindings"]
        found: dict[str, tuple[str, str]] = {}
        unreadable: list[m.AttemptPlan] = []
        detail = ""
        if len(attempts) <= self.options.in_doubt_lookup_limit:
            for a in attempts:
                b = bindings[a.item_id]
                try:
                    result = http.call(f"span read-back {b['observation_id']}", lambda ro, b=b, a=a: http.api.observations.get_many(
                        trace_id=b["trace_id"], name=a.name, fields="core", limit=50, request_options=ro))
                except DeliveryFailure as exc:
                    unreadable.append(a)
                    detail = detail or exc.detail
                    continue
                if any(o.id == b["observation_id"] for o in result.data):
                    found[a.item_id] = (b["trace_id"], b["observation_id"])
        else:
            try:
                found = self._server_items(attempts)
            except DeliveryFailure as exc:
                unreadable, detail = list(attempts), exc.detail
        if unreadable:
            self.errors.append(("span read-back", len(unreadable), detail))
            self.blocked.update(a.item_id for a in unreadable)
        now = _now()
        for a in attempts:
            if a.item_id in self.blocked:
                continue
            b = bindings[a.item_id]
            if a.item_id not in found:
                b["state"] = PLANNED
            elif found[a.item_id] == (b["trace_id"], b["observation_id"]):
                b["state"], b["confirmed_at"], b["span_hash"] = CONFIRMED, now, self._span_hash(a, b)
            else:  # already published under another binding: keep that one
                server = m.binding_from_server(a, *found[a.item_id])
                b.update({**server.to_json(), "state": CONFIRMED, "span_hash": None, "source": "server",
                          "confirmed_at": now})
        log.info("in-doubt spans: %d checked, %d found stored", len(attempts), len(found))

    # ------------------------------------------------------------------ spans and scores
    def _spans_and_scores(self) -> None:
        bindings = self.record["bindings"]
        todo = [a for a in self.plan.attempts if a.item_id not in self.blocked and a.item_id in bindings]
        self.skipped_existing = sum(1 for a in todo if bindings[a.item_id].get("state") == CONFIRMED)
        size = max(1, self.options.chunk_attempts)
        run_work = self._run_score_work()
        if run_work is not None and sum(len(orjson.dumps(s)) + 1 for s in run_work[1]) > self.options.max_score_bytes // 2:
            run_work = None  # large: sent on its own, split, by _run_scores
        for start in range(0, len(todo), size):
            chunk = todo[start:start + size]
            ok = self._send_spans(chunk)
            last = start + size >= len(todo)
            # the run scores ride along with the last chunk's attempt scores (one request fewer)
            self._send_attempt_scores([a for a in chunk if a.item_id in ok], run_work if last else None)
            self._report()

    def _span_work(self, a: m.AttemptPlan) -> list[dict] | None:
        """Spans to (re)send for an attempt, or None when its experiment item is in place."""
        b = self.record["bindings"][a.item_id]
        binding = m.Binding.from_json(b)
        # In place: found in Langfuse without a record (content unknown) or sent with the same
        # content: keep it. Changed content is re-sent under the same ids (replaces).
        if b["state"] == CONFIRMED and (
            b.get("source") == "server" or b.get("span_hash") in (None, self._span_hash(a, b))
        ):
            return None
        start = b.get("start") or self.session["started_at"]
        end = b.get("end") or _now()
        b["start"], b["end"] = start, end
        return m.attempt_spans(a, binding, self.plan, self.ctx, start, end)

    def _send_spans(self, chunk: list[m.AttemptPlan]) -> set[str]:
        """Send the chunk's spans; return the item ids whose experiment item is confirmed.

        A batch without an answer is never repeated blindly: its items are read back and
        only the missing ones are sent again (up to ``retries`` rounds).
        """
        http = self.http
        assert http is not None
        bindings = self.record["bindings"]
        ok: set[str] = set()
        failed: list[tuple[m.AttemptPlan, DeliveryFailure]] = []
        work: list[tuple[m.AttemptPlan, list[dict]]] = []
        for a in chunk:
            spans = self._span_work(a)
            if spans is None:
                ok.add(a.item_id)
            else:
                work.append((a, spans))
        doubtful = self._send_span_groups(work, ok, failed)
        rounds = 0
        while doubtful and rounds < self.options.retries:
            http.wait(rounds, None)
            rounds += 1
            self._resolve_in_doubt(doubtful)
            ok.update(a.item_id for a in doubtful if bindings[a.item_id]["state"] == CONFIRMED)
            again = []
            for a in doubtful:
                if bindings[a.item_id]["state"] == PLANNED and a.item_id not in self.blocked:
                    spans = self._span_work(a)
                    if spans is None:
                        ok.add(a.item_id)
                    else:
                        again.append((a, spans))
            doubtful = self._send_span_groups(again, ok, failed)
        if doubtful:
            self.errors.append(("experiment item spans (sent, no answer)", len(doubtful),
                                "Langfuse did not answer; they may or may not be stored"))
        if failed:
            self.errors.append(("experiment item spans", len(failed), failed[0][1].detail))
        return ok

    def _send_span_groups(self, work: list[tuple[m.AttemptPlan, list[dict]]], ok: set[str],
                          failed: list[tuple[m.AttemptPlan, DeliveryFailure]]) -> list[m.AttemptPlan]:
        """Send spans in size-bounded requests; confirm answered ones, return the unanswered."""
        http = self.http
        assert http is not None
        bindings = self.record["bindings"]
        if not work:
            return []
        sizes = [sum(len(orjson.dumps(s)) for s in spans) for _, spans in work]
        groups = m.chunk_by_size(work, sizes, self.options.max_span_bytes,  # an attempt has at most 2 spans
                                 max(1, self.options.max_spans_per_request // 2))
        doubtful: list[m.AttemptPlan] = []
        for group in groups:
            batch = [work[i] for i in group]
            spans = [s for _, ss in batch for s in ss]
            try:
                http.send_spans(f"span batch ({len(spans)} spans)", m.otlp_body(spans))
            except DeliveryFailure as exc:
                for a, _ in batch:
                    if exc.in_doubt:
                        bindings[a.item_id]["state"] = IN_DOUBT
                        doubtful.append(a)
                    else:
                        bindings[a.item_id]["state"] = PLANNED
                        failed.append((a, exc))
                continue
            now = _now()
            for a, ss in batch:
                b = bindings[a.item_id]
                b["state"], b["confirmed_at"], b["span_hash"] = CONFIRMED, now, m.span_content_hash(ss)
                self.sent["spans"] += len(ss)
                ok.add(a.item_id)
        return doubtful

    def _send_attempt_scores(self, attempts: list[m.AttemptPlan],
                             run_work: tuple[None, list[dict], str] | None = None) -> None:
        """Scores of these attempts (and the run scores, when given) in size-bounded batches."""
        rec = self.record
        work: list[tuple[m.AttemptPlan | None, list[dict], str]] = []
        for a in attempts:
            b = rec["bindings"][a.item_id]
            payloads = m.attempt_score_payloads(a, m.Binding.from_json(b), self.plan, self.score_ts)
            h = m.content_hash(payloads)
            if rec["attempt_scores"].get(a.item_id, {}).get("hash") == h:
                self.done.add(a.item_id)
                continue
            work.append((a, payloads, h))
        if run_work is not None:
            work.append(run_work)
        if not work:
            return
        http = self.http
        assert http is not None
        sizes = [sum(len(orjson.dumps(s)) + 1 for s in p) for _, p, _ in work]
        groups = m.chunk_by_size(work, sizes, self.options.max_score_bytes, self.options.max_scores_per_request)
        failed = 0
        detail = ""
        for group in groups:
            batch = [work[i] for i in group]
            scores = [s for _, p, _ in batch for s in p]
            if not scores:
                self._confirm_scores(batch)
                continue
            try:
                http.send_scores(f"score batch ({len(scores)} scores)", scores)
            except DeliveryFailure as exc:
                failed += sum(1 for a, _, _ in batch if a is not None)
                detail = detail or exc.detail
                if any(a is None for a, _, _ in batch):
                    self.errors.append(("run-level scores", len(batch[-1][1]), exc.detail))
                continue
            self._confirm_scores(batch)
            self.sent["scores"] += len(scores)
        if failed:
            self.errors.append(("attempt scores", failed, detail))

    def _confirm_scores(self, batch: list[tuple[m.AttemptPlan | None, list[dict], str]]) -> None:
        now = _now()
        for a, payloads, h in batch:
            if a is None:
                self._confirm_run_scores(payloads, h)
                continue
            self.record["attempt_scores"][a.item_id] = {
                "count": len(payloads), "timestamp": payloads[0]["timestamp"] if payloads else None,
                "hash": h, "confirmed_at": now,
            }
            self.done.add(a.item_id)

    def _run_score_work(self) -> tuple[None, list[dict], str] | None:
        """The run scores when they still need sending, as a score work entry."""
        rec = self.record
        h = m.content_hash(self.plan.run_scores)
        done = rec["run_scores"]
        if done is not None and done.get("hash") == h and done.get("experiment_id") == rec["experiment_id"] \
                and done.get("timestamp") == self.score_ts:
            return None
        return None, m.run_score_payloads(self.plan, rec["experiment_id"], self.score_ts), h

    def _confirm_run_scores(self, payloads: list[dict], h: str) -> None:
        self.record["run_scores"] = {"count": len(payloads), "hash": h, "experiment_id": self.record["experiment_id"],
                                     "timestamp": self.score_ts, "confirmed_at": _now()}

    def _run_scores(self) -> None:
        """Run scores not sent with the last chunk (no attempts to send, or a large set)."""
        work = self._run_score_work()
        if work is None or any(w == "run-level scores" for w, _, _ in self.errors):
            return
        _, payloads, h = work
        http = self.http
        assert http is not None
        sizes = [len(orjson.dumps(s)) + 1 for s in payloads]
        groups = m.chunk_by_size(payloads, sizes, self.options.max_score_bytes, self.options.max_scores_per_request)
        for group in groups:
            batch = [payloads[i] for i in group]
            try:
                http.send_scores(f"run score batch ({len(batch)} scores)", batch)
            except DeliveryFailure as exc:
                self.errors.append(("run-level scores", len(payloads), exc.detail))
                return
            self.sent["scores"] += len(batch)
        self._confirm_run_scores(payloads, h)

    # ------------------------------------------------------------------ record and errors
    def _save(self) -> None:
        rec = self.record
        on_disk = dict(rec)
        # Anything not confirmed may be sent before the next save: pessimistically in doubt.
        on_disk["bindings"] = {
            k: {**v, "state": IN_DOUBT if v.get("state") == PLANNED else v.get("state")}
            for k, v in rec["bindings"].items()
        }
        on_disk["updated_at"] = _now()
        write_atomic(self.record_path, orjson.dumps(on_disk, option=orjson.OPT_INDENT_2) + b"\n")

    def _finish_record(self) -> None:
        rec = self.record
        done = bool(rec["experiment_id"]) and len(self.done) == self.total \
            and rec["run_scores"] is not None and not self.errors
        rec["status"] = "complete" if done else "incomplete"
        rec["updated_at"] = _now()
        self.session.update({
            "finished_at": rec["updated_at"],
            "outcome": "complete" if done else "incomplete",
            "sent": dict(self.sent),
            "skipped_existing": self.skipped_existing,
            "http_requests": self.http.requests if self.http is not None else 0,
            "http_requests_by_route": dict(self.http.by_route) if self.http is not None else {},
            "errors": [{"what": w, "count": n, "detail": d} for w, n, d in self.errors],
        })
        if self.plan.duplicates:
            rec["duplicates_ignored"] = self.plan.duplicates
        rec["sessions"] = (rec.get("sessions") or [])[-19:] + [self.session]
        write_atomic(self.record_path, orjson.dumps(rec, option=orjson.OPT_INDENT_2) + b"\n")

    def _error_message(self) -> str:
        parts = "; ".join(f"{what}: {n} failed ({detail})" for what, n, detail in self.errors)
        missing = self.total - len(self.done)
        return (
            f"Langfuse publication of run {self.plan.run_id!r} is incomplete: {missing} of {self.total} "
            f"attempt(s) not confirmed. {parts}. What was confirmed is recorded in {self.record_path}; "
            f"publishing again resends only what is missing."
        )
