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
system (suite, model, git sha), its run ids, its repeats.md and its repeats.json document.

Files land under the output root: ``_systems/<system_slug>/`` and
``_suites/<suite_slug>/index.html`` (``repeats.system_slugs`` / ``suite_slug``). Each refresh
rewrites the current ones atomically; a folder of a system or suite no longer in the catalog
is left as it is (never delete what another run produced).
"""


from collections.abc import Iterable
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd

from ..catalog import catalog_records, row_identity
from ..comparison import make_side
from ..identity import read_json_object
from ..object_store import location_text
from ..output_root import OutputRoot
from ..outputs import write_repeats_files
from ..repeats import RepeatRun, System, group_systems, repeats, suite_slug, system_slugs
from ..reports.compared import NO_VARIATION, fmt_pct
from ..reports.repeated import level_interval
from ..resources import PipelineSettings
from ..resources.settings import safe_partition_key
from ..stored_values import FRAME_ERRORS, read_attempt_rows, stored_frame_path
from ..system_members import Members, pooled_members, results_digests, usable
from .cross_run import GROUP

#: Folders under the output root.
SYSTEMS_FOLDER, SUITES_FOLDER = "_systems", "_suites"
#: Rows of the metadata tables.
LISTED = 50


def stored_repeat_runs(settings: PipelineSettings, catalog: Iterable[dict]) -> tuple[list[RepeatRun], list[str]]:
    """Every catalog run as a ``RepeatRun`` from its stored attempt_metrics frame and its
    catalog row (suite, metrics_k, model, git sha, start, pass_at_1), in catalog order; and
    the run ids without a stored frame (left out)."""
    runs, missing = [], []
    for row in catalog:
        run_id = row["run_id"]
        try:
            rows = read_attempt_rows(stored_frame_path(settings.storage_base, run_id))
        except FRAME_ERRORS:
            missing.append(run_id)
            continue
        side = make_side(rows, run_id=run_id, suite=row["suite"], metrics_k=row["metrics_k"],
                         run_dir=settings.run_dir(run_id), identity=row_identity(row))
        pass_at_1 = row["pass_at_1"]
        runs.append(RepeatRun(side, float(pass_at_1) if isinstance(pass_at_1, (int, float)) else None))
    return runs, missing


def _cell(value: Any) -> str:
    return "unknown" if value is None else str(value).replace("|", "\\|")


def _order(entry: dict) -> tuple:
    """Suite (unknown last), then pooled first attempt descending (none last), then folder."""
    mean = entry["doc"]["pooled"]["first_attempt"]["mean"]
    return (entry["suite"] is None, entry["suite"] or "", mean is None, -(mean or 0.0), entry["slug"])


def systems_markdown(entries: list[dict], limit: int = LISTED) -> str:
    """The systems as a markdown table: pooled first attempt with its interval (as repeats.md
    shows it), noise floor, flip rate and runs pooled; the first ``limit`` by suite then pooled
    first attempt."""
    if not entries:
        return "No processed run yet."
    lines = ["| suite | model | git sha | runs | first attempt (pooled) | 95% interval | noise floor | flip rate "
             "| setup | folder |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for e in sorted(entries, key=_order)[:limit]:
        doc = e["doc"]
        fa, noise, flips = (doc["pooled"]["first_attempt"], doc["between_runs"]["noise_floor95"],
                            doc["stability"]["flip_rate"])
        interval = (NO_VARIATION if fa["n"] >= 2 and fa["se"] == 0
                    else level_interval("rate", fa["ci95"]["lower"], fa["ci95"]["upper"]))
        lines.append(" | ".join([
            f"| {_cell(e['suite'])}", _cell(e["model"]), _cell(e["git_sha"]), str(len(e["runs"])), fmt_pct(fa["mean"]),
            interval, f"{noise * 100:.1f} points" if noise is not None else "n/a (one run)",
            fmt_pct(flips) if flips is not None else "n/a", _cell(e.get("setup")), f"`{e['slug']}` |"]))
    if len(entries) > limit:
        lines += ["", f"... and {len(entries) - limit} more (every system has its folder under `{SYSTEMS_FOLDER}/`)."]
    return "\n".join(lines)


def _entry(system: System, slug: str, doc: dict, repeats_md: Path, members: Members) -> dict:
    """A system in system_repeats' value: ``runs`` are the runs pooled, ``left_out`` {run id:
    why not} (system_members.py), ``setup`` its setup key in words (None when unrecorded)."""
    return {"slug": slug, "suite": system.suite, "model": system.model, "git_sha": system.git_sha,
            "setup": system.setup_text, "runs": [r["run_id"] for r in doc["runs"]],
            "left_out": members.left_out, "repeats_md": str(repeats_md), "doc": doc}


def split_members(settings: PipelineSettings, members: list[RepeatRun]) -> Members:
    """The runs a system pools and those it leaves out (system_members.pooled_members): the
    results files are compared only among a system's usable runs, and only when it has two."""
    usable_ids = [str(r.run_id) for r in members if usable(r)]
    digests = results_digests({i: settings.run_dir(i) for i in usable_ids}) if len(usable_ids) >= 2 else {}
    return pooled_members(members, digests)


