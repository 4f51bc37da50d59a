"""Cross-run assets: the run catalog and per-suite trends (and, in assets/systems_and_pages.py, the
systems' repeats and the suite pages).

They depend on every run partition. Dagster computes no dependency-based staleness for an
asset with 100 or more upstream partitions, so they follow the runs by ``catalog_behind``:
the catalog sensor (and the main command) refresh them once new per-run materializations
exist and no per-run work is still under way, so a backfill of many runs ends in one
refresh, not one per partition. The daily schedule refreshes them as well.

The catalog also says which runs are behind the current formula version (Dagster's UI shows
that only on each partition's own page): after a formula change, before any run is
re-processed, ``catalog_behind`` reports the catalog itself as behind, so that it is
refreshed once with the runs listed.
"""


import hashlib

import dagster as dg
import pandas as pd

from ..bulk import gc_paused
from ..catalog import (
    CatalogRows,
    behind_formula_markdown,
    catalog_frame,
    catalog_row,
    row_identity,
    runs_behind_formula,
)
from ..catalog import suite_trends as build_trends
from ..comparison_sides import Side
from ..formula import FORMULA_VERSION
from ..identity import read_json_object
from ..reports.format import fmt_int, fmt_pct, md_cell, md_text, plural
from ..resources import PipelineSettings
from ..run_folders import local_run_files
from ..stored_values import FRAME_ERRORS, read_stored_document, stored_side
from .refresh_state import (
    REFRESH_VERSION,
    REFRESH_VERSION_KEY,
    delete_earlier_copies,
    load_kept_frame,
    run_keys,
    run_versions,
)

GROUP = "cross_run"

#: How many runs the catalog's preview names.
PREVIEW_RUNS = 20


def catalog_preview(frame: pd.DataFrame, formula_version: str, limit: int = PREVIEW_RUNS) -> str:
    """The catalog's first ``limit`` runs for people (run_catalog's ``preview`` metadata): one
    item per run, led by its run id in bold, its rates as percents with one decimal (the stored
    frame keeps every digit). A list, not a table: Dagster shows a markdown value shorter than
    1,000 characters inline, in a metadata column too narrow for a table of eight columns (its
    run ids were squeezed to a few letters a line), and a longer one in a dialog; a list wraps
    between words in both."""
    if not len(frame):
        return "No processed run yet."
    lines = [f"{plural(len(frame), 'run')} in catalog order (suite, then start time)"
             + (f"; the first {limit}:" if len(frame) > limit else ":"), ""]
    for row in frame.head(limit).itertuples(index=False):
        k = _number(row.metrics_k)
        version = row.formula_version if isinstance(row.formula_version, str) else None
        bits = [md_cell(row.suite), f"model {md_cell(row.model)} at {md_cell(row.git_sha)}",
                f"pass@1 **{fmt_pct(_number(row.pass_at_1))}**",
                f"pass@k {fmt_pct(_number(row.pass_at_k))}" + (f" (k={fmt_int(k)})" if k is not None else ""),
                f"{fmt_int(_number(row.attempts))} attempts"]
        if version != formula_version:
            bits.append(f"formula {md_cell(version)} (behind the current {md_text(formula_version)})")
        lines.append(f"- **{md_cell(row.run_id)}**: " + " · ".join(bits))
    if len(frame) > limit:
        lines += ["", f"... and {len(frame) - limit} more (the catalog's table has every run, every digit)."]
    return "\n".join(lines)


def trends_preview(frame: pd.DataFrame, limit: int = PREVIEW_RUNS) -> str:
    """The trends' first ``limit`` runs for people (suite_trends' ``preview``), as
    ``catalog_preview`` shows the catalog: one item per run, the verdicts in words, rates as
    percents and the change of pass_at_1 in percentage points (the stored frame keeps every
    digit and the codes)."""
    if not len(frame):
        return "No processed run yet."
    lines = [f"{plural(len(frame), 'run')} by suite, in start order, each against the run before it"
             + (f"; the first {limit}:" if len(frame) > limit else ":"), ""]
    for row in frame.head(limit).itertuples(index=False):
        if not isinstance(row.compared_with, str):
            lines.append(f"- **{md_cell(row.run_id)}** ({md_cell(row.suite)}): the first run of its suite, "
                         f"pass@1 **{fmt_pct(_number(row.pass_at_1))}**")
            continue
        change = _number(row.pass_at_1_change)
        bits = [f"against {md_cell(row.compared_with)}", f"{fmt_int(_number(row.paired_tasks))} paired tasks",
                f"first attempt: {_words(row.first_attempt_verdict)}", f"task success: {_words(row.task_success_verdict)}",
                f"gate **{_words(row.gate)}**",
                f"pass@1 {fmt_pct(_number(row.pass_at_1))}"
                + (f" ({change * 100:+.1f} pp, a plain difference)" if change is not None else "")]
        lines.append(f"- **{md_cell(row.run_id)}** ({md_cell(row.suite)}): " + " · ".join(bits))
    if len(frame) > limit:
        lines += ["", f"... and {len(frame) - limit} more (the table has every run, every digit)."]
    return "\n".join(lines)


