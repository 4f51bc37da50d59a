"""The settings that decide how soon a new run folder is processed with scripts/ui.sh running
(docs/operations.md, "How soon"): the run-folder sensor ticks on every loop of Dagster's sensor
daemon, and the local instance's queue is looked at every second."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
from dagster._core.instance.config import dagster_instance_config
from dagster._daemon import sensor as sensor_daemon

from bench_pipeline.sensors import catalog_sensor, run_folder_sensor
from bench_pipeline.sensors.run_folder_sensor import MINIMUM_INTERVAL_SECONDS

ROOT = Path(__file__).resolve().parents[1]


def test_the_run_folder_sensor_ticks_on_every_loop_of_the_sensor_daemon():
    """Dagster's sensor daemon evaluates sensors every MIN_INTERVAL_LOOP_TIME (5 s) and skips a
    sensor whose last tick is less than its minimum interval ago: an interval of the loop's
    length itself would skip every other loop (10 s), a shorter one never does."""
    assert run_folder_sensor.minimum_interval_seconds == MINIMUM_INTERVAL_SECONDS
    assert 0 < run_folder_sensor.minimum_interval_seconds < sensor_daemon.MIN_INTERVAL_LOOP_TIME
    # The catalog refresh follows on the same loop (it reads only what changed, and waits while a
    # run is under way: a burst still ends in one refresh, test_catalog_sensor.py)
    assert catalog_sensor.minimum_interval_seconds == MINIMUM_INTERVAL_SECONDS


def test_the_local_instance_settings_are_valid_and_look_at_the_queue_every_second(tmp_path):
    shutil.copy(ROOT / "deploy" / "dagster.local.yaml", tmp_path / "dagster.yaml")
    config, _ = dagster_instance_config(str(tmp_path))
    coordinator = config["run_coordinator"]
    assert coordinator["class"] == "QueuedRunCoordinator"
    assert coordinator["config"]["dequeue_interval_seconds"] == 1
    assert coordinator["config"]["dequeue_use_threads"] is True
    assert config["sensors"]["use_threads"] is True
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert instance.run_coordinator.dequeue_interval_seconds == 1
        assert instance.get_sensor_settings()["use_threads"] is True
