"""What ``suite_pages`` makes: one page per suite, ``_suites/<suite slug>/index.html``, its runs
with what each one's comparison says (read from comparison.json only when that comparison
changed) and its systems from ``system_repeats``, written again only when what it shows changed
since the last refresh (refresh_state.py). The step that makes it, with the systems, is
assets/systems_and_pages.py."""

import hashlib
from pathlib import Path
from typing import Any

import dagster as dg

from ..comparison_inputs import ComparisonInputs
from ..identity import read_json_object
from ..jsonio import json_bytes, read_written
from ..object_store import location_text
from ..output_root import OutputRoot
from ..system_folders import SUITE_PAGE, SUITES_FOLDER, suite_slug
from ..reports.suite_page import RUNS_SHOWN, SystemEntry, latest_runs, write_suite_page
from ..resources import PipelineSettings
from ..resources.settings import safe_partition_key
from ..reports.format import md_cell
from .stored_runs import StoredRuns
from .systems import LISTED, SystemDocs, Systems


def shown_runs(run_ids: list[str], output_root: OutputRoot, comparisons: dict[str, str | None]) -> dict[str, dict]:
    """{run id: what the suite page shows of its comparison: ``gate``, ``gate_reasons``,
    ``gate_mde80``, ``baseline`` and ``warnings`` (its comparison.json's gate.result,
    gate.reasons, the mde80 of first_attempt and task_success, baseline.run_id and warnings;
    None / empty without one), ``not_compared`` (without one, why: what its reports say, as
    its comparison's data version (``comparisons``) records it, comparison_inputs.py) and
    ``report`` (its report.html's absolute path, None without one)} of the runs ``run_ids``,
    read from the output root (a bucket's: comparison.json through local copies, report.html's
    existence from the listing)."""
    shown: dict[str, dict] = {}
    names = {run_id: safe_partition_key(run_id) for run_id in run_ids}
    local = output_root.fetch(list(names.values()), ("comparison.json",)) if run_ids else output_root.local
    for run_id, name in names.items():
        folder = (local / name).absolute()
        comparison = read_json_object(folder / "comparison.json")
        gate = comparison.get("gate") if isinstance(comparison.get("gate"), dict) else {}
        baseline = comparison.get("baseline") if isinstance(comparison.get("baseline"), dict) else {}
        reasons = gate.get("reasons") if isinstance(gate.get("reasons"), list) else []
        warnings = comparison.get("warnings") if isinstance(comparison.get("warnings"), list) else []
        mde = {section: (comparison.get(section) or {}).get("mde80") if isinstance(comparison.get(section), dict)
               else None for section in ("first_attempt", "task_success")}
        recorded = ComparisonInputs.from_version(run_id, comparisons.get(run_id) or "")
        shown[run_id] = {"gate": gate.get("result"), "gate_reasons": [r for r in reasons if isinstance(r, str)],
                         "gate_mde80": mde, "baseline": baseline.get("run_id"),
                         "not_compared": recorded.not_compared if recorded is not None and not comparison else None,
                         "warnings": [w for w in warnings if isinstance(w, str)],
                         "report": str(folder / "report.html") if output_root.has(name, "report.html") else None}
    return shown


def keep_shown(runs: StoredRuns, output_root: OutputRoot) -> list[str]:
    """What the suite pages show of each run's comparison (``shown_runs``, as JSON text), in
    catalog order: kept from the last refresh for a run whose comparison's data version is
    the one it was read at, read again for the others; recorded in ``runs.state``."""
    kept, kept_at, comparisons = runs.kept, runs.kept_position, runs.comparisons
    versions = [comparisons.get(run_id) for run_id in runs.ids]
    texts: list[str | None] = []
    for run_id, version in zip(runs.ids, versions):
        i = kept_at.get(run_id)
        held = i is not None and version is not None and kept["comparison_version"][i] == version
        texts.append(kept["shown"][i] if held else None)
    read = shown_runs([run_id for run_id, text in zip(runs.ids, texts) if text is None], output_root, comparisons)
    texts = [text if text is not None else json_bytes(read[run_id]).decode() for run_id, text in zip(runs.ids, texts)]
    runs.state.update(comparison_version=versions, shown=texts)
    return texts


