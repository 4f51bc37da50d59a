"""The server generation from the probe's answers (pure: ``decide``), and what a version allows."""

from __future__ import annotations

import pytest

from bench_pipeline.publication.server_generation import ServerProfile, UnsupportedServer, decide, parse_version


def test_the_generation_follows_what_the_server_writes():
    def probed(v4, legacy, ingestion=207, otel=200):
        return {"GET /api/public/experiment-items": v4, "GET /api/public/scores": legacy,
                "POST /api/public/ingestion": ingestion, "POST /api/public/otel/v1/traces": otel}

    assert decide(probed(200, 404), "4.16.0").generation == "v4"  # events_only, the v4 reads
    assert decide(probed(404, 200), "3.172.0").generation == "v3"  # legacy
    # legacy or dual with the opt-in: the legacy tables are what is written and read everywhere
    assert decide(probed(200, 200), "3.210.0").generation == "v3"
    assert decide(probed(200, 404, ingestion=404), None).scores_via == "scores-array"
    for answers in (probed(404, 404), probed(200, 404, otel=404), probed(404, 200, ingestion=404)):
        with pytest.raises(UnsupportedServer, match="Nothing was written"):
            decide(answers, "3.1.0")
    assert ServerProfile("v3", "3.159.9", "ingestion").run_item_created_at is False
    assert ServerProfile("v3", "3.160.0", "ingestion").run_item_created_at is True


def test_versions_are_read_with_or_without_a_v_and_a_suffix():
    assert parse_version("3.160.0") == (3, 160, 0)
    assert parse_version("v4.16.0-rc.1") == (4, 16, 0)
    assert parse_version("latest") is None and parse_version(None) is None
    assert ServerProfile("v3", None, "ingestion").run_item_created_at is False
