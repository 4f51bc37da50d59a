"""The Dataset and its items: read first, created when absent; this run's items merged with
what the shared items hold (``items.merge_item``: never erase), so that only changed items are
written (by ``item_writes``)."""

from __future__ import annotations

import logging

from ..ids import content_hash
from ..items import ItemMerge, dataset_body, merge_item
from ..plan import AttemptPlan
from ..record import now_iso
from ..retry import DeliveryFailure
from ..state import Publication

log = logging.getLogger("bench_pipeline.publication")


def write_dataset(pub: Publication) -> None:
    """The Dataset: read first, created when absent; an existing one keeps its description
    and every metadata key it has (only the keys this publisher needs and it lacks are added)."""
    http = pub.http
    assert http is not None
    rec = pub.record
    body = dataset_body(pub.plan.suite)
    dataset_hash = content_hash(body)
    if rec["dataset_id"] and rec["dataset_hash"] == dataset_hash:
        return
    try:
        existing = http.call(f"dataset {pub.plan.suite!r} read", lambda ro: http.api.datasets.get(
            dataset_name=pub.plan.suite, request_options=ro))
    except DeliveryFailure as exc:
        if exc.status != 404:
            raise
        existing = None
    if existing is not None:
        metadata = existing.metadata
        if metadata is None or isinstance(metadata, dict):
            merged = {**body["metadata"], **(metadata or {})}
            if merged != (metadata or {}):
                update = {"name": pub.plan.suite, "description": existing.description or body["description"],
                          "metadata": merged}
                existing = http.call(f"dataset {pub.plan.suite!r} metadata", lambda ro: http.api.datasets.create(
                    **update, request_options=ro))
        rec["dataset_id"] = existing.id
    else:
        created = http.call(f"dataset {pub.plan.suite!r} create",
                            lambda ro: http.api.datasets.create(**body, request_options=ro))
        rec["dataset_id"] = created.id
    rec["dataset_hash"] = dataset_hash


def plan_items(pub: Publication) -> list[tuple[AttemptPlan, ItemMerge]]:
    """This run's items merged into the shared ones (``items.merge_item``); returns the
    items whose merged content differs from what they hold (only those are written)."""
    rec = pub.record
    need = [a for a in pub.plan.attempts if rec["items"].get(a.item_id, {}).get("hash") != a.item_hash]
    if not need:
        return []
    existing = list_items(pub)
    writes: list[tuple[AttemptPlan, ItemMerge]] = []
    now = now_iso()
    for a in need:
        merge = merge_item(existing.get(a.item_id), a.item)
        if merge.conflicts:
            log.info("dataset item %s: this run's %s differ from the item's (%s)", a.item_id,
                     ", ".join(merge.conflicts), merge.outcome)
        if merge.body is None:
            item_done(pub, a, merge.outcome, now)
        else:
            writes.append((a, merge))
    return writes


def list_items(pub: Publication) -> dict[str, dict]:
    """The suite's Dataset Items in Langfuse (paged): id -> input, expectedOutput, metadata."""
    http = pub.http
    assert http is not None
    out: dict[str, dict] = {}
    page = 1
    while True:
        result = http.call(f"dataset items list (page {page})", lambda ro, page=page: http.api.dataset_items.list(
            dataset_name=pub.plan.suite, page=page, limit=pub.options.page_size, request_options=ro))
        for item in result.data:
            out[item.id] = {"input": item.input, "expectedOutput": item.expected_output, "metadata": item.metadata}
        if page >= (result.meta.total_pages or 0) or not result.data:
            return out
        page += 1


def item_done(pub: Publication, a: AttemptPlan, outcome: str, when: str) -> None:
    """Record the attempt's item as confirmed with this content, and count its outcome."""
    pub.record["items"][a.item_id] = {"task_id": a.task_id, "attempt": a.attempt, "hash": a.item_hash,
                                       "outcome": outcome, "confirmed_at": when}
    pub.item_outcomes[outcome] = pub.item_outcomes.get(outcome, 0) + 1
