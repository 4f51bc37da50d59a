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
rewrites the current ones atomically; a folder of a system or suite no longer in the catalog
is left as it is (never delete what another run produced).
"""


import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd

from ..bulk import gc_paused
from ..catalog import catalog_records, row_identity
from ..comparison_sides import make_side
from ..identity import read_json_object
from ..object_store import location_text
from ..output_root import OutputRoot
from ..outputs import write_repeats_files
from ..repeats import RepeatRun, System, group_systems, repeats
from ..system_folders import suite_slug, system_slugs
from ..reports.change_format import NO_VARIATION
from ..reports.format import fmt_pct
from ..reports.format import fmt_int
from ..reports.planning_text import runs_per_side_for
from ..reports.repeated import level_interval
from ..reports.suite_page import SystemEntry, page_summary, write_suite_page
from ..resources import PipelineSettings
from ..resources.settings import safe_partition_key
from ..stored_values import FRAME_ERRORS, read_attempt_rows, stored_frame_path
from ..system_members import Members, pooled_members, results_digests, usable
from .cross_run import GROUP
from .refresh_state import REFRESH_VERSION, load_state, run_versions, save_state, unchanged

#: Folders under the output root.
SYSTEMS_FOLDER, SUITES_FOLDER = "_systems", "_suites"
#: Rows of the metadata tables.
LISTED = 50


def stored_repeat_run(settings: PipelineSettings, row: dict) -> RepeatRun | None:
    """A catalog run as a ``RepeatRun`` from its stored attempt_metrics frame and its catalog
    row (suite, metrics_k, model, git sha, start, setup, pass_at_1); None without a readable
    stored frame."""
    try:
        rows = read_attempt_rows(stored_frame_path(settings.storage_base, row["run_id"]))
    except FRAME_ERRORS:
        return None
    side = make_side(rows, run_id=row["run_id"], suite=row["suite"], metrics_k=row["metrics_k"],
                     run_dir=settings.run_dir(row["run_id"]), identity=row_identity(row))
    pass_at_1 = row["pass_at_1"]
    return RepeatRun(side, float(pass_at_1) if isinstance(pass_at_1, (int, float)) else None)


class StoredRuns:
    """The catalog's runs for the systems and the pages, each stored frame read at most once
    and only when a system or page that shows the run is made again (refresh_state.py).

    ``kept``: what the last refresh knew of each run ({run id: {"data_version", "has_frame",
    "comparison_version", "shown"}}); a run whose data version is unchanged keeps whether it
    has a stored frame without reading it; ``shown`` (its gate, baseline and report for the
    suite page, ``suite_run``) is kept while its comparison's data version is unchanged."""

    def __init__(self, settings: PipelineSettings, records: list[dict], versions: dict[str, str | None],
                 comparisons: dict[str, str | None], kept: dict[str, dict]) -> None:
        self.settings, self.records = settings, records
        self.versions, self.comparisons, self.kept = versions, comparisons, kept
        self.by_id = {row["run_id"]: row for row in records}
        self.loaded: dict[str, RepeatRun | None] = {}
        self.state: dict[str, dict] = {}
        for row in records:
            run_id, before = row["run_id"], kept.get(row["run_id"])
            has_frame = before["has_frame"] if unchanged(before, versions.get(run_id)) else self.run(row) is not None
            self.state[run_id] = {"data_version": versions.get(run_id), "has_frame": has_frame}

    def run(self, row: dict) -> RepeatRun | None:
        """The run with its stored frame (read once)."""
        if row["run_id"] not in self.loaded:
            self.loaded[row["run_id"]] = stored_repeat_run(self.settings, row)
        return self.loaded[row["run_id"]]

    def shells(self) -> list[RepeatRun]:
        """Every run with a stored frame, in catalog order, as its system sees it (suite and
        identity); the frame itself is read only where it already was."""
        out = []
        for row in self.records:
            if self.state[row["run_id"]]["has_frame"]:
                loaded = self.loaded.get(row["run_id"])
                out.append(loaded if loaded is not None else RepeatRun(
                    make_side([], run_id=row["run_id"], suite=row["suite"], metrics_k=row["metrics_k"],
                              identity=row_identity(row)), None))
        return out

    def full(self, run_ids: Iterable[str]) -> list[RepeatRun]:
        """The runs ``run_ids`` with their stored frames (those that have one)."""
        return [run for run in (self.run(self.by_id[run_id]) for run_id in run_ids) if run is not None]

    @property
    def missing(self) -> list[str]:
        return [row["run_id"] for row in self.records if not self.state[row["run_id"]]["has_frame"]]


def _cell(value: Any) -> str:
    return "unknown" if value is None else str(value).replace("|", "\\|")


