"""Publish one processed run to Langfuse with confirmed, idempotent delivery.

Order of a publication (docs/langfuse.md has the full story):

1. plan (pure, ``mapping.plan_run``): ids, item bodies, score values;
2. project id (``GET /api/public/projects``) and the server probe (``generation.probe``): which
   generation the server is (v4 events mode or v3 legacy mode), said in the progress output
   and in ``publication.json``; a server that offers neither path fails here, before anything
   is written;
3. the Dataset (read first; created, or given only the metadata keys it lacks);
4. Dataset Items: the dataset is listed and each item of this run merged with what the item
   holds (``mapping.merge_item``: never erase); only changed items are written;
5. the experiment: v4 - the SDK formula id, experiment items are spans with experiment
   attributes; v3 - a dataset run the server creates with the first dataset run item;
6. the binding of every new experiment item: items that already exist keep theirs (record,
   or read back), otherwise the execution traces are looked up in batches and a found root
   makes the item ``available`` under it, else it goes under its deterministic replay trace;
7. per chunk of attempts: spans (an unanswered batch is resolved by reading back before
   anything is re-sent), v3: one dataset run item per attempt (an unanswered one is checked
   by reading back in the next call, never re-sent blindly), then the scores as
   ``score-create`` events (207 with a status per event);
8. run-level scores on the experiment;
9. ``publication.json``: what was accepted, with ids and times, so that the next call sends
   only what is missing or changed. Failures raise ``PublicationError``.

Every span of a run starts at the publication's anchor time and every score carries it
(``_anchor``): the time the first publication of the run began, kept in the record and read
back from the server without one.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from . import generation as g
from . import mapping as m
from . import payloads as wire
from .client import DeliveryFailure, LangfuseHttp, LangfuseSettings, PublishOptions
from .outbox import write_outbox
from .record import (
    CONFIRMED,
    IN_DOUBT,
    PLANNED,
    RECORD_NAME,
    fresh_record,
    load_record,
    now_iso,
    save_record,
    target_fingerprint,
    write_record,
)
from .result import PublicationError, PublicationResult
from .suite_lock import LockError, suite_lock

log = logging.getLogger("bench_pipeline.publication")

#: a 5xx answer to a dataset run item may come after it was stored (each call adds one)
RUN_ITEM_DOUBTFUL = frozenset({500, 502, 503, 504})


def _summary(failures: list[DeliveryFailure]) -> str:
    """The first failure's detail, and how many were not tried because the endpoint kept failing."""
    skipped = [f for f in failures if f.detail.startswith("not attempted")]
    tried = [f for f in failures if not f.detail.startswith("not attempted")]
    parts = [tried[0].detail] if tried else []
    if skipped:
        parts.append(f"{len(skipped)} {skipped[0].detail}")
    return "; ".join(parts)


