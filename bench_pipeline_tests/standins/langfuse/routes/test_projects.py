"""Health and projects through the SDK."""

from __future__ import annotations

from bench_pipeline_tests.support.langfuse_clients import SEED_TRACE


def test_health_projects_and_auth_check(standin, lf):
    assert lf.auth_check() is True
    projects = lf.api.projects.get()
    assert [p.id for p in projects.data] == ["proj-test"]
    assert lf.api.health.health().status == "OK"
    assert lf.get_trace_url(trace_id=SEED_TRACE) == f"{standin.base_url}/project/proj-test/traces/{SEED_TRACE}"
    assert [r.route for r in standin.requests] == ["projects.get", "projects.get", "health", "projects.get"]
