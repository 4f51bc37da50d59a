"""The lower time bound of experiment-item reads, in memory."""

from __future__ import annotations

import datetime as dt

from bench_pipeline.publication.steps.readback import since

from ..builders import MANIFEST, attempt, plan, publication


def test_reads_start_a_day_before_the_earliest_known_time():
    pub = publication()
    assert since(pub) == dt.datetime(2026, 11, 27, 10, tzinfo=dt.UTC)  # the run's start, less a day
    pub.record["first_published_at"] = "2026-11-20T00:00:00.000Z"
    assert since(pub) == dt.datetime(2026, 11, 19, tzinfo=dt.UTC)


def test_without_any_known_time_the_bound_is_far_back():
    bare = {k: v for k, v in MANIFEST.items() if k != "started_at"}
    pub = publication(plan([attempt(evidence={"started_at": None})], manifest=bare))
    assert since(pub) == dt.datetime(1999, 12, 31, tzinfo=dt.UTC)