def _words(code: object) -> str:
    """A verdict or gate code in words (``no_significant_change`` -> no significant change)."""
    return md_text(code.replace("_", " ")) if isinstance(code, str) and code else "n/a"


def _number(value: object) -> float | int | None:
    """A frame cell as a number, None when missing (NA, NaN, None)."""
    if value is None or value is pd.NA:
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return value


def _latest(instance: dg.DagsterInstance, asset: str) -> dg.EventLogRecord | None:
    records = instance.fetch_materializations(dg.AssetKey(asset), limit=1).records
    return records[0] if records else None


#: The assets the catalog refresh (``refresh_catalog``) makes that ``catalog_behind`` follows:
#: the refresh is behind when any of them is.
REFRESHED = ("run_catalog", "system_repeats", "suite_pages")

#: The per-run stage whose materialization puts the refresh behind: the last one whose values
#: it reads (capability_aggregates' stored document, the stored attempt frames, metrics.json,
#: attempts.jsonl and the reports they link to are all in place once ``reports`` is recorded).
#: Nothing of the refresh comes from the Langfuse publication, so a run is in the catalog
#: while it is still being published (the main command refreshes meanwhile: main.py), and a
#: run whose publication failed is in it too, with the metrics it has.
FOLLOWED_STAGE = "reports"


def catalog_behind(instance: dg.DagsterInstance) -> str | None:
    """What the catalog refresh is behind, as a key for the refresh (``<newest per-run storage
    id>-<oldest storage id of the refreshed assets>@<formula version>``), or None when it is
    up to date.

    Behind: some run's FOLLOWED_STAGE was materialized after the last complete refresh began
    (run_catalog's ``reports_covered``: the newest such materialization when it started; a
    run whose reports were recorded while a refresh was under way is not in it, although
    the refresh was recorded after them), or the last refresh is not complete (one of
    REFRESHED never made, or made before the catalog), or the catalog was made under another
    formula version than the current one, so that after a formula change it is refreshed once
    to list every run as behind, even before a backfill has materialized anything. The key differs
    after every complete refresh, so a sensor's run key never repeats one already used; a
    refresh that fails part-way leaves the oldest asset, and so the key, as it was: the sensor
    does not request it again until another run is materialized.
    """
    runs = _latest(instance, FOLLOWED_STAGE)  # a run's values for the catalog are all stored
    if runs is None:
        return None
    made = {asset: _latest(instance, asset) for asset in REFRESHED}
    oldest = min(record.storage_id if record is not None else 0 for record in made.values())
    catalog = made["run_catalog"]
    key = f"{runs.storage_id}-{oldest}@{FORMULA_VERSION}"
    if catalog is not None and oldest == catalog.storage_id:  # the systems and pages made after it
        materialization = catalog.asset_materialization
        metadata = materialization.metadata if materialization else {}
        covered = getattr(metadata.get("reports_covered"), "value", None)
        if not isinstance(covered, int):  # a catalog made before it was recorded
            covered = catalog.storage_id
        if covered >= runs.storage_id and getattr(metadata.get("formula_version"), "value", None) == FORMULA_VERSION:
            # a run removed (its folder deleted: the sensor or the main command removed its
            # partition) leaves no materialization to notice: the runs covered say it
            current = runs_digest(run_keys(instance))
            covered = getattr(metadata.get("runs_digest"), "value", None)
            return None if covered == current else f"{key}#{current[:12]}"
    return key


def runs_digest(keys: list[str]) -> str:
    """A digest of the run partitions a refresh covered (run_catalog's ``runs_digest``)."""
    return hashlib.sha256("\n".join(sorted(keys)).encode("utf-8", "surrogateescape")).hexdigest()


