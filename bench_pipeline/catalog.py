"""Cross-run views: one catalog row per run, the runs behind the current formula version,
and per-suite trends.

The catalog is pure; the trends read each run's output folder for the paired comparison
with its predecessor (``comparison.side_from_output``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from .attempt_metrics import COUNT_LIMIT
from .comparison import BINARY_SECTIONS, MEAN_SECTIONS, ComparisonInputError, Side, compare, side_from_output
from .identity import run_identity
from .data_quality import data_quality_findings
from .vocabulary import COMPARISON_RESOURCE_FIELDS

CATALOG_COLUMNS = [
    "run_id", "suite", "model", "git_sha", "started_at", "formula_version", "metrics_k",
    "pass_at_1", "pass_at_1_lower", "pass_at_1_upper",
    "pass_at_k", "pass_at_k_lower", "pass_at_k_upper",
    "pass_pow_k", "attempt_success_rate", "coverage_pass_at_1", "coverage_pass_at_k",
    "unique_tasks", "attempts", "eligible_attempts", "missing_attempts",
    "total_tokens_sum", "cost_usd_sum", "cost_usd_count", "data_quality_findings",
]
COUNT_COLUMNS = ["metrics_k", "unique_tasks", "attempts", "eligible_attempts", "missing_attempts",
                 "cost_usd_count", "data_quality_findings"]


def catalog_row(run_id: str, metrics: dict, manifest: dict) -> dict:
    """One run's catalog entry: identity, headline capability with intervals, coverage, cost.

    ``model``, ``git_sha`` and ``started_at`` are ``identity.run_identity``'s (manifest
    ``model.name``, ``code.git_sha``, ``started_at``; null when missing or not a string): with
    the suite they are the run's system (repeated-runs.md "Systems"), so the catalog can be
    filtered by system. cost_usd_sum covers only attempts with a recorded cost (see
    cost_usd_count): it is not a complete bill (reference 2, "sum, mean").
    """
    cap, cov = metrics["capability"], metrics["coverage"]
    identity = run_identity(manifest)
    return {
        "run_id": run_id,
        "suite": metrics.get("suite"),
        "model": identity.model_name,
        "git_sha": identity.git_sha,
        "started_at": identity.started_at,
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
    }


def catalog_frame(rows: list[dict]) -> pd.DataFrame:
    """The catalog, ordered by suite and start time."""
    frame = pd.DataFrame.from_records(rows, columns=CATALOG_COLUMNS)
    # nullable 64-bit counts, from the rows themselves (a column holding a null would have made
    # them floats); a count beyond 64 bits (a huge plan) is n/a here
    for column in COUNT_COLUMNS:
        frame[column] = pd.array([_count(row.get(column)) for row in rows], dtype="Int64")
    return frame.sort_values(["suite", "started_at", "run_id"], na_position="last").reset_index(drop=True)


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


def catalog_records(catalog: pd.DataFrame) -> list[dict]:
    """The catalog's rows as plain dicts (``plain_value`` of every cell), in catalog order:
    what code that is not pandas reads (``repeats``, the suite pages)."""
    columns = list(catalog.columns)
    values = [[plain_value(v) for v in catalog[c].tolist()] for c in columns]
    return [dict(zip(columns, cells)) for cells in zip(*values)]


#: How many runs behind the formula the catalog's metadata lists by name.
BEHIND_LISTED = 20


def runs_behind_formula(catalog: pd.DataFrame, current: str) -> pd.DataFrame:
    """The catalog's runs whose metrics.json was computed with another formula version than
    ``current`` (or carries none), in catalog order: the runs a backfill re-processes."""
    mask = pd.Series([not (isinstance(v, str) and v == current) for v in catalog["formula_version"]],
                     index=catalog.index, dtype=bool)
    return catalog.loc[mask, ["run_id", "suite", "formula_version"]].reset_index(drop=True)


def _cell(value: Any) -> str:
    """A markdown table cell: null as "unknown", pipes escaped."""
    return "unknown" if value is None or pd.isna(value) else str(value).replace("|", "\\|")


def behind_formula_markdown(behind: pd.DataFrame, current: str, limit: int = BEHIND_LISTED) -> str:
    """The runs behind the formula as a markdown table (run id, suite, formula version): the
    first ``limit``, then how many more there are."""
    if behind.empty:
        return f"Every run in the catalog was computed with the current formula version `{current}`."
    lines = [f"{len(behind)} run(s) computed with another formula version than the current `{current}`:", "",
             "| run_id | suite | formula_version |", "| --- | --- | --- |"]
    lines += [f"| {_cell(r.run_id)} | {_cell(r.suite)} | {_cell(r.formula_version)} |"
              for r in behind.head(limit).itertuples(index=False)]
    if len(behind) > limit:
        lines += ["", f"... and {len(behind) - limit} more (the catalog's `formula_version` column has every run)."]
    return "\n".join(lines)


#: The paired sections whose verdict a trend row shows, in comparison.json's order
#: (``resources.<field>`` by the field's name).
TREND_SECTIONS = (*BINARY_SECTIONS, *MEAN_SECTIONS, *COMPARISON_RESOURCE_FIELDS)
TREND_COLUMNS = ["suite", "run_id", "started_at", "model", "formula_version", "pass_at_1",
                 "pass_at_1_lower", "pass_at_1_upper", "pass_at_1_change", "compared_with", "paired_tasks",
                 *(f"{s}_verdict" for s in TREND_SECTIONS), "gate", "comparison_note", "coverage_pass_at_1"]


def _run_output(output_root: Path, run_id: Any) -> Path | None:
    """A run's output folder under the output root (run ids are plain folder names)."""
    if not isinstance(run_id, str) or not run_id or run_id in (".", "..") or any(c in run_id for c in "/\\\x00"):
        return None
    return Path(output_root) / run_id


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


