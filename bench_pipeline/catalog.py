"""Cross-run views: one catalog row per run, the runs behind the current formula version,
and per-suite trends.

Pure: the trends get each run's attempts (for the paired comparison with its predecessor)
from a loader their caller gives (the Dagster asset reads the runs' stored attempt frames).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from .attempt_metrics import COUNT_LIMIT
from .comparison import BINARY_SECTIONS, MEAN_SECTIONS, compare
from .comparison_sides import Side
from .data_quality import data_quality_findings
from .reports.format import md_cell
from .identity import RunIdentity, run_identity
from .setup import CATALOG_SETUP_COLUMNS, setup_columns, setup_from_columns
from .vocabulary import COMPARISON_RESOURCE_FIELDS

CATALOG_COLUMNS = [
    "run_id", "suite", "model", "git_sha", "started_at", *CATALOG_SETUP_COLUMNS, "formula_version", "metrics_k",
    "pass_at_1", "pass_at_1_lower", "pass_at_1_upper",
    "pass_at_k", "pass_at_k_lower", "pass_at_k_upper",
    "pass_pow_k", "attempt_success_rate", "coverage_pass_at_1", "coverage_pass_at_k",
    "unique_tasks", "attempts", "eligible_attempts", "missing_attempts",
    "total_tokens_sum", "cost_usd_sum", "cost_usd_count", "data_quality_findings", "data_version",
]
COUNT_COLUMNS = ["metrics_k", "unique_tasks", "attempts", "eligible_attempts", "missing_attempts",
                 "cost_usd_count", "data_quality_findings"]
#: The catalog's numbers that are not counts: rates, their intervals, sums (64-bit floats, NaN
#: for null), whatever a run's values are, so that the catalog's types never depend on which
#: runs it holds (a catalog patched with new rows has the types of one made whole).
NUMBER_COLUMNS = ["pass_at_1", "pass_at_1_lower", "pass_at_1_upper", "pass_at_k", "pass_at_k_lower", "pass_at_k_upper",
                  "pass_pow_k", "attempt_success_rate", "coverage_pass_at_1", "coverage_pass_at_k",
                  "total_tokens_sum", "cost_usd_sum"]


def catalog_row(run_id: str, metrics: dict, manifest: dict, data_version: str | None = None) -> dict:
    """One run's catalog entry: identity, headline capability with intervals, coverage, cost.

    ``model``, ``git_sha`` and ``started_at`` are ``identity.run_identity``'s (manifest
    ``model.name``, ``code.git_sha``, ``started_at``; null when missing or not a string): with
    the suite they are the run's system (repeated-runs.md "Systems"), so the catalog can be
    filtered by system. cost_usd_sum covers only attempts with a recorded cost (see
    cost_usd_count): it is not a complete bill (reference 2, "sum, mean"). ``data_version``:
    the data version of the stored values the row was made from (the run folder's fingerprint
    and the formula version; null when unknown), what an incremental refresh compares.
    """
    cap, cov = metrics["capability"], metrics["coverage"]
    identity = run_identity(manifest)
    return {
        "run_id": run_id,
        "suite": metrics.get("suite"),
        "model": identity.model_name,
        "git_sha": identity.git_sha,
        "started_at": identity.started_at,
        **setup_columns(identity.setup),  # judge and platform: the setup key, part of the system
        "formula_version": metrics.get("formula_version"),
        "metrics_k": cov["metrics_k"],
        "pass_at_1": cap["pass_at_1"]["value"],
        "pass_at_1_lower": cap["pass_at_1"]["ci95"]["lower"],
        "pass_at_1_upper": cap["pass_at_1"]["ci95"]["upper"],
        "pass_at_k": cap["pass_at_k"]["value"],
        "pass_at_k_lower": cap["pass_at_k"]["ci95"]["lower"],
        "pass_at_k_upper": cap["pass_at_k"]["ci95"]["upper"],
        "pass_pow_k": cap["pass_pow_k"]["value"],
        "attempt_success_rate": cap["attempt_success_rate"]["value"],
        "coverage_pass_at_1": cov["pass_at_1"],
        "coverage_pass_at_k": cov["pass_at_k"],
        "unique_tasks": cov["unique_tasks"],
        "attempts": cov["attempts"],
        "eligible_attempts": cov["agent_eligible_attempts"],
        "missing_attempts": cov["missing_attempts"],
        "total_tokens_sum": metrics["efficiency"]["total_tokens"]["sum"],
        "cost_usd_sum": metrics["efficiency"]["cost_usd"]["sum"],
        "cost_usd_count": metrics["efficiency"]["cost_usd"]["count"],
        "data_quality_findings": data_quality_findings(metrics),
        "data_version": data_version,
    }


def catalog_frame(rows: list[dict], kept: pd.DataFrame | None = None) -> pd.DataFrame:
    """The catalog, ordered by suite and start time: ``rows`` (``catalog_row``'s) and, when
    given, the rows of ``kept`` (an earlier catalog's rows that still hold, taken as they are).
    Its columns' types are fixed (texts, NUMBER_COLUMNS as floats, COUNT_COLUMNS as nullable
    64-bit integers, judge_enabled as nullable Booleans), so that a catalog patched this way
    equals one made from every row."""
    frame = pd.DataFrame.from_records(rows, columns=CATALOG_COLUMNS)
    for column in NUMBER_COLUMNS:
        frame[column] = pd.array([_number(row.get(column)) for row in rows], dtype="float64")
    # nullable 64-bit counts, from the rows themselves (a column holding a null would have made
    # them floats); a count beyond 64 bits (a huge plan) is n/a here
    for column in COUNT_COLUMNS:
        frame[column] = pd.array([_count(row.get(column)) for row in rows], dtype="Int64")
    frame["judge_enabled"] = pd.array([v if isinstance(v, bool) else None for v in (r.get("judge_enabled") for r in rows)],
                                      dtype="boolean")
    for column in CATALOG_COLUMNS:
        if column not in NUMBER_COLUMNS and column not in COUNT_COLUMNS and column != "judge_enabled":
            frame[column] = frame[column].astype(object)
    if kept is not None and len(kept):
        frame = pd.concat([kept[CATALOG_COLUMNS].astype(frame.dtypes.to_dict()), frame]) if len(frame) else kept[CATALOG_COLUMNS]
    return frame.sort_values(["suite", "started_at", "run_id"], na_position="last").reset_index(drop=True)


def _number(value: Any) -> float | None:
    """A row's number as a float; None for a null or anything that is not a number."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        return float(value)
    except OverflowError:  # an integer beyond the float range: unavailable, as every such number (R42)
        return None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and abs(value) <= COUNT_LIMIT else None


def plain_value(value: Any) -> Any:
    """A frame cell as a plain Python value: null (None, NA, NaN) -> None, numpy scalars ->
    int / float / bool."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # a numpy scalar
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def row_identity(row: Mapping[str, Any]) -> RunIdentity:
    """A catalog record's run identity (suite, model, git sha, start, setup): what a comparison
    side made from the run's stored values carries."""
    return RunIdentity(suite=row["suite"], model_name=row["model"], git_sha=row["git_sha"],
                       started_at=row["started_at"], setup=setup_from_columns(row))


def catalog_records(catalog: pd.DataFrame) -> list[dict]:
    """The catalog's rows as plain dicts (``plain_value`` of every cell), in catalog order:
    what code that is not pandas reads (``repeats``, the suite pages)."""
    columns = list(catalog.columns)
    values = [_plain_values(catalog[c].tolist()) for c in columns]
    return [dict(zip(columns, cells)) for cells in zip(*values)]


class CatalogRows:
    """The catalog's rows by run id as ``catalog_records`` makes them, each made when first
    asked for: a refresh that reads a few runs makes their rows, not thousands."""

    def __init__(self, catalog: pd.DataFrame) -> None:
        self.columns = {c: catalog[c].tolist() for c in catalog.columns}
        self.position = {run_id: i for i, run_id in enumerate(self.columns.get("run_id", []))}

    def __getitem__(self, run_id: str) -> dict:
        i = self.position[run_id]
        return dict(zip(self.columns, _plain_values([values[i] for values in self.columns.values()])))

    def column(self, name: str) -> list:
        """The column ``name`` of every row, plain values as the rows have them."""
        return _plain_values(self.columns.get(name, []))


def _plain_values(values: list) -> list:
    """``plain_value`` of each value, a text, an integer, a truth value or a number that is
    not NaN taken as it is (most cells of a catalog: every refresh reads thousands)."""
    out = []
    for value in values:
        kind = type(value)
        plain = kind is str or kind is int or kind is bool or (kind is float and value == value)
        out.append(value if plain else plain_value(value))
    return out


#: How many runs behind the formula the catalog's metadata lists by name.
BEHIND_LISTED = 20


def runs_behind_formula(catalog: pd.DataFrame, current: str) -> pd.DataFrame:
    """The catalog's runs whose metrics.json was computed with another formula version than
    ``current`` (or carries none), in catalog order: the runs a backfill re-processes."""
    mask = pd.Series([not (isinstance(v, str) and v == current) for v in catalog["formula_version"]],
                     index=catalog.index, dtype=bool)
    return catalog.loc[mask, ["run_id", "suite", "formula_version"]].reset_index(drop=True)


def behind_formula_markdown(behind: pd.DataFrame, current: str, limit: int = BEHIND_LISTED) -> str:
    """The runs behind the formula as a markdown table (run id, suite, formula version): the
    first ``limit``, then how many more there are."""
    if behind.empty:
        return f"Every run in the catalog was computed with the current formula version `{current}`."
    lines = [f"{len(behind)} run(s) computed with another formula version than the current `{current}`:", "",
             "| run_id | suite | formula_version |", "| --- | --- | --- |"]
    lines += [f"| {md_cell(r.run_id)} | {md_cell(r.suite)} | {md_cell(r.formula_version)} |"
              for r in behind.head(limit).itertuples(index=False)]
    if len(behind) > limit:
        lines += ["", f"... and {len(behind) - limit} more (the catalog's `formula_version` column has every run)."]
    return "\n".join(lines)


#: The paired sections whose verdict a trend row shows, in comparison.json's order
#: (``resources.<field>`` by the field's name).
TREND_SECTIONS = (*BINARY_SECTIONS, *MEAN_SECTIONS, *COMPARISON_RESOURCE_FIELDS)
#: The columns of a trend row that its comparison with the run before it makes.
PAIRED_COLUMNS = ["compared_with", "paired_tasks", *(f"{s}_verdict" for s in TREND_SECTIONS), "gate",
                  "comparison_note"]
TREND_COLUMNS = ["suite", "run_id", "started_at", "model", "formula_version", "pass_at_1",
                 "pass_at_1_lower", "pass_at_1_upper", "pass_at_1_change", *PAIRED_COLUMNS, "coverage_pass_at_1",
                 "data_version", "compared_with_version"]

#: A run's side for the trends: (its side, or None and why not).
SideLoader = Callable[[str], tuple[Side | None, str | None]]


def _trend_comparison(previous: tuple[Any, Side | None, str | None], current: tuple[Any, Side | None, str | None]) -> dict:
    """A trend row's paired columns: the run (``current``) compared with the run before it."""
    row: dict[str, Any] = {"compared_with": previous[0], "paired_tasks": None, "gate": None, "comparison_note": None}
    row.update({f"{s}_verdict": None for s in TREND_SECTIONS})
    if previous[1] is None or current[1] is None:
        row["comparison_note"] = previous[2] or current[2]
        return row
    result = compare(previous[1], current[1])
    row["paired_tasks"] = result["tasks"]["paired"]
    for name in TREND_SECTIONS:
        section = result["resources"][name] if name in COMPARISON_RESOURCE_FIELDS else result[name]
        row[f"{name}_verdict"] = section["verdict"]
    row["gate"] = result["gate"]["result"]
    if result["warnings"]:
        row["comparison_note"] = "warnings: " + ", ".join(result["warnings"])
    return row


def _no_sides(run_id: str) -> tuple[Side | None, str | None]:
    return None, "no attempts given to compare the runs with"


def suite_trends(catalog: pd.DataFrame, side_of: SideLoader = _no_sides,
                 previous: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per suite, runs in start order, each compared by task with the run before it.

    The reference (2) warns against reading a small change or the overlap of two runs'
    intervals as evidence, so a row's judgement is the paired comparison (comparison.md)
    with its predecessor in the suite: ``compared_with``, ``paired_tasks``, the verdict of
    every paired section (``<section>_verdict``: regression, improvement,
    no_significant_change, or null when the section had nothing to compare) and the release
    gate without a margin. ``pass_at_1_change`` stays as a plain difference, not evidence.

    The catalog holds metrics.json-level data only: ``side_of(run_id)`` gives a run's attempts
    as a comparison side (the Dagster asset reads the run's stored attempt frame), called at
    most once per run and only for runs whose comparison is made. ``previous``: the trends of
    an earlier refresh; a row of it still holds when its run has the same run before it and
    both have the known data versions it was made from (the paired columns are a function of
    the two runs' stored values, nothing else): it keeps its paired columns without reading
    either run, so a refresh reads only the runs that changed and their neighbours, and the
    kept rows are taken by columns, not row by row. ``data_version`` and
    ``compared_with_version`` record what each row was computed from. A run without a
    predecessor, or whose side cannot be had, has null paired columns and a
    ``comparison_note`` saying why.
    """
    if catalog.empty:
        return pd.DataFrame(columns=TREND_COLUMNS)
    before = _kept_trends(previous)
    sides: dict[Any, tuple[Any, Side | None, str | None]] = {}

    def side(run_id: Any) -> tuple[Any, Side | None, str | None]:
        if run_id not in sides:
            sides[run_id] = (run_id, *(side_of(run_id) if isinstance(run_id, str) else (None, "no run id")))
        return sides[run_id]

    frames = []
    for _, group in catalog.groupby("suite", dropna=False, sort=True):
        g = group.sort_values(["started_at", "run_id"]).copy()
        g["pass_at_1_change"] = g["pass_at_1"] - g["pass_at_1"].shift(1)
        ids, versions = g["run_id"].tolist(), [plain_value(v) for v in g["data_version"]]
        compared_with, compared_versions = [None, *ids[:-1]], [None, *versions[:-1]]
        kept = before.reindex(ids) if before is not None else None
        columns = {c: kept[c].tolist() if kept is not None else [None] * len(ids) for c in PAIRED_COLUMNS}
        for i in _made_again(kept, compared_with, versions, compared_versions):
            if i == 0:  # a suite's first run is compared with nothing: its attempts are not read
                row = {**dict.fromkeys(PAIRED_COLUMNS), "comparison_note": "first run of the suite"}
            else:
                row = _trend_comparison(side(ids[i - 1]), side(ids[i]))
            for column in PAIRED_COLUMNS:
                columns[column][i] = row[column]
        for column in PAIRED_COLUMNS:
            g[column] = pd.Series(columns[column], index=g.index, dtype=object)
        g["compared_with_version"] = pd.Series(compared_versions, index=g.index, dtype=object)
        g["paired_tasks"] = pd.array([plain_value(v) for v in g["paired_tasks"]], dtype="Int64")
        frames.append(g[TREND_COLUMNS])
    return pd.concat(frames, ignore_index=True)


def _kept_trends(previous: pd.DataFrame | None) -> pd.DataFrame | None:
    """An earlier refresh's trends by run id (a run listed twice: its last row), or None."""
    if previous is None or previous.empty or not set(TREND_COLUMNS) <= set(previous.columns):
        return None
    kept = previous[previous["run_id"].map(lambda v: isinstance(v, str))]
    return kept.drop_duplicates("run_id", keep="last").set_index("run_id")


def _made_again(kept: pd.DataFrame | None, compared_with: list, versions: list, compared_versions: list) -> list[int]:
    """The positions of a suite's rows whose paired columns are made again: every row whose
    kept row (``kept``, aligned with the suite's runs; None: no kept rows) was made with
    another run before it or with other data versions of the two runs, or when a version is
    unknown (the suite's first run is one: compared with nothing, it reads no run)."""
    if kept is None:
        return list(range(len(versions)))
    known = np.array([isinstance(a, str) and isinstance(b, str) for a, b in zip(versions, compared_versions)], dtype=bool)
    same = ((kept["compared_with"].to_numpy(dtype=object) == np.array(compared_with, dtype=object))
            & (kept["data_version"].to_numpy(dtype=object) == np.array(versions, dtype=object))
            & (kept["compared_with_version"].to_numpy(dtype=object) == np.array(compared_versions, dtype=object)))
    return np.flatnonzero(~(same & known)).tolist()