def _order(entry: dict) -> tuple:
    """Suite (unknown last), then pooled first attempt descending (none last), then folder."""
    mean = entry["doc"]["pooled"]["first_attempt"]["mean"]
    return (entry["suite"] is None, entry["suite"] or "", mean is None, -(mean or 0.0), entry["slug"])


def systems_markdown(entries: list[dict], limit: int = LISTED) -> str:
    """The systems as a markdown table: pooled first attempt with its interval (as repeats.md
    shows it), noise floor, the runs per side a comparison of the system needs to detect a
    5-point change in first attempt (planning.md, n/a when its noise cannot be measured), flip
    rate and runs pooled; the first ``limit`` by suite then pooled first attempt."""
    if not entries:
        return "No processed run yet."
    lines = ["| suite | model | git sha | runs | first attempt (pooled) | 95% interval | noise floor "
             "| runs per side for 5 pp (first attempt) | flip rate | setup | folder |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for e in sorted(entries, key=_order)[:limit]:
        doc = e["doc"]
        fa, noise, flips = (doc["pooled"]["first_attempt"], doc["between_runs"]["noise_floor95"],
                            doc["stability"]["flip_rate"])
        interval = (NO_VARIATION if fa["n"] >= 2 and fa["se"] == 0
                    else level_interval("rate", fa["ci95"]["lower"], fa["ci95"]["upper"]))
        lines.append(" | ".join([
            f"| {_cell(e['suite'])}", _cell(e["model"]), _cell(e["git_sha"]), str(len(e["runs"])), fmt_pct(fa["mean"]),
            interval, f"{noise * 100:.1f} points" if noise is not None else "n/a (one run)",
            fmt_int(runs_per_side_for(doc)), fmt_pct(flips) if flips is not None else "n/a", _cell(e.get("setup")),
            f"`{e['slug']}` |"]))
    if len(entries) > limit:
        lines += ["", f"... and {len(entries) - limit} more (every system has its folder under `{SYSTEMS_FOLDER}/`)."]
    return "\n".join(lines)


def _entry(system: System, slug: str, doc: dict, repeats_md: Path, members: Members) -> dict:
    """A system in system_repeats' value: ``runs`` are the runs pooled, ``left_out`` {run id:
    why not} (system_members.py), ``setup`` its setup key in words (None when unrecorded),
    ``page`` what its suite's page shows of its runs (suite_page.page_summary: the page is
    made again from it without reading the runs; kept with the system for the next refresh,
    not part of system_repeats' value)."""
    return {"slug": slug, "suite": system.suite, "model": system.model, "git_sha": system.git_sha,
            "setup": system.setup_text, "runs": [r["run_id"] for r in doc["runs"]],
            "left_out": members.left_out, "repeats_md": str(repeats_md),
            "repeats_json": str(repeats_md.with_name("repeats.json")), "doc": doc,
            "page": page_summary(members.pooled)}


#: What a system's entry keeps for the next refresh and the suite page, not part of
#: system_repeats' value.
KEPT_ONLY = ("doc", "page")


def _value(entry: dict) -> dict:
    """A system's entry as system_repeats' value has it (without KEPT_ONLY)."""
    return {k: v for k, v in entry.items() if k not in KEPT_ONLY}


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


def write_systems(settings: PipelineSettings, runs: StoredRuns, kept: dict[str, dict]) -> tuple[dict, dict, dict]:
    """Every system's repeats.json and repeats.md under the output root, made again only for
    the systems whose runs or their data versions changed since the last refresh (``kept``:
    {slug: {"versions": {run id: data version}, "entry": its value}}): (system_repeats'
    value, its materialization metadata, what to keep for the next refresh)."""
    output_root = OutputRoot(settings.output_root)  # a bucket's: staged here, uploaded below
    value: dict[str, dict] = {}
    state: dict[str, dict] = {}
    changed = made = 0
    grouped = group_systems(runs.shells())
    slugs = system_slugs(grouped)
    systems = {slugs[system]: (system, members) for system, members in grouped.items()}
    remade = [slug for slug, (_, members) in systems.items()
              if not _kept(kept.get(slug), {m.run_id: runs.versions.get(m.run_id) for m in members})]
    previous = output_root.fetch(remade, ("repeats.json",), SYSTEMS_FOLDER) if remade else None
    for slug, (system, members) in systems.items():
        versions = {m.run_id: runs.versions.get(m.run_id) for m in members}
        if slug not in remade:
            state[slug] = kept[slug]
            value[slug] = _value(kept[slug]["entry"])
            continue
        split = split_members(settings, runs.full(m.run_id for m in members))
        doc = repeats(split.pooled)
        before = previous / slug / "repeats.json"
        was = before.read_bytes() if before.is_file() else None
        written = write_repeats_files(output_root.staged() / SYSTEMS_FOLDER / slug, doc, split.pooled,
                                      _reports(output_root, split.pooled), notes=split.notes())
        changed += written["repeats.json"].read_bytes() != was
        made += 1
        entry = _entry(system, slug, doc, output_root.read_side(written["repeats.md"]), split)
        state[slug] = {"versions": versions, "entry": entry}  # with what the suite page shows of its runs
        value[slug] = _value(entry)
    output_root.publish()
    entries = [state[slug]["entry"] for slug in value]
    metadata = {
        "systems": len(entries),
        "runs_pooled": sum(len(e["runs"]) for e in entries),
        "systems_with_repeats": sum(1 for e in entries if len(e["runs"]) >= 2),
        "systems_with_planning": sum(1 for e in entries if runs_per_side_for(e["doc"]) is not None),
        "systems_made": made,
        "systems_changed": changed,
        "systems_folder": dg.MetadataValue.path(output_root.url(SYSTEMS_FOLDER)),
        "systems_table": dg.MetadataValue.md(systems_markdown(entries)),
    }
    left_out = [f"`{run_id}`: {why}" for e in entries for run_id, why in e["left_out"].items()]
    if left_out:
        metadata["runs_left_out"] = dg.MetadataValue.md(
            f"{len(left_out)} run(s) not pooled into their system (docs/metric-choices.md): "
            + "; ".join(left_out[:LISTED]) + (" ..." if len(left_out) > LISTED else ""))
    missing = runs.missing
    if missing:
        metadata["runs_without_stored_attempts"] = dg.MetadataValue.md(
            f"{len(missing)} catalog run(s) have no stored attempt_metrics frame and are not pooled: "
            + ", ".join(f"`{r}`" for r in missing[:LISTED]) + (" ..." if len(missing) > LISTED else ""))
    return value, metadata, state


def _kept(before: dict | None, versions: dict[str, str | None]) -> bool:
    """Whether a system kept from the last refresh still holds: the same runs, each with a
    known and unchanged data version."""
    return (before is not None and before.get("versions") == versions
            and all(v is not None for v in versions.values()))


def shown_runs(rows: list[dict], output_root: OutputRoot, comparisons: dict[str, str | None],
               kept: dict[str, dict]) -> dict[str, dict]:
    """{run id: what the suite page shows of its comparison: ``gate``, ``gate_reasons``,
    ``gate_mde80``, ``baseline`` and ``warnings`` (its comparison.json's gate.result,
    gate.reasons, the mde80 of first_attempt and task_success, baseline.run_id and warnings;
    None / empty without one) and
    ``report`` (its report.html's absolute path, None without one)}. Read from the output root
    (a bucket's: comparison.json through local copies, report.html's existence from the
    listing) only for the runs whose comparison's data version (``comparisons``) is not the one
    ``kept`` has it for."""
    shown: dict[str, dict] = {}
    read = []
    for row in rows:
        before, version = kept.get(row["run_id"]), comparisons.get(row["run_id"])
        if before is not None and version is not None and before.get("comparison_version") == version:
            shown[row["run_id"]] = before["shown"]
        else:
            read.append(row["run_id"])
    names = {run_id: safe_partition_key(run_id) for run_id in read}
    local = output_root.fetch(list(names.values()), ("comparison.json",)) if read else output_root.local
    for run_id, name in names.items():
        folder = (local / name).absolute()
        comparison = read_json_object(folder / "comparison.json")
        gate = comparison.get("gate") if isinstance(comparison.get("gate"), dict) else {}
        baseline = comparison.get("baseline") if isinstance(comparison.get("baseline"), dict) else {}
        reasons = gate.get("reasons") if isinstance(gate.get("reasons"), list) else []
        warnings = comparison.get("warnings") if isinstance(comparison.get("warnings"), list) else []
        mde = {section: (comparison.get(section) or {}).get("mde80") if isinstance(comparison.get(section), dict)
               else None for section in ("first_attempt", "task_success")}
        shown[run_id] = {"gate": gate.get("result"), "gate_reasons": [r for r in reasons if isinstance(r, str)],
                         "gate_mde80": mde, "baseline": baseline.get("run_id"),
                         "warnings": [w for w in warnings if isinstance(w, str)],
                         "report": str(folder / "report.html") if output_root.has(name, "report.html") else None}
    return shown


def suite_runs(catalog_rows: list[dict], shown: dict[str, dict]) -> dict[Any, list[dict]]:
    """{suite: its catalog rows, each with what the page shows of its comparison
    (``shown_runs``; ``report`` as a Path)}, suites in catalog order."""
    suites: dict[Any, list[dict]] = {}
    for row in catalog_rows:
        extra = shown[row["run_id"]]
        suites.setdefault(row["suite"], []).append(
            {**row, **extra, "report": Path(extra["report"]) if extra["report"] is not None else None})
    return suites


def write_suite_pages(settings: PipelineSettings, records: list[dict], runs: StoredRuns, systems: dict[str, dict],
                      kept: dict[str, str]) -> tuple[dict, dict]:
    """One page per suite of the catalog rows ``records``, with its systems (``systems``:
    system_repeats' entries with what each page shows of their runs), written again only
    when what it shows changed since the last refresh (``kept``: {suite slug: the key of what
    its page showed}): the pages' materialization metadata and what to keep."""
    output_root = OutputRoot(settings.output_root)  # a bucket's: staged here, uploaded below
    shown = shown_runs(records, output_root, runs.comparisons, runs.kept)
    for row in records:
        runs.state[row["run_id"]].update(comparison_version=runs.comparisons.get(row["run_id"]),
                                         shown=shown[row["run_id"]])
    pages, state, written = [], {}, 0
    for suite, suite_rows in suite_runs(records, shown).items():
        slug = suite_slug(suite)
        suite_systems = [e for e in systems.values() if e["suite"] == suite]
        key = _page_key(suite_rows, suite_systems, runs)
        path = output_root.staged() / SUITES_FOLDER / slug / "index.html"
        if key is None or kept.get(slug) != key:
            entries = [SystemEntry(e["slug"], e["doc"], [], Path(e["repeats_md"]), setup=e.get("setup"),
                                   left_out=e.get("left_out") or {}, summary=e["page"]) for e in suite_systems]
            path = write_suite_page(output_root.staged() / SUITES_FOLDER / slug, suite, suite_rows, entries)
            written += 1
        if key is not None:
            state[slug] = key
        pages.append((suite, len(suite_rows), len(suite_systems), location_text(output_root.read_side(Path(path)))))
    output_root.publish()
    lines = ["| suite | runs | systems | page |", "| --- | --- | --- | --- |"]
    lines += [f"| {_cell(s)} | {n} | {m} | `{p}` |" for s, n, m, p in pages[:LISTED]]
    if len(pages) > LISTED:
        lines += ["", f"... and {len(pages) - LISTED} more under `{output_root.url(SUITES_FOLDER)}`."]
    return {
        "pages_written": written,
        "pages_listed": len(pages),
        "suites_folder": dg.MetadataValue.path(output_root.url(SUITES_FOLDER)),
        "pages": dg.MetadataValue.md("\n".join(lines) if pages else "No processed run yet."),
    }, state


def _page_key(suite_rows: list[dict], suite_systems: list[dict], runs: StoredRuns) -> str | None:
    """What a suite page shows, as the versions it is made from: each run's data version and
    its comparison's, each system's runs; None when one of them is unknown (the page is then
    made every time)."""
    parts = [[row["run_id"], runs.versions.get(row["run_id"]), runs.comparisons.get(row["run_id"])]
             for row in suite_rows]
    parts += [[e["slug"], e["runs"], sorted(e["left_out"])] for e in suite_systems]
    if any(p[1] is None or p[2] is None for p in parts[:len(suite_rows)]):
        return None
    return json.dumps(parts, sort_keys=True)


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
    # the kept state of thousands of systems is hundreds of thousands of objects: the
    # collector's passes over them cost more than the step's own work (bulk.gc_paused)
    with gc_paused():
        records = catalog_records(run_catalog)
        keys = [row["run_id"] for row in records]
        kept = load_state(settings.storage_base, "systems_and_suite_pages", context)
        runs = StoredRuns(settings, records, run_versions(context.instance, "capability_aggregates", keys),
                          run_versions(context.instance, "run_comparison", keys), kept.get("runs") or {})
        value, metadata, systems_state = write_systems(settings, runs, kept.get("systems") or {})
        metadata["runs_read"] = sum(1 for run in runs.loaded.values() if run is not None)
        yield dg.Output(value, output_name="system_repeats", metadata=metadata)
        entries = {slug: kept_system["entry"] for slug, kept_system in systems_state.items()}
        pages, pages_state = write_suite_pages(settings, records, runs, entries, kept.get("pages") or {})
        save_state(settings.storage_base, "systems_and_suite_pages",
                   {"runs": runs.state, "systems": systems_state, "pages": pages_state})
        yield dg.MaterializeResult(asset_key="suite_pages", metadata=pages)