def write_suite_pages(settings: PipelineSettings, runs: StoredRuns, systems: Systems, docs: SystemDocs,
                      kept: dict[str, str]) -> tuple[dict, dict]:
    """One page per suite of the catalog's runs, with its systems (``systems``; ``docs``: their
    documents, read only for the systems of a page made again that it shows), written again
    only when what it shows changed since the last refresh (``kept``: {suite slug: the key of
    what its page showed}), the pages of suites no longer in the catalog removed: the pages'
    materialization metadata and what to keep."""
    output_root = OutputRoot(settings.output_root)  # a bucket's: staged here, uploaded below
    shown = keep_shown(runs, output_root)
    pages, state, written = [], {}, 0
    suites: dict[Any, list[int]] = {}  # each suite's runs (their places in the catalog), suites in catalog order
    for n, suite in enumerate(runs.rows.column("suite")):
        suites.setdefault(suite, []).append(n)
    by_suite: dict[Any, list[int]] = {}  # each suite's systems (their places in ``systems``)
    for i, suite in enumerate(systems.columns["suite"]):
        by_suite.setdefault(suite, []).append(i)
    started = None
    for suite, places in suites.items():
        slug = suite_slug(suite)
        suite_systems = [systems.columns["slug"][i] for i in by_suite.get(suite, [])]
        key = _page_key(runs, places, systems, by_suite.get(suite, []))
        path = output_root.staged() / SUITES_FOLDER / slug / "index.html"
        if key is None or kept.get(slug) != key:
            started = started if started is not None else runs.rows.column("started_at")
            starts = [{"run_id": runs.ids[n], "started_at": started[n], "place": n} for n in places]
            latest, listed = latest_runs(starts, suite_systems, RUNS_SHOWN, members=systems.members.__getitem__)
            docs.load(listed)
            entries = []
            for system in listed:
                e = systems.entry(system)
                doc, page = docs.get(system)
                entries.append(SystemEntry(system, doc, [], Path(e["repeats_md"]), setup=e.get("setup"),
                                           left_out=e.get("left_out") or {}, summary=page))
            # the runs it lists, each with what it shows of its comparison
            listed_rows = [{**runs.rows[r["run_id"]], **read_written(shown[r["place"]])} for r in latest]
            path = write_suite_page(output_root.staged() / SUITES_FOLDER / slug, suite, listed_rows, entries,
                                    systems_total=len(suite_systems), runs_total=len(places))
            written += 1
        state[slug] = key  # None: made again by every refresh
        pages.append((suite, len(places), len(suite_systems), location_text(output_root.read_side(Path(path)))))
    output_root.publish()
    # the page of a suite none of whose runs is in the catalog any more (their folders removed
    # from the runs root) would go on listing them: removed, as a refresh from scratch makes
    # none. Only the pages the last refresh made (``kept``): one it does not know (nothing
    # kept; another instance's, in a shared output root) is not its own
    removed = sorted(set(kept) - set(state))
    for slug in removed:
        output_root.remove(SUITES_FOLDER, slug, (SUITE_PAGE,))
    lines = ["| suite | runs | systems | page |", "| --- | --- | --- | --- |"]
    lines += [f"| {md_cell(s)} | {n} | {m} | `{p}` |" for s, n, m, p in pages[:LISTED]]
    if len(pages) > LISTED:
        lines += ["", f"... and {len(pages) - LISTED} more under `{output_root.url(SUITES_FOLDER)}`."]
    return {
        "pages_written": written,
        "pages_listed": len(pages),
        "pages_removed": len(removed),
        "suites_folder": dg.MetadataValue.path(output_root.url(SUITES_FOLDER)),
        "pages": dg.MetadataValue.md("\n".join(lines) if pages else "No processed run yet."),
    }, state


def _page_key(runs: StoredRuns, places: list[int], systems: Systems, system_places: list[int]) -> str | None:
    """What a suite page shows, as the versions it is made from: each run's data version and
    its comparison's, each system's entry (its runs and the runs it leaves out among them), as
    one SHA-256; None when a version is unknown (the page is then made every time)."""
    state = runs.state
    parts = [[state["run_id"][n], state["data_version"][n], state["comparison_version"][n]] for n in places]
    if any(p[1] is None or p[2] is None for p in parts):
        return None
    parts += [[systems.columns["slug"][i], systems.columns["value"][i]] for i in system_places]
    return hashlib.sha256(json_bytes(parts)).hexdigest()
