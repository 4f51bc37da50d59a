"""assets/cross_run.py: the run catalog and the suite trends, materialized through Dagster on a
temporary instance, and ``catalog_behind``, the key the catalog refresh follows."""

from __future__ import annotations

import json

import dagster as dg
import pytest

from bench_pipeline.assets import cross_run, cross_run_assets, per_run_assets
from bench_pipeline.assets.cross_run import REFRESHED, catalog_behind
from bench_pipeline.assets.refresh_state import REFRESH_VERSION
from bench_pipeline.formula import FORMULA_VERSION
from bench_pipeline.partitions import runs_partitions
from bench_pipeline.pipeline import run_stages
from bench_pipeline.resources.io_managers import store_partition

from ..dagster_helpers import make_resources
from ..run_builder import make_run, row


@pytest.fixture(autouse=True)
def _no_langfuse(monkeypatch):
    for var in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)


def _written_metrics(tmp_path, rows, run_id="r"):
    """metrics.json as the pipeline writes it."""
    run = make_run(tmp_path / "runs", rows, run_id=run_id, manifest={"status": "completed", "metrics_k": 2})
    run_stages(run, tmp_path / "out" / run_id)
    return json.loads((tmp_path / "out" / run_id / "metrics.json").read_text())


def _materialize_catalog(instance, resources, selection=("run_catalog",)):
    result = dg.materialize([*per_run_assets, *cross_run_assets], selection=list(selection), instance=instance,
                            resources=resources)
    assert result.success
    (event,) = [e for e in result.get_asset_materialization_events() if e.asset_key == dg.AssetKey("run_catalog")]
    return {k: v.value for k, v in event.materialization.metadata.items()}


def test_run_catalog_lists_exactly_the_runs_behind_the_formula(tmp_path):
    """25 stored runs: 22 with an older formula version or none, 3 with the current one. The
    catalog's metadata counts the 22 and names the first 20 with their versions."""
    resources = make_resources(tmp_path)
    metrics = _written_metrics(tmp_path, [row("a"), row("b", status="failed")])
    versions = {f"r{i:02d}": (FORMULA_VERSION if i % 10 == 3 else None if i == 7 else f"2026-0{1 + i % 9}-01.1")
                for i in range(25)}
    for run_id, version in versions.items():
        store_partition(resources["settings"].storage_base, "capability_aggregates", run_id,
                        {**metrics, "run_id": run_id, "formula_version": version})
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(runs_partitions.name, list(versions))

    meta = _materialize_catalog(instance, resources)
    behind = [run_id for run_id, version in versions.items() if version != FORMULA_VERSION]
    assert len(behind) == 22 and "r03" not in behind and "r07" in behind
    assert meta["formula_version"] == FORMULA_VERSION
    assert meta["runs_behind_formula"] == 22 and isinstance(meta["runs_behind_formula"], int)
    lines = meta["runs_behind_formula_list"].splitlines()
    assert lines[0] == f"22 run(s) computed with another formula version than the current `{FORMULA_VERSION}`:"
    listed = [line.split(" | ")[0].removeprefix("| ") for line in lines[4:24]]
    assert listed == behind[:20]  # one suite, no start times: catalog order is run id order
    assert lines[4:24] == [f"| {r} | suite-x | {versions[r] or 'unknown'} |" for r in behind[:20]]
    assert lines[-1] == "... and 2 more (the catalog's `formula_version` column has every run)."
    preview = meta["preview"].splitlines()
    assert preview[0] == "25 runs in catalog order (suite, then start time); the first 20:"
    assert preview[2].startswith("- **r00**: suite-x · model unknown at unknown · pass@1 **50.0%** · ")
    assert preview[2].endswith(f"· formula {versions['r00']} (behind the current {FORMULA_VERSION})")
    assert "formula" not in preview[5]  # r03 has the current version
    assert preview[-1] == "... and 5 more (the catalog's table has every run, every digit)."


