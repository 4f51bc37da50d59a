"""Which spans an attempt still needs, in memory."""

from __future__ import annotations

from bench_pipeline.publication.bindings import decide_binding
from bench_pipeline.publication.record import CONFIRMED, PLANNED
from bench_pipeline.publication.steps.span_delivery import span_work

from ..builders import publication


def test_a_planned_item_gets_its_spans_and_keeps_its_end_time():
    pub = publication()
    a = pub.plan.attempts[0]
    pub.record["anchor"] = "2026-12-01T10:00:00.000Z"
    pub.record["bindings"][a.item_id] = {**decide_binding(a, None).to_json(), "state": PLANNED, "end": None}
    spans = span_work(pub, a, "2026-12-01T10:05:00.000Z")
    assert [s["name"] for s in spans] == ["benchmark-replay", a.name]  # replay root, then the experiment item
    assert pub.record["bindings"][a.item_id]["end"] == "2026-12-01T10:05:00.000Z"
    again = span_work(pub, a, "2026-12-01T11:00:00.000Z")
    assert again[1]["endTimeUnixNano"] == spans[1]["endTimeUnixNano"]  # the same times when re-sent


def test_an_item_in_place_is_left_alone():
    pub = publication()
    a = pub.plan.attempts[0]
    pub.record["anchor"] = "2026-12-01T10:00:00.000Z"
    binding = decide_binding(a, None).to_json()
    pub.record["bindings"][a.item_id] = {**binding, "state": CONFIRMED, "source": "server"}
    assert span_work(pub, a, "2026-12-01T10:05:00.000Z") is None
    pub.record["bindings"][a.item_id] = {**binding, "state": CONFIRMED, "span_hash": pub.span_hash(a, binding)}
    assert span_work(pub, a, "2026-12-01T10:05:00.000Z") is None
    pub.record["bindings"][a.item_id]["span_hash"] = "changed"
    assert span_work(pub, a, "2026-12-01T10:05:00.000Z") is not None  # changed content: sent again in place
