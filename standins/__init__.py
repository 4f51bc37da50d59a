"""Stand-ins for the services the pipeline talks to, run locally by the tests and the benchmarks:
``langfuse`` (a Langfuse server over real HTTP), ``moto_server`` and ``s3`` (an S3 API on
loopback, in a process of its own). Test utilities, not part of the pipeline: they need the
``test`` extras (``pip install -e '.[test]'``)."""