def test_the_catalog_preview_is_rounded_for_people_and_the_frame_keeps_every_digit() -> None:
    """run_catalog's preview (Dagster markdown metadata): rates as percents with one decimal,
    n/a when unknown (never 0), a run id whole in bold, one line per run (a list: Dagster
    shows a value under 1,000 characters inline, in a column too narrow for a table); the
    frame it is made from keeps 2/3 as 0.666..."""
    import pandas as pd

    from bench_pipeline.assets.cross_run import catalog_preview
    from bench_pipeline.catalog import CATALOG_COLUMNS, catalog_frame

    long_id = "sample-with-data-problems-2026-11-28T11-53-00Z-73d0b8"
    known = {"run_id": long_id, "suite": "android-core", "model": "agent_model*large", "git_sha": "85765ee",
             "formula_version": FORMULA_VERSION, "metrics_k": 3, "pass_at_1": 2 / 3, "pass_at_k": 0.857142857,
             "attempts": 35}
    unknown = {"run_id": "zz-last", "suite": "android-core", "metrics_k": 1, "attempts": 4}
    rows = [dict.fromkeys(CATALOG_COLUMNS) | known, dict.fromkeys(CATALOG_COLUMNS) | unknown]
    frame = catalog_frame(rows)
    assert frame["pass_at_1"].iloc[0] == 2 / 3  # every digit stays in the stored frame
    text = catalog_preview(frame, FORMULA_VERSION)
    assert text.splitlines() == [
        "2 runs in catalog order (suite, then start time):", "",
        f"- **{long_id}**: android-core · model agent\\_model\\*large at 85765ee · pass@1 **66.7%** · "
        "pass@k 85.7% (k=3) · 35 attempts",
        "- **zz-last**: android-core · model unknown at unknown · pass@1 **n/a** · pass@k n/a (k=1) · 4 attempts · "
        f"formula unknown (behind the current {FORMULA_VERSION})"]
    assert "0.666" not in text and "|" not in text and len(text) < 1000  # shown inline by Dagster
    assert catalog_preview(pd.DataFrame(columns=CATALOG_COLUMNS), FORMULA_VERSION) == "No processed run yet."


def test_the_trends_preview_reads_in_words_and_percent_and_the_frame_keeps_codes() -> None:
    """suite_trends' preview: one line per run, verdicts and gate in words, pass@1 as a percent
    and its change in percentage points; the frame keeps the codes and every digit."""
    import pandas as pd

    from bench_pipeline.assets.cross_run import trends_preview

    frame = pd.DataFrame([
        {"suite": "android-core", "run_id": "r1", "compared_with": None, "paired_tasks": None,
         "first_attempt_verdict": None, "task_success_verdict": None, "gate": None, "pass_at_1": 0.5,
         "pass_at_1_change": None},
        {"suite": "android-core", "run_id": "r2", "compared_with": "r1", "paired_tasks": 12,
         "first_attempt_verdict": "no_significant_change", "task_success_verdict": "regression", "gate": "fail",
         "pass_at_1": 2 / 3, "pass_at_1_change": 2 / 3 - 0.5},
    ])
    assert trends_preview(frame).splitlines() == [
        "2 runs by suite, in start order, each against the run before it:", "",
        "- **r1** (android-core): the first run of its suite, pass@1 **50.0%**",
        "- **r2** (android-core): against r1 · 12 paired tasks · first attempt: no significant change · "
        "task success: regression · gate **fail** · pass@1 66.7% (+16.7 pp, a plain difference)"]
    assert frame["first_attempt_verdict"].iloc[1] == "no_significant_change"
    assert trends_preview(frame.iloc[0:0]) == "No processed run yet."


def test_after_a_formula_change_the_catalog_is_behind_until_refreshed(tmp_path, monkeypatch):
    """A processed run and its catalog are up to date. Once the formula version changes, the
    catalog is behind although no run was materialized; refreshed (with the rest of the catalog
    refresh: systems, suite pages), it lists the run with its old version; a run materialized
    later puts it behind again, with a new key."""
    resources = make_resources(tmp_path)
    make_run(tmp_path / "runs", [row("a"), row("b", status="failed")], run_id="r1")
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(runs_partitions.name, ["r1"])
    assert catalog_behind(instance) is None  # nothing processed yet
    assert dg.materialize(per_run_assets, partition_key="r1", instance=instance, resources=resources).success
    first_key = catalog_behind(instance)
    assert first_key is not None and first_key.endswith(f"@{FORMULA_VERSION}")

    meta = _materialize_catalog(instance, resources, REFRESHED)
    assert (meta["formula_version"], meta["runs_behind_formula"]) == (FORMULA_VERSION, 0)
    assert meta["runs_behind_formula_list"] == (
        f"Every run in the catalog was computed with the current formula version `{FORMULA_VERSION}`.")
    assert catalog_behind(instance) is None

    monkeypatch.setattr(cross_run, "FORMULA_VERSION", "bumped")
    bumped_key = catalog_behind(instance)
    assert bumped_key is not None and bumped_key.endswith("@bumped") and bumped_key != first_key
    meta = _materialize_catalog(instance, resources, REFRESHED)
    assert (meta["formula_version"], meta["runs_behind_formula"]) == ("bumped", 1)
    assert meta["runs_behind_formula_list"].splitlines()[-1] == f"| r1 | suite-x | {FORMULA_VERSION} |"
    assert catalog_behind(instance) is None

    assert dg.materialize(per_run_assets, partition_key="r1", instance=instance, resources=resources).success
    again = catalog_behind(instance)
    assert again is not None and again not in (first_key, bumped_key)


