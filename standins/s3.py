"""The client side of the S3 stand-in: start ``moto_server`` in a process of its own, the SDK
variables that point every client at it, and a bucket of one's own to put and read objects."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def s3_environment(port: int) -> dict[str, str]:
    """The SDK variables that make every client talk to the local server only (test
    credentials, no profile or instance metadata from this machine)."""
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


def start_moto_server() -> tuple[subprocess.Popen, int]:
    """``python -m standins.moto_server`` and the port it listens on (stop it with terminate)."""
    process = subprocess.Popen([sys.executable, "-m", "standins.moto_server"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
    line = process.stdout.readline()
    if not line.startswith("port "):
        process.terminate()
        process.wait(timeout=10)
        raise RuntimeError(f"moto server did not start (said {line!r}, exit code {process.poll()})")
    return process, int(line.split()[1])


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


@dataclass
class Bucket:
    """A bucket of one's own on the local server."""

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
        client = self.server.client()
        files = [p for p in Path(folder).rglob("*") if p.is_file()]

        def put(path):
            client.put_object(Bucket=self.name, Key=f"{prefix.rstrip('/')}/{path.relative_to(folder).as_posix()}",
                              Body=path.read_bytes())

        with ThreadPoolExecutor(10) as pool:  # botocore's connection pool holds 10
            list(pool.map(put, files))
