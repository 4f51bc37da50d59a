"""The materialization metadata of the per-run stages that a user reads in the Dagster UI:
capability_aggregates' headline numbers (charted per partition in the Plots tab),
run_comparison's gate and verdicts, and langfuse_publication's result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg

from .. import object_store
from ..data_quality import data_quality_findings
from ..reports.gate_words import gate_statement

#: The headline rates of metrics.json capability, charted per run in the Dagster UI.
HEADLINE_RATES = ("pass_at_1", "pass_at_k", "pass_pow_k", "attempt_success_rate")

#: capability_aggregates' groups of metadata entries, in the order a person reads them; the
#: rank of each (1 to 6) starts its labels (``headline_label``).
HEADLINE_GROUPS = (*HEADLINE_RATES, "coverage", "data_quality_findings")

#: Decimals of the rates and bounds in metadata (metrics.json keeps full precision).
METADATA_DIGITS = 4


def headline_label(group: str, suffix: str = "") -> str:
    """A metadata label of capability_aggregates: its group's rank, the group, the suffix
    (``headline_label("pass_at_1", "ci95_lower") == "1_pass_at_1_ci95_lower"``).

    Dagster's Plots tab (1.13) charts the numeric entries in the order of their labels
    (JavaScript's default sort, by character code), not in the order they are given, so the
    rank puts pass_at_1 first there as the given order does in the metadata table; within
    a rate the suffixes sort as value, ``ci95_lower``, ``ci95_upper``, ``denominator``,
    ``successes``. Ranks are one digit: a tenth group (``10_...``) would sort first of all.
    """
    label = f"{HEADLINE_GROUPS.index(group) + 1}_{group}"
    return f"{label}_{suffix}" if suffix else label


def headline_metadata(metrics: dict) -> dict[str, Any]:
    """The numbers a user compares across runs, as numbers (the Plots tab charts them per
    partition) with the formatted text beside them, in the order a person reads them,
    pass_at_1 first (labels: ``headline_label``). Rates and bounds are rounded to
    ``METADATA_DIGITS`` decimals, as their text is; metrics.json keeps full precision. A null
    rate has no number, only its text: unknown is not zero."""
    cap, coverage = metrics["capability"], metrics["coverage"]
    digits = METADATA_DIGITS
    out: dict[str, Any] = {}
    for name in HEADLINE_RATES:
        m = cap[name]
        denominator = m.get("eligible_tasks", m.get("eligible_attempts"))
        if m["value"] is None:
            out[headline_label(name, "text")] = "n/a (no eligible denominator)"
        else:
            value, lower, upper = (round(float(x), digits) for x in (m["value"], m["ci95"]["lower"], m["ci95"]["upper"]))
            out[headline_label(name)] = value
            out[headline_label(name, "ci95_lower")] = lower
            out[headline_label(name, "ci95_upper")] = upper
            out[headline_label(name, "text")] = (f"{value:.{digits}f} [{lower:.{digits}f}, {upper:.{digits}f}] "
                                                 f"({m['successes']}/{denominator})")
        out[headline_label(name, "successes")] = int(m["successes"])
        out[headline_label(name, "denominator")] = int(denominator)
    for name in ("metrics_k", "unique_tasks", "attempts", "agent_eligible_attempts", "invalid_attempts",
                 "planned_attempts", "missing_attempts"):
        value = coverage.get(name)
        if type(value) is int:
            out[headline_label("coverage", name)] = value
    for name in ("pass_at_1", "pass_at_k", "pass_pow_k"):
        value = coverage.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[headline_label("coverage", name)] = round(float(value), digits)
    out[headline_label("data_quality_findings")] = data_quality_findings(metrics)
    return out


#: comparison.json's sections whose verdicts and deltas the run_comparison asset shows.
COMPARED_SECTIONS = ("first_attempt", "pass_at_k", "pass_pow_k", "task_success", "quality")


def comparison_metadata(comparison: dict | None, baseline: str | None, reason: str,
                        written: dict[str, Path]) -> dict[str, Any]:
    """run_comparison's materialization metadata: the baseline, the gate (pass, fail or
    inconclusive, comparison.md), its reason codes and what its result means
    (``gate_statement``: an inconclusive gate says what is missing, a pass without a margin
    names the regression size that could have gone unseen), each section's
    verdict and (as numbers, for the Plots tab) its delta and interval; without a baseline,
    why there is none (a run without a baseline is not a failure)."""
    if comparison is None:
        return {"baseline": "none", "reason": reason, "gate": "no baseline"}
    out: dict[str, Any] = {
        "baseline": comparison["baseline"]["run_id"] or baseline or "unknown",
        "reason": reason,
        "gate": comparison["gate"]["result"],
        "gate_statement": gate_statement(comparison),
        "gate_reasons": ", ".join(comparison["gate"]["reasons"]) or "none",
        "paired_tasks": comparison["tasks"]["paired"],
        "warnings": ", ".join(comparison["warnings"]) or "none",
        "regressed_tasks": len(comparison["regressions"]),
        "improved_tasks": len(comparison["improvements"]),
    }
    for name in COMPARED_SECTIONS:
        section = comparison[name]
        out[f"{name}_verdict"] = section["verdict"] or "n/a (no paired tasks)"
        out[f"{name}_n"] = section["n"]
        for key, value in (("delta", section["delta"]), ("lower", (section["ci95"] or {}).get("lower")),
                           ("upper", (section["ci95"] or {}).get("upper"))):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out[f"{name}_{key}"] = round(float(value), METADATA_DIGITS)  # comparison.json keeps every digit
    for name in ("comparison.json", "comparison.md"):
        if name in written:
            out[name.replace(".", "_")] = dg.MetadataValue.path(object_store.location_text(written[name]))
    return out


def comparison_note(metadata: dict[str, Any] | None) -> str:
    """What a run's one line (the per-run step's ``[i/n] <run>: ok (...)``) says of its
    comparison, from run_comparison's metadata (``comparison_metadata``): ``, gate <result>
    against <baseline>``, or ``, not compared (<why>)``; empty when there is none (a run that
    failed before its comparison)."""
    if not metadata:
        return ""
    if metadata.get("gate") == "no baseline":
        why = metadata.get("not_compared")
        return f", not compared ({why})" if why else ", not compared"
    return f", gate {metadata.get('gate')} against {metadata.get('baseline')}"


def publication_metadata(result) -> dict[str, Any]:
    """langfuse_publication's materialization metadata from a PublicationResult."""
    metadata: dict[str, Any] = {
        "status": result.status,
        "dataset": result.dataset,
        "experiment_id": result.experiment_id or "",
        "items": result.items,
        "scores": result.scores,
        "spans": result.spans,
        "already_published": result.skipped_existing,
    }
    if result.http_requests is not None:
        metadata["http_requests"] = result.http_requests
    if result.record_path is not None:
        metadata["publication_record"] = dg.MetadataValue.path(object_store.location_text(result.record_path))
    if result.outbox_path is not None:
        metadata["outbox"] = dg.MetadataValue.path(object_store.location_text(result.outbox_path))
    return metadata
