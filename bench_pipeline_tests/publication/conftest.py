"""Fixtures for the publication tests: a realistic processed run and a fresh stand-in per
server generation (``mode``: "v4" events mode, "v3" legacy mode; see langfuse_standin/rules.py)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from bench_pipeline.generator import generate_runs
from bench_pipeline.pipeline import run_stages
from bench_pipeline.metrics_files import attempt_record
from bench_pipeline.publication.settings import PublishOptions

from bench_pipeline_tests.support.publication_standin import FAST, MODES, make_standin, settings_for


@pytest.fixture(scope="session")
def processed_run(tmp_path_factory):
    """One synthetic run (4 tasks x 2 attempts, edge cases on) through every metric stage."""
    root = tmp_path_factory.mktemp("runs")
    (run_dir,) = generate_runs(root, runs=1, seed=11, tasks=4, repeats=2, history_messages=8)
    return run_stages(run_dir).processed


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


@pytest.fixture
def standin(mode):
    with make_standin(mode) as server:
        yield server
        assert server.internal_errors == []
        assert server.unknown_requests() == []


@pytest.fixture
def settings(standin):
    return settings_for(standin)


@pytest.fixture
def options():
    return PublishOptions(**FAST)


@pytest.fixture
def out_dir(tmp_path) -> Path:
    return tmp_path / "out"
