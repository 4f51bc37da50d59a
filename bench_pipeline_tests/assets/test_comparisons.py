"""The run_comparison observation's list of comparisons behind their inputs, in words."""

from __future__ import annotations

from bench_pipeline.assets.comparisons import behind_markdown
from bench_pipeline.comparison_inputs import Behind


def test_the_behind_list_names_each_run_and_why_and_an_empty_one_says_when_it_was_true():
    behind = [Behind(f"r{i}", "r0", "v", "its baseline 'r0' was processed again since") for i in range(1, 4)]
    assert behind_markdown(behind, limit=2).splitlines() == [
        "- `r1`: its baseline 'r0' was processed again since",
        "- `r2`: its baseline 'r0' was processed again since",
        "- ... and 1 more"]
    # an observation is true as of its time: the empty list does not claim more
    assert behind_markdown([]).startswith("Every comparison followed its current inputs when this was recorded")


def test_a_run_whose_values_were_not_stored_is_no_baseline(tmp_path, monkeypatch):
    """Three runs of one suite, a < b < c by start. b's processing writes its reports, then
    fails storing its values (a folder where its raw_results frame goes): b is no processed
    run, so c is compared with a (comparison.md: "the latest earlier processed run"), not
    left without a comparison because b's values cannot be read, and b does not put c's
    comparison behind until its values are stored."""
    import json

    import dagster as dg

    from bench_pipeline.assets import per_run_assets
    from bench_pipeline.assets.comparisons import behind_now
    from bench_pipeline.partitions import runs_partitions

    from ..dagster_helpers import make_resources
    from ..run_builder import make_run, row

    for var in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)
    resources = make_resources(tmp_path)
    for i, run_id in enumerate(["a", "b", "c"]):
        make_run(tmp_path / "runs", [row("t1"), row("t2", status="failed" if run_id != "b" else "passed")],
                 run_id=run_id, manifest={"status": "completed", "started_at": f"2026-01-0{i + 1}T00:00:00Z"})
    (tmp_path / "storage" / "raw_results" / "b.parquet").mkdir(parents=True)  # b's frame cannot be written
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(runs_partitions.name, ["a", "b", "c"])

    def process(key: str) -> bool:
        return dg.materialize(per_run_assets, partition_key=key, instance=instance, resources=resources,
                              raise_on_error=False).success

    assert process("a") and not process("b")
    assert (tmp_path / "reports" / "b" / "metrics.json").is_file()  # written before the storing failed
    assert process("c")
    comparison = json.loads((tmp_path / "reports" / "c" / "comparison.json").read_text())
    assert comparison["baseline"]["run_id"] == "a"
    settings = resources["settings"]
    assert behind_now(instance, settings) == []  # b, not processed, does not put c's comparison behind

    (tmp_path / "storage" / "raw_results" / "b.parquet").rmdir()
    assert process("b")  # b stored now: c's comparison with a is behind, now with b
    assert [(r.run_id, r.baseline) for r in behind_now(instance, settings)] == [("c", "b")]
