"""Cross-run views: catalog rows and per-suite trends."""

from __future__ import annotations

import io
import math

import pandas as pd

from bench_pipeline.catalog import catalog_frame, catalog_row, suite_trends
from bench_pipeline.pipeline import run_stages

from .run_builder import make_run, row


def _metrics(tmp_path, run_id, outcomes):
    rows = [row(f"t{i}", status=s, metrics={"total_tokens": 100, "cost_usd": 0.5}) for i, s in enumerate(outcomes)]
    run = make_run(tmp_path, rows, run_id=run_id, suite={"name": "suite-a", "tasks": []})
    return run_stages(run).processed.metrics


def test_catalog_and_trend(tmp_path):
    first = _metrics(tmp_path, "r1", ["passed", "failed", "failed", "failed"])
    second = _metrics(tmp_path, "r2", ["passed", "passed", "passed", "skipped"])
    rows = [
        catalog_row("r2", second, {"model": {"name": "m"}, "started_at": "2026-11-02T00:00:00Z"}),
        catalog_row("r1", first, {"model": {"name": "m"}, "started_at": "2026-11-01T00:00:00Z"}),
    ]
    catalog = catalog_frame(rows)
    assert list(catalog["run_id"]) == ["r1", "r2"]
    r1 = catalog.iloc[0]
    assert r1["suite"] == "suite-a" and r1["model"] == "m"
    assert r1["pass_at_1"] == 0.25 and r1["attempts"] == 4
    assert r1["cost_usd_sum"] == 2.0 and r1["cost_usd_count"] == 4  # cost of eligible attempts with a value
    r2 = catalog.iloc[1]
    assert r2["pass_at_1"] == 1.0 and r2["coverage_pass_at_1"] == 0.75

    trend = suite_trends(catalog)
    assert list(trend["run_id"]) == ["r1", "r2"]
    assert math.isnan(trend.iloc[0]["pass_at_1_change"])
    assert trend.iloc[1]["pass_at_1_change"] == 0.75
    # no interval-overlap column: the judgement is the paired comparison, which needs the
    # runs' output folders (none given here)
    assert "intervals_overlap" not in trend.columns
    assert trend.iloc[1]["compared_with"] == "r1" and trend.iloc[1]["first_attempt_verdict"] is None
    assert trend.iloc[1]["comparison_note"] == "no attempts given to compare the runs with"
    assert trend.iloc[0]["comparison_note"] == "first run of the suite"


def test_catalog_names_each_runs_system_as_run_identity_reads_it(tmp_path):
    """model and git_sha (with the suite, a run's system: repeated-runs.md) and started_at are
    identity.run_identity's: a value missing or not a string is unknown, so the catalog can be
    filtered by system; the other columns stay."""
    from bench_pipeline.catalog import CATALOG_COLUMNS, catalog_records
    from bench_pipeline.identity import run_identity

    metrics = _metrics(tmp_path, "r1", ["passed", "failed"])
    manifests = {
        "full": {"model": {"name": "m", "provider": "p"}, "code": {"git_sha": "abc1234", "dirty": False},
                 "started_at": "2026-11-01T00:00:00Z"},
        "no-sha": {"model": {"name": "m"}, "code": {"dirty": True}},
        "odd": {"model": "a bare string", "code": {"git_sha": 1234}, "started_at": 5},
        "empty": {},
    }
    catalog = catalog_frame([catalog_row(run_id, metrics, m) for run_id, m in manifests.items()])
    assert CATALOG_COLUMNS[:5] == ["run_id", "suite", "model", "git_sha", "started_at"]
    assert list(catalog.columns) == CATALOG_COLUMNS and "pass_at_1" in catalog.columns
    rows = {r["run_id"]: r for r in catalog_records(catalog)}
    for run_id, manifest in manifests.items():
        identity = run_identity(manifest)
        assert (rows[run_id]["model"], rows[run_id]["git_sha"], rows[run_id]["started_at"]) == (
            identity.model_name, identity.git_sha, identity.started_at), run_id
    assert (rows["full"]["model"], rows["full"]["git_sha"]) == ("m", "abc1234")
    assert (rows["no-sha"]["git_sha"], rows["odd"]["model"], rows["odd"]["git_sha"], rows["empty"]["model"]) == (
        None, None, None, None)
    assert list(catalog[catalog["git_sha"] == "abc1234"]["run_id"]) == ["full"]  # filtered by system
    # plain values: None for null, Python numbers
    assert type(rows["full"]["pass_at_1"]) is float and type(rows["full"]["attempts"]) is int
    assert rows["empty"]["started_at"] is None and rows["full"]["cost_usd_count"] == 2


