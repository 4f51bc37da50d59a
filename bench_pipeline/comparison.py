"""Paired comparison of two processed runs, a baseline and a candidate (comparison.md).

The reference (section 2, "Capability and consistency"): "For release decisions, compare
paired tasks and use repeated runs or uncertainty analysis grouped by task. Do not infer
significance merely from a small percentage increase or from overlap of separate confidence
bounds." comparison.md pins what that means here: tasks are paired by id, each section
compares per-task values of the two runs (delta, standard error, 95% interval, minimum
detectable effect; binary sections also the exact McNemar test), each section gets a
verdict, and a release gate reads the verdicts of ``first_attempt`` and ``task_success``.

Every function here is pure. A run enters a comparison as a ``Side`` (comparison_sides.py).
``compare`` returns comparison.json's dict, keys in comparison.md's order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

from .comparison_sides import Side
from .planning import PLANNED_SECTIONS, TARGETS, tasks_needed
from .setup import differs_among
from .stats import Z_95, all_exact, exact_mean, fsum_mean, is_number, number_or_none, standard_error
from .task_groups import ByAttempt, eligible_attempts, ek_window, in_e1, is_eligible, success_fraction
from .vocabulary import COMPARISON_RESOURCE_FIELDS

SCHEMA_VERSION = 1

#: z of 80% power, as comparison.md writes it: mde80 = (Z_95 + Z_POWER80) * se.
Z_POWER80 = 0.8416212335729143
#: The level of the McNemar test's verdicts (comparison.md "Verdicts": mcnemar_p < 0.05).
ALPHA = 0.05

#: The binary sections, in comparison.json's order, and the rest.
BINARY_SECTIONS = ("first_attempt", "pass_at_k", "pass_pow_k")
MEAN_SECTIONS = ("task_success", "quality")
#: comparison.md's warning codes, in the order they are listed when present.
WARNINGS = ("suite_differs", "suite_version_differs", "metrics_k_differs", "judge_differs", "platform_differs",
            "skills_differs", "no_paired_tasks")
#: comparison.md's gate reasons, in their order.
GATE_REASONS = tuple(f"{section}_{reason}" for section in ("first_attempt", "task_success")
                     for reason in ("no_evidence", "regression", "no_interval", "below_margin"))
#: The gate's three results.
GATE_RESULTS = ("pass", "fail", "inconclusive")
VERDICTS = ("regression", "improvement", "no_significant_change")


# --- per-task values (comparison.md "Paired statistics", the population table) --------------
# E1, Ek, eligibility and the task's success rate are task_groups' (reference 3.7), the same
# ones capability reads.

def first_attempt_value(by_attempt: ByAttempt, k: int | None = None) -> int | None:
    """1 when attempt 1 succeeds, 0 when it does not; None when attempt 1 is missing or
    ineligible (outside E1, reference 3.7)."""
    if not in_e1(by_attempt):
        return None
    return 1 if by_attempt[1]["success"] is True else 0


def _window(by_attempt: ByAttempt, k: int | None) -> list[bool] | None:
    """Successes of attempts 1..k for a task in Ek, else None."""
    window = ek_window(by_attempt, k)
    return None if window is None else [r["success"] is True for r in window]


def pass_at_k_value(by_attempt: ByAttempt, k: int | None) -> int | None:
    """1 when any of attempts 1..k succeeds; None outside Ek."""
    window = _window(by_attempt, k)
    return None if window is None else int(any(window))


def pass_pow_k_value(by_attempt: ByAttempt, k: int | None) -> int | None:
    """1 when every one of attempts 1..k succeeds; None outside Ek."""
    window = _window(by_attempt, k)
    return None if window is None else int(all(window))


def task_success_value(by_attempt: ByAttempt, k: int | None = None) -> Fraction | None:
    """Successful eligible attempts / eligible attempts of the task, every attempt number
    (beyond k too); None without an eligible attempt: the task's pass_rate (R31,
    ``task_groups.success_fraction``), exact, so that the paired means and delta
    are computed exactly (``paired_statistics``)."""
    return success_fraction(eligible_attempts(by_attempt))


def field_mean_value(name: str) -> Callable[[ByAttempt, int | None], float | None]:
    """The per-task value of ``quality`` (name quality_score) and ``resources.<name>``: the
    mean of the field over the task's eligible attempts with a number; None when none has one."""
    def value(by_attempt: ByAttempt, k: int | None = None) -> float | None:
        return fsum_mean([r[name] for r in by_attempt.values() if is_eligible(r) and is_number(r[name])])
    value.__name__ = f"{name}_value"
    return value


