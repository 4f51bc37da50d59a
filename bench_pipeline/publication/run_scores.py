"""Pure: the run-level scores of a run, every number under the exported metrics.json sections
(outputs.md "Langfuse publication", comparison.md "Uncertainty grouped by task and estimators").

Every top-level key of metrics.json is either exported (``RUN_SCORE_SECTIONS``) or not, with
the reason (``NOT_EXPORTED_SECTIONS``); a test fails on a key that is in neither."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..stats import is_real_number

#: metrics.json sections exported as run-level scores, in this order: outputs.md "Langfuse
#: publication" lists the first nine; comparison.md adds ``uncertainty`` (the attempt-success
#: interval grouped by task) and ``estimators`` (estimates, apart from ``capability``).
RUN_SCORE_SECTIONS = (
    "capability", "coverage", "failures", "diagnostics", "category", "observations",
    "efficiency", "reliability", "cost_to_first_success", "uncertainty", "estimators",
)
#: metrics.json keys that are not run-level scores, and why.
NOT_EXPORTED_SECTIONS = {
    "schema_version": "the file's version: experiment metadata (metrics_schema_version), not a measurement",
    "formula_version": "the formulas' version: experiment metadata (formula_version), not a measurement",
    "run_id": "the run's identity: the experiment's name",
    "suite": "the suite's identity: the dataset's name",
    "generated_at": "when the file was written, not a measurement",
    "results_file": "which results file the run was read from (results.jsonl or its re-judged copy), "
                    "not a measurement",
    "aggregate": "the legacy per-task table (outputs.md lists it outside the exported sections); "
                 "each attempt's values are its own scores",
    "data_quality": "lists of findings about the run folder, no numbers to score",
}


def run_score_values(metrics: Mapping) -> list[tuple[str, float]]:
    """(name, value) for every number under the ``RUN_SCORE_SECTIONS`` of metrics.json, in
    that order, each under its own name: e.g. ``uncertainty.attempt_success_rate.ci95_lower``
    (grouped by task) and ``estimators.pass_at_k_unbiased`` (an estimate, apart from
    ``capability.pass_at_k``).

    ``.value`` is dropped from the primary name and ``ci95.lower/upper`` become
    ``ci95_lower/ci95_upper``; nulls (and Booleans) are omitted.
    """
    out: list[tuple[str, float]] = []

    def walk(value: Any, path: list[str]) -> None:
        if isinstance(value, Mapping):
            for key, child in value.items():
                walk(child, path + [str(key)])
        elif is_real_number(value):
            parts = list(path)
            if len(parts) >= 2 and parts[-2] == "ci95" and parts[-1] in ("lower", "upper"):
                parts[-2:] = [f"ci95_{parts[-1]}"]
            elif len(parts) >= 2 and parts[-1] == "value":
                parts = parts[:-1]
            out.append((".".join(parts), value))

    for section in RUN_SCORE_SECTIONS:
        if section in metrics:
            walk(metrics[section], [section])
    return out