def test_empty_catalog_has_the_trend_columns():
    trend = suite_trends(catalog_frame([]))
    assert trend.empty and "pass_at_1_change" in trend.columns and "first_attempt_verdict" in trend.columns
    assert "intervals_overlap" not in trend.columns


def _output_sides(root):
    """A trend side loader reading processed runs' output folders (the asset reads stored frames)."""
    from bench_pipeline.comparison_sides import ComparisonInputError, side_from_output

    def side_of(run_id):
        try:
            return side_from_output(root / run_id), None
        except ComparisonInputError as exc:
            return None, str(exc)

    return side_of


def test_trends_show_each_runs_paired_verdicts_against_its_predecessor(tmp_path):
    """Three runs of one suite processed into an output root: r2 against r1 (all ten tasks
    fail attempt 1 after passing: a significant regression), r3 against r2 (they pass
    again: an improvement); a run of another suite is compared with nothing; a run whose
    output folder is gone has null verdicts and says why."""
    from bench_pipeline.pipeline import run_stages

    tasks = [f"t{i}" for i in range(10)]
    plans = {"r1": "passed", "r2": "failed", "r3": "passed"}
    rows = []
    for day, (run_id, status) in enumerate(plans.items(), start=1):
        run = make_run(tmp_path / "runs", [row(t, 1, status) for t in tasks], run_id=run_id,
                       suite={"name": "suite-a", "tasks": []})
        result = run_stages(run, tmp_path / "reports" / run_id)
        rows.append(catalog_row(run_id, result.processed.metrics, {"started_at": f"2026-11-0{day}T00:00:00Z"}))
    other = make_run(tmp_path / "runs", [row("t0")], run_id="o1", suite={"name": "suite-b", "tasks": []})
    rows.append(catalog_row("o1", run_stages(other, tmp_path / "reports" / "o1").processed.metrics, {}))
    trend = suite_trends(catalog_frame(rows), _output_sides(tmp_path / "reports")).set_index("run_id")
    assert trend.loc["r1", "compared_with"] is None and trend.loc["r1", "comparison_note"] == "first run of the suite"
    r2, r3 = trend.loc["r2"], trend.loc["r3"]
    assert (r2["compared_with"], r2["paired_tasks"], r2["first_attempt_verdict"], r2["task_success_verdict"],
            r2["gate"]) == ("r1", 10, "regression", "regression", "fail")
    assert (r3["compared_with"], r3["first_attempt_verdict"], r3["gate"]) == ("r2", "improvement", "pass")
    assert r3["pass_pow_k_verdict"] == "improvement" and r3["quality_verdict"] is None  # no quality scores
    assert trend.loc["o1", "compared_with"] is None
    # the asset's Parquet table keeps the columns as they are
    import io

    import pandas as pd

    buffer = io.BytesIO()
    trend.reset_index().to_parquet(buffer)
    back = pd.read_parquet(io.BytesIO(buffer.getvalue())).set_index("run_id")
    assert back.loc["r2", "first_attempt_verdict"] == "regression" and back.loc["r2", "paired_tasks"] == 10

    import shutil

    shutil.rmtree(tmp_path / "reports" / "r2")
    trend = suite_trends(catalog_frame(rows), _output_sides(tmp_path / "reports")).set_index("run_id")
    assert trend.loc["r2", "first_attempt_verdict"] is None and trend.loc["r3", "gate"] is None
    assert "metrics.json: cannot be read" in trend.loc["r2", "comparison_note"]
    assert "metrics.json: cannot be read" in trend.loc["r3", "comparison_note"]


def test_catalog_counts_are_nullable_64_bit_and_a_huge_plan_fits(tmp_path):
    """A run planned beyond 64 bits of attempts (R26 has no bound) keeps its exact count in
    metrics.json; the catalog, a Parquet table, shows that count as unavailable."""
    import io

    import pandas as pd

    huge = {"status": "aborted", "planned": [{"task_id": t, "attempts": 9 * 10 ** 18} for t in "abc"]}
    metrics = run_stages(make_run(tmp_path, [row("a")], run_id="huge", manifest=huge)).processed.metrics
    assert metrics["coverage"]["missing_attempts"] == 27 * 10 ** 18 - 1
    plain = _metrics(tmp_path, "plain", ["passed", "failed"])
    catalog = catalog_frame([catalog_row("huge", metrics, {}), catalog_row("plain", plain, {})])
    assert str(catalog["missing_attempts"].dtype) == "Int64"
    assert catalog.set_index("run_id")["missing_attempts"].isna().to_dict() == {"huge": True, "plain": True}
    assert catalog.set_index("run_id")["attempts"].to_dict() == {"huge": 1, "plain": 2}
    buffer = io.BytesIO()
    catalog.to_parquet(buffer)
    assert pd.read_parquet(io.BytesIO(buffer.getvalue()))["attempts"].tolist() == catalog["attempts"].tolist()


