"""Stage 4, capability aggregates: the run's metrics.json (reference 2, 3.7, 3.8).

Every function here is pure: attempt rows (all rows, duplicates included, R29) and task rows
(after de-duplication) in, plain dicts out. Each metric names its own denominator.
"""

from __future__ import annotations

import math
from operator import itemgetter

from .stats import Z_95, distribution, finite_mean, fsum_mean, is_number, numbers, ratio, short_distribution, wilson_interval
from .task_groups import is_eligible
from .vocabulary import COST_FIELDS, EFFICIENCY_FIELDS, FAILURE_CLASSES, FAILURE_STAGES, RELIABILITY_FIELDS

#: Stages that count as "recognized" for failure_stage_coverage (3.8, R35).
RECOGNIZED_STAGES = frozenset(s for s in FAILURE_STAGES if s != "unknown")


def pass_metric(successes: int, eligible: int, total: int) -> dict:
    """A pass metric with its Wilson bounds; value null with no eligible tasks (3.7, 3.8)."""
    lower, upper = wilson_interval(successes, eligible)
    return {
        "value": ratio(successes, eligible),
        "successes": successes,
        "eligible_tasks": eligible,
        "total_tasks": total,
        "ci95": {"lower": lower, "upper": upper},
    }


def capability(attempts: list[dict], tasks: list[dict]) -> dict:
    """pass_at_1, pass_at_k, pass_pow_k, attempt success, oracle and first success (3.7)."""
    total = len(tasks)
    e1 = [t for t in tasks if t["in_e1"]]
    ek = [t for t in tasks if t["in_ek"]]
    eligible_rows = [a for a in attempts if is_eligible(a)]
    row_successes = sum(1 for a in eligible_rows if a["success"] is True)  # R19
    lower, upper = wilson_interval(row_successes, len(eligible_rows))
    best = [t["best_quality_k"] for t in ek if t["best_quality_k"] is not None]
    first = [t["first_success_attempt"] for t in tasks if t["first_success_attempt"] is not None]
    return {
        "pass_at_1": pass_metric(sum(t["attempt1_success"] for t in e1), len(e1), total),
        "pass_at_k": pass_metric(sum(t["any_success_k"] for t in ek), len(ek), total),
        "pass_pow_k": pass_metric(sum(t["all_success_k"] for t in ek), len(ek), total),
        "attempt_success_rate": {
            "value": ratio(row_successes, len(eligible_rows)),
            "successes": row_successes,
            "eligible_attempts": len(eligible_rows),
            "total_attempts": len(attempts),
            "ci95": {"lower": lower, "upper": upper},
            "coverage": len(eligible_rows) / len(attempts) if attempts else 0,  # R25
        },
        "oracle_best_score_at_k": {
            "value": finite_mean(best),
            "count": len(best),
            "eligible_tasks": len(ek),
        },
        "first_success_attempt": short_distribution(first),
    }


def coverage(
    attempts: list[dict], tasks: list[dict], metrics_k: int | None,
    planned_attempts: int | None, missing_attempts: int | None,
) -> dict:
    """Observed scope and eligible shares (reference 2 "Coverage", 3.7, 3.8, R25, R32)."""
    total = len(tasks)
    e1 = sum(1 for t in tasks if t["in_e1"])
    ek = sum(1 for t in tasks if t["in_ek"])
    eligible = sum(1 for a in attempts if is_eligible(a))
    return {
        "pass_at_1": e1 / total if total else 0,
        "pass_at_k": ek / total if total else 0,
        "pass_pow_k": ek / total if total else 0,
        "unique_tasks": total,
        "attempts": len(attempts),
        "metrics_k": metrics_k,
        "agent_eligible_attempts": eligible,
        "invalid_attempts": len(attempts) - eligible,
        "planned_attempts": planned_attempts,
        "missing_attempts": missing_attempts,
    }


def _eligible_failures(attempts: list[dict]) -> list[dict]:
    """Eligible attempts whose success is false (R19)."""
    return [a for a in attempts if is_eligible(a) and a["success"] is False]


def failures(attempts: list[dict]) -> dict:
    """Counts by class over all classified rows; by stage over eligible failures (3.8).

    Every class and stage of the reference appears, zero included; an unlisted string is
    counted under its own key (R35). An eligible failure with no stage label is counted
    under ``unknown`` so the stage counts add up to the eligible failures (docs/metric-choices.md).
    """
    classes = {c: 0 for c in FAILURE_CLASSES}
    for a in attempts:
        if a["failure_class"] is not None:
            classes[a["failure_class"]] = classes.get(a["failure_class"], 0) + 1
    stages = {s: 0 for s in FAILURE_STAGES}
    for a in _eligible_failures(attempts):
        stage = a["first_failure_stage"] or "unknown"
        stages[stage] = stages.get(stage, 0) + 1
    return {"class": classes, "stage": stages}