def suite_trends(catalog: pd.DataFrame, output_root: Path | str | None = None) -> pd.DataFrame:
    """Per suite, runs in start order, each compared by task with the run before it.

    The reference (2) warns against reading a small change or the overlap of two runs'
    intervals as evidence, so a row's judgement is the paired comparison (comparison.md)
    with its predecessor in the suite: ``compared_with``, ``paired_tasks``, the verdict of
    every paired section (``<section>_verdict``: regression, improvement,
    no_significant_change, or null when the section had nothing to compare) and the release
    gate without a margin. ``pass_at_1_change`` stays as a plain difference, not evidence.

    The catalog holds metrics.json-level data only: the pairing reads each run's output
    folder under ``output_root`` (metrics.json and attempts.jsonl, ``side_from_output``),
    once per run, with one comparison per consecutive pair. A run without a predecessor,
    without ``output_root`` or whose folder cannot be read has null paired columns and a
    ``comparison_note`` saying why.
    """
    if catalog.empty:
        return pd.DataFrame(columns=TREND_COLUMNS)
    frames = []
    for _, group in catalog.groupby("suite", dropna=False, sort=True):
        g = group.sort_values(["started_at", "run_id"]).copy()
        previous_value = g["pass_at_1"].shift(1)
        g["pass_at_1_change"] = g["pass_at_1"] - previous_value
        # A suite's only run is compared with nothing: its attempts are not read at all.
        sides = [_trend_side(output_root, run_id) for run_id in g["run_id"]] if len(g) > 1 else [None]
        paired = [_trend_comparison(sides[i - 1], sides[i]) if i else
                  {**{c: None for c in TREND_COLUMNS if c not in g.columns}, "comparison_note": "first run of the suite"}
                  for i in range(len(sides))]
        extra = pd.DataFrame.from_records(paired, index=g.index)
        for column in extra.columns:
            if column != "pass_at_1_change":
                g[column] = extra[column]
        g["paired_tasks"] = pd.array(list(g["paired_tasks"]), dtype="Int64")
        frames.append(g[TREND_COLUMNS])
    return pd.concat(frames, ignore_index=True)


def _trend_side(output_root: Path | str | None, run_id: Any) -> tuple[Any, Side | None, str | None]:
    """(run id, its side or None, why none)."""
    if output_root is None:
        return run_id, None, "no output root to read the runs' attempts from"
    folder = _run_output(Path(output_root), run_id)
    if folder is None:
        return run_id, None, f"run id {run_id!r} is not a folder name"
    try:
        return run_id, side_from_output(folder), None
    except ComparisonInputError as exc:
        return run_id, None, str(exc)
