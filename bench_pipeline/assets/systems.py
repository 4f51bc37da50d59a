"""What ``system_repeats`` makes (repeated-runs.md): the catalog's runs grouped into systems,
each pooled by task into ``_systems/<system slug>/repeats.json`` and ``repeats.md``, made again
only when its runs changed since the last refresh (refresh_state.py), from the catalog's runs
with their stored attempt frames (assets/stored_runs.py). Each system's
repeats document and what its suite page shows of its runs are kept in a piece of their own,
read only for the systems a page made again shows (``SystemDocs``). The step that makes
it, with the suite pages, is assets/systems_and_pages.py."""

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import dagster as dg

from ..artifacts import loads_json
from ..jsonio import json_bytes, read_written, written_as_is
from ..output_root import OutputRoot
from ..outputs import write_moved_files, write_repeats_files
from ..repeats import RepeatRun, System, repeats
from ..system_folders import REPEATS_FILES, SYSTEMS_FOLDER, system_slug, system_slugs
from ..reports.change_format import NO_VARIATION
from ..reports.format import fmt_pct, md_cell
from ..reports.format import fmt_int
from ..reports.planning_text import runs_per_side_for
from ..reports.repeated import level_interval
from ..resources import PipelineSettings
from ..resources.settings import safe_partition_key
from ..system_members import Members, pooled_members, results_digests, usable
from ..reports.suite_page import page_summary
from .refresh_state import load_pieces, save_pieces
from .stored_runs import StoredRuns, decode_system

#: Rows of the metadata tables.
LISTED = 50
#: The name under which each system's documents are kept, a piece per system (refresh_state.py).
SYSTEM_DOCS = "system_docs"


def table_summary(doc: dict) -> dict:
    """What the systems table (``systems_markdown``) and the step's metadata show of a
    system's repeats.json: pooled first attempt, noise floor, flip rate and the runs per side
    its planning gives for 5 points (kept with the system's entry, without the document)."""
    return {"first_attempt": doc["pooled"]["first_attempt"], "noise_floor95": doc["between_runs"]["noise_floor95"],
            "flip_rate": doc["stability"]["flip_rate"], "runs_per_side": runs_per_side_for(doc)}


def table_order(suite: str | None, first_attempt: float | None, slug: str) -> tuple:
    """Where a system stands in the systems table: suite (unknown last), then pooled first
    attempt descending (none last), then folder."""
    return (suite is None, suite or "", first_attempt is None, -(first_attempt or 0.0), slug)


def _order(entry: dict) -> tuple:
    """``table_order`` of a system's entry."""
    return table_order(entry["suite"], entry["table"]["first_attempt"]["mean"], entry["slug"])


def systems_markdown(entries: list[dict], limit: int = LISTED, total: int | None = None) -> str:
    """The systems as a markdown table: pooled first attempt with its interval (as repeats.md
    shows it), noise floor, the runs per side a comparison of the system needs to detect a
    5-point change in first attempt (planning.md, n/a when its noise cannot be measured), flip
    rate and runs pooled; the first ``limit`` by suite then pooled first attempt (``total``:
    how many systems there are, when ``entries`` are only the first ones)."""
    total = len(entries) if total is None else total
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
    if total > limit:
        lines += ["", f"... and {total - limit} more (every system has its folder under `{SYSTEMS_FOLDER}/`)."]
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


#: What the last refresh kept of each system, a row per system in system_repeats' order: its
#: folder name, ``encode_system``, suite, the data versions of its runs ({run id: version}, JSON
#: text), its entry in system_repeats' value and what the systems table shows of it
#: (``table_summary``), both JSON text, and the few numbers the metadata counts and orders by.
SYSTEMS_COLUMNS = ("slug", "system", "suite", "versions", "value", "table", "first_attempt", "pooled",
                   "left_out", "planning")


