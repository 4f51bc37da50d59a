"""Planning: how many runs per side, or how many tasks, a comparison needs (planning.md).

comparison.md says how large a change one comparison could detect (``mde80``);
repeated-runs.md measures how much one system moves from run to run. The pure formulas
here turn both into "how many runs per side, or how many tasks, would detect a change of d?":

- ``tasks_needed``: section 1, every comparison (both forms of comparison.json);
- ``variance_split``: section 2, one set of runs (repeats.json);
- ``repeated_planning``: section 3, two sets of runs (comparison.json, repeated form);
- ``parse_detect``: the repeatable ``--detect X`` option (the changes to plan for).

Inputs are plain numbers. A section's runs are given as ``{task_id: [v_i1, v_i2, ...]}``:
for each task in the section, its per-task value in each run where it is in the section's
population in that run alone (repeated-runs.md "Per-task values over several runs"). A task
with an empty list is treated as outside the section. Each function returns the dict (or
list) that goes into the JSON as it is, keys in planning.md's order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .stats import Z_95, exact_mean

#: z of a two-sided 5% test (stats.Z_95), and z plus the z of 80% power (planning.md).
Z = Z_95
ZP = Z + 0.8416212335729143
#: The changes planned for when ``--detect`` is not given: 2, 5 and 10 percentage points.
TARGETS = (0.02, 0.05, 0.10)
#: The runs per side shown in ``mde80_by_runs``.
RUNS = (1, 2, 3, 5, 10, 20)
#: The sections that carry a ``planning`` entry: the release gate's two.
PLANNED_SECTIONS = ("first_attempt", "task_success")

#: ``ceil_count`` tolerance: a product that is an integer up to rounding stays that integer.
CEIL_TOLERANCE = 1e-9

ValuesByTask = Mapping[str, Sequence[float]]


def ceil_count(x: float) -> int | None:
    """planning.md's ``ceil`` for a count of runs or tasks: the smallest integer >= x - 1e-9,
    and at least 1; null when x is beyond the float range (a change near 0, ``--detect
    1e-160``, can ask for more than a float holds: docs/metric-choices.md)."""
    if not math.isfinite(x):
        return None
    return max(1, math.ceil(x - CEIL_TOLERANCE))


def parse_detect(values: Iterable[str] | None) -> tuple[float, ...]:
    """The changes to plan for from the repeatable ``--detect X`` option (planning.md, top):
    each X a number with 0 < X <= 1, kept in the order given; none given gives TARGETS.

    Raises ValueError with a one-line reason for anything else (not a number, nan,
    infinity, 0, negative, above 1): the command reports it as bad input (exit 2)."""
    changes = []
    for value in values or ():
        text = str(value).strip()
        try:
            change = float(text)
        except ValueError:
            raise ValueError(f"--detect {text!r} is not a number (give a change such as 0.05 for 5 points)") from None
        if not math.isfinite(change) or not 0 < change <= 1:
            raise ValueError(f"--detect {text!r} must be a number above 0 and at most 1 (0.05 is 5 points)")
        changes.append(change)
    return tuple(changes) if changes else TARGETS


def tasks_needed(n: int, mde80: float | None, targets: Sequence[float] = TARGETS) -> list[dict[str, Any]]:
    """planning.md section 1: per target d, T = ceil(n * (mde80 / d)^2), the paired tasks a
    comparison like this one needs for its mde80 to reach d. ``tasks`` is null when mde80
    is null or 0 (nothing to plan from). ``n`` and ``mde80`` are the section's
    (comparison.md "Paired statistics")."""
    out = []
    for d in targets:
        tasks = None
        if mde80 is not None and mde80 != 0:
            try:
                tasks = ceil_count(n * (mde80 / d) ** 2)
            except OverflowError:  # (mde80 / d)^2 beyond the float range: more tasks than a float holds
                tasks = None
        out.append({"change": d, "tasks": tasks})
    return out


# --- helpers --------------------------------------------------------------------------------

def _mean(values: Sequence[float]) -> float:
    """The mean with a correctly rounded sum, as comparison.md's means are computed."""
    return math.fsum(values) / len(values)


def _sample_variance(values: Sequence[float]) -> float:
    """sum((v - mean)^2) / (len - 1); needs at least two values."""
    mean = _mean(values)
    return math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1)


def _in_section(values_by_task: ValuesByTask) -> dict[str, list[float]]:
    """The tasks in the section (at least one value), their values as floats."""
    return {task: [float(v) for v in values] for task, values in values_by_task.items() if len(values) > 0}


def within_task_var(values_by_task: ValuesByTask) -> float | None:
    """planning.md section 2 ``within_task_var``: the mean over the tasks with m_i >= 2 runs
    of s_i^2 = sum_r (v_ir - x_i)^2 / (m_i - 1); null when no task has two runs."""
    variances = [_sample_variance(values) for values in values_by_task.values() if len(values) >= 2]
    return _mean(variances) if variances else None


def _mean_inverse_runs(values_by_task: ValuesByTask) -> float:
    """mean_i(1 / m_i) over the tasks given (each with at least one run)."""
    return _mean([1 / len(values) for values in values_by_task.values()])


# --- section 2: one set of runs ---------------------------------------------------------------

