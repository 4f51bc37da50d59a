"""Publish one processed run to Langfuse with confirmed, idempotent delivery.

Order of a publication (docs/langfuse.md has the full story):

1. plan (pure, ``plan.plan_run``): ids, item bodies, score values;
2. project id (``GET /api/public/projects``) and the server probe (``server_generation.probe``): which
   generation the server is (v4 events mode or v3 legacy mode), said in the progress output
   and in ``publication.json``; a server that offers neither path fails here, before anything
   is written;
3. the Dataset (read first; created, or given only the metadata keys it lacks);
4. Dataset Items: the dataset is listed and each item of this run merged with what the item
   holds (``items.merge_item``: never erase); only changed items are written;
5. the experiment: v4 - the SDK formula id, experiment items are spans with experiment
   attributes; v3 - a dataset run the server creates with the first dataset run item;
6. the binding of every new experiment item: items that already exist keep theirs (record,
   or read back), otherwise the execution traces are looked up in batches and a found root
   makes the item ``available`` under it, else it goes under its deterministic replay trace;
7. per chunk of attempts: spans (an unanswered batch is resolved by reading back before
   anything is re-sent), v3: one dataset run item per attempt (an unanswered one is checked
   by reading back in the next call, never re-sent blindly), then the scores as
   ``score-create`` events (207 with a status per event);
8. run-level scores on the experiment, then the deletion of the scores an earlier publication
   confirmed and this one leaves out (a value that became unknown, e.g. after a re-judge, or
   an attempt the run no longer has);
9. ``publication.json``: what was accepted, with ids and times, so that the next call sends
   only what is missing or changed. Failures raise ``PublicationError``.

Each step is a module of ``steps`` (functions over the state, ``state.Publication``); this one
runs them in order and keeps the record.

Every span of a run starts at the publication's anchor time and every score carries it
(``Publication.anchor``): the time the first publication of the run began, kept in the record and read
back from the server without one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from .ids import content_hash, experiment_id
from .items import ItemMerge, dataset_body
from .outbox import write_outbox
from .payloads import ExperimentContext
from .plan import AttemptPlan, plan_run
from .record import CONFIRMED, fresh_record, now_iso, target_fingerprint, write_record
from .result import PublicationError, PublicationResult
from .retry import DeliveryFailure
from .server_generation import ServerProfile, UnsupportedServer, probe
from .settings import LangfuseSettings, PublishOptions
from .state import Publication, announce, announce_wait
from .steps import dataset, experiment_items, item_writes, score_delivery
from .suite_lock import LockError, suite_lock
from .transport import LangfuseHttp

log = logging.getLogger("bench_pipeline.publication")


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
    server generation was found and each wait (``state.announce_wait``: a ``waiting(text)``
    method, when it has one, is told the waits instead).
    """
    settings = settings if settings is not None else LangfuseSettings.from_env()
    options = options or PublishOptions.from_env()
    out_dir = Path(out_dir)
    plan = plan_run(run_id=run_id, metrics=metrics, attempts=attempts, manifest=manifest, suite_def=suite_def)
    if plan.duplicates:
        log.warning("langfuse: %d earlier duplicate task/attempt record(s) not sent: Langfuse keeps one item per "
                    "task/attempt, the later line's (the metrics still count every row in attempt-level "
                    "populations)", len(plan.duplicates))
    if not settings.configured:
        return write_outbox(plan, out_dir, settings, options, progress)
    out_dir.mkdir(parents=True, exist_ok=True)
    return run(Publication(plan, settings, options, out_dir, progress))