@dg.asset(
    group_name=GROUP,
    kinds={"python", "pandas"},
    io_manager_key="parquet_io_manager",
    deps=["capability_aggregates"],
    code_version=REFRESH_VERSION,
)
def run_catalog(context: dg.AssetExecutionContext, settings: PipelineSettings) -> pd.DataFrame:
    """One row per processed run: suite, model, formula version, headline capability with
    intervals, coverage and cost, and the data version of the stored values it was made from.
    Its metadata names the current formula version and the runs computed with another one
    (``runs_behind_formula``, a number the Plots tab charts, and the first of them by name).

    Incremental (refresh_state.py): the catalog the last refresh stored is patched: a run whose
    data version is the one its row was made from keeps that row; only new and changed runs'
    stored capability_aggregates documents and manifests are read."""
    # thousands of rows in a process that holds Dagster and the definitions: the collector's
    # passes over them cost more than the step's own work (bulk.gc_paused)
    with gc_paused():
        # the newest run's reports this refresh covers: any recorded later put it behind (catalog_behind)
        covered = _latest(context.instance, FOLLOWED_STAGE)
        versions = run_versions(context.instance, "capability_aggregates", run_keys(context.instance),
                                settings.storage_base, context)
        kept = load_kept_frame(context, settings.storage_base, "run_catalog")
        kept_versions = dict(zip(kept["run_id"].tolist(), kept["data_version"].tolist())) if kept is not None else {}
        holding = {run_id for run_id, version in versions.items()
                   if isinstance(version, str) and kept_versions.get(run_id) == version}
        read = [run_id for run_id in versions if run_id not in holding]
        documents = {run_id: read_stored_document(settings.storage_base, "capability_aggregates", run_id)
                     for run_id in read}
        measured = [run_id for run_id in read if documents[run_id] is not None]
        # each run's manifest.json: in its run folder, or in the local copy of a run in a bucket
        # (brought up to date from one listing of the runs root: only changed manifests read)
        folders = local_run_files(settings.runs_root, measured, ("manifest.json",)) if measured else {}
        rows = [catalog_row(run_id, documents[run_id], read_json_object(folders[run_id] / "manifest.json"),
                            versions[run_id]) for run_id in measured]
        # the rows that still hold, taken by columns: no Python object per kept cell
        frame = catalog_frame(rows, kept[kept["run_id"].isin(holding)] if kept is not None else None)
        if kept is None:
            delete_earlier_copies(settings.storage_base, "run_catalog")
        behind = runs_behind_formula(frame, FORMULA_VERSION)
        context.add_output_metadata({
            "dagster/row_count": len(frame),
            "runs_digest": runs_digest(list(versions)),  # the partitions covered (catalog_behind)
            "reports_covered": covered.storage_id if covered is not None else 0,
            "suites": frame["suite"].nunique(),
            "formula_version": FORMULA_VERSION,
            REFRESH_VERSION_KEY: REFRESH_VERSION,  # what the next refresh may keep (load_kept_frame)
            "runs_read": len(measured),
            "runs_kept": len(frame) - len(measured),
            "runs_behind_formula": len(behind),
            "runs_behind_formula_list": dg.MetadataValue.md(behind_formula_markdown(behind, FORMULA_VERSION)),
            "preview": dg.MetadataValue.md(catalog_preview(frame, FORMULA_VERSION)),
        })
        return frame


@dg.asset(group_name=GROUP, kinds={"python", "pandas"}, io_manager_key="parquet_io_manager",
          deps=["attempt_metrics"], code_version=REFRESH_VERSION)
def suite_trends(context: dg.AssetExecutionContext, settings: PipelineSettings, run_catalog: pd.DataFrame) -> pd.DataFrame:
    """Per suite, runs in start order, each compared by task with the run before it
    (comparison.md): the verdict of every paired section and the release gate, from the runs'
    stored attempt frames; the change in pass_at_1 beside them is a plain difference.
    Incremental: a row whose run and predecessor kept their data versions keeps its verdicts,
    and only the runs of the other rows are read."""
    # as run_catalog: no collector's passes over the process's objects while the rows are made
    with gc_paused():
        kept = load_kept_frame(context, settings.storage_base, "suite_trends")
        read: list[str] = []
        rows = CatalogRows(run_catalog)  # a run's row made only when the run is read

        def side_of(run_id: str) -> tuple[Side | None, str | None]:
            read.append(run_id)
            row = rows[run_id]
            try:
                # with its setup, so that the comparison warns when the setups differ
                return stored_side(settings.storage_base, row, identity=row_identity(row)), None
            except FRAME_ERRORS as exc:
                return None, f"{run_id}: no stored attempt frame to compare with ({type(exc).__name__})"

        frame = build_trends(run_catalog, side_of, kept)
        if kept is None:
            delete_earlier_copies(settings.storage_base, "suite_trends")
        context.add_output_metadata({
            "dagster/row_count": len(frame),
            "gate_failures": int((frame["gate"] == "fail").sum()) if len(frame) else 0,
            "gate_inconclusive": int((frame["gate"] == "inconclusive").sum()) if len(frame) else 0,
            "runs_read": len(read),
            REFRESH_VERSION_KEY: REFRESH_VERSION,  # what the next refresh may keep (load_kept_frame)
            "preview": dg.MetadataValue.md(trends_preview(frame)),
        })
        return frame
