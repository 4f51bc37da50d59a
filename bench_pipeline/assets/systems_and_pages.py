"""Cross-run assets of repeated runs (repeated-runs.md): ``system_repeats``, every system's
repeats.json and repeats.md, and ``suite_pages``, one page per suite.

Both read what the pipeline already stored, never the run folders again: the run catalog
(suite, metrics_k, model, git sha, start, pass_at_1 of every processed run) and each run's
``attempt_metrics`` frame (``<storage base>/attempt_metrics/<run id>.parquet``, only the
columns a comparison side keeps). They are part of the catalog refresh (``refresh_catalog``,
downstream of ``run_catalog``), so they follow the runs as the catalog does: one refresh
after a sensor run or a backfill, not one per partition.

One step makes both (the multi-asset ``systems_and_suite_pages``): the stored frames are
read once, for the systems' documents and for the pages (which show every attempt's cost
and tokens and the flaky tasks' evidence, ``SystemEntry.runs``); the systems are
materialized before the pages are written, so a page that fails leaves them made.
``system_repeats``' stored value is a small JSON document: per system folder name, the
system (suite, model, git sha, setup), its run ids, the runs left out and why, and where its
repeats.md and repeats.json are (the documents themselves are in those files: stored again
on every refresh, they would make each refresh grow with the number of systems).

Files land under the output root: ``_systems/<system_slug>/`` and
``_suites/<suite_slug>/index.html`` (``system_folders.system_slugs`` / ``suite_slug``). Each refresh
rewrites the current ones atomically; the files of a system or suite that the last refresh
made and none of whose runs is in the catalog any more are removed (a refresh from scratch
makes none; one that kept nothing removes nothing), and a system folder renamed gets a
pointer to where its runs are now (systems.py).
"""


import dagster as dg
import pandas as pd

from ..bulk import gc_paused
from ..resources import PipelineSettings
from .cross_run import GROUP
from .refresh_state import REFRESH_VERSION, load_columns, load_state, run_versions, save_columns, save_state
from .suite_pages import write_suite_pages
from .stored_runs import RUNS_COLUMNS, StoredRuns
from .systems import SYSTEMS_COLUMNS, write_systems

#: The name of what the step keeps for the next refresh (refresh_state.py): ``<STATE>.runs`` and
#: ``<STATE>.systems`` (columns: stored_runs.RUNS_COLUMNS, systems.SYSTEMS_COLUMNS) and the pages' keys.
STATE = "systems_and_suite_pages"


@dg.multi_asset(
    name="systems_and_suite_pages",
    specs=[
        dg.AssetSpec(
            "system_repeats", group_name=GROUP, kinds={"python", "json", "markdown"},
            deps=["run_catalog", "attempt_metrics"], code_version=REFRESH_VERSION,
            description="Every processed run grouped into systems (suite, model, git sha and setup key: judge "
                        "and platform; repeated-runs.md \"Systems\": a run with an unknown part is a system of its "
                        "own; a copy of a run and a run without usable rows are not pooled), each pooled by task: "
                        "<output root>/_systems/<system slug>/repeats.json and repeats.md (the noise floor, the "
                        "flip rate, the flaky tasks). Read from the catalog and the stored attempt_metrics "
                        "frames, never from the run folders.",
        ).with_io_manager_key("json_io_manager"),
        dg.AssetSpec(
            "suite_pages", group_name=GROUP, kinds={"python", "html"},
            deps=["run_catalog", "system_repeats", "attempt_metrics", "run_comparison"], code_version=REFRESH_VERSION,
            description="One self-contained page per suite, <output root>/_suites/<suite slug>/index.html: its "
                        "runs in start order with each one's gate against its baseline, its systems side by "
                        "side (system_repeats' documents), cost against capability and the flaky tasks.",
        ),
    ],
    ins={"run_catalog": dg.AssetIn()},
    can_subset=False,
)
def systems_and_suite_pages(context: dg.AssetExecutionContext, settings: PipelineSettings, run_catalog: pd.DataFrame):
    """system_repeats, then suite_pages, each stored frame read at most once and only for the
    systems and pages made again (module doc, refresh_state.py)."""
    # the collector's passes over the process's objects cost more than the step's own work (bulk.gc_paused)
    with gc_paused():
        base = settings.storage_base
        runs = StoredRuns(settings, run_catalog,
                          run_versions(context.instance, "run_comparison", run_catalog["run_id"].tolist(), base, context),
                          load_columns(base, f"{STATE}.runs", RUNS_COLUMNS, context))
        metadata, systems, docs = write_systems(settings, runs, load_columns(base, f"{STATE}.systems", SYSTEMS_COLUMNS,
                                                                             context))
        # kept before the runs' rows: a run's row never says more than its system's (StoredRuns.touched)
        save_columns(base, f"{STATE}.systems", systems.columns)
        metadata["runs_read"] = sum(1 for run in runs.loaded.values() if run is not None)
        yield dg.Output(systems.value(), output_name="system_repeats", metadata=metadata)
        pages, pages_state = write_suite_pages(settings, runs, systems, docs,
                                               load_state(base, STATE, context).get("pages") or {})
        save_columns(base, f"{STATE}.runs", runs.state)
        save_state(base, STATE, {"pages": pages_state})
        yield dg.MaterializeResult(asset_key="suite_pages", metadata=pages)
