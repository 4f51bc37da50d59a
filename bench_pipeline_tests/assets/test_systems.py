"""The repeated-runs assets: ``system_repeats`` (every system's repeats.json and repeats.md,
from the catalog and the stored attempt frames) and ``suite_pages`` (one page per suite), and
how the catalog refresh follows the runs with them."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest
from upath import UPath

from bench_pipeline import cli
from bench_pipeline.assets import cross_run_assets, per_run_assets, stored_runs, suite_pages, systems
from bench_pipeline.assets.cross_run import catalog_behind
from bench_pipeline.frames import attempts_frame
from bench_pipeline.generator import generate_runs
from bench_pipeline.partitions import runs_partitions
from bench_pipeline.pipeline import run_stages
from bench_pipeline.repeats import System
from bench_pipeline.system_folders import suite_slug, system_slug
from bench_pipeline.resources.io_managers import store_partition
from bench_pipeline.stored_values import read_attempt_rows

from ..dagster_helpers import make_resources
from ..run_builder import make_run, row

REFRESH = ["run_catalog", "system_repeats", "suite_pages"]


@pytest.fixture(autouse=True)
def _no_langfuse(monkeypatch):
    for var in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)


def _store(resources, run_dir: Path) -> str:
    """A run processed as the per-run step does (run_stages into its output folder, its
    attempt_metrics and capability_aggregates stored where the IO managers keep them)."""
    settings = resources["settings"]
    run_id = run_dir.name
    result = run_stages(run_dir, settings.output_dir(run_id), keep_evidence=True)
    store_partition(settings.storage_base, "attempt_metrics", run_id, attempts_frame(result.processed.attempts))
    store_partition(settings.storage_base, "capability_aggregates", run_id, result.processed.metrics)
    return run_id


def _manifest(model, sha, day, **extra):
    manifest = {"status": "completed", "metrics_k": 1, "started_at": f"2026-11-0{day}T00:00:00Z", **extra}
    if model is not None:
        manifest["model"] = {"name": model}
    if sha is not None:
        manifest["code"] = {"git_sha": sha}
    return manifest


def _runs(tmp_path, resources, plans, suite="suite-a"):
    """{run id: (model, sha, {task: status})} as stored runs of ``suite``; returns the instance."""
    for day, (run_id, (model, sha, outcomes)) in enumerate(plans.items(), start=1):
        run = make_run(tmp_path / "runs", [row(t, 1, s) for t, s in outcomes.items()], run_id=run_id,
                       manifest=_manifest(model, sha, day), suite={"name": suite, "tasks": []})
        _store(resources, run)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(runs_partitions.name, list(plans))
    return instance


def _refresh(instance, resources):
    result = dg.materialize([*per_run_assets, *cross_run_assets], selection=REFRESH, instance=instance,
                            resources=resources)
    assert result.success
    return {e.asset_key.to_user_string(): {k: v.value for k, v in e.materialization.metadata.items()}
            for e in result.get_asset_materialization_events()}


def _docs(output_root: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in sorted((output_root / "_systems").glob("*/repeats.json"))}


def test_two_models_on_one_suite_are_two_systems_on_one_page(tmp_path, pages):
    resources = make_resources(tmp_path)
    instance = _runs(tmp_path, resources, {
        "a1": ("model-a", "sha1", {"t1": "passed", "t2": "failed"}),
        "b1": ("model-b", "sha1", {"t1": "passed", "t2": "passed"}),
        "a2": ("model-a", "sha1", {"t1": "passed", "t2": "passed"}),
    })
    meta = _refresh(instance, resources)
    docs = _docs(tmp_path / "reports")
    slug_a = system_slug(System("suite-a", "model-a", "sha1"))
    slug_b = system_slug(System("suite-a", "model-b", "sha1"))
    assert set(docs) == {slug_a, slug_b}
    assert [r["run_id"] for r in docs[slug_a]["runs"]] == ["a1", "a2"]
    assert docs[slug_a]["system"] == {"suite": "suite-a", "model": "model-a", "git_sha": "sha1"}
    assert docs[slug_a]["stability"]["flaky_tasks"][0]["task_id"] == "t2"  # failed once, passed once
    assert docs[slug_a]["between_runs"]["runs"] == 2 and docs[slug_a]["between_runs"]["noise_floor95"] > 0
    assert [r["run_id"] for r in docs[slug_b]["runs"]] == ["b1"]
    md = (tmp_path / "reports" / "_systems" / slug_a / "repeats.md").read_text()
    assert "[`a1`](<../../a1/report.html>)" in md  # each run's report, relative to the system's folder

    sr = meta["system_repeats"]
    assert (sr["systems"], sr["runs_pooled"], sr["systems_with_repeats"], sr["systems_changed"]) == (2, 3, 1, 2)
    table = sr["systems_table"].splitlines()
    assert table[0].startswith("| suite | model | git sha | runs | first attempt (pooled) | 95% interval |")
    assert table[2].startswith("| suite-a | model-b | sha1 | 1 | 100.0% |")  # the higher pooled first attempt first
    assert table[3].startswith("| suite-a | model-a | sha1 | 2 | 75.0% |")
    # the runs per side for a 5-point change in first attempt: repeats.json's planning, n/a with one run
    five = next(e["runs_per_side"] for e in docs[slug_a]["planning"]["first_attempt"]["runs_needed"] if e["change"] == 0.05)
    assert table[0].split(" | ")[7] == "runs per side for 5 pp (first attempt)"
    assert table[3].split(" | ")[7] == str(five) and table[2].split(" | ")[7] == "n/a"
    assert sr["systems_with_planning"] == 1
    assert "runs_without_stored_attempts" not in sr

    (call,) = pages
    assert call["suite"] == "suite-a" and call["out_dir"] == tmp_path / "reports" / "_suites" / suite_slug("suite-a")
    assert [r["run_id"] for r in call["runs"]] == ["a1", "b1", "a2"]  # the latest runs, in start order
    assert call["runs_total"] == 3
    first = call["runs"][0]
    assert (first["model"], first["git_sha"], first["gate"], first["baseline"]) == ("model-a", "sha1", None, None)
    report = tmp_path / "reports" / "a1" / "report.html"
    assert first["report"] == str(report.absolute()) and report.is_file()
    assert type(first["pass_at_1"]) is float and type(first["attempts"]) is int
    # each system with what its page shows of its runs, made when the system was (no frame read for the page)
    assert [(s.slug, [r["run_id"] for r in s.page()["runs"]]) for s in call["systems"]] == [
        (slug_a, ["a1", "a2"]), (slug_b, ["b1"])]
    entry = call["systems"][0]
    assert entry.doc == docs[slug_a] and entry.repeats_md == tmp_path / "reports" / "_systems" / slug_a / "repeats.md"
    assert entry.page()["runs"][0]["run_dir"] == str(tmp_path / "runs" / "a1")  # for evidence links
    assert entry.page()["outcomes"]["t2"] == [2, 1]  # t2: failed in a1, passed in a2 (eligible both times)
    sp = meta["suite_pages"]
    assert sp["pages_written"] == 1 and suite_slug("suite-a") in sp["pages"]


def test_a_page_made_again_reads_the_documents_of_the_systems_it_shows_only(tmp_path, pages, monkeypatch):
    # a page lists its latest RUNS_SHOWN runs (2 here) and their systems: a new run makes the
    # page again from the kept pieces of those systems only; a piece gone is made again from
    # the stored frames, equal to repeats.json
    monkeypatch.setattr(suite_pages, "RUNS_SHOWN", 2)
    resources = make_resources(tmp_path)
    instance = dg.DagsterInstance.ephemeral()

    def process(i: int) -> None:  # through the per-run stages, so that each run has its data version
        make_run(tmp_path / "runs", [row("t1", 1, "passed"), row("t2", 1, "failed" if i % 2 else "passed")],
                 run_id=f"r{i}", manifest=_manifest(f"model-{i}", "sha", i), suite={"name": "suite-a", "tasks": []})
        instance.add_dynamic_partitions(runs_partitions.name, [f"r{i}"])
        assert dg.materialize(per_run_assets, partition_key=f"r{i}", instance=instance, resources=resources).success

    for i in range(1, 5):
        process(i)
    _refresh(instance, resources)
    read = []
    real_load = systems.load_pieces
    monkeypatch.setattr(systems, "load_pieces", lambda base, name, keys: real_load(base, name, read.extend(keys) or keys))
    slug = {i: system_slug(System("suite-a", f"model-{i}", "sha")) for i in range(1, 6)}
    pieces = tmp_path / "storage" / "cross_run_state" / systems.SYSTEM_DOCS
    assert sorted(p.stem for p in pieces.glob("*.json")) == sorted(slug[i] for i in range(1, 5))
    (pieces / f"{slug[4]}.json").unlink()

    process(5)
    meta = _refresh(instance, resources)
    assert meta["system_repeats"]["systems_made"] == 1  # r5's system; r4's is kept, its piece gone
    assert read == [slug[4]]  # r5's documents were made by this refresh; r1-r3 are not on the page
    call = pages[-1]
    assert [s.slug for s in call["systems"]] == [slug[4], slug[5]] and call["systems_total"] == 5
    docs = _docs(tmp_path / "reports")
    assert [s.doc for s in call["systems"]] == [docs[slug[4]], docs[slug[5]]]
    assert call["systems"][0].page()["outcomes"] == {"t1": [1, 1], "t2": [1, 1]}
    assert (pieces / f"{slug[4]}.json").is_file()  # kept again for the next page


def test_an_unknown_model_or_git_sha_makes_a_run_its_own_system(tmp_path, pages):
    resources = make_resources(tmp_path)
    instance = _runs(tmp_path, resources, {
        "k1": ("m", "sha", {"t1": "passed"}),
        "k2": ("m", "sha", {"t1": "failed"}),
        "no-model-1": (None, "sha", {"t1": "passed"}),
        "no-model-2": (None, "sha", {"t1": "passed"}),
        "no-sha": ("m", None, {"t1": "passed"}),
    })
    meta = _refresh(instance, resources)
    docs = _docs(tmp_path / "reports")
    by_runs = sorted(tuple(r["run_id"] for r in d["runs"]) for d in docs.values())
    assert by_runs == [("k1", "k2"), ("no-model-1",), ("no-model-2",), ("no-sha",)]
    assert system_slug(System("suite-a", None, "sha", alone="no-model-1")) in docs
    alone = docs[system_slug(System("suite-a", "m", None, alone="no-sha"))]
    assert alone["system"] == {"suite": "suite-a", "model": "m", "git_sha": None}
    assert meta["system_repeats"]["systems"] == 4
    (call,) = pages  # one suite, one page, with its four systems
    assert len(call["systems"]) == 4 and len(call["runs"]) == 5


def test_the_assets_repeats_json_equals_the_command_lines(tmp_path, pages):
    """Three generated runs of one system: the repeats.json the asset writes from the stored
    frames and the catalog is the one `bench-pipeline repeats` writes from the folders."""
    resources = make_resources(tmp_path)
    folders = generate_runs(tmp_path / "runs", runs=3, seed=5, tasks=6, repeats=2, history_messages=8,
                            edge_cases=True, systems=1)
    for folder in folders:
        _store(resources, folder)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(runs_partitions.name, [f.name for f in folders])
    _refresh(instance, resources)
    (asset_doc,) = _docs(tmp_path / "reports").values()

    assert cli.main(["repeats", *map(str, folders), "--output-dir", str(tmp_path / "cli")]) == 0
    cli_doc = json.loads((tmp_path / "cli" / "repeats.json").read_text())
    assert asset_doc == cli_doc
    assert len(asset_doc["runs"]) == 3 and asset_doc["warnings"] == []
    assert asset_doc["pooled"]["first_attempt"]["n"] > 0 and asset_doc["stability"]["tasks_classified"] > 0


def test_a_second_refresh_without_a_new_run_changes_nothing(tmp_path, pages):
    resources = make_resources(tmp_path)
    instance = _runs(tmp_path, resources, {"r1": ("m", "s", {"t1": "passed"}), "r2": ("m", "s", {"t1": "failed"})},
                     suite="suite/with odd name")
    first = _refresh(instance, resources)
    root = tmp_path / "reports"
    files = {p: p.read_bytes() for p in sorted(root.glob("_*/**/*")) if p.is_file()}
    assert {p.relative_to(root).parts[0] for p in files} == {"_systems", "_suites"}
    assert (root / "_suites" / suite_slug("suite/with odd name")).is_dir()  # one folder, whatever the name

    second = _refresh(instance, resources)
    assert {p: p.read_bytes() for p in sorted(root.glob("_*/**/*")) if p.is_file()} == files
    assert second["system_repeats"]["systems_changed"] == 0
    volatile = ("systems_changed", "systems_made", "runs_read")
    assert {k: v for k, v in second["system_repeats"].items() if k not in volatile} == {
        k: v for k, v in first["system_repeats"].items() if k not in volatile}


def test_a_refresh_makes_the_system_of_the_new_and_changed_runs_only(tmp_path, pages, monkeypatch):
    # the other runs' systems and folder names are kept with their data versions
    resources = make_resources(tmp_path)
    instance = dg.DagsterInstance.ephemeral()

    def process(run_id: str, model: str, day: int, status: str) -> None:  # with its data version
        make_run(tmp_path / "runs", [row("t1", 1, status)], run_id=run_id, manifest=_manifest(model, "s", day),
                 suite={"name": "suite-a", "tasks": []})
        instance.add_dynamic_partitions(runs_partitions.name, [run_id])
        assert dg.materialize(per_run_assets, partition_key=run_id, instance=instance, resources=resources).success

    process("r1", "m", 1, "passed")
    process("r2", "n", 2, "failed")
    _refresh(instance, resources)
    made = []
    real = stored_runs.row_system
    monkeypatch.setattr(stored_runs, "row_system", lambda row: made.append(row["run_id"]) or real(row))
    process("r3", "m", 3, "failed")
    meta = _refresh(instance, resources)["system_repeats"]
    assert made == ["r3"]
    assert meta["systems"] == 2 and meta["runs_pooled"] == 3 and meta["systems_made"] == 1  # r3 joins r1's system
    slug = system_slug(System("suite-a", "m", "s"))
    assert [r["run_id"] for r in _docs(tmp_path / "reports")[slug]["runs"]] == ["r1", "r3"]


def test_a_system_gone_from_the_catalog_keeps_its_folder_and_runs_without_frames_are_named(tmp_path, pages):
    resources = make_resources(tmp_path)
    instance = _runs(tmp_path, resources, {"r1": ("m", "s", {"t1": "passed"})})
    old = tmp_path / "reports" / "_systems" / "left-by-an-earlier-refresh"
    old.mkdir(parents=True)
    (old / "repeats.json").write_text("{}")
    metrics = json.loads((tmp_path / "reports" / "r1" / "metrics.json").read_text())
    store_partition(resources["settings"].storage_base, "capability_aggregates", "r0", {**metrics, "run_id": "r0"})
    instance.add_dynamic_partitions(runs_partitions.name, ["r0"])
    meta = _refresh(instance, resources)["system_repeats"]
    assert (old / "repeats.json").read_text() == "{}"
    assert meta["runs_pooled"] == 1 and "`r0`" in meta["runs_without_stored_attempts"]


def test_a_suite_whose_runs_are_all_gone_loses_its_page_and_its_systems_their_files(tmp_path, pages):
    """The last run of a suite removed (its folder deleted: the sensor or the main command
    removes its partition): its suite page and its system's files would go on showing it.
    They are removed, as a refresh from scratch makes neither; the other suite's stay. Only
    what the last refresh made and kept is removed: with nothing kept (the first refresh, one
    from scratch, another instance writing into the same output root) a page or a system
    folder is not known to be this deployment's, and stays."""
    from bench_pipeline.assets.refresh_state import save_columns, save_state

    resources = make_resources(tmp_path)
    for day, (run_id, suite) in enumerate({"a1": "suite-a", "b1": "suite-b", "a2": "suite-a"}.items(), start=1):
        make_run(tmp_path / "runs", [row("t1", 1, "passed"), row("t2", 1, "failed" if day % 2 else "passed")],
                 run_id=run_id, manifest=_manifest("m", "s", day), suite={"name": suite, "tasks": []})
        _store(resources, tmp_path / "runs" / run_id)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(runs_partitions.name, ["a1", "b1", "a2"])
    reports = tmp_path / "reports"
    made = _refresh(instance, resources)
    assert (made["system_repeats"]["systems_removed"], made["suite_pages"]["pages_removed"]) == (0, 0)
    page_b = reports / "_suites" / suite_slug("suite-b")
    system_b = reports / "_systems" / system_slug(System("suite-b", "m", "s"))
    system_a = reports / "_systems" / system_slug(System("suite-a", "m", "s"))
    assert (page_b / "index.html").is_file() and (system_b / "repeats.json").is_file()

    instance.delete_dynamic_partition(runs_partitions.name, "b1")
    meta = _refresh(instance, resources)
    assert (meta["system_repeats"]["systems_removed"], meta["suite_pages"]["pages_removed"]) == (1, 1)
    assert not page_b.exists() and not system_b.exists()
    assert sorted(p.name for p in (reports / "_suites").iterdir()) == [suite_slug("suite-a")]
    assert sorted(p.name for p in (reports / "_systems").iterdir()) == [system_a.name]
    assert (reports / "b1" / "report.html").is_file()  # the run's own reports stay
    again = _refresh(instance, resources)
    assert (again["system_repeats"]["systems_removed"], again["suite_pages"]["pages_removed"]) == (0, 0)

    # a refresh that kept nothing removes nothing
    instance.add_dynamic_partitions(runs_partitions.name, ["b1"])
    _refresh(instance, resources)
    assert page_b.is_dir() and system_b.is_dir()
    instance.delete_dynamic_partition(runs_partitions.name, "b1")
    base = resources["settings"].storage_base
    save_state(base, "systems_and_suite_pages", {})  # as after an upgrade, or from scratch
    save_columns(base, "systems_and_suite_pages.systems", {})
    meta = _refresh(instance, resources)
    assert (meta["system_repeats"]["systems_removed"], meta["suite_pages"]["pages_removed"]) == (0, 0)
    assert page_b.is_dir() and system_b.is_dir() and system_a.is_dir()


