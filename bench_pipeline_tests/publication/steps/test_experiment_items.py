"""The anchor time of an earlier publication whose record is lost, from what was read back."""

from __future__ import annotations

from bench_pipeline.publication.steps.experiment_items import anchor_from_server, lookup_roots

from ..builders import publication


def test_v4_the_earliest_start_of_the_experiment_items():
    pub = publication()
    found = {"a": ("t1", "o1", None, "2026-12-01T10:00:00.000Z"), "b": ("t2", "o2", None, "2026-11-30T09:00:00.000Z"),
             "c": ("t3", "o3", None, None)}
    assert anchor_from_server(pub, found) == "2026-11-30T09:00:00.000Z"
    assert anchor_from_server(pub, {}) is None
    assert anchor_from_server(pub, {"a": ("t1", "o1", None, None)}) is None


def test_nothing_to_look_up_asks_nothing():
    assert lookup_roots(publication(), []) == {}