def _reports(output_root: OutputRoot, runs: Iterable[RepeatRun]) -> dict[str, Path]:
    """{run id: its report.html} for the runs whose report exists (repeats.md's links; for
    an output root in a bucket the path is the report's local-copy place, which names it)."""
    found = {}
    for run in runs:
        name = safe_partition_key(run.run_id)
        if output_root.has(name, "report.html"):
            found[run.run_id] = output_root.local / name / "report.html"
    return found


def write_systems(settings: PipelineSettings, runs: list[RepeatRun], missing: list[str]) -> tuple[dict, dict]:
    """Every system's repeats.json and repeats.md under the output root: (system_repeats'
    value, its materialization metadata)."""
    output_root = OutputRoot(settings.output_root)  # a bucket's: staged here, uploaded below
    value: dict[str, dict] = {}
    changed = 0
    grouped = group_systems(runs)
    slugs = system_slugs(grouped)
    systems = {slugs[system]: (system, members) for system, members in grouped.items()}
    previous = output_root.fetch(systems, ("repeats.json",), SYSTEMS_FOLDER)  # to count the changed ones
    for slug, (system, members) in systems.items():
        split = split_members(settings, members)
        doc = repeats(split.pooled)
        before = previous / slug / "repeats.json"
        was = before.read_bytes() if before.is_file() else None
        written = write_repeats_files(output_root.staged() / SYSTEMS_FOLDER / slug, doc, split.pooled,
                                      _reports(output_root, split.pooled), notes=split.notes())
        changed += written["repeats.json"].read_bytes() != was
        value[slug] = _entry(system, slug, doc, output_root.read_side(written["repeats.md"]), split)
    output_root.publish()
    entries = list(value.values())
    metadata = {
        "systems": len(entries),
        "runs_pooled": sum(len(e["runs"]) for e in entries),
        "systems_with_repeats": sum(1 for e in entries if len(e["runs"]) >= 2),
        "systems_changed": changed,
        "systems_folder": dg.MetadataValue.path(output_root.url(SYSTEMS_FOLDER)),
        "systems_table": dg.MetadataValue.md(systems_markdown(entries)),
    }
    left_out = [f"`{run_id}`: {why}" for e in entries for run_id, why in e["left_out"].items()]
    if left_out:
        metadata["runs_left_out"] = dg.MetadataValue.md(
            f"{len(left_out)} run(s) not pooled into their system (docs/metric-choices.md): "
            + "; ".join(left_out[:LISTED]) + (" ..." if len(left_out) > LISTED else ""))
    if missing:
        metadata["runs_without_stored_attempts"] = dg.MetadataValue.md(
            f"{len(missing)} catalog run(s) have no stored attempt_metrics frame and are not pooled: "
            + ", ".join(f"`{r}`" for r in missing[:LISTED]) + (" ..." if len(missing) > LISTED else ""))
    return value, metadata


def suite_runs(catalog_rows: list[dict], output_root: Path | OutputRoot) -> dict[Any, list[dict]]:
    """{suite: its catalog rows, each with ``gate``, ``gate_reasons``, ``gate_mde80`` and
    ``baseline`` (its comparison.json's gate.result, gate.reasons, the mde80 of first_attempt
    and task_success, and baseline.run_id; None / empty without one) and ``report`` (its report.html's
    absolute path, None without one)}, suites in catalog order. ``output_root``: a folder, or
    an OutputRoot (a bucket's: comparison.json read through local copies, report.html's
    existence from the listing)."""
    root = output_root if isinstance(output_root, OutputRoot) else OutputRoot(str(output_root))
    names = [safe_partition_key(row["run_id"]) for row in catalog_rows]
    local = root.fetch(names, ("comparison.json",))
    suites: dict[Any, list[dict]] = {}
    for row, name in zip(catalog_rows, names):
        folder = (local / name).absolute()
        comparison = read_json_object(folder / "comparison.json")
        gate = comparison.get("gate") if isinstance(comparison.get("gate"), dict) else {}
        baseline = comparison.get("baseline") if isinstance(comparison.get("baseline"), dict) else {}
        report = folder / "report.html"
        reasons = gate.get("reasons") if isinstance(gate.get("reasons"), list) else []
        mde = {name: (comparison.get(name) or {}).get("mde80") if isinstance(comparison.get(name), dict) else None
               for name in ("first_attempt", "task_success")}
        suites.setdefault(row["suite"], []).append({
            **row, "gate": gate.get("result"), "gate_reasons": [r for r in reasons if isinstance(r, str)],
            "gate_mde80": mde, "baseline": baseline.get("run_id"),
            "report": report if root.has(name, "report.html") else None})
    return suites


