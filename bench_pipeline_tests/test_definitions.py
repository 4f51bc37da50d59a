"""The code location loads and validates as Dagster itself sees it."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

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
    assert defs.resolve_sensor_def("comparison_sensor").job_name == "process_run"
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
                      "no_invalid_artifacts", "no_invalid_values", "no_invalid_artifact_values",
                      "recorded_matches_derived"}


@pytest.mark.slow
def test_dagster_definitions_validate(tmp_path):
    done = subprocess.run(
        [str(Path(sys.executable).with_name("dagster")), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "DAGSTER_HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "All code locations passed validation" in done.stdout + done.stderr


def test_dg_and_the_workspace_name_the_same_code_location():
    """`dg dev` (scripts/ui.sh) loads the location from pyproject.toml's [tool.dg]; the daemon,
    `bench-pipeline backfill` and `dagster ... -w` from workspace.yaml: one location, one name
    (a sensor's state belongs to its location's name)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["dg"]
    (entry,) = yaml.safe_load((ROOT / "workspace.yaml").read_text())["load_from"]
    assert project["directory_type"] == "project"
    assert entry == {"python_module": {"module_name": project["project"]["code_location_target_module"],
                                       "location_name": project["project"]["code_location_name"],
                                       "working_directory": "."}}
    assert project["project"]["root_module"] == "bench_pipeline"


@pytest.mark.slow
def test_dg_check_defs(tmp_path):
    """`dg check defs` (CI runs the slow tests): dg finds the project by [tool.dg] and its definitions
    load and validate."""
    done = subprocess.run([str(Path(sys.executable).with_name("dg")), "check", "defs"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "DAGSTER_HOME": str(tmp_path)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_loading_the_definitions_does_not_load_the_langfuse_sdk():
    """Every new Dagster run process loads the definitions: the Langfuse SDK and httpx (about
    0.35 s) are loaded only when a publication runs, not by naming its settings."""
    code = "import sys, bench_pipeline.definitions; print(sorted({'langfuse', 'httpx'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
