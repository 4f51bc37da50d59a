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