class Systems:
    """The systems of this refresh, as SYSTEMS_COLUMNS (``columns``), with each
    system's runs (``members``: {folder name: the ids of its runs with a stored frame}); a
    system's entry is parsed only where it is shown (``entry``)."""

    def __init__(self, columns: dict[str, list], members: dict[str, list[str]]) -> None:
        self.columns, self.members = columns, members
        self.position = {slug: i for i, slug in enumerate(columns["slug"])}

    def entry(self, slug: str) -> dict:
        """The system's entry (``_entry``, with its ``table``)."""
        i = self.position[slug]
        return {**read_written(self.columns["value"][i]), "table": read_written(self.columns["table"][i])}

    def versions(self, slug: str) -> dict[str, str | None]:
        return read_written(self.columns["versions"][self.position[slug]])

    def value(self) -> dict[str, Any]:
        """system_repeats' value: {folder name: its entry without KEPT_ONLY}, each entry the JSON
        text kept, written as it is (``jsonio.written_as_is``)."""
        return {slug: written_as_is(value) for slug, value in zip(self.columns["slug"], self.columns["value"])}

    def listed(self, limit: int = LISTED) -> list[dict]:
        """The entries of the first ``limit`` systems in the systems table's order (``table_order``)."""
        c = self.columns
        order = sorted(zip(c["suite"], c["first_attempt"], c["slug"]), key=lambda row: table_order(*row))
        return [self.entry(slug) for _, _, slug in order[:limit]]


class SystemDocs:
    """Each system's repeats document and what its suite page shows of its runs
    (suite_page.page_summary), for the pages made again: those made by this refresh, else the
    piece kept when the system was made (``SYSTEM_DOCS``), else (no such piece, or one made from
    other versions of its runs) made again from the stored runs and kept."""

    def __init__(self, settings: PipelineSettings, runs: StoredRuns, systems: Systems,
                 made: dict[str, tuple[dict, dict]]) -> None:
        self.settings, self.runs, self.systems, self.made = settings, runs, systems, made

    def load(self, slugs: Iterable[str]) -> None:
        """Have the documents of the systems ``slugs`` (their pieces read at once)."""
        wanted = [slug for slug in dict.fromkeys(slugs) if slug not in self.made]
        remade = {}
        for slug, piece in load_pieces(self.settings.storage_base, SYSTEM_DOCS, wanted).items():
            versions = self.systems.versions(slug)
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


def folder_names(runs: StoredRuns, groups: dict[str, list[str]]) -> dict[str, str]:
    """{system (``encode_system``): its folder} (``system_folders.system_slugs``), from the
    folder name without setup kept per run; a system is made from its text only where its
    folder needs its setup."""
    bases = {system: runs.base_slug(ids[0]) for system, ids in groups.items()}
    return system_slugs(bases, lambda system: system_slug(decode_system(system), with_setup=True))


