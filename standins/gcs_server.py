"""A Google Cloud Storage JSON API emulator on loopback for the object-storage tests, in a process
of its own, and the client side that starts it and puts and reads objects.

``python -m standins.gcs_server`` serves ``gcp-storage-emulator``'s JSON API (the one gcsfs
speaks: ``/storage/v1``, ``/upload/storage/v1``) on 127.0.0.1 (a free port, printed as
``port <n>`` once it listens), objects in memory, until it is terminated. Its own process
keeps the pytest process free of server threads (``bulk.can_fork``). Clients reach it through
``STORAGE_EMULATOR_HOST`` (``gcs_environment``).

Two changes to the emulator, neither to what its API answers:

- it keeps each object's bytes in a file store whose paths are the object names, which
  refuses names with ``..`` segments and folds ``a//b`` into ``a/b``; real GCS accepts both,
  and the tests need them (unsafe keys), so here the bytes are kept under a digest of the
  name instead;
- in memory it still rewrites one JSON document of every object's metadata after each
  write (for a restart that an in-memory store never has), quadratic in the objects
  written; here it does not.

The requests are served one at a time (the emulator's server is not threaded), with a
listen backlog deep enough for the pipeline's parallel reads.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from http import server
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    """Serve the emulator on a free loopback port until terminated."""
    from functools import partial

    from gcp_storage_emulator.server import RequestHandler
    from gcp_storage_emulator.storage import Storage

    class MemoryStorage(Storage):
        def _object_path(self, bucket_name: str, file_name: str) -> str:
            return f"{bucket_name}/{hashlib.sha256(file_name.encode('utf-8')).hexdigest()}"

        def _write_config_to_file(self) -> None:
            return None

    class Server(server.HTTPServer):
        request_queue_size = 256

    httpd = Server(("127.0.0.1", 0), partial(RequestHandler, MemoryStorage(use_memory_fs=True)))
    print(f"port {httpd.server_address[1]}", flush=True)
    httpd.serve_forever()


def gcs_environment(port: int) -> dict[str, str]:
    """The variables that make every Google client talk to the local emulator only: its host,
    a project, and no look-up of this machine's credentials or metadata server (the pipeline's
    gs:// client is then anonymous, object_store._gcs_client)."""
    return {
        "STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{port}",
        "GOOGLE_CLOUD_PROJECT": "bench-test",
        "GCSFS_DEFAULT_PROJECT": "bench-test",
        "NO_GCE_CHECK": "true",
        "GCE_METADATA_HOST": "127.0.0.1:9",
        "GCE_METADATA_IP": "127.0.0.1:9",
        "GOOGLE_APPLICATION_CREDENTIALS": "",
        "CLOUDSDK_CONFIG": os.devnull,
    }


def start_gcs_server() -> tuple[subprocess.Popen, int]:
    """``python -m standins.gcs_server`` and the port it listens on (stop it with terminate)."""
    process = subprocess.Popen([sys.executable, "-m", "standins.gcs_server"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
    line = process.stdout.readline()
    if not line.startswith("port "):
        process.terminate()
        process.wait(timeout=10)
        raise RuntimeError(f"GCS emulator did not start (said {line!r}, exit code {process.poll()})")
    return process, int(line.split()[1])


@dataclass
class GcsServer:
    """The running emulator: its endpoint and environment."""

    port: int
    env: dict[str, str]

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def request(self, method: str, path: str, body: bytes | None = None,
                content_type: str = "application/octet-stream") -> bytes:
        """One JSON API request (plain HTTP, no client library); its response body."""
        req = urllib.request.Request(f"{self.endpoint}{path}", data=body, method=method,
                                     headers={"Content-Type": content_type})
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.read()

    def create_bucket(self, name: str) -> GcsBucket:
        self.request("POST", "/storage/v1/b?project=bench-test", json.dumps({"name": name}).encode(),
                     "application/json")
        return GcsBucket(name, self)


@dataclass
class GcsBucket:
    """A bucket of one's own on the emulator."""

    name: str
    server: GcsServer

    def url(self, key: str = "") -> str:
        return f"gs://{self.name}/{key}".rstrip("/")

    def put(self, key: str, body: bytes | str) -> None:
        data = body.encode() if isinstance(body, str) else body
        self.server.request("POST", f"/upload/storage/v1/b/{self.name}/o?uploadType=media&name={quote(key, safe='')}",
                            data)

    def get(self, key: str) -> bytes:
        return self.server.request("GET", f"/storage/v1/b/{self.name}/o/{quote(key, safe='')}?alt=media")

    def info(self, key: str) -> dict:
        """The object's resource (size, md5Hash, etag, generation, updated, ...)."""
        return json.loads(self.server.request("GET", f"/storage/v1/b/{self.name}/o/{quote(key, safe='')}"))

    def keys(self, prefix: str = "") -> list[str]:
        listed = json.loads(self.server.request("GET", f"/storage/v1/b/{self.name}/o?prefix={quote(prefix, safe='')}"))
        return sorted(item["name"] for item in listed.get("items", []))

    def upload_folder(self, folder: Path | str, prefix: str) -> None:
        """Every file below a local folder, under ``prefix`` (one upload each)."""
        folder = Path(folder)
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            self.put(f"{prefix.rstrip('/')}/{path.relative_to(folder).as_posix()}", path.read_bytes())


if __name__ == "__main__":
    sys.exit(main())
