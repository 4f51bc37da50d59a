"""The stand-in's stored state on values in memory: spans and receipts, seeded spans,
experiment item spans, score rows by (id, day, name), v3 run items and when reads see them."""

from __future__ import annotations

from standins.langfuse.storage import Storage

TRACE = "0123456789abcdef0123456789abcdef"


def span(span_id: str, start: int = 1, parent: str | None = None, **attributes) -> dict:
    return {"trace_id": TRACE, "span_id": span_id, "parent_span_id": parent, "name": f"span-{span_id}",
            "start_time_unix_nano": start, "attributes": dict(attributes)}


def score(sid: str, timestamp: str, value: float, created: str = "c1") -> dict:
    return {"id": sid, "name": "n", "timestamp": timestamp, "value": value, "createdAt": created}


def test_a_resent_span_replaces_itself_and_its_receipts_count():
    store = Storage()
    store.receive_span(span("1" * 16, name_attr="a"))
    store.receive_span(span("1" * 16, name_attr="b"))
    store.receive_span(span("2" * 16))
    assert store.spans[(TRACE, "1" * 16)]["attributes"] == {"name_attr": "b"}
    assert store.duplicate_span_receipts() == {(TRACE, "1" * 16): 2}
    assert [s["span_id"] for s in store.find_spans(name_attr="b")] == ["1" * 16]
    assert store.find_spans(trace_id="f" * 32) == []


def test_seeded_spans_are_read_but_not_received():
    store = Storage()
    store.seed_span(span("a" * 16))
    store.receive_span(span("b" * 16, parent="a" * 16))
    assert list(store.spans) == [(TRACE, "b" * 16)] and store.span_receipts[(TRACE, "a" * 16)] == 0
    assert set(store.trace_spans(TRACE)) == {(TRACE, "a" * 16), (TRACE, "b" * 16)}
    assert store.span_by_id("a" * 16)["parent_span_id"] is None and store.span_by_id("c" * 16) is None
    assert store.trace_spans("f" * 32) == {}


def test_experiment_item_spans_are_the_items_root_observations_newest_first():
    store = Storage()
    item = {"langfuse.experiment.id": "e", "langfuse.experiment.item.id": "i"}
    store.receive_span(span("1" * 16, start=1, **item))
    store.receive_span(span("2" * 16, start=2, **item, **{"langfuse.experiment.item.root_observation_id": "2" * 16}))
    store.receive_span(span("3" * 16, start=3, **item, **{"langfuse.experiment.item.root_observation_id": "1" * 16}))
    store.receive_span(span("4" * 16, start=4, **{"langfuse.experiment.id": "e"}))
    assert [s["span_id"] for s in store.experiment_item_spans()] == ["2" * 16, "1" * 16]


def test_a_score_row_is_replaced_on_the_same_day_and_kept_on_another():
    store = Storage()
    store.store_score(score("s", "2026-11-30T10:00:00.000Z", 0.25, created="first"))
    store.store_score(score("s", "2026-11-30T18:00:00.000Z", 0.5, created="second"))
    store.store_score(score("s", "2026-12-01T10:00:00.000Z", 0.75))
    assert {k: (v["value"], v["createdAt"]) for k, v in store.score_rows.items()} == {
        ("s", "2026-11-30", "n"): (0.5, "first"), ("s", "2026-12-01", "n"): (0.75, "c1")}
    assert store.scores["s"]["value"] == 0.75 and store.score_receipts["s"] == 3
    assert store.delete_score("s") and store.score_rows == {} and store.scores == {}
    assert not store.delete_score("s")


def test_run_items_are_kept_every_time_and_read_once_visible():
    store = Storage()
    store.dataset_runs[("ds", "run-1")] = {"id": "run-id", "name": "run-1"}
    store.add_run_item({"id": "a", "datasetRunId": "run-id"}, visible_at=10.0)
    store.add_run_item({"id": "b", "datasetRunId": "run-id"}, visible_at=20.0)
    store.add_run_item({"id": "c", "datasetRunId": "other"}, visible_at=0.0)
    assert [r["id"] for r in store.visible_run_items("run-id", now=15.0)] == ["a"]
    assert [r["id"] for r in store.visible_run_items("run-id", now=20.0)] == ["a", "b"]
    assert [r["id"] for r in store.run_items_of("run-1")] == ["a", "b"]
    store.clear()
    assert store.dataset_run_items == [] and store.visible_run_items("run-id", now=99.0) == []