def _one_agent_judged_twice(tmp_path: Path):
    """Runs a1, a2 (judge j1) and a3 (judge j2) of one agent, a1 and a2 stored and refreshed
    (one system, its folder without a setup), a3 written but not stored yet; returns the
    resources and the instance. t2 differs between the days: no run is a copy of another."""
    resources = make_resources(tmp_path)
    for day, (run_id, judge) in enumerate({"a1": "j1", "a2": "j1", "a3": "j2"}.items(), start=1):
        make_run(tmp_path / "runs", [row("t1", 1, "passed"), row("t2", 1, "failed" if day % 2 else "passed")],
                 run_id=run_id, manifest=_manifest("m", "s", day, judge={"enabled": True, "model": judge}),
                 suite={"name": "suite-a", "tasks": []})
    instance = dg.DagsterInstance.ephemeral()
    for run_id in ("a1", "a2"):
        _store(resources, tmp_path / "runs" / run_id)
        instance.add_dynamic_partitions(runs_partitions.name, [run_id])
    _refresh(instance, resources)
    return resources, instance


def test_a_system_whose_folder_is_renamed_leaves_a_pointer_not_stale_numbers(tmp_path, pages):
    """The same agent judged by a second judge: each setup gets a system and a folder naming
    it, and the folder the first setup had (no setup in its name) is no longer updated. It
    says where its runs are now, once, instead of keeping numbers no refresh touches."""
    resources, instance = _one_agent_judged_twice(tmp_path)
    systems = tmp_path / "reports" / "_systems"
    (plain,) = [p.name for p in systems.iterdir()]
    assert [r["run_id"] for r in _docs(tmp_path / "reports")[plain]["runs"]] == ["a1", "a2"]

    _store(resources, tmp_path / "runs" / "a3")
    instance.add_dynamic_partitions(runs_partitions.name, ["a3"])
    meta = _refresh(instance, resources)["system_repeats"]
    docs = _docs(tmp_path / "reports")
    current = {slug for slug in docs if slug != plain}
    (j1,) = [slug for slug in current if [r["run_id"] for r in docs[slug]["runs"]] == ["a1", "a2"]]
    assert len(current) == 2 and meta["systems_moved"] == 1
    assert docs[plain]["moved_to"] == [j1] and "no longer updated" in docs[plain]["note"]
    assert f"- [{j1}](<../{j1}/repeats.md>)" in (systems / plain / "repeats.md").read_text()
    assert _refresh(instance, resources)["system_repeats"]["systems_moved"] == 0  # said once


