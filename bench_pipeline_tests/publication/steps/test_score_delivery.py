"""The score path's units and limits per server profile, in memory."""

from __future__ import annotations

import orjson

from bench_pipeline.publication import payloads
from bench_pipeline.publication.server_generation import INGESTION, SCORES_ARRAY, V4, ServerProfile
from bench_pipeline.publication.steps.score_delivery import encode_scores, score_limit

from ..builders import publication


def test_ingestion_takes_events_the_array_takes_scores():
    pub = publication(max_ingestion_bytes=1000, max_score_bytes=500)
    scores = [{"id": "s1", "name": "n", "value": 1.0, "dataType": "NUMERIC", "timestamp": "2026-12-01T10:00:00.000Z"}]
    pub.profile = ServerProfile(V4, "4.16.0", INGESTION)
    assert encode_scores(pub, scores) == [payloads.score_event_bytes(scores[0])]
    assert score_limit(pub) == 1000 - 16  # '{"batch":[' + ']}'
    pub.profile = ServerProfile(V4, "4.16.0", SCORES_ARRAY)
    assert encode_scores(pub, scores) == [orjson.dumps(scores[0])]
    assert score_limit(pub) == 500 - 2  # '[' + ']'
