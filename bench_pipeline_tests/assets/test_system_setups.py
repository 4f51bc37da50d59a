"""The catalog's systems (``system_repeats``, repeated-runs.md "Systems") with measurement
setups: another judge or device is another system, a copied run folder is pooled once, and a
run without usable rows is left out and named, in repeats.md and on the suite page."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dagster as dg
import pytest

from bench_pipeline.assets import cross_run_assets, per_run_assets
from bench_pipeline.frames import attempts_frame
from bench_pipeline.partitions import runs_partitions
from bench_pipeline.pipeline import run_stages
from bench_pipeline.repeats import System
from bench_pipeline.system_folders import system_slug
from bench_pipeline.resources.io_managers import store_partition

from ..dagster_helpers import make_resources
from ..run_builder import make_run, row

REFRESH = ["run_catalog", "system_repeats", "suite_pages"]
PIXEL = {"judge": {"enabled": True, "model": "judge-a"}, "platform": {"device": "pixel-8", "os": "android-15"},
         "active_skills": ["calendar"]}
EMULATOR = {**PIXEL, "platform": {"device": "emulator", "os": "android-15"}}
PIXEL_KEY = (True, "judge-a", "pixel-8", "android-15")
EMULATOR_KEY = (True, "judge-a", "emulator", "android-15")


@pytest.fixture(autouse=True)
def _no_langfuse(monkeypatch):
    for var in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)


def _store(resources, run_dir: Path) -> None:
    """A run processed as the per-run step does, its values stored where the IO managers keep them."""
    settings = resources["settings"]
    result = run_stages(run_dir, settings.output_dir(run_dir.name), keep_evidence=True)
    store_partition(settings.storage_base, "attempt_metrics", run_dir.name, attempts_frame(result.processed.attempts))
    store_partition(settings.storage_base, "capability_aggregates", run_dir.name, result.processed.metrics)


def _run(tmp_path, run_id, day, setup, rows):
    manifest = {"status": "completed", "metrics_k": 1, "started_at": f"2026-11-0{day}T00:00:00Z",
                "model": {"name": "m"}, "code": {"git_sha": "s1"}, **setup}
    return make_run(tmp_path / "runs", rows, run_id=run_id, manifest=manifest, suite={"name": "suite-a", "tasks": []})


def test_setups_split_systems_a_copy_is_pooled_once_and_an_empty_run_is_named(tmp_path, pages):
    resources = make_resources(tmp_path)
    runs = [
        _run(tmp_path, "p1", 1, PIXEL, [row("t1", episode_id="p1"), row("t2", status="failed", episode_id="p1")]),
        _run(tmp_path, "p2", 2, PIXEL, [row("t1", episode_id="p2"), row("t2", episode_id="p2")]),
        _run(tmp_path, "e1", 3, EMULATOR, [row("t1", status="failed", episode_id="e1")]),
        _run(tmp_path, "x1", 4, PIXEL, [row("t1", status="skipped"), row("t2", status="judge_error")]),
    ]
    copy = tmp_path / "runs" / "p1-copy"  # the same run under another name
    shutil.copytree(runs[0], copy)
    for folder in [*runs, copy]:
        _store(resources, folder)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(runs_partitions.name, [f.name for f in [*runs, copy]])
    result = dg.materialize([*per_run_assets, *cross_run_assets], selection=REFRESH, instance=instance,
                            resources=resources)
    assert result.success
    meta = {e.asset_key.to_user_string(): {k: v.value for k, v in e.materialization.metadata.items()}
            for e in result.get_asset_materialization_events()}

    catalog = {r["run_id"]: r for r in _catalog(result)}
    assert (catalog["e1"]["judge_enabled"], catalog["e1"]["judge_model"], catalog["e1"]["platform_device"],
            catalog["e1"]["platform_os"], catalog["e1"]["active_skills"]) == (
        True, "judge-a", "emulator", "android-15", '["calendar"]')

    root = tmp_path / "reports" / "_systems"
    # the same agent measured two ways: each folder names its setup
    pixel = system_slug(System("suite-a", "m", "s1", setup=PIXEL_KEY), with_setup=True)
    emulator = system_slug(System("suite-a", "m", "s1", setup=EMULATOR_KEY), with_setup=True)
    assert pixel.startswith("suite-a--m--s1--judge-a--pixel-8.android-15-")
    docs = {p.parent.name: json.loads(p.read_text()) for p in root.glob("*/repeats.json")}
    assert set(docs) == {pixel, emulator}  # the same agent on two devices: two systems, never pooled together
    assert [r["run_id"] for r in docs[pixel]["runs"]] == ["p1", "p2"]  # not the copy, not the empty run
    assert docs[pixel]["between_runs"]["runs"] == 2 and docs[pixel]["warnings"] == []
    assert docs[pixel]["stability"]["flaky_tasks"] == [{"task_id": "t2", "attempts": 2, "successes": 1, "flip": 1.0}]
    assert [r["run_id"] for r in docs[emulator]["runs"]] == ["e1"]

    md = (root / pixel / "repeats.md").read_text()
    assert "- p1-copy has the same results as p1: counted once" in md
    assert "- x1 has no usable rows (no eligible attempt): it is left out of the pooled values, the stability and " \
           "the noise floor" in md
    assert "- The runs were measured with: suite version unknown; judge judge-a; platform pixel-8 / android-15; " \
           "active skills calendar." in md
    assert "same results" not in (root / emulator / "repeats.md").read_text()

    sr = meta["system_repeats"]
    assert (sr["systems"], sr["runs_pooled"]) == (2, 3)
    assert "`p1-copy`: the same results as p1: counted once" in sr["runs_left_out"]
    assert "`x1`: no usable rows" in sr["runs_left_out"]
    assert "| judge judge-a, pixel-8 / android-15 |" in sr["systems_table"]

    (call,) = pages
    by_slug = {s.slug: s for s in call["systems"]}
    assert by_slug[pixel].setup == "judge judge-a, pixel-8 / android-15"
    assert set(by_slug[pixel].left_out) == {"p1-copy", "x1"} and by_slug[emulator].left_out == {}
    from bench_pipeline.reports.suite_page import render_suite_page

    html = render_suite_page(call["out_dir"], call["suite"], call["runs"], call["systems"])
    assert "judge judge-a, emulator / android-15" in html
    assert "Not pooled: p1-copy: the same results as p1: counted once; x1: no usable rows" in html
    assert "(not pooled: the same results as p1: counted once)" in html  # the copy's row in the runs table


def _catalog(result) -> list[dict]:
    from bench_pipeline.catalog import catalog_records

    return catalog_records(result.output_for_node("run_catalog"))