def run(pub: Publication) -> PublicationResult:
    """The publication under the suite lock, then the record; raises PublicationError."""
    rec = pub.record
    if rec["experiment_id"] and rec["anchor"] and rec["server"]:
        pub.done = {a.item_id for a in pub.plan.attempts if attempt_done(pub, a)}
    pub.report()
    try:
        if nothing_to_do(pub):
            pub.skipped_existing = pub.total
            log.info("run %s already published; nothing to send", pub.plan.run_id)
        else:
            pub.http = LangfuseHttp(pub.settings, pub.options)
            pub.http.on_rate_limit = lambda text: announce_wait(pub.progress, text)
            suite = pub.plan.suite
            with suite_lock(target_fingerprint(pub.settings), suite, timeout=pub.options.lock_timeout,
                            on_wait=lambda: announce_wait(pub.progress, f"langfuse: waiting for another publication "
                                                                   f"of suite {suite!r} to this server")):
                publish_steps(pub)
    except LockError as exc:
        pub.write_record = False  # nothing was sent
        raise PublicationError(f"{exc}; nothing was published, try again later") from None
    except UnsupportedServer as exc:
        pub.write_record = False  # nothing was written, not even the record
        raise PublicationError(str(exc)) from None
    except PublicationError:
        raise
    except DeliveryFailure as exc:  # a step nothing else can proceed without: one request, not a count
        pub.errors.append((exc.what, None, exc.detail))
    finally:
        if pub.write_record:
            finish_record(pub)
        if pub.http is not None:
            pub.http.close()
    if pub.errors:
        raise PublicationError(error_message(pub))
    pub.report()
    server = rec.get("server") or {}
    return PublicationResult(
        status="published", dataset=pub.plan.suite, experiment_id=rec["experiment_id"],
        items=pub.sent["items"], scores=pub.sent["scores"], spans=pub.sent["spans"],
        skipped_existing=pub.skipped_existing, record_path=pub.record_path, outbox_path=None,
        http_requests=pub.http.requests if pub.http is not None else 0,
        server=server.get("generation"), server_version=server.get("version"), run_items=pub.sent["run_items"],
    )


def nothing_to_do(pub: Publication) -> bool:
    """Everything of this plan is confirmed in the record: no request is needed."""
    rec = pub.record
    if not (rec["project_id"] and rec["dataset_id"] and rec["experiment_id"] and rec["server"] and rec["anchor"]):
        return False
    if rec["dataset_hash"] != content_hash(dataset_body(pub.plan.suite)):
        return False
    if rec["run_scores"] is None or rec["run_scores"].get("hash") != content_hash(pub.plan.run_scores):
        return False
    return len(pub.done) == pub.total and not rec["stale_scores"] and not score_delivery.departed(pub)


def attempt_done(pub: Publication, a: AttemptPlan) -> bool:
    """The attempt's item, experiment item (v3: run item) and scores are confirmed with this content."""
    rec = pub.record
    item = rec["items"].get(a.item_id)
    binding = rec["bindings"].get(a.item_id)
    scores = rec["attempt_scores"].get(a.item_id)
    return (
        item is not None and item.get("hash") == a.item_hash
        and binding is not None and binding.get("state") == CONFIRMED
        and (not pub.legacy or binding.get("run_item") == CONFIRMED)
        and binding.get("span_hash") in (None, pub.span_hash(a, binding))
        and scores is not None and scores.get("hash") == pub.scores_hash(a, binding)
    )


def publish_steps(pub: Publication) -> None:
    """The steps in order (the module docstring's 2-8)."""
    http = pub.http
    assert http is not None
    rec = pub.record
    # 1. project and server generation (nothing is written before the probe)
    if not rec["project_id"]:
        projects = http.call("project lookup (GET /api/public/projects)",
                             lambda ro: http.api.projects.get(request_options=ro))
        if not projects.data:
            raise PublicationError("Langfuse returned no project for these keys; nothing was published.")
        rec["project_id"] = projects.data[0].id
    pub.profile = probe(http)
    adopt_server(pub, pub.profile)
    announce(pub.progress, f"langfuse: server {pub.profile.describe()}")
    rec["first_published_at"] = rec["first_published_at"] or pub.session["started_at"]
    pub.session["server"] = pub.profile.generation

    # 2. dataset, and what this run changes in its items
    timed(pub, "dataset", lambda: dataset.write_dataset(pub))
    writes: list[tuple[AttemptPlan, ItemMerge]] = []
    timed(pub, "items_merge", lambda: writes.extend(dataset.plan_items(pub)))
    # 3. experiment, anchor time, bindings
    if not pub.legacy:
        rec["experiment_id"] = experiment_id(rec["project_id"], rec["dataset_id"], pub.plan.run_id)
    pub.ctx = ExperimentContext(rec["dataset_id"], rec["experiment_id"], rec["project_id"], http.base_url,
                                   span_experiment=not pub.legacy)
    timed(pub, "bindings", lambda: experiment_items.bind(pub))
    if not rec["anchor"]:
        rec["anchor"] = pub.session["started_at"]
    pub.save()  # planned bindings are on disk before any span or run item is sent
    # 4. per-item writes (items, v3 run items) on worker threads, while spans and scores
    # stream from this one; 5. run scores (v3: once the run exists)
    timed(pub, "items_spans_scores", lambda: item_writes.write_all(pub, writes))
    timed(pub, "run_scores", lambda: score_delivery.run_scores(pub))
    # 6. the scores confirmed by an earlier publication and left out of this one (a value that
    # became unknown, an attempt the run no longer has)
    score_delivery.forget_departed(pub)
    timed(pub, "stale_scores", lambda: score_delivery.delete_stale_scores(pub))