def write_systems(settings: PipelineSettings, runs: StoredRuns,
                  kept: dict[str, list] | None) -> tuple[dict, Systems, SystemDocs]:
    """Every system's repeats.json and repeats.md under the output root, made again only for
    the systems whose runs or their data versions changed since the last refresh (``kept``:
    SYSTEMS_COLUMNS; ``runs.touched``), a system named anew included: (its
    materialization metadata, the systems with what to keep for the next refresh, the systems'
    documents for the pages)."""
    output_root = OutputRoot(settings.output_root)  # a bucket's: staged here, uploaded below
    kept = kept or {name: [] for name in SYSTEMS_COLUMNS}
    kept_at = {slug: i for i, slug in enumerate(kept["slug"])}
    groups = runs.grouped()
    slugs = folder_names(runs, groups)
    columns: dict[str, list] = {name: [] for name in SYSTEMS_COLUMNS}
    docs: dict[str, tuple[dict, dict]] = {}
    held = {system: kept_at.get(slug) for system, slug in slugs.items() if system not in runs.touched}
    held = {system: i for system, i in held.items() if i is not None and kept["system"][i] == system}
    remade = [slugs[system] for system in groups if system not in held]
    previous = output_root.fetch(remade, ("repeats.json",), SYSTEMS_FOLDER) if remade else None
    changed = 0
    for system, members in groups.items():
        slug = slugs[system]
        if system in held:
            for name in SYSTEMS_COLUMNS:
                columns[name].append(kept[name][held[system]])
            continue
        made = decode_system(system)
        split = split_members(settings, runs.full(members))
        doc = repeats(split.pooled)
        before = previous / slug / "repeats.json"
        was = before.read_bytes() if before.is_file() else None
        written = write_repeats_files(output_root.staged() / SYSTEMS_FOLDER / slug, doc, split.pooled,
                                      _reports(output_root, split.pooled), notes=split.notes())
        changed += written["repeats.json"].read_bytes() != was
        docs[slug] = (doc, page_summary(split.pooled))
        entry = _entry(made, slug, doc, output_root.read_side(written["repeats.md"]), split)
        table = entry["table"]
        for name, value in (("slug", slug), ("system", system), ("suite", made.suite),
                            ("versions", json_bytes({run_id: runs.versions[run_id] for run_id in members}).decode()),
                            ("value", json_bytes(_value(entry)).decode()), ("table", json_bytes(table).decode()),
                            ("first_attempt", table["first_attempt"]["mean"]), ("pooled", len(entry["runs"])),
                            ("left_out", len(entry["left_out"])), ("planning", table["runs_per_side"] is not None)):
            columns[name].append(value)
    current = {slugs[system]: members for system, members in groups.items()}
    earlier = _earlier_folders(output_root, kept, set(current))
    moved = _moved(earlier, {slug: set(ids) for slug, ids in current.items()})
    for slug, moved_to in moved.items():
        write_moved_files(output_root.staged() / SYSTEMS_FOLDER / slug, moved_to)
    output_root.publish()
    # a system the last refresh made none of whose runs is in the catalog any more (their
    # folders removed from the runs root): its numbers would stay as they were, naming runs
    # that are not there; a refresh from scratch makes no folder for it. Only what this
    # deployment's last refresh kept: a folder it does not know (nothing kept: the first
    # refresh, one from scratch; another instance's, in a shared output root) is not its own
    catalog = set(runs.ids)
    removed = sorted(slug for slug, ids in earlier.items() if slug not in moved and not ids & catalog) \
        if kept["slug"] else []
    for slug in removed:
        output_root.remove(SYSTEMS_FOLDER, slug, REPEATS_FILES)
    systems = Systems(columns, current)
    save_pieces(settings.storage_base, SYSTEM_DOCS,
                {slug: kept_docs(systems.versions(slug), *made) for slug, made in docs.items()})
    metadata = {
        "systems": len(columns["slug"]),
        "runs_pooled": sum(columns["pooled"]),
        "systems_with_repeats": sum(1 for n in columns["pooled"] if n >= 2),
        "systems_with_planning": sum(columns["planning"]),
        "systems_made": len(docs),
        "systems_changed": changed,
        "systems_moved": len(moved),
        "systems_removed": len(removed),
        "systems_folder": dg.MetadataValue.path(output_root.url(SYSTEMS_FOLDER)),
        "systems_table": dg.MetadataValue.md(systems_markdown(systems.listed(), total=len(columns["slug"]))),
    }
    left_out = [f"`{run_id}`: {why}" for slug, n in zip(columns["slug"], columns["left_out"]) if n
                for run_id, why in systems.entry(slug)["left_out"].items()]
    if left_out:
        metadata["runs_left_out"] = dg.MetadataValue.md(
            f"{len(left_out)} run(s) not pooled into their system (docs/metric-choices.md): "
            + "; ".join(left_out[:LISTED]) + (" ..." if len(left_out) > LISTED else ""))
    missing = runs.missing
    if missing:
        metadata["runs_without_stored_attempts"] = dg.MetadataValue.md(
            f"{len(missing)} catalog run(s) have no stored attempt_metrics frame and are not pooled: "
            + ", ".join(f"`{r}`" for r in missing[:LISTED]) + (" ..." if len(missing) > LISTED else ""))
    return metadata, systems, SystemDocs(settings, runs, systems, docs)


def _earlier_folders(output_root: OutputRoot, kept: dict[str, list], current: set[str]) -> dict[str, set[str]]:
    """{system folder of an earlier refresh, not current now: the runs it names}: from what the
    last refresh kept (SYSTEMS_COLUMNS); without anything kept (the first refresh
    after an upgrade, one from scratch), from the repeats.json of the folders the output root
    has (a folder that is already a pointer, ``write_moved_files``, names none)."""
    if kept["slug"]:
        found = {}
        for slug, value in zip(kept["slug"], kept["value"]):
            if slug not in current:
                entry = read_written(value)
                found[slug] = set(entry["runs"]) | set(entry["left_out"])
        return found
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
    from the catalog is not in it (its files are removed). Once written, its pointer
    is not written again: the kept state no longer names the folder, and a pointer names no
    runs."""
    moved = {}
    for slug in sorted(earlier):
        moved_to = sorted(new for new, members in current.items() if members & earlier[slug])
        if moved_to:
            moved[slug] = moved_to
    return moved
