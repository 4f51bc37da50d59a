"""A real PostgreSQL server for the deployment tests, started once per test session.

Debian's server binaries (``apt-get install postgresql``; scripts/bootstrap.sh test installs
them) run a throw-away cluster: ``initdb`` into a temporary folder, ``pg_ctl start`` on
127.0.0.1 and a free port, password authentication (scram-sha-256) as in a deployment, and
durability switched off because the data dies with the test. ``initdb`` refuses to run as
root, so as root the cluster belongs to the ``postgres`` system user (``runuser``).
Each test gets its own database from ``postgres_server.create_database``.
"""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..support.network import free_port

SUPERUSER = "postgres"


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    pg_ctl = shutil.which("pg_ctl")
    return Path(pg_ctl).parent if pg_ctl else None


@dataclass
class PostgresServer:
    host: str
    port: int
    password: str
    data_dir: Path

    def connect(self, dbname: str = "postgres"):
        import psycopg2

        return psycopg2.connect(host=self.host, port=self.port, user=SUPERUSER, password=self.password, dbname=dbname)

    def create_database(self, name: str) -> dict[str, str]:
        """A new database and an owner role of the same name; returns its DAGSTER_PG_* variables."""
        password = secrets.token_hex(12)
        conn = self.connect()
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(f'CREATE ROLE "{name}" LOGIN PASSWORD %s', (password,))
            cur.execute(f'CREATE DATABASE "{name}" OWNER "{name}"')
        conn.close()
        return {
            "DAGSTER_PG_HOST": self.host,
            "DAGSTER_PG_PORT": str(self.port),
            "DAGSTER_PG_USER": name,
            "DAGSTER_PG_PASSWORD": password,
            "DAGSTER_PG_DB": name,
        }


def _as_owner(cmd: list[str], owner: str | None) -> list[str]:
    """``cmd`` as the cluster's owner: util-linux's runuser, found on PATH or in the sbin
    folders it is installed in (a PATH without them, as some shells and CI runners set it)."""
    if not owner:
        return cmd
    runuser = shutil.which("runuser") or shutil.which("runuser", path="/usr/sbin:/sbin") or "runuser"
    return [runuser, "-u", owner, "--", *cmd]


@pytest.fixture(scope="session")
def postgres_server():
    bin_dir = _pg_bin()
    if bin_dir is None:
        pytest.fail("PostgreSQL server binaries not found: run scripts/bootstrap.sh test (apt-get install postgresql)")
    owner = "postgres" if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="bench-pg-"))
    password = secrets.token_hex(16)
    (root / "pwfile").write_text(password + "\n")
    if owner:
        shutil.chown(root, owner)
        shutil.chown(root / "pwfile", owner)
    data, log = root / "data", root / "server.log"
    subprocess.run(
        _as_owner([str(bin_dir / "initdb"), "-D", str(data), "--username", SUPERUSER, "--pwfile", str(root / "pwfile"),
                   "--auth", "scram-sha-256", "--encoding", "UTF8", "--locale", "C", "--no-sync"], owner),
        check=True, capture_output=True, timeout=120,
    )
    port = free_port()
    options = (f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c max_connections=300 "
               "-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
    started = subprocess.run(
        _as_owner([str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60", "-o", options, "start"], owner),
        capture_output=True, text=True, timeout=90, check=False,
    )
    if started.returncode != 0:
        text = log.read_text() if log.exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        pytest.fail(f"PostgreSQL did not start: {started.stdout}{started.stderr}\n{text}")
    server = PostgresServer(host="127.0.0.1", port=port, password=password, data_dir=data)
    deadline = time.monotonic() + 30
    while True:
        try:
            server.connect().close()
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    try:
        yield server
    finally:
        subprocess.run(_as_owner([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "-t", "60", "stop"], owner),
                       capture_output=True, timeout=90, check=False)
        shutil.rmtree(root, ignore_errors=True)
