"""What a person reads in the Dagster UI: capability_aggregates' numbers (rounded, pass_at_1
first in the metadata table and in the Plots tab); run_catalog's view of the runs behind the
current formula version is in test_cross_run.py."""

from __future__ import annotations

import json

import pytest

from bench_pipeline.assets.stage_metadata import HEADLINE_GROUPS, HEADLINE_RATES, headline_metadata
from bench_pipeline.pipeline import run_stages

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
