"""Fixtures for the publication tests: a realistic processed run and a fresh stand-in per
server generation (``mode``: "v4" events mode, "v3" legacy mode; see langfuse_standin/rules.py)."""

from __future__ import annotations

import copy
import uuid
from pathlib import Path

import pytest

from bench_pipeline.generate import generate_runs
from bench_pipeline.pipeline import process_run
from bench_pipeline.metrics_files import attempt_record
from bench_pipeline.publication import LangfuseSettings, PublishOptions
from bench_pipeline_tests.langfuse_standin import LangfuseStandIn

SECRET = "sk-lf-very-secret-value-0123456789"
ROOT_SPAN = "00000000000000aa"
MODES = ("v4", "v3")


@pytest.fixture(scope="session")
def processed_run(tmp_path_factory):
    """One synthetic run (4 tasks x 2 attempts, edge cases on) through every metric stage."""
    root = tmp_path_factory.mktemp("runs")
    (run_dir,) = generate_runs(root, runs=1, seed=11, tasks=4, repeats=2, history_messages=8)
    return process_run(run_dir)


@pytest.fixture
def run(processed_run):
    """publish_run keyword arguments for the processed run (deep copies: tests may edit them)."""
    raw = processed_run.raw
    return {
        "run_id": raw.run_id,
        "metrics": copy.deepcopy(processed_run.metrics),
        "attempts": [copy.deepcopy(attempt_record(a)) for a in processed_run.attempts],
        "manifest": copy.deepcopy(raw.manifest),
        "suite_def": copy.deepcopy(raw.suite_def),
    }


@pytest.fixture(scope="module", params=MODES)
def mode(request) -> str:
    """The server generation the stand-in plays (module scope: one module pass per mode)."""
    return request.param


def make_standin(mode: str, **kw) -> LangfuseStandIn:
    # The SDK keeps clients per public key: a unique key per stand-in keeps them apart.
    return LangfuseStandIn(public_key=f"pk-lf-{uuid.uuid4().hex[:12]}", secret_key=SECRET, mode=mode, **kw)


@pytest.fixture
def standin(mode):
    with make_standin(mode) as server:
        yield server
        assert server.internal_errors == []
        assert server.unknown_requests() == []


def settings_for(server: LangfuseStandIn) -> LangfuseSettings:
    return LangfuseSettings(base_url=server.base_url, public_key=server.public_key, secret_key=server.secret_key)


@pytest.fixture
def settings(standin):
    return settings_for(standin)


# readback_delay 0: the stand-in stores run items at once unless made to lag (run_item_lag)
FAST = {"timeout": 2.0, "retries": 2, "backoff": 0.01, "max_retry_after": 0.05, "workers": 4, "readback_delay": 0.0}


@pytest.fixture
def options():
    return PublishOptions(**FAST)


@pytest.fixture
def out_dir(tmp_path) -> Path:
    return tmp_path / "out"
