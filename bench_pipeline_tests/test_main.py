"""The main command end to end, then the Dagster UI's server on the same instance."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

ASSETS_QUERY = """
{ assetNodes { assetKey { path } }
  assetOrError(assetKey: {path: ["capability_aggregates"]}) {
    ... on Asset { assetMaterializations(limit: 100) { partition } } } }
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _graphql(port: int, query: str) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql", data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["data"]


def test_main_command_then_ui_serves_the_materializations(tmp_path):
    env = {**os.environ, "BENCH_HOME": str(tmp_path / "data"), "DAGSTER_HOME": str(tmp_path / "home")}
    for var in ("BENCH_RUNS_ROOT", "BENCH_OUTPUT_ROOT", "BENCH_STORAGE_BASE", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        env.pop(var, None)
    (tmp_path / "home").mkdir()
    shutil.copy(ROOT / "deploy" / "dagster.local.yaml", tmp_path / "home" / "dagster.yaml")

    done = subprocess.run([sys.executable, "-m", "bench_pipeline.main"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    runs = sorted(p.name for p in (tmp_path / "data" / "runs").iterdir())
    assert len(runs) == 3  # the sample runs
    for run_id in runs:
        out = tmp_path / "data" / "reports" / run_id
        assert {"metrics.json", "attempts.jsonl", "summary.md", "report.html", "langfuse_outbox.jsonl"} <= {
            p.name for p in out.iterdir()}
        assert str(out / "report.html") in done.stdout
    assert "catalog: ok" in done.stdout

    port = _free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("dagster-webserver")), "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        data = None
        while time.monotonic() < deadline:
            try:
                data = _graphql(port, ASSETS_QUERY)
                break
            except OSError:
                time.sleep(1)
        assert data is not None, "the webserver did not answer"
        keys = {"/".join(n["assetKey"]["path"]) for n in data["assetNodes"]}
        assert {"raw_results", "attempt_metrics", "capability_aggregates", "reports", "langfuse_publication", "run_catalog"} <= keys
        partitions = {m["partition"] for m in data["assetOrError"]["assetMaterializations"]}
        assert partitions == set(runs)
    finally:
        server.terminate()
        server.wait(timeout=30)
