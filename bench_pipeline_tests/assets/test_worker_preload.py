"""assets/worker_preload.py: what the fork server loads once, so that workers start warm."""

from __future__ import annotations

import importlib
import sys

from bench_pipeline import reports
from bench_pipeline.assets import worker_preload


def test_importing_it_loads_what_a_partition_needs() -> None:
    importlib.reload(worker_preload)  # runs warm_up() again, as the import in a fork server does
    for name in ("bench_pipeline.assets.partition_work", "bench_pipeline.frames", "bench_pipeline.run_reader",
                 "bench_pipeline.schemas", "tabulate"):
        assert name in sys.modules, name


def test_warm_up_compiles_both_report_templates() -> None:
    worker_preload.warm_up()
    for html, name in ((False, "summary.md.j2"), (True, "report.html.j2")):
        environment = reports._env(html)
        assert environment.cache is not None
        assert any(key[1] == name if isinstance(key, tuple) else name in str(key) for key in environment.cache)