def test_runs_behind_formula_are_exactly_those_with_another_version(tmp_path):
    """A run whose metrics.json carries an older formula version, or none, is behind; runs on
    the current version are not. The markdown lists them with their versions, in catalog
    order, up to the limit and then how many more."""
    from bench_pipeline.catalog import behind_formula_markdown, runs_behind_formula

    metrics = _metrics(tmp_path, "r0", ["passed", "failed"])
    versions = {"a-old": "2026-01-01.1", "b-current": "v-now", "c-none": None, "d-older": "2025-12-31.9",
                "e-current": "v-now"}
    catalog = catalog_frame([catalog_row(run_id, {**metrics, "formula_version": version}, {})
                             for run_id, version in versions.items()])
    assert dict(zip(catalog["run_id"], catalog["formula_version"])) == versions  # the version is a column
    behind = runs_behind_formula(catalog, "v-now")
    assert list(behind["run_id"]) == ["a-old", "c-none", "d-older"]
    assert list(behind.columns) == ["run_id", "suite", "formula_version"]
    text = behind_formula_markdown(behind, "v-now")
    assert text.splitlines() == [
        "3 run(s) computed with another formula version than the current `v-now`:", "",
        "| run_id | suite | formula_version |", "| --- | --- | --- |",
        "| a-old | suite-a | 2026-01-01.1 |", "| c-none | suite-a | unknown |", "| d-older | suite-a | 2025-12-31.9 |",
    ]
    capped = behind_formula_markdown(behind, "v-now", limit=2).splitlines()
    assert capped[-4:] == ["| a-old | suite-a | 2026-01-01.1 |", "| c-none | suite-a | unknown |", "",
                           "... and 1 more (the catalog's `formula_version` column has every run)."]

    current = runs_behind_formula(catalog, "2026-01-01.1")  # from that version's point of view
    assert list(current["run_id"]) == ["b-current", "c-none", "d-older", "e-current"]
    none = runs_behind_formula(catalog[catalog["formula_version"] == "v-now"], "v-now")
    assert none.empty and behind_formula_markdown(none, "v-now") == (
        "Every run in the catalog was computed with the current formula version `v-now`.")
    assert runs_behind_formula(catalog_frame([]), "v-now").empty


def test_a_pipe_in_a_run_id_does_not_break_the_table(tmp_path):
    from bench_pipeline.catalog import behind_formula_markdown, runs_behind_formula

    metrics = {**_metrics(tmp_path, "r0", ["passed"]), "formula_version": "old"}
    behind = runs_behind_formula(catalog_frame([catalog_row("a|b", metrics, {})]), "new")
    assert behind_formula_markdown(behind, "new").splitlines()[-1] == "| a\\|b | suite-a | old |"


def test_a_suites_only_run_is_not_read_for_its_trend(tmp_path):
    """A suite's first run is compared with nothing, so the trend never reads its attempts
    (for a large run, they are most of the catalog refresh); a suite with two runs reads
    both, each once."""
    read = []

    def side_of(run_id):
        read.append(run_id)
        return None, "x"

    one = catalog_frame([catalog_row("r1", _metrics(tmp_path, "r1", ["passed"]),
                                     {"started_at": "2026-11-01T00:00:00Z"})])
    trend = suite_trends(one, side_of)
    assert read == [] and list(trend["comparison_note"]) == ["first run of the suite"]
    (tmp_path / "b").mkdir()
    three = catalog_frame([catalog_row(r, _metrics(tmp_path / "b", r, ["passed"]),
                                       {"started_at": f"2026-11-0{i}T00:00:00Z"})
                           for i, r in ((1, "r1"), (2, "r2"), (3, "r3"))])
    suite_trends(three, side_of)
    assert read == ["r1", "r2", "r3"]


