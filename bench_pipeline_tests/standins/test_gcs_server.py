"""The GCS emulator process (started once per session by the ``gcs_server`` fixture) serves the
JSON API on loopback: buckets, objects, listings, and names a file store would refuse."""

from __future__ import annotations


def test_the_emulator_serves_objects_with_any_name_and_lists_them(gcs_server):
    assert gcs_server.endpoint == f"http://127.0.0.1:{gcs_server.port}"
    bucket = gcs_server.create_bucket("bench-gcs-server")
    bucket.put("runs/r1/manifest.json", '{"status": "completed"}')
    bucket.put("runs/r1/../escape.json", b"x")  # kept under a digest of the name, not a path
    bucket.put("runs/r1//double.json", b"y")  # not folded into runs/r1/double.json
    assert bucket.get("runs/r1/manifest.json") == b'{"status": "completed"}'
    assert bucket.get("runs/r1/../escape.json") == b"x"
    assert bucket.keys("runs/") == ["runs/r1/../escape.json", "runs/r1//double.json", "runs/r1/manifest.json"]
    assert int(bucket.info("runs/r1/manifest.json")["size"]) == len('{"status": "completed"}')