#: Every section's per-task value, by name (resources as ``resources.<field>``): the one
#: definition the paired comparison and the pooled repeated-runs values read.
SECTION_VALUES: dict[str, Callable[[ByAttempt, int | None], Any]] = {
    "first_attempt": first_attempt_value,
    "pass_at_k": pass_at_k_value,
    "pass_pow_k": pass_pow_k_value,
    "task_success": task_success_value,
    "quality": field_mean_value("quality_score"),
    **{f"resources.{name}": field_mean_value(name) for name in COMPARISON_RESOURCE_FIELDS},
}


# --- paired statistics ---------------------------------------------------------------------

def mcnemar_p(baseline_only: int, candidate_only: int) -> float:
    """Exact two-sided McNemar p-value on the m = baseline_only + candidate_only discordant
    tasks (comparison.md): 1 when m = 0, else
    min(1, 2 * sum_{i=0..min(b, c)} C(m, i) / 2^m), summed in exact integers."""
    b, c = int(baseline_only), int(candidate_only)
    if b < 0 or c < 0:
        raise ValueError("discordant counts cannot be negative")
    m = b + c
    if m == 0:
        return 1.0
    term, tail = 1, 0  # term = C(m, i)
    for i in range(min(b, c) + 1):
        tail += term
        term = term * (m - i) // (i + 1)
    return min(1.0, 2 * tail / 2 ** m)  # integer true division: correctly rounded at any size


def paired_statistics(baseline: list[float | Fraction], candidate: list[float | Fraction]) -> dict:
    """comparison.md "Paired statistics" over n paired per-task values b_i, c_i:
    d_i = c_i - b_i, baseline_mean, candidate_mean, delta = mean(d),
    se = sqrt(sum((d_i - delta)^2) / (n - 1) / n) (null when n < 2),
    ci95 = delta -/+ z * se (not clamped), mde80 = (z + 0.8416212335729143) * se.
    Every number null with n = 0; interval and MDE null with se null.

    Exact values (ints, Fractions: success rates such as 1/3) give the means, the d_i and
    delta computed exactly and rounded once, so changes that cancel give a delta of exactly
    0 (1/2 -> 1/3 and 1/2 -> 2/3 in floats would give -5.6e-17); other values are floats,
    summed with a correctly rounded sum."""
    n = len(baseline)
    if n != len(candidate):
        raise ValueError("paired values must have the same length")
    if n and all_exact(baseline) and all_exact(candidate):
        exact_diffs = [c - b for b, c in zip(baseline, candidate)]
        b_mean, c_mean, delta = (float(exact_mean(v)) for v in (baseline, candidate, exact_diffs))
        diffs = [float(d) for d in exact_diffs]
    else:
        b_mean, c_mean = fsum_mean(baseline), fsum_mean(candidate)
        try:
            diffs = [float(c) - float(b) for b, c in zip(baseline, candidate)]
        except OverflowError:
            diffs = []
        delta = fsum_mean(diffs) if len(diffs) == n and all(map(is_number, diffs)) else None
    se = standard_error(diffs, delta) if delta is not None else None
    lower = upper = mde = None
    if se is not None:
        lower, upper = number_or_none(delta - Z_95 * se), number_or_none(delta + Z_95 * se)
        mde = number_or_none((Z_95 + Z_POWER80) * se)
    return {"n": n, "baseline_mean": b_mean, "candidate_mean": c_mean, "delta": delta, "se": se,
            "ci95": {"lower": lower, "upper": upper}, "mde80": mde}


def binary_section(pairs: list[tuple[int, int]]) -> dict:
    """A binary section (per-task values 0/1) in comparison.json's key order: the four
    concordance counts, rates, the paired statistics, the exact McNemar p-value and the
    verdict (regression / improvement when delta < 0 / > 0 and mcnemar_p < 0.05)."""
    counts = {"both_pass": 0, "baseline_only": 0, "candidate_only": 0, "both_fail": 0}
    for b, c in pairs:
        key = ("both_pass" if c else "baseline_only") if b else ("candidate_only" if c else "both_fail")
        counts[key] += 1
    stats = paired_statistics([b for b, _ in pairs], [c for _, c in pairs])
    n = stats["n"]
    p = mcnemar_p(counts["baseline_only"], counts["candidate_only"]) if n else None
    verdict = None
    if n:
        delta = stats["delta"]
        verdict = ("regression" if delta < 0 and p < ALPHA else
                   "improvement" if delta > 0 and p < ALPHA else "no_significant_change")
    return {"n": n, **counts, "baseline_rate": stats["baseline_mean"], "candidate_rate": stats["candidate_mean"],
            "delta": stats["delta"], "se": stats["se"], "ci95": stats["ci95"], "mde80": stats["mde80"],
            "mcnemar_p": p, "verdict": verdict}


