"""What the main command (main.py) lists: the runs it skips as unchanged, names cut to a
few, and at its end each run's reports and the suite pages, in a folder or a bucket."""

from __future__ import annotations

from pathlib import Path

#: Suite pages named at the end of the main command (the rest are counted).
SUITE_PAGES_LISTED = 10

#: The reports listed per run at the end, when written (comparison.md: a run with a baseline).
REPORT_FILES = ("report.html", "summary.md", "comparison.md")


def listed(names: list[str], limit: int = 10) -> str:
    """The first ``limit`` names, then `` ...`` when there are more."""
    return ", ".join(names[:limit]) + (" ..." if len(names) > limit else "")


def suite_pages(output_root: str) -> list[str]:
    """Every suite's page (``_suites/<suite>/index.html``) under the output root, sorted."""
    from . import object_store
    from .system_folders import SUITES_FOLDER

    if object_store.is_remote(output_root):
        folder = object_store.join(output_root, SUITES_FOLDER)
        try:
            keys = object_store.list_objects(folder).objects
        except object_store.StoreError:
            return []
        return sorted(object_store.join(folder, k) for k in keys if k.count("/") == 1 and k.endswith("/index.html"))
    return sorted(str(p) for p in (Path(output_root) / SUITES_FOLDER).glob("*/index.html"))


def written_reports(output_root: str, key: str) -> list[str]:
    """The report files of run ``key`` under the output root, a folder or a bucket URL."""
    from . import object_store

    if object_store.is_remote(output_root):
        prefix = object_store.join(output_root, key)
        try:
            names = set(object_store.list_objects(prefix).objects)
        except object_store.StoreError as exc:
            return [f"{key}: the reports cannot be listed: {exc}"]
        return [object_store.join(prefix, name) for name in REPORT_FILES if name in names]
    out = Path(output_root) / key
    return [str(out / name) for name in REPORT_FILES if (out / name).is_file()]


#: The most unchanged runs the command names one by one; beyond, it says how many.
UNCHANGED_LISTED = 20


def unchanged_lines(skipped: list[str], limit: int = UNCHANGED_LISTED) -> list[str]:
    """What the command says of the runs it skips as unchanged: one line each, or, for more
    than ``limit`` (a catalog of thousands, every run said again at each invocation), one
    line with their number and the first and last."""
    from .formula import FORMULA_VERSION

    if len(skipped) <= limit:
        return [f"{key}: unchanged since it was processed with formula {FORMULA_VERSION}: skipped" for key in skipped]
    return [f"{len(skipped):,} runs unchanged since they were processed with formula {FORMULA_VERSION}: skipped "
            f"({skipped[0]} ... {skipped[-1]})"]
