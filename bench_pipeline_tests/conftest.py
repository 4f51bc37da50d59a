"""Fixtures shared by every test folder: a real S3 API on loopback (moto's server), a GCS API
emulator on loopback (``gcs_server``, started the same way), and a headless Chromium for the
page tests (``browser``, see browser.py).

``s3_server`` starts ``standins/moto_server.py`` once per session, in a process of its own on
a free 127.0.0.1 port, points the AWS SDK variables at it (``standins.s3.s3_environment``)
and ``bucket`` gives each test a new bucket. The per-run step's worker processes come from a
fork server, which copies the environment it started with: the fixture stops a running fork
server so that the next one starts with these variables.
"""

from __future__ import annotations

import contextlib
import multiprocessing.forkserver
import os
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from bench_pipeline_tests.browser import launch_chromium
from standins.gcs_server import GcsServer, gcs_environment, start_gcs_server
from standins.s3 import Bucket, S3Server, s3_environment, start_moto_server


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    process, port = start_moto_server()
    try:
        env = s3_environment(port)
        with _environment(env):
            yield S3Server(port, env)
    finally:
        _stop_server(process)


@contextlib.contextmanager
def _environment(env: dict[str, str]) -> Iterator[None]:
    """``env`` set in os.environ while the block runs, the earlier values back after it; a
    running fork server is stopped at both ends, so that the next one starts with them."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    multiprocessing.forkserver._forkserver._stop()
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        multiprocessing.forkserver._forkserver._stop()


def _stop_server(process) -> None:
    """SIGTERM, and SIGKILL when the server has not ended 10 s later (a loaded machine)."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture(scope="session")
def gcs_server() -> Iterator[GcsServer]:
    """A GCS JSON API emulator (``standins/gcs_server.py``) in a process of its own on a free
    127.0.0.1 port, the Google client variables pointing at it, as ``s3_server`` does for S3."""
    process, port = start_gcs_server()
    try:
        env = gcs_environment(port)
        with _environment(env):
            yield GcsServer(port, env)
    finally:
        _stop_server(process)


@pytest.fixture()
def bucket(s3_server: S3Server, tmp_path, monkeypatch) -> Bucket:
    """A new bucket; the test's local cache under its tmp_path (BENCH_CACHE)."""
    name = f"bench-{uuid.uuid4().hex[:12]}"
    s3_server.client().create_bucket(Bucket=name)
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    return Bucket(name, s3_server)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium through Playwright, one per test module."""
    from playwright import sync_api

    with sync_api.sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        yield chromium
        chromium.close()