def test_a_rename_seen_by_a_refresh_that_kept_nothing_gets_its_pointer_too(tmp_path, pages):
    """The first refresh after an upgrade (or one from scratch) keeps nothing from the last:
    the folders the output root has tell it which systems were renamed."""
    from bench_pipeline.assets.refresh_state import save_state

    resources, instance = _one_agent_judged_twice(tmp_path)
    (plain,) = _docs(tmp_path / "reports")
    save_state(resources["settings"].storage_base, "systems_and_suite_pages", {})  # as after an upgrade
    _store(resources, tmp_path / "runs" / "a3")
    instance.add_dynamic_partitions(runs_partitions.name, ["a3"])
    assert _refresh(instance, resources)["system_repeats"]["systems_moved"] == 1
    assert len(_docs(tmp_path / "reports")[plain]["moved_to"]) == 1
    save_state(resources["settings"].storage_base, "systems_and_suite_pages", {})
    assert _refresh(instance, resources)["system_repeats"]["systems_moved"] == 0  # a pointer names no runs


def test_the_refresh_is_behind_until_every_one_of_its_assets_is_made(tmp_path, pages, monkeypatch):
    """After a run, the catalog alone does not bring the refresh up to date: the systems and
    the pages were never made. A refresh that fails part-way keeps the key (the sensor does
    not request it again); a complete one brings it up to date, and a new run puts it behind
    with a new key."""

    resources = make_resources(tmp_path)
    make_run(tmp_path / "runs", [row("a"), row("b", status="failed")], run_id="r1")
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(runs_partitions.name, ["r1"])
    assert dg.materialize(per_run_assets, partition_key="r1", instance=instance, resources=resources).success
    before = catalog_behind(instance)
    assert before is not None

    assert dg.materialize([*per_run_assets, *cross_run_assets], selection=["run_catalog"], instance=instance,
                          resources=resources).success
    assert catalog_behind(instance) == before  # the systems and pages are still missing: the same key

    recorder = suite_pages.write_suite_page

    def broken(*args):
        raise RuntimeError("the page cannot be written")

    monkeypatch.setattr("bench_pipeline.assets.suite_pages.write_suite_page", broken)
    failed = dg.materialize([*per_run_assets, *cross_run_assets], selection=REFRESH, instance=instance,
                            resources=resources, raise_on_error=False)
    assert not failed.success
    made = {e.asset_key.to_user_string() for e in failed.get_asset_materialization_events()}
    assert made == {"run_catalog", "system_repeats"}
    assert catalog_behind(instance) == before  # no new key: no refresh storm from a failing page

    monkeypatch.setattr("bench_pipeline.assets.suite_pages.write_suite_page", recorder)
    _refresh(instance, resources)
    assert catalog_behind(instance) is None
    assert dg.materialize(per_run_assets, partition_key="r1", instance=instance, resources=resources).success
    again = catalog_behind(instance)
    assert again is not None and again != before


