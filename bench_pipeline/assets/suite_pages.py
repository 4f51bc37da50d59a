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
from ..jsonio import json_bytes
from ..object_store import location_text
from ..output_root import OutputRoot
from ..system_folders import SUITES_FOLDER, suite_slug
from ..reports.suite_page import RUNS_SHOWN, SystemEntry, latest_runs, write_suite_page
from ..resources import PipelineSettings
from ..resources.settings import safe_partition_key
from ..reports.format import md_cell
from .systems import LISTED, StoredRuns, SystemDocs


def shown_runs(rows: list[dict], output_root: OutputRoot, comparisons: dict[str, str | None],
               kept: dict[str, dict]) -> dict[str, dict]:
    """{run id: what the suite page shows of its comparison: ``gate``, ``gate_reasons``,
    ``gate_mde80``, ``baseline`` and ``warnings`` (its comparison.json's gate.result,
    gate.reasons, the mde80 of first_attempt and task_success, baseline.run_id and warnings;
    None / empty without one), ``not_compared`` (without one, why: what its reports say, as
    its comparison's data version records it, comparison_inputs.py) and
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
        recorded = ComparisonInputs.from_version(run_id, comparisons.get(run_id) or "")
        shown[run_id] = {"gate": gate.get("result"), "gate_reasons": [r for r in reasons if isinstance(r, str)],
                         "gate_mde80": mde, "baseline": baseline.get("run_id"),
                         "not_compared": recorded.not_compared if recorded is not None and not comparison else None,
                         "warnings": [w for w in warnings if isinstance(w, str)],
                         "report": str(folder / "report.html") if output_root.has(name, "report.html") else None}
    return shown


def suite_runs(catalog_rows: list[dict]) -> dict[Any, list[dict]]:
    """{suite: its catalog rows}, suites in catalog order."""
    suites: dict[Any, list[dict]] = {}
    for row in catalog_rows:
        suites.setdefault(row["suite"], []).append(row)
    return suites


def write_suite_pages(settings: PipelineSettings, records: list[dict], runs: StoredRuns, systems: dict[str, dict],
                      docs: SystemDocs, kept: dict[str, str]) -> tuple[dict, dict]:
    """One page per suite of the catalog rows ``records``, with its systems (``systems``:
    system_repeats' entries; ``docs``: their documents, read only for the systems of a page
    made again that it shows), written again only when what it shows changed since the last
    refresh (``kept``: {suite slug: the key of what its page showed}): the pages'
    materialization metadata and what to keep."""
    output_root = OutputRoot(settings.output_root)  # a bucket's: staged here, uploaded below
    shown = shown_runs(records, output_root, runs.comparisons, runs.kept)
    for row in records:
        runs.state[row["run_id"]].update(comparison_version=runs.comparisons.get(row["run_id"]),
                                         shown=shown[row["run_id"]])
    pages, state, written = [], {}, 0
    by_suite: dict[Any, list[dict]] = {}
    for entry in systems.values():
        by_suite.setdefault(entry["suite"], []).append(entry)
    for suite, suite_rows in suite_runs(records).items():
        slug = suite_slug(suite)
        suite_systems = by_suite.get(suite, [])
        key = _page_key(suite_rows, suite_systems, runs)
        path = output_root.staged() / SUITES_FOLDER / slug / "index.html"
        if key is None or kept.get(slug) != key:
            latest, listed = latest_runs(suite_rows, suite_systems, RUNS_SHOWN,
                                         members=lambda e: [*e["runs"], *e["left_out"]])
            docs.load(e["slug"] for e in listed)
            entries = []
            for e in listed:
                doc, page = docs.get(e["slug"])
                entries.append(SystemEntry(e["slug"], doc, [], Path(e["repeats_md"]), setup=e.get("setup"),
                                           left_out=e.get("left_out") or {}, summary=page))
            # the runs it lists, each with what it shows of its comparison
            listed_rows = [{**row, **shown[row["run_id"]]} for row in latest]
            path = write_suite_page(output_root.staged() / SUITES_FOLDER / slug, suite, listed_rows, entries,
                                    systems_total=len(suite_systems), runs_total=len(suite_rows))
            written += 1
        if key is not None:
            state[slug] = key
        pages.append((suite, len(suite_rows), len(suite_systems), location_text(output_root.read_side(Path(path)))))
    output_root.publish()
    lines = ["| suite | runs | systems | page |", "| --- | --- | --- | --- |"]
    lines += [f"| {md_cell(s)} | {n} | {m} | `{p}` |" for s, n, m, p in pages[:LISTED]]
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
    its comparison's, each system's runs (kept as their SHA-256: the list of a suite of
    thousands of runs is most of the state otherwise); None when one of them is unknown (the
    page is then made every time)."""
    parts = [[row["run_id"], runs.versions.get(row["run_id"]), runs.comparisons.get(row["run_id"])]
             for row in suite_rows]
    parts += [[e["slug"], e["runs"], sorted(e["left_out"])] for e in suite_systems]
    if any(p[1] is None or p[2] is None for p in parts[:len(suite_rows)]):
        return None
    return hashlib.sha256(json_bytes(parts)).hexdigest()