def timed(pub: Publication, phase: str, step: Callable[[], None]) -> None:
    """Run one step; its wall seconds go into the session (``phases_s``) and the log."""
    started = time.perf_counter()
    try:
        step()
    finally:
        seconds = round(time.perf_counter() - started, 3)
        pub.session.setdefault("phases_s", {})[phase] = seconds
        log.info("publication step %s: %.2f s", phase, seconds)


def adopt_server(pub: Publication, profile: ServerProfile) -> None:
    """Keep the probe in the record; a record made against the other generation (the
    server was migrated in between) is not reused: what exists is read back instead."""
    rec = pub.record
    old = (rec.get("server") or {}).get("generation")
    if old and old != profile.generation:
        log.warning("the server is now %s (the record was made against %s); reading back what exists",
                    profile.generation, old)
        keep = {k: rec[k] for k in ("project_id", "first_published_at", "sessions", "anchor")}
        rec.clear()
        rec.update(fresh_record(pub.plan, target_fingerprint(pub.settings)))
        rec.update(keep)
        pub.done = set()
    rec["server"] = profile.to_json()


def finish_record(pub: Publication) -> None:
    """The record with this call's outcome and session (the last 20 sessions are kept)."""
    rec = pub.record
    done = bool(rec["experiment_id"]) and len(pub.done) == pub.total \
        and rec["run_scores"] is not None and not rec["stale_scores"] and not pub.errors
    rec["status"] = "complete" if done else "incomplete"
    rec["updated_at"] = now_iso()
    pub.session.update({
        "finished_at": rec["updated_at"],
        "outcome": "complete" if done else "incomplete",
        "sent": dict(pub.sent),
        "items": dict(pub.item_outcomes),
        "skipped_existing": pub.skipped_existing,
        "http_requests": pub.http.requests if pub.http is not None else 0,
        "http_requests_by_route": dict(pub.http.by_route) if pub.http is not None else {},
        "rate_limited": pub.http.rate_limited if pub.http is not None else 0,  # 429 answers waited out
        "errors": [{"what": w, "count": n, "detail": d} for w, n, d in pub.errors],
    })
    if pub.plan.duplicates:
        rec["duplicates_ignored"] = pub.plan.duplicates
    rec["sessions"] = (rec.get("sessions") or [])[-19:] + [pub.session]
    write_record(pub.record_path, rec)


def error_message(pub: Publication) -> str:
    """What failed and how many (a step that every other waits for, such as the project
    lookup, without a count: it is one request), and that publishing again resends only what
    is missing."""
    parts = "; ".join(f"{what}: {n} failed ({detail})" if n is not None
                      else f"{what} failed ({detail}), and nothing after it was sent" for what, n, detail in pub.errors)
    missing = pub.total - len(pub.done)
    return (
        f"Langfuse publication of run {pub.plan.run_id!r} is incomplete: {missing} of {pub.total} "
        f"attempt(s) not confirmed. {parts}. What was confirmed is recorded in {pub.record_path}; "
        f"publishing again resends only what is missing."
    )