def mean_section(pairs: list[tuple[float, float]], more_is_better: bool = True) -> dict:
    """A section of per-task means (task_success, quality, resources.<field>): the paired
    statistics and the verdict from the interval (comparison.md "Verdicts"): with more is
    better, regression when ci95.upper < 0 and improvement when ci95.lower > 0; for the
    resources (more is worse) the other way round; null without an interval."""
    stats = paired_statistics([b for b, _ in pairs], [c for _, c in pairs])
    lower, upper = stats["ci95"]["lower"], stats["ci95"]["upper"]
    verdict = None
    if lower is not None and upper is not None:
        worse, better = (upper < 0, lower > 0) if more_is_better else (lower > 0, upper < 0)
        verdict = "regression" if worse else "improvement" if better else "no_significant_change"
    return {**stats, "verdict": verdict}


def _pairs(baseline: Side, candidate: Side, paired: list[str], value: Callable, k: int | None) -> list[tuple]:
    """(b_i, c_i) over the paired tasks in the section's population (both values known)."""
    out = []
    for task_id in paired:
        b, c = value(baseline.tasks[task_id], k), value(candidate.tasks[task_id], k)
        if b is not None and c is not None:
            out.append((b, c))
    return out


def comparison_k(baseline: Side, candidate: Side) -> int | None:
    """k = min(B's metrics_k, C's metrics_k); null when either is null."""
    if baseline.metrics_k is None or candidate.metrics_k is None:
        return None
    return min(baseline.metrics_k, candidate.metrics_k)


def comparison_warnings(baseline: Side, candidate: Side, paired: int) -> list[str]:
    """comparison.md's warnings in their order (WARNINGS): suite_differs (both suites known
    and not equal), metrics_k_differs (the two metrics_k are not equal, a null against a
    number included: docs/metric-choices.md), the measurement setup's ``<part>_differs``
    (suite version, judge, platform, skills: a field of the part known in both and unequal,
    setup.differs_among), no_paired_tasks."""
    found = set(differs_among((baseline.identity.setup, candidate.identity.setup)))
    if baseline.suite is not None and candidate.suite is not None and baseline.suite != candidate.suite:
        found.add("suite_differs")
    if baseline.metrics_k != candidate.metrics_k:
        found.add("metrics_k_differs")
    if paired == 0:
        found.add("no_paired_tasks")
    return [code for code in WARNINGS if code in found]


def release_gate(first_attempt: Mapping[str, Any], task_success: Mapping[str, Any],
                 max_drop: float | None = None) -> dict:
    """comparison.md "Verdicts and the release gate": three results. For each gate section
    (first_attempt, then task_success) the first of these that holds gives its reason:
    ``<section>_no_evidence`` (n = 0), ``<section>_regression`` (its verdict), and with a
    non-inferiority margin X ``<section>_no_interval`` (ci95.lower null) else
    ``<section>_below_margin`` (ci95.lower < -X). ``fail`` when any reason is a regression,
    else ``inconclusive`` when there is any reason, else ``pass``. Both forms of the
    comparison (``compare``, ``repeats.compare_sets``) call this one function."""
    reasons = []
    for name, section in (("first_attempt", first_attempt), ("task_success", task_success)):
        reason = gate_reason(section, max_drop)
        if reason is not None:
            reasons.append(f"{name}_{reason}")
    return {"result": gate_result(reasons), "max_drop": max_drop, "reasons": reasons}


def gate_reason(section: Mapping[str, Any], max_drop: float | None = None) -> str | None:
    """The reason (without its section prefix: ``no_evidence``, ``regression``,
    ``no_interval``, ``below_margin``) a gate section gives, None when it gives none."""
    if not section.get("n"):
        return "no_evidence"
    if section["verdict"] == "regression":
        return "regression"
    if max_drop is not None:
        lower = section["ci95"]["lower"]
        if lower is None:
            return "no_interval"
        if lower < -max_drop:
            return "below_margin"
    return None


