"""Authentication over HTTP: a wrong key pair is a 401 and stores nothing."""

from __future__ import annotations

import uuid

import httpx
import pytest
from langfuse.api.commons.errors.unauthorized_error import UnauthorizedError

from bench_pipeline_tests.support.langfuse_clients import make_client


def test_bad_auth_gets_401(standin):
    bad = make_client(standin, public_key=f"pk-lf-{uuid.uuid4().hex[:12]}", secret_key="wrong")
    try:
        with pytest.raises(UnauthorizedError):
            bad.api.projects.get()
        with pytest.raises(UnauthorizedError):
            bad.create_dataset(name="nope")
    finally:
        bad.shutdown()
    assert httpx.get(f"{standin.base_url}/api/public/projects").status_code == 401
    assert httpx.get(f"{standin.base_url}/api/public/projects", auth=(standin.public_key, "x")).status_code == 401
    assert standin.datasets == {}
    assert {r.status for r in standin.requests} == {401}
