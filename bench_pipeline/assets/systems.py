"""What ``system_repeats`` makes (repeated-runs.md): the catalog's runs grouped into systems,
each pooled by task into ``_systems/<system slug>/repeats.json`` and ``repeats.md``, made again
only when its runs changed since the last refresh (refresh_state.py), and the catalog's runs
with their stored attempt frames, each read at most once (``StoredRuns``). Each system's
repeats document and what its suite page shows of its runs are kept in a piece of their own,
read only for the systems a page made again shows (``SystemDocs``). The step that makes
it, with the suite pages, is assets/systems_and_pages.py."""

from collections.abc import Iterable
from pathlib import Path

import dagster as dg

from ..artifacts import loads_json
from ..catalog import row_identity
from ..comparison_sides import make_side
from ..output_root import OutputRoot
from ..outputs import write_moved_files, write_repeats_files
from ..repeats import RepeatRun, System, repeats, system_of
from ..system_folders import SYSTEMS_FOLDER, system_slug, system_slugs
from ..reports.change_format import NO_VARIATION
from ..reports.format import fmt_pct, md_cell
from ..reports.format import fmt_int
from ..reports.planning_text import runs_per_side_for
from ..reports.repeated import level_interval
from ..resources import PipelineSettings
from ..resources.settings import safe_partition_key
from ..stored_values import FRAME_ERRORS, read_attempt_rows, stored_frame_path
from ..system_members import Members, pooled_members, results_digests, usable
from ..reports.suite_page import page_summary
from .refresh_state import load_pieces, save_pieces, unchanged

#: Rows of the metadata tables.
LISTED = 50
#: The name under which each system's documents are kept, a piece per system (refresh_state.py).
SYSTEM_DOCS = "system_docs"