def diagnostics(attempts: list[dict]) -> dict:
    """failure_stage_coverage: recognized non-unknown stage / eligible failures (3.8)."""
    failed = _eligible_failures(attempts)
    known = sum(1 for a in failed if a["first_failure_stage"] in RECOGNIZED_STAGES)
    return {"failure_stage_coverage": ratio(known, len(failed))}


def categories(attempts: list[dict]) -> dict:
    """Per category: status=passed share of all rows, rubric-weighted pass rate (3.8, R24, R37)."""
    groups: dict[str, list[dict]] = {}
    for a in attempts:
        if a["category"] is not None:
            groups.setdefault(a["category"], []).append(a)
    result = {}
    for name in sorted(groups):
        rows = groups[name]
        scored = [r for r in rows if is_number(r["rubric_pass_count"]) and is_number(r["rubric_total"])]
        rubric_total = sum(r["rubric_total"] for r in scored)
        result[name] = {
            "pass_rate": sum(1 for r in rows if r["status"] == "passed") / len(rows),
            "rubric_pass_rate": ratio(sum(r["rubric_pass_count"] for r in scored), rubric_total) if rubric_total > 0 else None,
            "attempts": len(rows),
        }
    return result


def observations(attempts: list[dict]) -> dict:
    """Per observation id: rows with a passed entry / rows containing the id (3.8, R38)."""
    seen: dict[str, list[int]] = {}
    for a in attempts:
        for obs_id, passed in a["observations"].items():
            counts = seen.setdefault(obs_id, [0, 0])
            counts[0] += 1 if passed else 0
            counts[1] += 1
    return {
        obs_id: {"pass_rate": passed / observed, "passed_tasks": passed, "observed_tasks": observed}
        for obs_id, (passed, observed) in sorted(seen.items())
    }


def distributions(attempts: list[dict], fields: tuple[str, ...]) -> dict:
    """Numeric values of eligible rows per field; setup_ms from every row (3.8)."""
    eligible = [a for a in attempts if is_eligible(a)]
    from_eligible = [f for f in fields if f != "setup_ms"]
    columns = dict(zip(from_eligible, _columns(eligible, from_eligible)))
    if "setup_ms" in fields:
        columns["setup_ms"] = _columns(attempts, ["setup_ms"])[0]
    return {f: distribution(numbers(columns[f])) for f in fields}


def _columns(rows: list[dict], fields: list[str]) -> list:
    """The values of each field over the rows, one column per field. A row's fields are
    read together, in one pass over the rows (on a large run, going over every row once
    per field costs more than the reading itself)."""
    if not fields:
        return []
    if len(fields) == 1:
        return [list(map(itemgetter(fields[0]), rows))]
    if not rows:
        return [[] for _ in fields]
    return list(zip(*map(itemgetter(*fields), rows)))


def cost_to_first_success(tasks: list[dict]) -> dict:
    """count, mean, p50 of each field summed through the first success (3.7)."""
    return {
        f: short_distribution(
            t[f"cost_to_first_success_{f}"] for t in tasks if t[f"cost_to_first_success_{f}"] is not None
        )
        for f in COST_FIELDS
    }


def per_task(tasks: list[dict]) -> dict:
    """aggregate.per_task (reference 2, R30, R31)."""
    keys = (
        "attempts", "eligible_attempts", "passed", "failed", "pass_rate",
        "best_quality", "avg_quality", "avg_wall_ms", "first_attempt_passed",
    )
    return {t["task_id"]: {k: t[k] for k in keys} for t in tasks}


def attempt_success_uncertainty(attempts: list[dict]) -> dict:
    """uncertainty.attempt_success_rate (comparison.md "Uncertainty grouped by task"): over
    the population of capability.attempt_success_rate (eligible rows, duplicates included,
    R29), x_j = 1 when success is true else 0, N rows, p = mean(x), clusters = task ids:

        se_simple     = sqrt(p * (1 - p) / N)
        se_clustered  = sqrt( sum over tasks t of ( sum_{j in t} (x_j - p) )^2 ) / N
        ci95          = [max(0, p - z*se_clustered), min(1, p + z*se_clustered)]
        design_effect = (se_clustered / se_simple)^2, null when se_simple = 0

    The reference (2, 3.8) says the Wilson interval of attempt success does not model
    within-task correlation; this one does (repeats of a task are one cluster). Computed in
    exact integers up to one division and a square root: with s successes, n_t and s_t per
    task, sum_{j in t}(x_j - p) = (s_t*N - n_t*s) / N, so
    se_clustered = sqrt(S / N^4) with S = sum_t (s_t*N - n_t*s)^2, se_simple =
    sqrt(s*(N - s) / N^3) and design_effect = S / (s*(N - s)*N). With one attempt per task,
    S = s*(N - s)*N and the two standard errors are the same number. Statistics null and
    counts 0 when N = 0 (docs/metric-choices.md).
    """
    per_task: dict[str, list[int]] = {}
    successes = 0
    for a in attempts:
        if is_eligible(a):
            counts = per_task.setdefault(a["task_id"], [0, 0])
            counts[0] += 1
            if a["success"] is True:
                counts[1] += 1
                successes += 1
    n = sum(c[0] for c in per_task.values())
    if n == 0:
        return {"value": None, "tasks": 0, "attempts": 0, "se_simple": None, "se_clustered": None,
                "ci95": {"lower": None, "upper": None}, "design_effect": None}
    s = successes
    p = s / n
    clustered_sq = sum((s_t * n - n_t * s) ** 2 for n_t, s_t in per_task.values())
    se_simple = math.sqrt(s * (n - s) / n ** 3)
    se_clustered = math.sqrt(clustered_sq / n ** 4)
    return {
        "value": p,
        "tasks": len(per_task),
        "attempts": n,
        "se_simple": se_simple,
        "se_clustered": se_clustered,
        "ci95": {"lower": max(0.0, p - Z_95 * se_clustered), "upper": min(1.0, p + Z_95 * se_clustered)},
        "design_effect": clustered_sq / (s * (n - s) * n) if 0 < s < n else None,
    }


