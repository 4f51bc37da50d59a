"""What a person reads in the Dagster UI: capability_aggregates' numbers (rounded, pass_at_1
first in the metadata table and in the Plots tab) and run_catalog's view of the runs behind
the current formula version."""

from __future__ import annotations

import json

import dagster as dg
import pytest

from bench_pipeline.assets import cross_run, cross_run_assets, per_run_assets
from bench_pipeline.assets.cross_run import REFRESHED, catalog_behind
from bench_pipeline.assets.partition_work import HEADLINE_GROUPS, HEADLINE_RATES, headline_metadata
from bench_pipeline.formula import FORMULA_VERSION
from bench_pipeline.partitions import runs_partitions
from bench_pipeline.pipeline import run_stages
from bench_pipeline.resources.io_managers import store_partition

from ..dagster_helpers import make_resources
from ..run_builder import make_run, row

RATE_ENTRIES = ["", "_ci95_lower", "_ci95_upper", "_text", "_successes", "_denominator"]


@pytest.fixture(autouse=True)
def _no_langfuse(monkeypatch):
    for var in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)


def _written_metrics(tmp_path, rows, run_id="r", manifest=None):
    """metrics.json as the pipeline writes it (what machines read)."""
    run = make_run(tmp_path / "runs", rows, run_id=run_id, manifest=manifest or {"status": "completed", "metrics_k": 2})
    run_stages(run, tmp_path / "out" / run_id)
    return json.loads((tmp_path / "out" / run_id / "metrics.json").read_text())


def test_headline_numbers_are_rounded_and_pass_at_1_comes_first(tmp_path):
    rows = [row("a", 1), row("a", 2, "failed"), row("b", 1, "failed"), row("b", 2), row("c", 1), row("c", 2),
            row("d", 1, "skipped"), row("d", 2, "skipped")]
    written = _written_metrics(tmp_path, rows)
    cap, coverage = written["capability"], written["coverage"]
    assert cap["pass_at_1"]["value"] == 2 / 3  # metrics.json keeps full precision
    meta = headline_metadata(written)

    for rank, name in enumerate(HEADLINE_RATES, start=1):
        m = cap[name]
        assert meta[f"{rank}_{name}"] == round(m["value"], 4)
        assert meta[f"{rank}_{name}_ci95_lower"] == round(m["ci95"]["lower"], 4)
        assert meta[f"{rank}_{name}_ci95_upper"] == round(m["ci95"]["upper"], 4)
        denominator = m.get("eligible_tasks", m.get("eligible_attempts"))
        assert meta[f"{rank}_{name}_text"] == (
            f"{round(m['value'], 4):.4f} [{round(m['ci95']['lower'], 4):.4f}, {round(m['ci95']['upper'], 4):.4f}] "
            f"({m['successes']}/{denominator})")
        assert (meta[f"{rank}_{name}_successes"], meta[f"{rank}_{name}_denominator"]) == (m["successes"], denominator)
    assert meta["1_pass_at_1"] == 0.6667 and meta["1_pass_at_1_text"] == "0.6667 [0.2077, 0.9385] (2/3)"
    for name in ("pass_at_1", "pass_at_k", "pass_pow_k"):
        assert meta[f"5_coverage_{name}"] == round(coverage[name], 4)
    assert meta["5_coverage_pass_at_1"] == 0.75  # task d has no eligible first attempt
    assert meta["5_coverage_unique_tasks"] == 4 and meta["6_data_quality_findings"] == 0

    # the metadata table keeps this order: each headline rate with its bounds and counts,
    # then coverage, then the data-quality findings
    expected = [f"{rank}_{name}{entry}" for rank, name in enumerate(HEADLINE_RATES, start=1) for entry in RATE_ENTRIES]
    expected += [f"5_coverage_{name}" for name in ("metrics_k", "unique_tasks", "attempts", "agent_eligible_attempts",
                                                   "invalid_attempts", "pass_at_1", "pass_at_k", "pass_pow_k")]
    assert list(meta) == [*expected, "6_data_quality_findings"]

    # the Plots tab sorts the numeric labels by character code (as Python sorts ASCII text):
    # pass_at_1 and its bounds come first, then the groups in their order
    plotted = sorted(label for label, value in meta.items() if isinstance(value, (int, float)))
    assert plotted[:5] == ["1_pass_at_1", "1_pass_at_1_ci95_lower", "1_pass_at_1_ci95_upper",
                           "1_pass_at_1_denominator", "1_pass_at_1_successes"]
    groups = [label.split("_", 1)[1] for label in plotted]
    firsts = [g for g in HEADLINE_GROUPS if any(x == g or x.startswith(g + "_") for x in groups)]
    assert firsts == list(HEADLINE_GROUPS)
    assert [int(label.split("_", 1)[0]) for label in plotted] == sorted(int(label.split("_", 1)[0]) for label in plotted)


def test_a_rate_without_denominator_has_only_its_text(tmp_path):
    written = _written_metrics(tmp_path, [row("a", 1, "skipped")])
    meta = headline_metadata(written)
    assert written["capability"]["pass_at_1"]["value"] is None
    assert "1_pass_at_1" not in meta and "1_pass_at_1_ci95_lower" not in meta
    assert meta["1_pass_at_1_text"] == "n/a (no eligible denominator)"
    assert meta["1_pass_at_1_successes"] == 0 and meta["1_pass_at_1_denominator"] == 0


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
    assert "formula_version" in meta["preview"].splitlines()[0]


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