def test_the_catalog_and_the_trends_of_two_runs_of_one_suite(tmp_path):
    """r1 passes a and b, r2 (started later) only a: the catalog has both runs with their
    manifests' model and start; the trends compare r2 with r1 on the 2 paired tasks."""
    resources = make_resources(tmp_path)
    for run_id, rows, started in (("r1", [row("a"), row("b")], "2026-11-01T00:00:00Z"),
                                  ("r2", [row("a"), row("b", status="failed")], "2026-11-02T00:00:00Z")):
        make_run(tmp_path / "runs", rows, run_id=run_id,
                 manifest={"status": "completed", "model": {"name": "m1"}, "started_at": started})
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(runs_partitions.name, ["r1", "r2"])
    for run_id in ("r1", "r2"):
        assert dg.materialize(per_run_assets, partition_key=run_id, instance=instance, resources=resources).success
    result = dg.materialize([*per_run_assets, *cross_run_assets], selection=["run_catalog", "suite_trends"],
                            instance=instance, resources=resources)
    assert result.success
    catalog = result.output_for_node("run_catalog")
    assert list(catalog["run_id"]) == ["r1", "r2"] and set(catalog["suite"]) == {"suite-x"}
    assert list(catalog["pass_at_1"]) == [1.0, 0.5] and set(catalog["formula_version"]) == {FORMULA_VERSION}
    trends = result.output_for_node("suite_trends")
    assert list(trends["run_id"]) == ["r1", "r2"]
    assert trends["compared_with"].iloc[1] == "r1" and trends["paired_tasks"].iloc[1] == 2
    assert trends["pass_at_1_change"].iloc[1] == -0.5
    assert trends["comparison_note"].iloc[0] == "first run of the suite"
    (event,) = [e for e in result.get_asset_materialization_events() if e.asset_key == dg.AssetKey("suite_trends")]
    meta = {k: v.value for k, v in event.materialization.metadata.items()}
    assert meta["dagster/row_count"] == 2 and meta["gate_failures"] == int((trends["gate"] == "fail").sum())


def test_the_first_refresh_deletes_the_copies_earlier_versions_kept_of_the_frames(tmp_path):
    """Earlier versions kept a copy of the catalog's and the trends' rows beside their stored
    values (``cross_run_state/<name>.json``, then ``<name>.parquet``); the refresh now patches
    the assets' own stored values, and the first one (which starts from scratch) deletes the
    copies; later refreshes keep the stored frames and do not look for copies again."""
    resources = make_resources(tmp_path)
    make_run(tmp_path / "runs", [row("a")], run_id="r1", manifest={"status": "completed"})
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(runs_partitions.name, ["r1"])
    assert dg.materialize(per_run_assets, partition_key="r1", instance=instance, resources=resources).success
    state = tmp_path / "storage" / "cross_run_state"
    state.mkdir(parents=True)
    earlier = [state / f"{name}{suffix}" for name in ("run_catalog", "suite_trends") for suffix in (".json", ".parquet")]
    for path in earlier:
        path.write_text('{"refresh_version": "2026-12-01/2026-12-01", "parts": {}}')
    first = _materialize_catalog(instance, resources, ("run_catalog", "suite_trends"))
    assert [path.exists() for path in earlier] == [False] * 4
    assert (tmp_path / "storage" / "run_catalog.parquet").is_file() and (tmp_path / "storage" / "suite_trends.parquet").is_file()
    assert (state / "versions_capability_aggregates.json").is_file()  # the refresh's other state stays
    trends = instance.fetch_materializations(dg.AssetKey("suite_trends"), limit=1).records[0].asset_materialization
    assert (first["runs_read"], trends.metadata["refresh_version"].value) == (1, REFRESH_VERSION)
    earlier[0].write_text("{}")  # nothing looks for it once the stored frames are kept
    second = _materialize_catalog(instance, resources, ("run_catalog", "suite_trends"))
    assert earlier[0].read_text() == "{}"
    assert (second["runs_read"], second["runs_kept"]) == (0, 1)  # the stored catalog's row kept