def gate_result(reasons: Iterable[str]) -> str:
    """``fail`` when any reason is a ``_regression``, else ``inconclusive`` when there is
    any reason, else ``pass``."""
    reasons = list(reasons)
    if any(r.endswith("_regression") for r in reasons):
        return "fail"
    return "inconclusive" if reasons else "pass"


#: The gate's results and the exit code of ``bench-pipeline compare`` for each (comparison.md;
#: 2 is bad input).
GATE_EXIT_CODES = {"pass": 0, "fail": 1, "inconclusive": 3}


def check_max_drop(max_drop: Any) -> float | None:
    """The non-inferiority margin as given (None for none); ValueError unless it is a finite
    number from 0 to 1 (a drop in a rate: 0.05 is five percentage points)."""
    if max_drop is None:
        return None
    if not is_number(max_drop) or not 0 <= max_drop <= 1:
        raise ValueError(f"max_drop must be a number from 0 to 1 (a drop in a rate), not {max_drop!r}")
    return max_drop


def compare(baseline: Side, candidate: Side, max_drop: float | None = None,
            targets: tuple[float, ...] = TARGETS) -> dict:
    """comparison.json (comparison.md): pairing by task, every section, verdicts,
    regressions and improvements (tasks whose first attempt went 1 -> 0 / 0 -> 1) and the
    gate, keys in comparison.md's order; the gate sections end with ``planning``, the tasks
    needed for each change in ``targets`` (planning.md section 1)."""
    max_drop = check_max_drop(max_drop)
    paired = sorted(set(baseline.tasks) & set(candidate.tasks))
    k = comparison_k(baseline, candidate)

    def pairs(name: str) -> list[tuple]:
        return _pairs(baseline, candidate, paired, SECTION_VALUES[name], k)

    sections: dict[str, Any] = {
        **{name: binary_section(pairs(name)) for name in BINARY_SECTIONS},
        **{name: mean_section(pairs(name)) for name in MEAN_SECTIONS},
        "resources": {name: mean_section(pairs(f"resources.{name}"), more_is_better=False)
                      for name in COMPARISON_RESOURCE_FIELDS},
    }
    for s in (sections[name] for name in PLANNED_SECTIONS):
        s["planning"] = {"tasks_needed": tasks_needed(s["n"], s["mde80"], targets)}
    regressions, improvements = first_attempt_changes(baseline, candidate, paired)
    return {
        "schema_version": SCHEMA_VERSION,
        "baseline": {"run_id": baseline.run_id, "suite": baseline.suite, "metrics_k": baseline.metrics_k},
        "candidate": {"run_id": candidate.run_id, "suite": candidate.suite, "metrics_k": candidate.metrics_k},
        "k": k,
        "warnings": comparison_warnings(baseline, candidate, len(paired)),
        "tasks": {
            "paired": len(paired),
            "only_baseline": sorted(set(baseline.tasks) - set(candidate.tasks)),
            "only_candidate": sorted(set(candidate.tasks) - set(baseline.tasks)),
        },
        **sections,
        "regressions": regressions,
        "improvements": improvements,
        "gate": release_gate(sections["first_attempt"], sections["task_success"], max_drop),
    }


def first_attempt_changes(baseline: Side, candidate: Side, paired: Iterable[str] | None = None) -> tuple[list[str], list[str]]:
    """Sorted task ids whose first attempt went 1 -> 0 (regressions) and 0 -> 1
    (improvements), over the first_attempt population."""
    if paired is None:
        paired = set(baseline.tasks) & set(candidate.tasks)
    down, up = [], []
    for task_id in sorted(paired):
        b = first_attempt_value(baseline.tasks[task_id])
        c = first_attempt_value(candidate.tasks[task_id])
        if b == 1 and c == 0:
            down.append(task_id)
        elif b == 0 and c == 1:
            up.append(task_id)
    return down, up


@dataclass(frozen=True)
class Comparison:
    """A comparison with the two sides it was computed from: ``result`` is comparison.json;
    the sides give the reports each task's evidence folders."""

    result: dict
    baseline: Side
    candidate: Side


def comparison_of(baseline: Side, candidate: Side, max_drop: float | None = None,
                  targets: tuple[float, ...] = TARGETS) -> Comparison:
    """``compare`` kept with its sides (for the reports)."""
    return Comparison(compare(baseline, candidate, max_drop, targets), baseline, candidate)
