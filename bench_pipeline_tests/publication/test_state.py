"""A publication's state in memory: progress, the score path, the hashes kept in the record."""

from __future__ import annotations

import hashlib

from bench_pipeline.publication import payloads
from bench_pipeline.publication.bindings import Binding, decide_binding
from bench_pipeline.publication.state import announce, announce_wait

from .builders import Progress, attempt, plan, publication


def test_announcements_reach_a_progress_output_that_listens():
    progress = Progress()
    announce(progress, "langfuse: server Langfuse 4.16.0")
    assert progress.notes == ["langfuse: server Langfuse 4.16.0"]
    announce(lambda done, total: None, "not heard")  # a plain callable is not told
    announce(None, "nobody")


def test_a_wait_reaches_an_output_that_shows_only_waits_and_the_server_line_does_not():
    """The Dagster step's progress says the publication's waits (a held lock, a rate limit, a
    read-back) in the run's log, not the server line every run would repeat; the command
    line's progress hears both."""
    from bench_pipeline.assets.partition_work import _every_tenth

    heard: list[str] = []
    step = _every_tenth(lambda done, total: None)
    step.waiting = heard.append
    announce(step, "langfuse: server Langfuse 4.16.0")
    announce_wait(step, "langfuse: waiting for another publication of suite 's' to this server")
    assert heard == ["langfuse: waiting for another publication of suite 's' to this server"]
    progress = Progress()
    announce_wait(progress, "langfuse: rate limited by the server; waiting 6 s")
    assert progress.notes == ["langfuse: rate limited by the server; waiting 6 s"]
    announce_wait(None, "nobody")


def test_a_fresh_publication_and_its_progress_leaves_out_pending_writes():
    progress = Progress()
    pub = publication(plan([attempt(), attempt(n=2)]), progress)
    assert (pub.total, pub.legacy, pub.record["status"], pub.record_path.name) == (2, False, "incomplete",
                                                                                  "publication.json")
    ids = [a.item_id for a in pub.plan.attempts]
    pub.done = set(ids)
    pub.items_pending = {ids[0]}
    pub.report()
    assert progress.seen == [(1, 2)]
    pub.record["server"] = {"generation": "v3"}
    assert pub.legacy


def test_scores_take_the_path_the_server_offers_and_their_hash_is_of_what_is_sent():
    pub = publication()
    a = pub.plan.attempts[0]
    pub.record["anchor"] = "2026-12-01T10:00:00.000Z"
    binding = {**decide_binding(a, None).to_json()}
    assert pub.via_ingestion()  # no probe yet: the default
    encoded, digest = pub.score_units(a, binding)
    expected = payloads.attempt_score_events(a, Binding.from_json(binding), pub.plan, "2026-12-01T10:00:00.000Z")
    assert encoded == expected and digest == hashlib.sha256(b"\n".join(expected)).hexdigest()[:24]
    assert pub.scores_hash(a, binding) == digest
    pub.record["server"] = {"generation": "v4", "scores_via": "scores-array"}
    assert not pub.via_ingestion() and pub.score_units(a, binding)[1] != digest


def test_the_span_hash_ignores_the_times_and_the_context_names_the_server():
    pub = publication()
    a = pub.plan.attempts[0]
    binding = decide_binding(a, None).to_json()
    assert pub.span_hash(a, binding) == pub.span_hash(a, {**binding, "end": "2026-12-02T00:00:00Z"})
    assert pub.span_hash(a, binding) != pub.span_hash(a, decide_binding(a, "00000000000000aa").to_json())
    ctx = pub.context()
    assert (ctx.base_url, ctx.dataset_id, ctx.span_experiment) == ("http://lf.example", None, True)