def _announce(progress: Any, text: str) -> None:
    """Tell the progress output which server the publication talks to (when it listens)."""
    log.info("%s", text)
    announce = getattr(progress, "announce", None)
    if callable(announce):
        announce(text)


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
    not be delivered; calling again sends only what is missing. ``progress(done, total)`` is
    called as attempts complete; when it has an ``announce(text)`` method, that is told which
    server generation was found.
    """
    settings = settings if settings is not None else LangfuseSettings.from_env()
    options = options or PublishOptions.from_env()
    out_dir = Path(out_dir)
    plan = m.plan_run(run_id=run_id, metrics=metrics, attempts=attempts, manifest=manifest, suite_def=suite_def)
    if plan.duplicates:
        log.warning("%d duplicate task/attempt record(s) ignored (the later line wins)", len(plan.duplicates))
    if not settings.configured:
        return write_outbox(plan, out_dir, settings, options, progress)
    out_dir.mkdir(parents=True, exist_ok=True)
    return _Publication(plan, settings, options, out_dir, progress).run()


# =============================================================================== publication


class _Publication:
    def __init__(self, plan: m.RunPlan, settings: LangfuseSettings, options: PublishOptions, out_dir: Path,
                 progress: Callable[[int, int], None] | None):
        self.plan = plan
        self.settings = settings
        self.options = options
        self.progress = progress
        self.record_path = out_dir / RECORD_NAME
        self.record = load_record(self.record_path, plan, target_fingerprint(settings))
        self.errors: list[tuple[str, int, str]] = []  # (what, how many attempts/objects, detail)
        self.blocked: set[str] = set()  # item ids that cannot progress in this call
        self.sent = {"items": 0, "spans": 0, "scores": 0, "run_items": 0}
        self.item_outcomes: dict[str, int] = {}
        self.skipped_existing = 0
        self.session: dict[str, Any] = {"started_at": now_iso()}
        self.http: LangfuseHttp | None = None
        self.profile: g.ServerProfile | None = None
        self.ctx: wire.ExperimentContext | None = None
        self.total = len(plan.attempts)
        self.done: set[str] = set()  # item ids whose item, experiment item (+ run item) and scores are confirmed
        self.write_record = True
        self._pending_scores: list = []  # score batches sent or to send: (future | None, what, encoded, batch)
        self._score_failures: list = [0, ""]
        self._sender: ThreadPoolExecutor | None = None
        self._items_pending: set[str] = set()  # item upserts on the worker pool, not answered yet
        self._run_items_pending: set[str] = set()  # v3 run items on the worker pool, not answered yet

    @property
    def legacy(self) -> bool:
        return (self.record.get("server") or {}).get("generation") == g.V3

    @property
    def anchor(self) -> str:
        return self.record["anchor"]

    # ------------------------------------------------------------------ driver
    def run(self) -> PublicationResult:
        rec = self.record
        if rec["experiment_id"] and rec["anchor"] and rec["server"]:
            self.done = {a.item_id for a in self.plan.attempts if self._attempt_done(a)}
        self._report()
        try:
            if self._nothing_to_do():
                self.skipped_existing = self.total
                log.info("run %s already published; nothing to send", self.plan.run_id)
            else:
                self.http = LangfuseHttp(self.settings, self.options)
                self.http.on_rate_limit = lambda text: _announce(self.progress, text)
                suite = self.plan.suite
                with suite_lock(target_fingerprint(self.settings), suite, timeout=self.options.lock_timeout,
                                on_wait=lambda: _announce(self.progress, f"langfuse: waiting for another publication "
                                                                         f"of suite {suite!r} to this server")):
                    self._publish()
        except LockError as exc:
            self.write_record = False  # nothing was sent
            raise PublicationError(f"{exc}; nothing was published, try again later") from None
        except g.UnsupportedServer as exc:
            self.write_record = False  # nothing was written, not even the record
            raise PublicationError(str(exc)) from None
        except PublicationError:
            raise
        except DeliveryFailure as exc:  # a step nothing else can proceed without
            self.errors.append((exc.what, self.total, exc.detail))
        finally:
            if self.write_record:
                self._finish_record()
            if self.http is not None:
                self.http.close()
        if self.errors:
            raise PublicationError(self._error_message())
        self._report()
        server = rec.get("server") or {}
        return PublicationResult(
            status="published", dataset=self.plan.suite, experiment_id=rec["experiment_id"],
            items=self.sent["items"], scores=self.sent["scores"], spans=self.sent["spans"],
            skipped_existing=self.skipped_existing, record_path=self.record_path, outbox_path=None,
            http_requests=self.http.requests if self.http is not None else 0,
            server=server.get("generation"), server_version=server.get("version"), run_items=self.sent["run_items"],
        )

    def _nothing_to_do(self) -> bool:
        rec = self.record
        if not (rec["project_id"] and rec["dataset_id"] and rec["experiment_id"] and rec["server"] and rec["anchor"]):
            return False
        if rec["dataset_hash"] != m.content_hash(m.dataset_body(self.plan.suite)):
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
            and (not self.legacy or binding.get("run_item") == CONFIRMED)
            and binding.get("span_hash") in (None, self._span_hash(a, binding))
            and scores is not None and scores.get("hash") == self._scores_hash(a, binding)
        )

    def _publish(self) -> None:
        http = self.http
        assert http is not None
        rec = self.record
        # 1. project and server generation (nothing is written before the probe)
        if not rec["project_id"]:
            projects = http.call("project lookup (GET /api/public/projects)",
                                 lambda ro: http.api.projects.get(request_options=ro))
            if not projects.data:
                raise PublicationError("Langfuse returned no project for these keys; nothing was published.")
            rec["project_id"] = projects.data[0].id
        self.profile = g.probe(http)
        self._adopt_server(self.profile)
        _announce(self.progress, f"langfuse: server {self.profile.describe()}")
        rec["first_published_at"] = rec["first_published_at"] or self.session["started_at"]
        self.session["server"] = self.profile.generation

        # 2. dataset, and what this run changes in its items
        self._timed("dataset", self._dataset)
        item_writes: list[tuple[m.AttemptPlan, m.ItemMerge]] = []
        self._timed("items_merge", lambda: item_writes.extend(self._plan_items()))
        # 3. experiment, anchor time, bindings
        if not self.legacy:
            rec["experiment_id"] = m.experiment_id(rec["project_id"], rec["dataset_id"], self.plan.run_id)
        self.ctx = wire.ExperimentContext(rec["dataset_id"], rec["experiment_id"], rec["project_id"], http.base_url,
                                       span_experiment=not self.legacy)
        self._timed("bindings", self._bindings)
        if not rec["anchor"]:
            rec["anchor"] = self.session["started_at"]
        self._save()  # planned bindings are on disk before any span or run item is sent
        # 4. per-item writes (items, v3 run items) on worker threads, while spans and scores
        # stream from this one; 5. run scores (v3: once the run exists)
        self._timed("items_spans_scores", lambda: self._write_all(item_writes))
        self._timed("run_scores", self._run_scores)

    def _timed(self, phase: str, step: Callable[[], None]) -> None:
        """Run one step; its wall seconds go into the session (``phases_s``) and the log."""
        started = time.perf_counter()
        try:
            step()
        finally:
            seconds = round(time.perf_counter() - started, 3)
            self.session.setdefault("phases_s", {})[phase] = seconds
            log.info("publication step %s: %.2f s", phase, seconds)

    def _adopt_server(self, profile: g.ServerProfile) -> None:
        """Keep the probe in the record; a record made against the other generation (the
        server was migrated in between) is not reused: what exists is read back instead."""
        rec = self.record
        old = (rec.get("server") or {}).get("generation")
        if old and old != profile.generation:
            log.warning("the server is now %s (the record was made against %s); reading back what exists",
                        profile.generation, old)
            keep = {k: rec[k] for k in ("project_id", "first_published_at", "sessions", "anchor")}
            rec.clear()
            rec.update(fresh_record(self.plan, target_fingerprint(self.settings)))
            rec.update(keep)
            self.done = set()
        rec["server"] = profile.to_json()

    # ------------------------------------------------------------------ helpers
    def _report(self) -> None:
        pending = self._items_pending.copy() | self._run_items_pending.copy()  # set copies are atomic
        done = len(self.done - pending) if pending else len(self.done)
        if self.progress is not None:
            self.progress(done, self.total)
        log.info("Langfuse publication of %s: %d/%d attempts published", self.plan.run_id, done, self.total)

    def _context(self) -> wire.ExperimentContext:
        if self.ctx is not None:
            return self.ctx
        rec = self.record
        return wire.ExperimentContext(rec["dataset_id"], rec["experiment_id"], rec["project_id"], self.settings.url,
                                   span_experiment=not self.legacy)

    def _span_hash(self, a: m.AttemptPlan, binding: dict) -> str:
        b = m.Binding.from_json(binding)
        epoch = "1970-01-01T00:00:00Z"
        return wire.span_content_hash(wire.attempt_spans(a, b, self.plan, self._context(), epoch, epoch))

    def _scores_hash(self, a: m.AttemptPlan, binding: dict) -> str:
        return self._score_units(a, binding)[1]

    def _via_ingestion(self) -> bool:
        return (self.record.get("server") or {}).get("scores_via", g.INGESTION) == g.INGESTION

    def _score_units(self, a: m.AttemptPlan, binding: dict) -> tuple[list[bytes], str]:
        """The attempt's scores encoded for their endpoint, and a hash of them (the record's)."""
        b = m.Binding.from_json(binding)
        anchor = self.record["anchor"] or ""
        if self._via_ingestion():
            encoded = wire.attempt_score_events(a, b, self.plan, anchor)
        else:
            encoded = [orjson.dumps(s) for s in wire.attempt_score_payloads(a, b, self.plan, anchor)]
        return encoded, hashlib.sha256(b"\n".join(encoded)).hexdigest()[:24]

    def _pool(self) -> ThreadPoolExecutor:
        return ThreadPoolExecutor(max_workers=max(1, self.options.workers), thread_name_prefix="langfuse-publish")

    # ------------------------------------------------------------------ dataset
    def _dataset(self) -> None:
        """The Dataset: read first, created when absent; an existing one keeps its description
        and every metadata key it has (only the keys this publisher needs and it lacks are added)."""
        http = self.http
        assert http is not None
        rec = self.record
        body = m.dataset_body(self.plan.suite)
        dataset_hash = m.content_hash(body)
        if rec["dataset_id"] and rec["dataset_hash"] == dataset_hash:
            return
        try:
            existing = http.call(f"dataset {self.plan.suite!r} read", lambda ro: http.api.datasets.get(
                dataset_name=self.plan.suite, request_options=ro))
        except DeliveryFailure as exc:
            if exc.status != 404:
                raise
            existing = None
        if existing is not None:
            metadata = existing.metadata
            if metadata is None or isinstance(metadata, dict):
                merged = {**body["metadata"], **(metadata or {})}
                if merged != (metadata or {}):
                    update = {"name": self.plan.suite, "description": existing.description or body["description"],
                              "metadata": merged}
                    existing = http.call(f"dataset {self.plan.suite!r} metadata", lambda ro: http.api.datasets.create(
                        **update, request_options=ro))
            rec["dataset_id"] = existing.id
        else:
            created = http.call(f"dataset {self.plan.suite!r} create",
                                lambda ro: http.api.datasets.create(**body, request_options=ro))
            rec["dataset_id"] = created.id
        rec["dataset_hash"] = dataset_hash

    # ------------------------------------------------------------------ dataset items
    def _plan_items(self) -> list[tuple[m.AttemptPlan, m.ItemMerge]]:
        """This run's items merged into the shared ones (``mapping.merge_item``); returns the
        items whose merged content differs from what they hold (only those are written)."""
        rec = self.record
        need = [a for a in self.plan.attempts if rec["items"].get(a.item_id, {}).get("hash") != a.item_hash]
        if not need:
            return []
        existing = self._list_items()
        writes: list[tuple[m.AttemptPlan, m.ItemMerge]] = []
        now = now_iso()
        for a in need:
            merge = m.merge_item(existing.get(a.item_id), a.item)
            if merge.conflicts:
                log.info("dataset item %s: this run's %s differ from the item's (%s)", a.item_id,
                         ", ".join(merge.conflicts), merge.outcome)
            if merge.body is None:
                self._item_done(a, merge.outcome, now)
            else:
                writes.append((a, merge))
        return writes

    def _write_all(self, item_writes: list[tuple[m.AttemptPlan, m.ItemMerge]]) -> None:
        """Item upserts (and, v3, each attempt's dataset run item after its item) on the worker
        pool, while this thread sends the spans and scores; the results go into the record
        here, once the workers are done."""
        bindings = self.record["bindings"]
        writes = {a.item_id: merge for a, merge in item_writes}
        work = []
        for a in self.plan.attempts:
            b = bindings.get(a.item_id)
            run_item = self.legacy and b is not None and b.get("run_item") not in (CONFIRMED, IN_DOUBT)
            if a.item_id in writes or run_item:
                work.append((a, writes.get(a.item_id), m.Binding.from_json(b) if run_item else None))
        self._items_pending = {a.item_id for a, merge, _ in work if merge is not None}
        self._run_items_pending = {a.item_id for a, _, binding in work if binding is not None}
        queue = iter(work)
        taking = threading.Lock()

        def writer() -> list[tuple]:
            """(worker thread) Writes attempts taken from ``work`` until none is left (a few
            long-lived loops, not a future per attempt: 10,000 futures cost the sending thread
            a tenth of its time)."""
            done = []
            while True:
                with taking:
                    w = next(queue, None)
                if w is None:
                    return done
                done.append(self._write_attempt(*w))

        with self._pool() as pool:
            writers = [pool.submit(writer) for _ in range(min(len(work), max(1, self.options.workers)))]
            self._spans_and_scores()
            results = [r for f in writers for r in f.result()]
        order = {a.item_id: i for i, (a, _, _) in enumerate(work)}
        results.sort(key=lambda r: order[r[0].item_id])
        item_failures, run_doubtful, run_failed = [], [], []
        for a, merge, item_failure, answer, run_failure in results:
            if merge is not None:
                if item_failure is None:
                    self._item_done(a, merge.outcome, now_iso())
                    self.sent["items"] += 1
                else:
                    item_failures.append(item_failure)
                    self.blocked.add(a.item_id)
                    self.done.discard(a.item_id)
            b = bindings.get(a.item_id)
            if answer is not None:
                run_id = answer.get("datasetRunId")
                if run_id and not self.record["experiment_id"]:
                    self.record["experiment_id"] = run_id
                    if self.ctx is not None:
                        self.ctx.experiment_id = run_id
                b["run_item"], b["run_item_id"] = CONFIRMED, answer.get("id")
                self.sent["run_items"] += 1
            elif run_failure is not None:
                b["run_item"] = IN_DOUBT if run_failure.in_doubt else PLANNED
                if run_failure.in_doubt:
                    b["run_item_doubt_at"] = now_iso()  # read back no sooner than readback_delay after this
                (run_doubtful if run_failure.in_doubt else run_failed).append(run_failure)
                self.done.discard(a.item_id)
            elif self.legacy and b is not None and b.get("run_item") != CONFIRMED:
                self.done.discard(a.item_id)  # its item could not be written: no run item yet
        self._items_pending, self._run_items_pending = set(), set()
        if item_failures:
            self.errors.append(("dataset items", len(item_failures), _summary(item_failures)))
        if run_doubtful:
            self.errors.append(("dataset run items (sent, no answer)", len(run_doubtful),
                                f"{_summary(run_doubtful)}; the next call reads the run back before sending again"))
        if run_failed:
            self.errors.append(("dataset run items", len(run_failed), _summary(run_failed)))
        self._report()

    def _write_attempt(self, a: m.AttemptPlan, merge: m.ItemMerge | None, binding: m.Binding | None):
        """(worker thread) The attempt's item upsert, then (v3) its dataset run item. Each call
        of ``POST /api/public/dataset-run-items`` adds a run item (the server does not
        de-duplicate), so one without an answer (or with a 5xx) is never re-sent in this call:
        the next call reads the run's items back first. Returns the outcomes; touches no state."""
        http = self.http
        assert http is not None
        item_failure = run_failure = None
        answer = None
        if merge is not None:
            body = orjson.dumps(m.item_request(a.item, merge.body or {}), option=orjson.OPT_SERIALIZE_NUMPY)
            try:
                http.post_json(f"dataset item {a.item_id} upsert", "/api/public/dataset-items", body)
            except DeliveryFailure as exc:
                return a, merge, exc, None, None
            self._items_pending.discard(a.item_id)  # for the progress count only
        if binding is not None:
            body = wire.run_item_body(a, binding, self.plan, self.anchor)
            if self.profile is None or not self.profile.run_item_created_at:
                body.pop("createdAt")  # strict body before 3.160.0: the key would be refused
            try:
                got = http.post_json(f"dataset run item {a.item_id}", "/api/public/dataset-run-items",
                                     orjson.dumps(body), retry_unanswered=False, doubtful=RUN_ITEM_DOUBTFUL)
                answer = got if isinstance(got, dict) else {}
                self._run_items_pending.discard(a.item_id)  # for the progress count only
            except DeliveryFailure as exc:
                run_failure = exc
        return a, merge, item_failure, answer, run_failure

    def _item_done(self, a: m.AttemptPlan, outcome: str, when: str) -> None:
        self.record["items"][a.item_id] = {"task_id": a.task_id, "attempt": a.attempt, "hash": a.item_hash,
                                           "outcome": outcome, "confirmed_at": when}
        self.item_outcomes[outcome] = self.item_outcomes.get(outcome, 0) + 1

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
        run_items_in_doubt = [a for a in candidates if self.legacy
                              and bindings.get(a.item_id, {}).get("run_item") == IN_DOUBT]
        no_record = unknown and not any(b.get("state") == CONFIRMED for b in bindings.values())
        if no_record or run_items_in_doubt or (self.legacy and not rec["experiment_id"]):
            # no record of this run (first call, or the record was lost), or dataset run items
            # that may exist: what does the server hold?
            if run_items_in_doubt:
                self._settle(run_items_in_doubt)
            by_id = {a.item_id: a for a in candidates}
            found = self._server_items(candidates)
            if not rec["anchor"]:
                rec["anchor"] = self._anchor_from_server(found)
            for item_id, row in found.items():
                a = by_id[item_id]
                b = bindings.get(a.item_id)
                if b is not None and b.get("state") == CONFIRMED and (not self.legacy or b.get("run_item") == CONFIRMED):
                    continue
                if b is not None and self.legacy and (b["trace_id"], b["observation_id"]) == (row[0], row[1]):
                    b["run_item"], b["run_item_id"] = CONFIRMED, row[2]
                    if b.get("state") == IN_DOUBT:
                        b["state"], b["confirmed_at"], b["span_hash"] = CONFIRMED, now_iso(), self._span_hash(a, b)
                    continue
                server = m.binding_from_server(a, row[0], row[1])
                bindings[a.item_id] = {**server.to_json(), "task_id": a.task_id, "attempt": a.attempt,
                                       "state": CONFIRMED, "span_hash": None, "source": "server",
                                       "confirmed_at": now_iso()}
                if self.legacy:
                    bindings[a.item_id].update({"run_item": CONFIRMED, "run_item_id": row[2]})
            for a in run_items_in_doubt:
                bindings[a.item_id].pop("run_item_doubt_at", None)
                if bindings[a.item_id].get("run_item") == IN_DOUBT:
                    bindings[a.item_id]["run_item"] = PLANNED  # not there: send it
            unknown = [a for a in candidates if a.item_id not in bindings]
            in_doubt = [a for a in in_doubt if bindings[a.item_id].get("state") == IN_DOUBT]
        if in_doubt:
            self._resolve_in_doubt(in_doubt)

        # new bindings: look the execution traces up
        roots = self._lookup_roots(sorted({a.execution_trace_id for a in unknown if a.execution_trace_id}))
        now = now_iso()
        for a in unknown:
            if a.execution_trace_id is not None and a.execution_trace_id not in roots:
                self.blocked.add(a.item_id)  # look-up failed: decide next time, never guess
                continue
            b = m.decide_binding(a, roots.get(a.execution_trace_id) if a.execution_trace_id else None)
            bindings[a.item_id] = {**b.to_json(), "task_id": a.task_id, "attempt": a.attempt, "state": PLANNED,
                                   "span_hash": None, "source": "publisher", "planned_at": now, "end": None}
            if self.legacy:
                bindings[a.item_id]["run_item"] = PLANNED

    def _settle(self, attempts: list[m.AttemptPlan]) -> None:
        """Wait until dataset run items sent without an answer could be read back: the v3 server
        queues each one before storing it, so one read too soon is absent though it exists, and
        sending it again would add a second (the server does not de-duplicate run items). An
        item sent ``readback_delay`` seconds ago or more is read at once; one whose sending time
        is unknown (the earlier call ended without saving its outcome) counts from now."""
        delay = self.options.readback_delay
        if delay <= 0:
            return
        bindings = self.record["bindings"]
        started = m.parse_timestamp(self.session["started_at"]) or dt.datetime.now(dt.UTC)
        latest = max(m.parse_timestamp(bindings[a.item_id].get("run_item_doubt_at")) or started for a in attempts)
        wait = (latest + dt.timedelta(seconds=delay) - dt.datetime.now(dt.UTC)).total_seconds()
        if wait <= 0:
            return
        _announce(self.progress, f"langfuse: waiting {wait:.0f} s before reading back {len(attempts)} dataset run "
                                 f"item(s) sent without an answer (the server stores them with a delay)")
        log.info("waiting %.1f s before reading back %d dataset run item(s) in doubt", wait, len(attempts))
        time.sleep(wait)

    def _anchor_from_server(self, found: dict[str, tuple]) -> str | None:
        """The anchor time of an earlier publication whose record is lost: v4 - the start of its
        experiment items (every span starts at the anchor); v3 - the timestamp of a score on one
        of its items, else the dataset run items' creation time."""
        if not found:
            return None
        if not self.legacy:
            starts = [row[3] for row in found.values() if row[3]]
            return min(starts) if starts else None
        http = self.http
        assert http is not None
        trace_id, observation_id = next(iter(found.values()))[:2]
        try:
            _, body = http.get_json("score timestamp read-back (GET /api/public/v2/scores)", "/api/public/v2/scores",
                                    {"traceId": trace_id, "observationId": observation_id, "limit": "1"})
            rows = (body or {}).get("data") or []
            if rows and rows[0].get("timestamp"):
                return m.normalize_timestamp(rows[0]["timestamp"])
        except DeliveryFailure as exc:
            log.warning("could not read an earlier score (%s); using the run items' creation time", exc.detail)
        created = [row[3] for row in found.values() if row[3]]
        return min(created) if created else None

    def _lookup_roots(self, trace_ids: list[str]) -> dict[str, str | None]:
        """trace id -> root span id found in Langfuse, or None when the trace has no root there.
        Batches of ``lookup_batch`` ids per request (``traceId any of``). A trace whose look-up
        failed is absent from the result (its attempts wait); so is every trace when the
        look-up endpoint is absent (404): an absent endpoint is not an absent trace."""
        if not trace_ids:
            return {}
        size = max(1, self.options.lookup_batch)
        batches = [trace_ids[i:i + size] for i in range(0, len(trace_ids), size)]

        def lookup(batch: list[str]) -> tuple[list[str], dict[str, str], DeliveryFailure | None]:
            try:
                rows = self._observations(batch, roots_only=True)
            except DeliveryFailure as exc:
                return batch, {}, exc
            by_trace: dict[str, list[dict]] = {}
            for row in rows:
                by_trace.setdefault(row.get("traceId"), []).append(row)
            roots: dict[str, str] = {}
            for trace_id, obs in by_trace.items():
                obs = [o for o in obs if not o.get("parentObservationId")] or obs
                obs.sort(key=lambda o: (o.get("name") != "agent-run", str(o.get("startTime") or "")))
                roots[trace_id] = obs[0]["id"]
            return batch, roots, None

        found: dict[str, str | None] = {}
        failures: dict[str, DeliveryFailure] = {}
        with self._pool() as pool:
            for batch, roots, failure in pool.map(lookup, batches):
                for trace_id in batch:
                    if failure is None:
                        found[trace_id] = roots.get(trace_id)
                    else:
                        failures[trace_id] = failure
        if failures:
            affected = sum(1 for a in self.plan.attempts if a.execution_trace_id in failures)
            first = next(iter(failures.values()))
            detail = first.detail if first.status != 404 else (
                f"{first.detail} (the look-up endpoint is absent on this server: the attempts wait, "
                f"they are not taken for attempts without an execution trace)")
            self.errors.append(("execution trace look-ups", affected, detail))
        log.info("execution traces: %d looked up in %d request(s), %d found", len(trace_ids), len(batches),
                 sum(1 for v in found.values() if v))
        return found

    def _observations(self, trace_ids: list[str], *, roots_only: bool) -> list[dict]:
        """Observations of these traces (roots only, or all): v4 ``GET /api/public/v2/observations``
        (cursor pages of up to 1000), v3 ``GET /api/public/observations`` (pages of 100), both
        with the structured filter ``traceId any of [...]``."""
        http = self.http
        assert http is not None
        filters: list[dict] = [{"type": "stringOptions", "column": "traceId", "operator": "any of",
                                "value": list(trace_ids)}]
        rows: list[dict] = []
        what = f"observations of {len(trace_ids)} trace(s)"
        if not self.legacy:
            params = {"fields": "core,basic", "limit": "1000", "filter": orjson.dumps(filters).decode()}
            if roots_only:
                params["isRootObservation"] = "true"
            cursor = None
            while True:
                query = {**params, **({"cursor": cursor} if cursor else {})}
                _, body = http.get_json(f"{what} (GET /api/public/v2/observations)", "/api/public/v2/observations", query)
                rows += (body or {}).get("data") or []
                cursor = ((body or {}).get("meta") or {}).get("cursor")
                if not cursor or not (body or {}).get("data"):
                    return rows
        if roots_only:
            filters.append({"type": "null", "column": "parentObservationId", "operator": "is null", "value": ""})
        page = 1
        while True:
            _, body = http.get_json(f"{what} (GET /api/public/observations)", "/api/public/observations", {
                "filter": orjson.dumps(filters).decode(), "page": str(page), "limit": "100"})
            data = (body or {}).get("data") or []
            rows += data
            if page >= int(((body or {}).get("meta") or {}).get("totalPages") or 0) or not data:
                return rows
            page += 1

    def _server_items(self, candidates: list[m.AttemptPlan]) -> dict[str, tuple]:
        """Experiment items of this run that already exist in Langfuse (paged read-back):
        item id -> (trace id, observation id, run item id | None, start or creation time).
        v4: ``GET /api/public/experiment-items``; v3: ``GET /api/public/dataset-run-items``
        (a 404 there: the dataset run does not exist yet), which also gives the run's id."""
        http = self.http
        assert http is not None
        by_id = {a.item_id: a for a in candidates}
        out: dict[str, tuple] = {}

        def add(item_id: str, row: tuple) -> None:
            if item_id not in by_id:
                return
            if item_id in out and out[item_id][:2] != row[:2]:
                log.warning("experiment item %s exists more than once in Langfuse; keeping one", item_id)
                return
            out.setdefault(item_id, row)

        if self.legacy:
            page = 1
            while True:
                try:
                    _, body = http.get_json(f"dataset run items read-back (page {page})", "/api/public/dataset-run-items", {
                        "datasetId": self.record["dataset_id"], "runName": self.plan.run_id, "page": str(page),
                        "limit": str(self.options.page_size)})
                except DeliveryFailure as exc:
                    if exc.status == 404 and page == 1:
                        return out  # "Dataset run not found": nothing published yet
                    raise
                data = (body or {}).get("data") or []
                for row in data:
                    run_id = row.get("datasetRunId")
                    if run_id and not self.record["experiment_id"]:
                        self.record["experiment_id"] = run_id
                    add(row.get("datasetItemId"), (row.get("traceId"), row.get("observationId"), row.get("id"),
                                                   m.normalize_timestamp(row.get("createdAt"))))
                if page >= int(((body or {}).get("meta") or {}).get("totalPages") or 0) or not data:
                    return out
                page += 1
        since = self._since()
        cursor = None
        page = 0
        while True:
            page += 1
            result = http.call(f"experiment items read-back (page {page})", lambda ro, cursor=cursor: http.api.experiments.list_items(
                from_start_time=since, experiment_id=self.record["experiment_id"], fields="core",
                limit=self.options.page_size, cursor=cursor, request_options=ro))
            for row in result.data:
                add(row.experiment_item_id, (row.trace_id, row.id, None, m.iso_ms(row.start_time)))
            cursor = getattr(result.meta, "cursor", None)
            if not cursor or not result.data:
                return out

    def _since(self) -> dt.datetime:
        """Lower time bound for experiment-item reads: before the run (and any publication) began."""
        stamps = [m.parse_timestamp(self.record.get("first_published_at")),
                  m.parse_timestamp(self.record.get("anchor")),
                  m.parse_timestamp(self.plan.experiment_metadata.get("started_at")),
                  m.parse_timestamp(self.plan.provenance.get("run_started_at"))]
        known = [s for s in stamps if s is not None]
        base = min(known) if known else dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
        return base - dt.timedelta(days=1)

    def _resolve_in_doubt(self, attempts: list[m.AttemptPlan]) -> None:
        """Spans sent without an answer: find out which exist before anything is re-sent
        (the observations of their traces, ``lookup_batch`` traces per request); the ones
        not found go back to ``planned`` and are sent again with the same ids and times."""
        bindings = self.record["bindings"]
        found: set[tuple[str, str]] = set()
        unreadable: list[m.AttemptPlan] = []
        detail = ""
        traces = sorted({bindings[a.item_id]["trace_id"] for a in attempts})
        size = max(1, self.options.lookup_batch)
        for start in range(0, len(traces), size):
            batch = traces[start:start + size]
            try:
                rows = self._observations(batch, roots_only=False)
            except DeliveryFailure as exc:
                detail = detail or exc.detail
                unreadable += [a for a in attempts if bindings[a.item_id]["trace_id"] in batch]
                continue
            found.update((r.get("traceId"), r.get("id")) for r in rows)
        if unreadable:
            self.errors.append(("span read-back", len(unreadable), detail))
            self.blocked.update(a.item_id for a in unreadable)
        now = now_iso()
        for a in attempts:
            if a.item_id in self.blocked:
                continue
            b = bindings[a.item_id]
            if (b["trace_id"], b["observation_id"]) in found:
                b["state"], b["confirmed_at"], b["span_hash"] = CONFIRMED, now, self._span_hash(a, b)
            else:
                b["state"] = PLANNED
        log.info("in-doubt spans: %d checked, %d found stored", len(attempts),
                 sum(1 for a in attempts if bindings[a.item_id]["state"] == CONFIRMED))

    # ------------------------------------------------------------------ spans and scores
    def _spans_and_scores(self) -> None:
        bindings = self.record["bindings"]
        todo = [a for a in self.plan.attempts if a.item_id not in self.blocked and a.item_id in bindings]
        self.skipped_existing = sum(1 for a in todo if bindings[a.item_id].get("state") == CONFIRMED)
        size = max(1, self.options.chunk_attempts)
        # Score batches go out from a sender thread while the next chunk is made and its spans
        # are sent: the server works on the one while this process works on the other.
        self._score_failures: list = [0, ""]
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="langfuse-scores") as sender:
            self._sender = sender
            try:
                for start in range(0, len(todo), size):
                    chunk = todo[start:start + size]
                    ok = self._send_spans(chunk)
                    self._send_attempt_scores([a for a in chunk if a.item_id in ok])
                    self._report()
            finally:
                self._collect_scores(0)
                self._sender = None
        if self._score_failures[0]:
            self.errors.append(("attempt scores", self._score_failures[0], self._score_failures[1]))

    def _span_work(self, a: m.AttemptPlan, now: str) -> list[dict] | None:
        """Spans to (re)send for an attempt, or None when its experiment item is in place
        (``now``: their end time when not planned before)."""
        b = self.record["bindings"][a.item_id]
        binding = m.Binding.from_json(b)
        # In place: found in Langfuse without a record (content unknown) or sent with the same
        # content: keep it. Changed content is re-sent under the same ids and times (replaces).
        if b["state"] == CONFIRMED and (
            b.get("source") == "server" or b.get("span_hash") in (None, self._span_hash(a, b))
        ):
            return None
        end = b.get("end") or now
        b["end"] = end
        return wire.attempt_spans(a, binding, self.plan, self._context(), self.anchor, max(end, self.anchor))

    def _send_spans(self, chunk: list[m.AttemptPlan]) -> set[str]:
        """Send the chunk's spans; return the item ids whose experiment item is in place.

        A batch without an answer is never repeated blindly: its items are read back and
        only the missing ones are sent again (up to ``retries`` rounds).
        """
        http = self.http
        assert http is not None
        bindings = self.record["bindings"]
        ok: set[str] = set()
        failed: list[tuple[m.AttemptPlan, DeliveryFailure]] = []
        work: list[tuple[m.AttemptPlan, list[dict]]] = []
        now = now_iso()
        for a in chunk:
            spans = self._span_work(a, now)
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
                    spans = self._span_work(a, now_iso())
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
        encoded = [wire.encode_spans(spans) for _, spans in work]  # once: for the sizes, the body and the hash
        sizes = [sum(len(e) + 1 for e in es) for es in encoded]
        groups = wire.chunk_by_size(work, sizes, self.options.max_span_bytes,  # an attempt has at most 2 spans
                                 max(1, self.options.max_spans_per_request // 2))
        doubtful: list[m.AttemptPlan] = []
        for group in groups:
            batch = [(work[i][0], encoded[i]) for i in group]
            pieces = [e for _, es in batch for e in es]
            try:
                http.send_spans(f"span batch ({len(pieces)} spans)", wire.otlp_bytes(pieces))
            except DeliveryFailure as exc:
                for a, _ in batch:
                    if exc.in_doubt:
                        bindings[a.item_id]["state"] = IN_DOUBT
                        doubtful.append(a)
                    else:
                        bindings[a.item_id]["state"] = PLANNED
                        failed.append((a, exc))
                continue
            now = now_iso()
            for a, es in batch:
                b = bindings[a.item_id]
                b["state"], b["confirmed_at"], b["span_hash"] = CONFIRMED, now, wire.span_bytes_hash(es)
                self.sent["spans"] += len(es)
                ok.add(a.item_id)
        return doubtful

    # ------------------------------------------------------------------ scores
    def _encode_scores(self, scores: list[dict]) -> list[bytes]:
        """Each score as the unit its endpoint takes: a ``score-create`` event, or an array element."""
        assert self.profile is not None
        if self.profile.scores_via == g.INGESTION:
            return [wire.score_event_bytes(s) for s in scores]
        return [orjson.dumps(s) for s in scores]

    def _send_encoded(self, what: str, encoded: list[bytes]) -> None:
        http = self.http
        assert http is not None and self.profile is not None
        if self.profile.scores_via == g.INGESTION:
            http.send_ingestion(what, encoded)
        else:
            http.send_scores(what, encoded)

    def _score_limit(self) -> int:
        assert self.profile is not None
        if self.profile.scores_via == g.INGESTION:
            return self.options.max_ingestion_bytes - 16  # '{"batch":[' + ']}'
        return self.options.max_score_bytes - 2

    def _send_attempt_scores(self, attempts: list[m.AttemptPlan]) -> None:
        """Scores of these attempts in size-bounded batches (an attempt's scores travel together),
        handed to the sender thread (at most two batches wait for their answer)."""
        rec = self.record
        work: list[tuple[m.AttemptPlan, list[bytes], str]] = []
        for a in attempts:
            encoded, h = self._score_units(a, rec["bindings"][a.item_id])
            if rec["attempt_scores"].get(a.item_id, {}).get("hash") == h:
                self.done.add(a.item_id)
                continue
            work.append((a, encoded, h))
        if not work:
            return
        sizes = [sum(len(e) + 1 for e in encoded) for _, encoded, _ in work]
        for group in wire.chunk_by_size(work, sizes, self._score_limit(), self.options.max_scores_per_request):
            batch = [(a, len(es), h) for a, es, h in (work[i] for i in group)]
            encoded = [e for i in group for e in work[i][1]]
            what = f"score batch ({len(encoded)} scores)"
            sender = getattr(self, "_sender", None)
            if sender is None:
                self._pending_scores.append((None, what, encoded, batch))
            else:
                self._pending_scores.append((sender.submit(self._send_encoded, what, encoded), what, encoded, batch))
            self._collect_scores(2)

    def _collect_scores(self, keep: int) -> None:
        """Wait for the oldest score batches until at most ``keep`` are pending; record each."""
        rec = self.record
        while len(self._pending_scores) > keep:
            future, what, encoded, batch = self._pending_scores.pop(0)
            try:
                if future is None:
                    self._send_encoded(what, encoded)
                else:
                    future.result()
            except DeliveryFailure as exc:
                self._score_failures[0] += len(batch)
                self._score_failures[1] = self._score_failures[1] or exc.detail
                continue
            now = now_iso()
            for a, count, h in batch:
                rec["attempt_scores"][a.item_id] = {"count": count, "hash": h, "confirmed_at": now}
                self.done.add(a.item_id)  # _write_all takes it out again if its item or run item failed
            self.sent["scores"] += len(encoded)

    def _run_scores(self) -> None:
        """Run-level scores on the experiment (v3: once the dataset run exists)."""
        rec = self.record
        h = m.content_hash(self.plan.run_scores)
        done = rec["run_scores"]
        if done is not None and done.get("hash") == h and done.get("experiment_id") == rec["experiment_id"] \
                and done.get("timestamp") == self.anchor:
            return
        if not rec["experiment_id"]:
            self.errors.append(("run-level scores", len(self.plan.run_scores),
                                "the dataset run does not exist yet (no dataset run item was accepted)"))
            return
        encoded = self._encode_scores(wire.run_score_payloads(self.plan, rec["experiment_id"], self.anchor))
        for group in wire.chunk_by_size(encoded, [len(e) + 1 for e in encoded], self._score_limit(),
                                     self.options.max_scores_per_request):
            batch = [encoded[i] for i in group]
            try:
                self._send_encoded(f"run score batch ({len(batch)} scores)", batch)
            except DeliveryFailure as exc:
                self.errors.append(("run-level scores", len(encoded), exc.detail))
                return
            self.sent["scores"] += len(batch)
        rec["run_scores"] = {"count": len(encoded), "hash": h, "experiment_id": rec["experiment_id"],
                             "timestamp": self.anchor, "confirmed_at": now_iso()}

    # ------------------------------------------------------------------ record and errors
    def _save(self) -> None:
        save_record(self.record_path, self.record)

    def _finish_record(self) -> None:
        rec = self.record
        done = bool(rec["experiment_id"]) and len(self.done) == self.total \
            and rec["run_scores"] is not None and not self.errors
        rec["status"] = "complete" if done else "incomplete"
        rec["updated_at"] = now_iso()
        self.session.update({
            "finished_at": rec["updated_at"],
            "outcome": "complete" if done else "incomplete",
            "sent": dict(self.sent),
            "items": dict(self.item_outcomes),
            "skipped_existing": self.skipped_existing,
            "http_requests": self.http.requests if self.http is not None else 0,
            "http_requests_by_route": dict(self.http.by_route) if self.http is not None else {},
            "rate_limited": self.http.rate_limited if self.http is not None else 0,  # 429 answers waited out
            "errors": [{"what": w, "count": n, "detail": d} for w, n, d in self.errors],
        })
        if self.plan.duplicates:
            rec["duplicates_ignored"] = self.plan.duplicates
        rec["sessions"] = (rec.get("sessions") or [])[-19:] + [self.session]
        write_record(self.record_path, rec)

    def _error_message(self) -> str:
        parts = "; ".join(f"{what}: {n} failed ({detail})" for what, n, detail in self.errors)
        missing = self.total - len(self.done)
        return (
            f"Langfuse publication of run {self.plan.run_id!r} is incomplete: {missing} of {self.total} "
            f"attempt(s) not confirmed. {parts}. What was confirmed is recorded in {self.record_path}; "
            f"publishing again resends only what is missing."
        )