def test_a_trend_row_whose_runs_kept_their_versions_is_kept_without_reading_them(tmp_path):
    """Incremental trends: with the rows of an earlier refresh, a row whose run and
    predecessor have the data versions it was made from keeps its verdicts and reads neither
    run; a changed version, another predecessor or an unknown version compares again; the
    frame equals one made from scratch."""
    from bench_pipeline.comparison_sides import side_from_output

    tasks = [f"t{i}" for i in range(6)]
    rows = []
    for day, (run_id, status) in enumerate((("r1", "passed"), ("r2", "failed"), ("r3", "passed")), start=1):
        run = make_run(tmp_path / "runs", [row(t, 1, status) for t in tasks], run_id=run_id,
                       suite={"name": "suite-a", "tasks": []})
        metrics = run_stages(run, tmp_path / "reports" / run_id).processed.metrics
        rows.append(catalog_row(run_id, metrics, {"started_at": f"2026-11-0{day}T00:00:00Z"}, f"{run_id}@v1"))
    read = []

    def side_of(run_id):
        read.append(run_id)
        return side_from_output(tmp_path / "reports" / run_id), None

    scratch = suite_trends(catalog_frame(rows), side_of)
    assert read == ["r1", "r2", "r3"]
    assert list(scratch["data_version"]) == ["r1@v1", "r2@v1", "r3@v1"]
    assert list(scratch["compared_with_version"]) == [None, "r1@v1", "r2@v1"]
    kept = scratch
    read.clear()
    again = suite_trends(catalog_frame(rows), side_of, kept)
    assert read == [] and again.equals(scratch)
    # r2 re-processed (a new version): its row and r3's (whose predecessor it is) compare again
    rows[1] = {**rows[1], "data_version": "r2@v2"}
    changed = suite_trends(catalog_frame(rows), side_of, kept)
    assert read == ["r1", "r2", "r3"]
    assert changed.equals(suite_trends(catalog_frame(rows), side_of))
    # an unknown version is never taken as unchanged
    read.clear()
    rows[2] = {**rows[2], "data_version": None}
    suite_trends(catalog_frame(rows), side_of, changed)
    assert read == ["r2", "r3"]
    # kept rows read back from parquet, as the refresh keeps them, hold as well
    read.clear()
    rows[2] = {**rows[2], "data_version": "r3@v1"}
    buffer = io.BytesIO()
    changed.to_parquet(buffer, index=False)
    assert suite_trends(catalog_frame(rows), side_of, pd.read_parquet(buffer)).equals(changed) and read == []


def test_a_count_unknown_in_one_run_stays_known_in_the_others(tmp_path):
    """One run without metrics_k (no plan, no manifest k) leaves the others' k as it is: unknown
    is not the whole column."""
    known = run_stages(make_run(tmp_path, [row("a"), row("a", 2)], run_id="known",
                                manifest={"status": "completed", "metrics_k": 2})).processed.metrics
    unknown = run_stages(make_run(tmp_path, [], run_id="unknown")).processed.metrics
    assert (known["coverage"]["metrics_k"], unknown["coverage"]["metrics_k"]) == (2, None)
    catalog = catalog_frame([catalog_row("known", known, {}), catalog_row("unknown", unknown, {})])
    by_run = catalog.set_index("run_id")["metrics_k"]
    assert by_run["known"] == 2 and by_run.isna().to_dict() == {"known": False, "unknown": True}
    assert str(catalog["metrics_k"].dtype) == "Int64"


def _parquet_bytes(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def test_a_catalog_patched_with_new_rows_equals_one_made_from_every_row():
    """The refresh keeps the last catalog (as parquet) and adds the new and changed runs' rows:
    the result has the types and bytes of a catalog made from every row, whichever runs hold
    a null (a column of integers with a null is not read back as integers)."""
    from bench_pipeline.catalog import CATALOG_COLUMNS

    def catalog_row_of(run_id: str, day: int, tokens, k) -> dict:
        return {**dict.fromkeys(CATALOG_COLUMNS), "run_id": run_id, "suite": "s", "started_at": f"2026-11-0{day}",
                "total_tokens_sum": tokens, "metrics_k": k, "pass_at_1": 1, "judge_enabled": day % 2 == 0,
                "data_version": f"{run_id}@v1"}

    r1, r2, r3 = catalog_row_of("r1", 1, 10, 3), catalog_row_of("r2", 2, None, None), catalog_row_of("r3", 3, 5, 3)
    before = pd.read_parquet(io.BytesIO(_parquet_bytes(catalog_frame([r1, r2]))))
    assert str(before["total_tokens_sum"].dtype) == "float64" and before["total_tokens_sum"].isna().tolist() == [False, True]
    r2_again = {**r2, "total_tokens_sum": 7, "data_version": "r2@v2"}  # re-processed: now known
    patched = catalog_frame([r3, r2_again], before[before["run_id"] == "r1"])
    whole = catalog_frame([r1, r2_again, r3])
    assert patched.equals(whole) and patched.dtypes.equals(whole.dtypes)
    assert _parquet_bytes(patched) == _parquet_bytes(whole)
    assert patched["total_tokens_sum"].tolist() == [10.0, 7.0, 5.0] and patched["run_id"].tolist() == ["r1", "r2", "r3"]
    assert str(whole["metrics_k"].dtype) == "Int64" and str(whole["judge_enabled"].dtype) == "boolean"
    # nothing new: the kept rows are the catalog
    assert catalog_frame([], before).equals(catalog_frame([r1, r2]))