def write_suite_pages(settings: PipelineSettings, records: list[dict], runs: list[RepeatRun],
                      systems: dict[str, dict]) -> dict:
    """One page per suite of the catalog rows ``records``, with its systems (system_repeats'
    value) and their runs (``runs``: every catalog run with a stored frame); the pages'
    materialization metadata."""
    from ..reports.suite_page import SystemEntry, write_suite_page

    output_root = OutputRoot(settings.output_root)  # a bucket's: staged here, uploaded below
    by_id = {r.run_id: r for r in runs}
    pages = []
    for suite, suite_rows in suite_runs(records, output_root).items():
        entries = [SystemEntry(e["slug"], e["doc"], [by_id[r] for r in e["runs"] if r in by_id], Path(e["repeats_md"]),
                               setup=e.get("setup"), left_out=e.get("left_out") or {})
                   for e in systems.values() if e["suite"] == suite]
        path = write_suite_page(output_root.staged() / SUITES_FOLDER / suite_slug(suite), suite, suite_rows, entries)
        pages.append((suite, len(suite_rows), len(entries), location_text(output_root.read_side(Path(path)))))
    output_root.publish()
    lines = ["| suite | runs | systems | page |", "| --- | --- | --- | --- |"]
    lines += [f"| {_cell(s)} | {n} | {m} | `{p}` |" for s, n, m, p in pages[:LISTED]]
    if len(pages) > LISTED:
        lines += ["", f"... and {len(pages) - LISTED} more under `{output_root.url(SUITES_FOLDER)}`."]
    return {
        "pages_written": len(pages),
        "suites_folder": dg.MetadataValue.path(output_root.url(SUITES_FOLDER)),
        "pages": dg.MetadataValue.md("\n".join(lines) if pages else "No processed run yet."),
    }


@dg.multi_asset(
    name="systems_and_suite_pages",
    specs=[
        dg.AssetSpec(
            "system_repeats", group_name=GROUP, kinds={"python", "json", "markdown"},
            deps=["run_catalog", "attempt_metrics"],
            description="Every processed run grouped into systems (suite, model, git sha and setup key: judge "
                        "and platform; repeated-runs.md \"Systems\": a run with an unknown part is a system of its "
                        "own; a copy of a run and a run without usable rows are not pooled), each pooled by task: "
                        "<output root>/_systems/<system slug>/repeats.json and repeats.md (the noise floor, the "
                        "flip rate, the flaky tasks). Read from the catalog and the stored attempt_metrics "
                        "frames, never from the run folders.",
        ).with_io_manager_key("json_io_manager"),
        dg.AssetSpec(
            "suite_pages", group_name=GROUP, kinds={"python", "html"},
            deps=["run_catalog", "system_repeats", "attempt_metrics", "run_comparison"],
            description="One self-contained page per suite, <output root>/_suites/<suite slug>/index.html: its "
                        "runs in start order with each one's gate against its baseline, its systems side by "
                        "side (system_repeats' documents), cost against capability and the flaky tasks.",
        ),
    ],
    ins={"run_catalog": dg.AssetIn()},
    can_subset=False,
)
def systems_and_suite_pages(context: dg.AssetExecutionContext, settings: PipelineSettings, run_catalog: pd.DataFrame):
    """system_repeats, then suite_pages, from one read of the stored attempt frames (module doc)."""
    records = catalog_records(run_catalog)
    runs, missing = stored_repeat_runs(settings, records)
    value, metadata = write_systems(settings, runs, missing)
    yield dg.Output(value, output_name="system_repeats", metadata=metadata)
    yield dg.MaterializeResult(asset_key="suite_pages", metadata=write_suite_pages(settings, records, runs, value))
