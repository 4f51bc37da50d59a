"""The moto server process (started once per session by the ``s3_server`` fixture) serves S3
on loopback: buckets, objects, listings."""

from __future__ import annotations

from standins.s3 import Bucket


def test_the_server_serves_buckets_and_objects_on_loopback(s3_server):
    assert s3_server.endpoint == f"http://127.0.0.1:{s3_server.port}"
    s3_server.client().create_bucket(Bucket="bench-moto-server")
    bucket = Bucket("bench-moto-server", s3_server)
    bucket.put("runs/r1/manifest.json", '{"status": "completed"}')
    bucket.put("runs/r2/manifest.json", b"{}")
    assert bucket.get("runs/r1/manifest.json") == b'{"status": "completed"}'
    assert bucket.keys("runs/") == ["runs/r1/manifest.json", "runs/r2/manifest.json"]