def test_nothing_is_behind_before_any_run_is_done() -> None:
    instance = dg.DagsterInstance.ephemeral()
    assert catalog_behind(instance) is None
    assert REFRESHED == ("run_catalog", "system_repeats", "suite_pages")
    made = {key.to_user_string() for a in cross_run_assets for key in a.keys}
    assert made == {"run_catalog", "suite_trends", "system_repeats", "suite_pages"}
    assert cross_run.GROUP == "cross_run"


def _record(instance, asset: str, partition: str | None = None, **metadata) -> None:
    instance.report_runless_asset_event(dg.AssetMaterialization(asset, partition=partition, metadata=metadata))


def test_the_refresh_follows_each_runs_reports_not_its_publication() -> None:
    """A run's reports put the refresh behind as soon as they are recorded, while the run may
    still be published (nothing of the refresh comes from the publication); once refreshed,
    the publication recorded after it leaves the refresh up to date, and the next run's
    reports put it behind again."""
    from bench_pipeline.assets.partition_work import STAGES

    assert cross_run.FOLLOWED_STAGE == STAGES[-2] == "reports" and STAGES[-1] == "langfuse_publication"
    instance = dg.DagsterInstance.ephemeral()
    _record(instance, "langfuse_publication", "r0")
    assert catalog_behind(instance) is None  # a publication alone: no stored values to list
    _record(instance, "reports", "r1")
    first = catalog_behind(instance)
    assert first is not None and first.endswith(f"@{FORMULA_VERSION}")
    for asset in REFRESHED:  # (no run partition here: the runs it covered are none)
        _record(instance, asset, formula_version=FORMULA_VERSION, runs_digest=cross_run.runs_digest([]))
    assert catalog_behind(instance) is None
    _record(instance, "langfuse_publication", "r1")
    assert catalog_behind(instance) is None
    _record(instance, "reports", "r2")
    again = catalog_behind(instance)
    assert again is not None and again != first


def test_reports_recorded_while_a_refresh_was_under_way_leave_it_behind() -> None:
    """A refresh that began before a run's reports were recorded does not hold that run's
    values, though it is recorded after them: it is behind (the catalog sensor's run and a
    per-run run can go side by side). Before, the refresh counted as covering every
    reports recorded before its own materialization, and the run stayed out of the pages
    until another run came."""
    instance = dg.DagsterInstance.ephemeral()
    _record(instance, "reports", "r1")
    (r1,) = instance.fetch_materializations(dg.AssetKey("reports"), limit=1).records
    begun = r1.storage_id - 1  # the refresh read the instance before r1's reports
    _record(instance, "run_catalog", formula_version=FORMULA_VERSION, runs_digest=cross_run.runs_digest([]),
            reports_covered=begun)
    for asset in REFRESHED[1:]:
        _record(instance, asset)
    behind = catalog_behind(instance)
    assert behind is not None and behind.endswith(f"@{FORMULA_VERSION}")
    _record(instance, "run_catalog", formula_version=FORMULA_VERSION, runs_digest=cross_run.runs_digest([]),
            reports_covered=r1.storage_id)
    assert catalog_behind(instance) is not None  # the systems and pages of that refresh not made yet
    for asset in REFRESHED[1:]:
        _record(instance, asset)
    assert catalog_behind(instance) is None


def test_a_run_removed_puts_the_catalog_behind_until_a_refresh_leaves_it_out(tmp_path):
    """A run's partition removed (its folder deleted: the sensor and the main command remove
    it) leaves no materialization behind it: the runs the catalog covered say it is behind,
    with a key of its own, until a refresh without the run."""
    resources = make_resources(tmp_path)
    instance = dg.DagsterInstance.ephemeral()
    for run_id in ("r1", "r2"):
        make_run(tmp_path / "runs", [row("a")], run_id=run_id)
    instance.add_dynamic_partitions(runs_partitions.name, ["r1", "r2"])
    for run_id in ("r1", "r2"):
        assert dg.materialize(per_run_assets, partition_key=run_id, instance=instance, resources=resources).success
    meta = _materialize_catalog(instance, resources, REFRESHED)
    assert meta["runs_digest"] == cross_run.runs_digest(["r2", "r1"]) and catalog_behind(instance) is None

    instance.delete_dynamic_partition(runs_partitions.name, "r2")
    behind = catalog_behind(instance)
    assert behind is not None and behind.endswith(f"@{FORMULA_VERSION}#{cross_run.runs_digest(['r1'])[:12]}")
    meta = _materialize_catalog(instance, resources, REFRESHED)
    assert meta["dagster/row_count"] == 1 and catalog_behind(instance) is None
