"""The code location loads and validates as Dagster itself sees it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench_pipeline.definitions import defs

ROOT = Path(__file__).resolve().parents[1]


def test_definitions_hold_every_stage_check_job_sensor_and_schedule():
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert keys == {"raw_results", "attempt_metrics", "task_groups", "capability_aggregates", "run_comparison",
                    "reports", "langfuse_publication", "run_catalog", "suite_trends", "system_repeats",
                    "suite_pages"}
    assert defs.resolve_job_def("process_run") is not None
    assert defs.resolve_sensor_def("run_folder_sensor").job_name == "process_run"
    assert defs.resolve_sensor_def("catalog_sensor").job_name == "refresh_catalog"
    # the repeated-runs assets refresh with the catalog, after it (one refresh, not one per partition)
    refresh = defs.resolve_job_def("refresh_catalog")
    assert {k.to_user_string() for k in refresh.asset_layer.selected_asset_keys} == {
        "run_catalog", "suite_trends", "system_repeats", "suite_pages"}
    assert defs.resolve_schedule_def("daily_catalog_refresh").job_name == "refresh_catalog"
    upstream = {k.to_user_string(): {p.to_user_string() for p in graph.get(k).parent_keys}
                for k in graph.get_all_asset_keys()}
    assert {"run_catalog", "attempt_metrics"} <= upstream["system_repeats"]
    assert {"run_catalog", "system_repeats"} <= upstream["suite_pages"]
    assert defs.resolve_schedule_def("daily_catalog_refresh").cron_schedule == "0 6 * * *"
    checks = {k.name for k in graph.asset_check_keys}
    assert checks == {"no_bad_rows", "no_duplicate_rows", "no_missing_attempts", "no_unsafe_artifact_dirs",
                      "no_invalid_artifacts", "recorded_matches_derived"}


@pytest.mark.slow
def test_dagster_definitions_validate(tmp_path):
    done = subprocess.run(
        [str(Path(sys.executable).with_name("dagster")), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**__import__("os").environ, "DAGSTER_HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "All code locations passed validation" in done.stdout + done.stderr