def row_system(row: dict) -> System:
    """The system of a catalog run (``repeats.system_of``, from its catalog row's identity)."""
    return system_of(RepeatRun(make_side([], run_id=row["run_id"], suite=row["suite"], metrics_k=row["metrics_k"],
                                         identity=row_identity(row)), None))


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
    "system", "base", "comparison_version", "shown"}}); a run whose data version is unchanged
    keeps whether it has a stored frame without reading it, and its system and that system's
    folder name without making them again; ``shown`` (its gate, baseline and report for the
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
            version = versions.get(run_id)
            if unchanged(before, version):  # what the run's row and frame gave is as it was
                self.state[run_id] = {"data_version": version, "has_frame": before["has_frame"],
                                      "system": before["system"], "base": before["base"]}
                continue
            system = row_system(row)
            self.state[run_id] = {"data_version": version, "has_frame": self.run(row) is not None,
                                  "system": [system.suite, system.model, system.git_sha, system.alone, list(system.setup)],
                                  "base": system_slug(system)}

    def run(self, row: dict) -> RepeatRun | None:
        """The run with its stored frame (read once)."""
        if row["run_id"] not in self.loaded:
            self.loaded[row["run_id"]] = stored_repeat_run(self.settings, row)
        return self.loaded[row["run_id"]]

    def grouped(self) -> dict[System, list[str]]:
        """The ids of the runs with a stored frame grouped by system (``repeats.group_systems``
        of the runs: systems in the order of their first run in the catalog), each run's system
        kept from the last refresh while its data version is unchanged."""
        groups: dict[tuple, list[str]] = {}
        for row in self.records:
            state = self.state[row["run_id"]]
            if state["has_frame"]:
                suite, model, git_sha, alone, setup = state["system"]
                groups.setdefault((suite, model, git_sha, alone, tuple(setup)), []).append(row["run_id"])
        return {System(suite, model, git_sha, alone=alone, setup=setup): ids
                for (suite, model, git_sha, alone, setup), ids in groups.items()}

    def base_slug(self, run_id: str) -> str:
        """The folder name of the run's system without its setup (``system_folders.system_slug``)."""
        return self.state[run_id]["base"]

    def full(self, run_ids: Iterable[str]) -> list[RepeatRun]:
        """The runs ``run_ids`` with their stored frames (those that have one)."""
        return [run for run in (self.run(self.by_id[run_id]) for run_id in run_ids) if run is not None]

    @property
    def missing(self) -> list[str]:
        return [row["run_id"] for row in self.records if not self.state[row["run_id"]]["has_frame"]]


def table_summary(doc: dict) -> dict:
    """What the systems table (``systems_markdown``) and the step's metadata show of a
    system's repeats.json: pooled first attempt, noise floor, flip rate and the runs per side
    its planning gives for 5 points (kept with the system's entry, without the document)."""
    return {"first_attempt": doc["pooled"]["first_attempt"], "noise_floor95": doc["between_runs"]["noise_floor95"],
            "flip_rate": doc["stability"]["flip_rate"], "runs_per_side": runs_per_side_for(doc)}


def _order(entry: dict) -> tuple:
    """Suite (unknown last), then pooled first attempt descending (none last), then folder."""
    mean = entry["table"]["first_attempt"]["mean"]
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
        table = e["table"]
        fa, noise, flips = table["first_attempt"], table["noise_floor95"], table["flip_rate"]
        interval = (NO_VARIATION if fa["n"] >= 2 and fa["se"] == 0
                    else level_interval("rate", fa["ci95"]["lower"], fa["ci95"]["upper"]))
        lines.append(" | ".join([
            f"| {md_cell(e['suite'])}", md_cell(e["model"]), md_cell(e["git_sha"]), str(len(e["runs"])),
            fmt_pct(fa["mean"]),
            interval, f"{noise * 100:.1f} points" if noise is not None else "n/a (one run)",
            fmt_int(table["runs_per_side"]), fmt_pct(flips) if flips is not None else "n/a", md_cell(e.get("setup")),
            f"`{e['slug']}` |"]))
    if len(entries) > limit:
        lines += ["", f"... and {len(entries) - limit} more (every system has its folder under `{SYSTEMS_FOLDER}/`)."]
    return "\n".join(lines)


def _entry(system: System, slug: str, doc: dict, repeats_md: Path, members: Members) -> dict:
    """A system in system_repeats' value: ``runs`` are the runs pooled, ``left_out`` {run id:
    why not} (system_members.py), ``setup`` its setup key in words (None when unrecorded),
    ``table`` what the systems table shows of its document (``table_summary``: kept with the
    system for the next refresh, not part of system_repeats' value)."""
    return {"slug": slug, "suite": system.suite, "model": system.model, "git_sha": system.git_sha,
            "setup": system.setup_text, "runs": [r["run_id"] for r in doc["runs"]],
            "left_out": members.left_out, "repeats_md": str(repeats_md),
            "repeats_json": str(repeats_md.with_name("repeats.json")), "table": table_summary(doc)}


#: What a system's entry keeps for the next refresh and the systems table, not part of
#: system_repeats' value.
KEPT_ONLY = ("table",)


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


class SystemDocs:
    """Each system's repeats document and what its suite page shows of its runs
    (suite_page.page_summary), for the pages made again: those made by this refresh, else the
    piece kept when the system was made (``SYSTEM_DOCS``), else (no such piece, or one made from
    other versions of its runs) made again from the stored runs and kept."""

    def __init__(self, settings: PipelineSettings, runs: StoredRuns, systems: dict[str, dict],
                 made: dict[str, tuple[dict, dict]]) -> None:
        self.settings, self.runs, self.systems, self.made = settings, runs, systems, made

    def load(self, slugs: Iterable[str]) -> None:
        """Have the documents of the systems ``slugs`` (their pieces read at once)."""
        wanted = [slug for slug in dict.fromkeys(slugs) if slug not in self.made]
        remade = {}
        for slug, piece in load_pieces(self.settings.storage_base, SYSTEM_DOCS, wanted).items():
            versions = self.systems[slug]["versions"]
            if isinstance(piece, dict) and piece.get("versions") == versions:
                self.made[slug] = (piece["doc"], piece["page"])
            else:
                split = split_members(self.settings, self.runs.full(versions))
                self.made[slug] = (repeats(split.pooled), page_summary(split.pooled))
                remade[slug] = kept_docs(versions, *self.made[slug])
        save_pieces(self.settings.storage_base, SYSTEM_DOCS, remade)

    def get(self, slug: str) -> tuple[dict, dict]:
        """(repeats document, page summary) of the system ``slug``."""
        self.load([slug])
        return self.made[slug]


def kept_docs(versions: dict[str, str | None], doc: dict, page: dict) -> dict:
    """A system's documents as kept for later refreshes, with the versions of the runs they were made from."""
    return {"versions": versions, "doc": doc, "page": page}


def write_systems(settings: PipelineSettings, runs: StoredRuns,
                  kept: dict[str, dict]) -> tuple[dict, dict, dict, SystemDocs]:
    """Every system's repeats.json and repeats.md under the output root, made again only for
    the systems whose runs or their data versions changed since the last refresh (``kept``:
    {slug: {"versions": {run id: data version}, "entry": its entry}}): (system_repeats'
    value, its materialization metadata, what to keep for the next refresh, the systems'
    documents for the pages)."""
    output_root = OutputRoot(settings.output_root)  # a bucket's: staged here, uploaded below
    value: dict[str, dict] = {}
    state: dict[str, dict] = {}
    docs: dict[str, tuple[dict, dict]] = {}
    changed = 0
    grouped = runs.grouped()
    slugs = system_slugs(grouped, {system: runs.base_slug(ids[0]) for system, ids in grouped.items()})
    systems = {slugs[system]: (system, ids) for system, ids in grouped.items()}
    versions_of = {slug: {run_id: runs.versions.get(run_id) for run_id in ids} for slug, (_, ids) in systems.items()}
    remade = {slug for slug in systems if not _kept(kept.get(slug), versions_of[slug])}
    previous = output_root.fetch(remade, ("repeats.json",), SYSTEMS_FOLDER) if remade else None
    for slug, (system, members) in systems.items():
        versions = versions_of[slug]
        if slug not in remade:
            state[slug] = kept[slug]
            value[slug] = _value(kept[slug]["entry"])
            continue
        split = split_members(settings, runs.full(members))
        doc = repeats(split.pooled)
        before = previous / slug / "repeats.json"
        was = before.read_bytes() if before.is_file() else None
        written = write_repeats_files(output_root.staged() / SYSTEMS_FOLDER / slug, doc, split.pooled,
                                      _reports(output_root, split.pooled), notes=split.notes())
        changed += written["repeats.json"].read_bytes() != was
        docs[slug] = (doc, page_summary(split.pooled))
        entry = _entry(system, slug, doc, output_root.read_side(written["repeats.md"]), split)
        state[slug] = {"versions": versions, "entry": entry}
        value[slug] = _value(entry)
    moved = _moved(_earlier_folders(output_root, kept, set(systems)),
                   {slug: set(members) for slug, (_, members) in systems.items()})
    for slug, moved_to in moved.items():
        write_moved_files(output_root.staged() / SYSTEMS_FOLDER / slug, moved_to)
    output_root.publish()
    save_pieces(settings.storage_base, SYSTEM_DOCS,
                {slug: kept_docs(state[slug]["versions"], *made) for slug, made in docs.items()})
    entries = [state[slug]["entry"] for slug in value]
    metadata = {
        "systems": len(entries),
        "runs_pooled": sum(len(e["runs"]) for e in entries),
        "systems_with_repeats": sum(1 for e in entries if len(e["runs"]) >= 2),
        "systems_with_planning": sum(1 for e in entries if e["table"]["runs_per_side"] is not None),
        "systems_made": len(docs),
        "systems_changed": changed,
        "systems_moved": len(moved),
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
    return value, metadata, state, SystemDocs(settings, runs, state, docs)


def _earlier_folders(output_root: OutputRoot, kept: dict[str, dict], current: set[str]) -> dict[str, set[str]]:
    """{system folder of an earlier refresh, not current now: the runs it names}: from what the
    last refresh kept; without anything kept (the first refresh after an upgrade, one from
    scratch), from the repeats.json of the folders the output root has (a folder that is
    already a pointer, ``write_moved_files``, names none)."""
    if kept:
        return {slug: set(kept[slug]["entry"]["runs"]) | set(kept[slug]["entry"]["left_out"])
                for slug in kept if slug not in current}
    stale = [name for name in output_root.folders_with("repeats.json", SYSTEMS_FOLDER) if name not in current]
    base = output_root.fetch(stale, ("repeats.json",), SYSTEMS_FOLDER) if stale else None
    found = {}
    for name in stale:
        try:
            doc = loads_json((base / name / "repeats.json").read_bytes())
        except (OSError, ValueError):
            continue
        runs = doc.get("runs") if isinstance(doc, dict) else None
        if isinstance(runs, list):
            found[name] = {r["run_id"] for r in runs if isinstance(r, dict) and isinstance(r.get("run_id"), str)}
    return found


def _moved(earlier: dict[str, set[str]], current: dict[str, set[str]]) -> dict[str, list[str]]:
    """{folder of an earlier refresh no longer current (``earlier``: its runs): the current
    folders that have its runs} for each system whose folder name changed (a second setup
    of the same agent measured, or no longer: system_folders.system_slugs); a system gone
    from the catalog is not in it (its folder is left as it is). Once written, its pointer
    is not written again: the kept state no longer names the folder, and a pointer names no
    runs."""
    moved = {}
    for slug in sorted(earlier):
        moved_to = sorted(new for new, members in current.items() if members & earlier[slug])
        if moved_to:
            moved[slug] = moved_to
    return moved


def _kept(before: dict | None, versions: dict[str, str | None]) -> bool:
    """Whether a system kept from the last refresh still holds: the same runs, each with a
    known and unchanged data version."""
    return (before is not None and before.get("versions") == versions
            and all(v is not None for v in versions.values()))
