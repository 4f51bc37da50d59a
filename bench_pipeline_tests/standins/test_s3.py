"""The S3 stand-in's client side on values in memory (the server itself runs in the
``s3_server`` fixture of every object-storage test)."""

from __future__ import annotations

import os

from standins.s3 import Bucket, S3Server, s3_environment


def test_the_sdk_variables_point_every_client_at_the_local_server_only():
    env = s3_environment(4566)
    assert env["AWS_ENDPOINT_URL"] == "http://127.0.0.1:4566"
    assert (env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], env["AWS_REGION"]) == ("testing", "testing", "us-east-1")
    assert env["AWS_EC2_METADATA_DISABLED"] == "true"
    assert env["AWS_CONFIG_FILE"] == env["AWS_SHARED_CREDENTIALS_FILE"] == os.devnull


def test_a_bucket_names_its_objects_as_urls():
    bucket = Bucket("bench-1", S3Server(4566, s3_environment(4566)))
    assert bucket.url() == "s3://bench-1" and bucket.url("runs/") == "s3://bench-1/runs"
    assert bucket.url("runs/r1/manifest.json") == "s3://bench-1/runs/r1/manifest.json"
    assert bucket.server.endpoint == "http://127.0.0.1:4566"