def test_stored_frames_give_plain_values_and_the_evidence_folder(tmp_path):
    import pandas as pd

    frame = pd.DataFrame({
        "task_id": ["a", "a"], "attempt": pd.array([1, 1], dtype="Int64"), "line": pd.array([1, 2], dtype="Int64"),
        "success": pd.array([None, True], dtype="boolean"), "agent_eligible": pd.array([True, True], dtype="boolean"),
        "quality_score": [float("nan"), 0.5], "task_wall_ms": [10.0, float("nan")], "total_tokens": [3.0, 4.0],
        "cost_usd": [float("nan"), 0.25], "evidence": ['{"dir": "tasks/a/1", "x": 1}', '{"dir": null}'],
    })
    path = tmp_path / "attempt_metrics" / "r.parquet"
    path.parent.mkdir()
    frame.assign(status="passed").to_parquet(path, index=False)  # a column a side does not read
    first, second = read_attempt_rows(UPath(path))
    assert first == {"task_id": "a", "attempt": 1, "line": 1, "success": None, "agent_eligible": True,
                     "quality_score": None, "task_wall_ms": 10.0, "total_tokens": 3.0, "cost_usd": None,
                     "evidence": {"dir": "tasks/a/1"}}
    assert second["success"] is True and second["evidence"] == {"dir": None} and type(second["line"]) is int