def unbiased_estimators(tasks: list[dict], k: int | None) -> dict:
    """estimators (comparison.md): unbiased estimates from every eligible attempt after
    de-duplication, over the tasks with n_i >= k eligible attempts, c_i of them successful:

        pass_at_k_unbiased  = mean of 1 - C(n_i - c_i, k) / C(n_i, k)   (Chen et al., 2021)
        pass_pow_k_unbiased = mean of C(c_i, k) / C(n_i, k)             (Yao et al., 2024)

    each ``{"value", "tasks", "k"}``, value null when no task qualifies or k is null. They
    estimate the chance over arbitrary k-combinations of a task's attempts, unlike
    capability's observed fixed-k values (reference 2: "observed fixed-k outcomes, not an
    estimate from arbitrary combinations of attempts"). Each task's ratio is one correctly
    rounded division of exact binomial coefficients; the tasks' mean is an fsum.
    """
    at_k: list[float] = []
    pow_k: list[float] = []
    if k is not None and k >= 1:
        for t in tasks:
            n_i, c_i = t["eligible_attempts"], t["passed"]
            if n_i >= k:
                total = math.comb(n_i, k)
                at_k.append((total - math.comb(n_i - c_i, k)) / total)
                pow_k.append(math.comb(c_i, k) / total)

    def estimate(values: list[float]) -> dict:
        return {"value": fsum_mean(values), "tasks": len(values), "k": k}

    return {"pass_at_k_unbiased": estimate(at_k), "pass_pow_k_unbiased": estimate(pow_k)}


def attempt_sections(attempts: list[dict]) -> dict:
    """The sections computed from attempt rows alone (no task grouping): failures,
    diagnostics, category, observations, efficiency, reliability and uncertainty (whose
    clusters are task ids over every row, duplicates included)."""
    return {
        "failures": failures(attempts),
        "diagnostics": diagnostics(attempts),
        "category": categories(attempts),
        "observations": observations(attempts),
        "efficiency": distributions(attempts, EFFICIENCY_FIELDS),
        "reliability": distributions(attempts, RELIABILITY_FIELDS),
        "uncertainty": {"attempt_success_rate": attempt_success_uncertainty(attempts)},
    }


def task_sections(
    attempts: list[dict],
    tasks: list[dict],
    *,
    metrics_k: int | None,
    planned_attempts: int | None,
    missing_attempts: int | None,
) -> dict:
    """The sections that need the task groups: capability, coverage,
    cost_to_first_success, aggregate and estimators."""
    return {
        "capability": capability(attempts, tasks),
        "coverage": coverage(attempts, tasks, metrics_k, planned_attempts, missing_attempts),
        "cost_to_first_success": cost_to_first_success(tasks),
        "aggregate": {"tasks": len(attempts), "per_task": per_task(tasks)},
        "estimators": unbiased_estimators(tasks, metrics_k),
    }


#: The order of the aggregate sections in metrics.json: outputs.md's, then comparison.md's
#: two additions (data_quality, which metrics_files.metrics_document adds, stays the last key).
SECTION_ORDER = ("capability", "coverage", "failures", "diagnostics", "category", "observations",
                 "efficiency", "reliability", "cost_to_first_success", "aggregate",
                 "uncertainty", "estimators")


def combine_sections(task_part: dict, attempt_part: dict) -> dict:
    """task_sections and attempt_sections as metrics.json holds them, in SECTION_ORDER
    (the two halves can be computed apart, for instance in two processes)."""
    both = {**task_part, **attempt_part}
    return {name: both[name] for name in SECTION_ORDER}