def variance_split(values_by_task: ValuesByTask, targets: Sequence[float] = TARGETS) -> dict[str, Any]:
    """planning.md section 2: one planned section of repeats.json's ``planning``.

    ``values_by_task``: for each task of the pooled section, its values v_ir in the runs
    where it is in the section's population. Returns, in this order, ``within_task_var``
    (run-to-run noise of one task), ``between_task_var`` (how much tasks differ beyond that
    noise), ``icc``, ``mde80_by_runs`` (for each R in RUNS), ``runs_needed`` (for each target)
    and ``n``. These describe a comparison against a system with the same noise on the same
    n tasks when the change is the same on every task. Null cases: no task with two runs
    makes every value null; n < 2 makes between_task_var and icc null; n = 0 everything."""
    tasks = _in_section(values_by_task)
    n = len(tasks)
    within = within_task_var(tasks)

    between = None
    if n >= 2 and within is not None:
        pooled = [_mean(values) for values in tasks.values()]
        spread = _sample_variance(pooled)  # S^2 of the pooled values x_i
        between = max(0.0, spread - within * _mean_inverse_runs(tasks))

    icc = None
    if within is not None and between is not None and between + within != 0:
        icc = between / (between + within)

    noise_known = within is not None and n > 0
    mde80_by_runs = []
    for runs in RUNS:
        mde80 = ZP * math.sqrt(2 * within / (runs * n)) if noise_known else None
        mde80_by_runs.append({"runs_per_side": runs, "mde80": mde80})

    runs_needed = []
    for d in targets:
        runs = _runs_for(within, n, d) if noise_known else None
        runs_needed.append({"change": d, "runs_per_side": runs})

    return {"within_task_var": within, "between_task_var": between, "icc": icc,
            "mde80_by_runs": mde80_by_runs, "runs_needed": runs_needed, "n": n}


def _runs_for(within: float, n: int, d: float) -> int | None:
    """R = ceil(2 * within * zp^2 / (n * d^2)) (section 2); when d^2 is below the smallest
    float, more runs than a float holds, or 1 without noise (within 0)."""
    try:
        return ceil_count(2 * within * ZP ** 2 / (n * d ** 2))
    except ZeroDivisionError:
        return 1 if within == 0 else None


# --- section 3: two sets of runs --------------------------------------------------------------

def runs_per_side(n: int, d: float, change_var: float | None, baseline_var: float | None,
                  candidate_var: float | None) -> int | None:
    """planning.md section 3: the smallest R >= 1 with
    zp * sqrt((change_var + (wb + wc) / R) / n) <= d, i.e. with L = n * (d / zp)^2,
    R = ceil((wb + wc) / (L - change_var)) when L > change_var; null when L <= change_var
    (no number of runs reaches d on these tasks) or when any input is null."""
    if change_var is None or baseline_var is None or candidate_var is None:
        return None
    reachable = n * (d / ZP) ** 2  # L
    if reachable <= change_var:
        return None
    return ceil_count((baseline_var + candidate_var) / (reachable - change_var))


def repeated_planning(baseline: ValuesByTask, candidate: ValuesByTask, mde80: float | None,
                      targets: Sequence[float] = TARGETS) -> dict[str, Any]:
    """planning.md section 3: one planned section's ``planning`` in the repeated form of
    comparison.json.

    ``baseline`` / ``candidate``: each side's ``{task_id: [v_ir, ...]}`` for the section
    (the values in that side's runs where the task is in the section's population). The
    paired tasks are those with values on both sides (comparison.md's n); the per-task
    change is d_i = c_i - b_i of the pooled values and delta their mean, as in
    comparison.md. ``mde80`` is the section's own (comparison.md), scaled by tasks_needed.

    Returns, in this order: ``tasks_needed`` (section 1), ``within_task_var``
    {baseline, candidate} (section 2's formula over the paired tasks), ``change_var`` (how
    much the true change differs by task; null when n < 2 or either side's noise is null)
    and ``runs_needed``: one entry per target, then, when delta is a number other than 0,
    one for ``abs(delta)`` marked ``"observed": true``."""
    b_tasks, c_tasks = _in_section(baseline), _in_section(candidate)
    paired = [task for task in b_tasks if task in c_tasks]
    b_paired = {task: b_tasks[task] for task in paired}
    c_paired = {task: c_tasks[task] for task in paired}
    n = len(paired)

    wb, wc = within_task_var(b_paired), within_task_var(c_paired)

    # d_i and delta as comparison.md computes them from the pooled values: exactly when the
    # values are exact (0/1, success rates), so that changes which cancel give delta 0
    changes = [exact_mean(candidate[task]) - exact_mean(baseline[task]) for task in paired]
    delta = exact_mean(changes) if n > 0 else None

    change_var = None
    if n >= 2 and wb is not None and wc is not None:
        spread = math.fsum((d_i - delta) ** 2 for d_i in changes) / (n - 1)  # s_d^2
        noise = wb * _mean_inverse_runs(b_paired) + wc * _mean_inverse_runs(c_paired)
        change_var = max(0.0, spread - noise)

    runs_needed = [{"change": d, "runs_per_side": runs_per_side(n, d, change_var, wb, wc)} for d in targets]
    if delta is not None and delta != 0:
        observed = abs(float(delta))
        runs_needed.append({"change": observed, "runs_per_side": runs_per_side(n, observed, change_var, wb, wc),
                            "observed": True})

    return {"tasks_needed": tasks_needed(n, mde80, targets),
            "within_task_var": {"baseline": wb, "candidate": wc},
            "change_var": change_var,
            "runs_needed": runs_needed}
