"""Routes a server generation does not have (rules.py): v3 has no v4 reads."""

from __future__ import annotations

import httpx

from bench_pipeline_tests.support.langfuse_clients import raw, v3


@v3
def test_v3_has_no_v4_reads_and_serves_the_legacy_ones(standin):
    with raw(standin) as c:
        for path in ("/api/public/experiment-items", "/api/public/experiments", "/api/public/v2/observations"):
            assert httpx.get(f"{standin.base_url}{path}").status_code == 401  # authentication first ...
            r = c.get(path, params={"fromStartTime": "2026-11-01T00:00:00Z"})
            assert r.status_code == 404 and "v4 write mode" in r.json()["message"]  # ... then the opt-in check
        assert c.get("/api/public/scores", params={"limit": 1}).status_code == 200
        assert c.get("/api/public/health").json()["version"] == "3.172.0"
    assert standin.unknown_requests() == []
