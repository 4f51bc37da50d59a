"""The item step's bookkeeping, in memory (the requests are tested against the stand-in)."""

from __future__ import annotations

from bench_pipeline.publication.steps.dataset import item_done, plan_items

from ..builders import attempt, plan, publication


def test_an_item_done_is_recorded_with_its_hash_and_counted_by_outcome():
    pub = publication(plan([attempt(), attempt(n=2)]))
    first, second = pub.plan.attempts
    item_done(pub, first, "created", "2026-12-01T10:00:00.000Z")
    item_done(pub, second, "unchanged", "2026-12-01T10:00:01.000Z")
    assert pub.record["items"][first.item_id] == {"task_id": "open_settings", "attempt": 1, "hash": first.item_hash,
                                                 "outcome": "created", "confirmed_at": "2026-12-01T10:00:00.000Z"}
    assert pub.item_outcomes == {"created": 1, "unchanged": 1}


def test_items_already_confirmed_with_this_content_need_no_request():
    pub = publication()
    a = pub.plan.attempts[0]
    pub.record["items"][a.item_id] = {"hash": a.item_hash}
    assert plan_items(pub) == []  # pub.http is None: nothing was asked
