"""Routes a server generation does not have (rules.py): the gates on values in memory, and
over HTTP, v3 has no v4 reads."""

from __future__ import annotations

import httpx

from bench_pipeline_tests.support.langfuse_clients import raw, v3
from standins.langfuse import rules
from standins.langfuse.routes import ROUTES
from standins.langfuse.routing import gate_response


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


def test_gates_answer_404_in_the_generations_without_the_route():
    v4, v3, sdk5 = rules.MODES["v4"], rules.MODES["v3"], rules.MODES["sdk5"]
    assert gate_response(v4, None, "before") is None
    legacy = gate_response(v4, "legacy", "before")
    assert legacy.status == 404 and rules.EVENTS_ONLY_404.encode() in legacy.body
    assert gate_response(v4, "legacy", "after") is None and gate_response(v3, "legacy", "before") is None
    opt_in = gate_response(v3, "v4:experiments", "after")
    assert opt_in.status == 404 and b"The experiments API is only available" in opt_in.body
    assert gate_response(v3, "v4:experiments", "before") is None and gate_response(v4, "v4:experiments", "after") is None
    assert gate_response(sdk5, "ingestion", "before").status == 404 and gate_response(v4, "ingestion", "before") is None
    assert gate_response(sdk5, "run_items", "before").status == 404 and gate_response(v3, "run_items", "before") is None


def test_the_route_table_names_each_route_once_and_only_health_is_open():
    names = [r.name for r in ROUTES]
    assert len(names) == len(set(names)) == 24
    assert [r.name for r in ROUTES if not r.needs_auth] == ["health"]
    assert {r.gate for r in ROUTES} == {None, "legacy", "ingestion", "run_items", "v4:experiments",
                                        "v4:experiment items", "v4:observations v2"}
    by_name = {r.name: r for r in ROUTES}
    assert by_name["datasets.get"].pattern.match("/api/public/v2/datasets/a%2Fb").group("name") == "a%2Fb"
    assert by_name["health"].pattern.match("/api/public/health/") and not by_name["scores.create"].pattern.match(
        "/api/public/scores/x")
