"""resources/settings.py: the folders' defaults, their environment variables, and where a run's
folders are (no folder is made or read)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_pipeline.resources.settings import (
    PipelineSettings,
    bench_home,
    default_output_root,
    default_quiet_seconds,
    default_runs_root,
    default_settings,
    default_storage_base,
    safe_partition_key,
)

VARIABLES = ("BENCH_HOME", "BENCH_RUNS_ROOT", "BENCH_OUTPUT_ROOT", "BENCH_STORAGE_BASE", "BENCH_QUIET_SECONDS",
             "BENCH_CACHE")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_every_default_is_under_bench_home(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.chdir("/")
    assert bench_home() == Path("/.bench_data")
    assert default_runs_root() == "/.bench_data/runs"
    assert default_output_root() == "/.bench_data/reports"
    assert default_storage_base() == "/.bench_data/storage"
    assert default_quiet_seconds() == 300
    clean_env.setenv("BENCH_HOME", "/data/bench")
    assert (default_runs_root(), default_output_root(), default_storage_base()) == (
        "/data/bench/runs", "/data/bench/reports", "/data/bench/storage")


def test_a_relative_bench_home_is_made_absolute(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.chdir("/tmp")
    clean_env.setenv("BENCH_HOME", "here")
    assert bench_home() == Path("/tmp/here")


def test_each_folder_has_its_own_variable(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("BENCH_HOME", "/home-not-used")
    clean_env.setenv("BENCH_RUNS_ROOT", "s3://bucket/runs")
    clean_env.setenv("BENCH_OUTPUT_ROOT", "/out")
    clean_env.setenv("BENCH_STORAGE_BASE", "gs://b/storage")
    clean_env.setenv("BENCH_QUIET_SECONDS", "45")
    settings = default_settings()
    assert (settings.runs_root, settings.output_root, settings.storage_base, settings.quiet_seconds) == (
        "s3://bucket/runs", "/out", "gs://b/storage", 45)
    # an explicit storage base (the IO managers') wins over the environment
    assert default_settings("memory://x/storage").storage_base == "memory://x/storage"


def test_quiet_seconds_must_be_a_whole_number(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("BENCH_QUIET_SECONDS", "soon")
    with pytest.raises(ValueError):
        default_quiet_seconds()


def test_local_folders_of_a_run(clean_env: pytest.MonkeyPatch) -> None:
    settings = PipelineSettings(runs_root="/r", output_root="/o", storage_base="/s")
    assert settings.quiet_seconds == 300
    assert settings.run_location("run-1") == "/r/run-1" and settings.output_location("run-1") == "/o/run-1"
    assert settings.run_dir("run-1") == Path("/r/run-1") and settings.output_dir("run-1") == Path("/o/run-1")


def test_folders_of_a_run_in_a_bucket_are_its_local_copies(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("BENCH_CACHE", "/cache")
    settings = PipelineSettings(runs_root="s3://bucket/runs/", output_root="gs://other/reports", storage_base="/s")
    assert settings.run_location("run-1") == "s3://bucket/runs/run-1"
    assert settings.output_location("run-1") == "gs://other/reports/run-1"
    assert settings.run_dir("run-1") == Path("/cache/object-store/s3/bucket/runs/run-1")
    assert settings.output_dir("run-1") == Path("/cache/object-store/gs/other/reports/run-1")


@pytest.mark.parametrize("key", ["..", "a/b", "../x", "", ".", "a\\b", "x\x00"])
def test_a_partition_key_that_is_not_one_folder_name_is_refused(key: str) -> None:
    settings = PipelineSettings(runs_root="/r", output_root="/o", storage_base="/s")
    with pytest.raises(ValueError, match="not a plain run-folder name"):
        safe_partition_key(key)
    with pytest.raises(ValueError):
        settings.run_location(key)
    with pytest.raises(ValueError):
        settings.output_dir(key)


@pytest.mark.parametrize("key", ["run-1", "2026-11-01T00.00.00Z_m", "..a", "a..b", "ü"])
def test_plain_folder_names_are_kept(key: str) -> None:
    assert safe_partition_key(key) == key


def test_a_run_id_too_long_for_its_stored_files_names_is_refused_saying_so() -> None:
    """<run id>.parquet must fit a file system's 255-byte names: 247 bytes at most (UTF-8)."""
    from bench_pipeline.resources.settings import RUN_ID_MAX_BYTES

    assert RUN_ID_MAX_BYTES == 247
    assert safe_partition_key("r" * 247) == "r" * 247
    with pytest.raises(ValueError, match="its name is 248 bytes long: .* at most 247 bytes; rename the folder"):
        safe_partition_key("r" * 248)
    with pytest.raises(ValueError, match="its name is 248 bytes long"):
        safe_partition_key("é" * 124)  # 124 characters, 248 bytes


@pytest.mark.parametrize("name", ["_suites", "_systems"])
def test_the_cross_run_folders_names_are_no_run_ids(name: str) -> None:
    """A run folder named like the output root's folder of the suite pages or of the systems
    would write its reports among them."""
    with pytest.raises(ValueError, match="its name is the output root's folder of the cross-run outputs"):
        safe_partition_key(name)
    assert safe_partition_key("_suites2") == "_suites2"


def test_a_variable_set_to_nothing_counts_as_unset(monkeypatch, tmp_path):
    """BENCH_RUNS_ROOT="" (as an empty line of a service's environment file gives) is not the
    current folder: the default under BENCH_HOME, as when it is unset."""
    from bench_pipeline.resources.settings import (
        default_output_root, default_runs_root, default_storage_base)

    monkeypatch.setenv("BENCH_HOME", str(tmp_path))
    for var in ("BENCH_RUNS_ROOT", "BENCH_OUTPUT_ROOT", "BENCH_STORAGE_BASE"):
        monkeypatch.setenv(var, "")
    assert (default_runs_root(), default_output_root(), default_storage_base()) == (
        str(tmp_path / "runs"), str(tmp_path / "reports"), str(tmp_path / "storage"))
    monkeypatch.setenv("BENCH_HOME", "")
    assert default_runs_root() == str(Path(".bench_data").absolute() / "runs")
