"""Fixtures shared by every test folder: a real S3 API on loopback (moto's server).

``s3`` starts ``bench_pipeline_tests/moto_server.py`` once per session, in a process of its
own on a free 127.0.0.1 port, points the AWS SDK variables at it (``AWS_ENDPOINT_URL``, test
credentials, no profile or instance metadata from this machine) and gives each test a new
bucket. The per-run step's worker processes come from a fork server, which copies the
environment it started with: the fixture stops a running fork server so that the next one
starts with these variables.
"""

from __future__ import annotations

import multiprocessing.forkserver
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

#: The SDK variables the tests set: every client of the tests talks to the local server only.
def s3_environment(port: int) -> dict[str, str]:
    return {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    }


@dataclass
class S3Server:
    """The running server: its endpoint and environment."""

    port: int
    env: dict[str, str]

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id="testing",
                            aws_secret_access_key="testing", region_name="us-east-1")


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    pytest.importorskip("moto")
    pytest.importorskip("s3fs")
    process = subprocess.Popen([sys.executable, "-m", "bench_pipeline_tests.moto_server"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, cwd=os.path.dirname(os.path.dirname(__file__)))
    try:
        line = process.stdout.readline()
        if not line.startswith("port "):
            raise RuntimeError(f"moto server did not start (said {line!r}, exit code {process.poll()})")
        port = int(line.split()[1])
        env = s3_environment(port)
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        multiprocessing.forkserver._forkserver._stop()  # the next fork server starts with env
        try:
            yield S3Server(port, env)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            multiprocessing.forkserver._forkserver._stop()
    finally:
        process.terminate()
        process.wait(timeout=10)


@dataclass
class Bucket:
    """A fresh bucket of the test's own on the local server."""

    name: str
    server: S3Server

    def url(self, key: str = "") -> str:
        return f"s3://{self.name}/{key}".rstrip("/")

    def put(self, key: str, body: bytes | str) -> None:
        self.server.client().put_object(Bucket=self.name, Key=key, Body=body.encode() if isinstance(body, str) else body)

    def get(self, key: str) -> bytes:
        return self.server.client().get_object(Bucket=self.name, Key=key)["Body"].read()

    def keys(self, prefix: str = "") -> list[str]:
        paginator = self.server.client().get_paginator("list_objects_v2")
        return [c["Key"] for page in paginator.paginate(Bucket=self.name, Prefix=prefix) for c in page.get("Contents", [])]

    def upload_folder(self, folder, prefix: str) -> None:
        """Every file below a local folder, under ``prefix`` (one PUT each)."""
        from pathlib import Path

        from concurrent.futures import ThreadPoolExecutor

        client = self.server.client()
        files = [p for p in Path(folder).rglob("*") if p.is_file()]

        def put(path):
            client.put_object(Bucket=self.name, Key=f"{prefix.rstrip('/')}/{path.relative_to(folder).as_posix()}",
                              Body=path.read_bytes())

        with ThreadPoolExecutor(10) as pool:  # botocore's connection pool holds 10
            list(pool.map(put, files))


@pytest.fixture()
def bucket(s3_server: S3Server, tmp_path, monkeypatch) -> Bucket:
    """A new bucket; the test's local cache under its tmp_path (BENCH_CACHE)."""
    name = f"bench-{uuid.uuid4().hex[:12]}"
    s3_server.client().create_bucket(Bucket=name)
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    return Bucket(name, s3_server)
