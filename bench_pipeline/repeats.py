"""Repeated runs: one system measured several times, and comparisons of such sets
(repeated-runs.md of the specification).

Identical runs of an agent disagree on many tasks, so one run's number, and one pair of
runs, is often noise. A run's **system** is (suite, model name, git sha) measured with one
setup key (judge and platform, setup.py); per section, a
task's **pooled value** is the mean of its per-task values (comparison.md's population and
value, read for one run at a time) over the runs in which it is in the section. From the
pooled values: the pooled sections with intervals clustered by task, the between-run noise
floor of pass_at_1, the per-task stability and flip rates (``repeats``), and the repeated
form of the paired comparison (``compare_sets``).

Every function here is pure. A run enters as a ``RepeatRun``: its comparison ``Side`` (task
groups after de-duplication, identity) and its ``capability.pass_at_1.value``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .comparison import BINARY_SECTIONS, MEAN_SECTIONS, SECTION_VALUES, check_max_drop, mean_section, release_gate
from .comparison_sides import Side, make_side
from .planning import PLANNED_SECTIONS, TARGETS, repeated_planning, variance_split
from .setup import UNKNOWN_KEY, SetupKey, differs_among, key_text
from .stats import Z_95, exact_mean, fsum_mean, is_exact, is_number, number_or_none, standard_error
from .task_groups import is_eligible
from .vocabulary import COMPARISON_RESOURCE_FIELDS

SCHEMA_VERSION = 1
COMPARISON_SCHEMA_VERSION = 2

#: The sections, in repeats.json's order (resources under ``resources``).
SECTIONS = (*BINARY_SECTIONS, *MEAN_SECTIONS)
#: Sections whose pooled interval is clamped to [0, 1] (repeated-runs.md "pooled").
CLAMPED = (*BINARY_SECTIONS, "task_success")
#: The measurement setup's warning codes (setup.py), in repeated-runs.md's order.
_SETUP = ("suite_version_differs", "judge_differs", "platform_differs", "skills_differs")
#: repeats.json's warning codes, in their order.
REPEATS_WARNINGS = ("suite_differs", "model_differs", "code_differs", *_SETUP, "metrics_k_differs")
#: The repeated comparison's warning codes, in their order.
SET_WARNINGS = ("suite_differs", "suite_version_differs", "metrics_k_differs", *_SETUP[1:],
                "baseline_systems_differ", "candidate_systems_differ", "no_paired_tasks")


@dataclass(frozen=True)
class RepeatRun:
    """One run of a set: its side (tasks, run id, suite, metrics_k, identity) and its
    capability.pass_at_1.value (None when null)."""

    side: Side
    pass_at_1: float | None

    @property
    def run_id(self) -> str | None:
        return self.side.run_id


# --- systems ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class System:
    """A system (repeated-runs.md "Systems"): suite, model name and git sha as recorded (None
    when unknown), measured with one setup key (``setup``: judge enabled and model, platform
    device and os; unknown fields None, compared as null); ``alone`` names the run that is a
    system of its own because a part is unknown (its run id stands for the unknown part)."""

    suite: str | None
    model: str | None
    git_sha: str | None
    alone: str | None = None
    setup: SetupKey = UNKNOWN_KEY

    @property
    def key(self) -> tuple:
        return (*(v if v is not None else f"\x00{self.alone}" for v in (self.suite, self.model, self.git_sha)),
                self.setup)

    @property
    def setup_text(self) -> str | None:
        """The setup key in a few words (setup.key_text), what the system's label shows; None
        when no field of it is recorded (nothing to show)."""
        return key_text(self.setup) if self.setup != UNKNOWN_KEY else None


def system_of(run: RepeatRun) -> System:
    """The run's system; a run with an unknown part is a system of its own."""
    ident = run.side.identity
    suite = run.side.suite if run.side.suite is not None else ident.suite
    parts = (suite, ident.model_name, ident.git_sha)
    return System(*parts, alone=None if all(p is not None for p in parts) else str(run.run_id),
                  setup=ident.setup.key)


def group_systems(runs: Iterable[RepeatRun]) -> dict[System, list[RepeatRun]]:
    """The runs grouped by system, systems in the order of their first run."""
    groups: dict[System, list[RepeatRun]] = {}
    for run in runs:
        groups.setdefault(system_of(run), []).append(run)
    return groups


# --- pooled per-task values ------------------------------------------------------------------

def set_k(runs: Sequence[RepeatRun]) -> int | None:
    """k = the minimum metrics_k of the runs; null when any run's is null (or there is none)."""
    ks = [r.side.metrics_k for r in runs]
    return None if not ks or any(k is None for k in ks) else min(ks)


def per_run_values(runs: Sequence[RepeatRun], section: str, k: int | None) -> dict[str, list[float | Fraction]]:
    """{task: [v_ir, ...]} of a section: per task, its per-task value in each run in which it
    is in the section's population (that run alone), in the runs' order; tasks in no such run
    are absent. ``section``: a SECTION_VALUES name (``resources.<field>`` for a resource).
    The one population rule of the pooled values and of planning's variance split. Exact
    values (0/1, success rates as fractions) stay exact; the others are floats."""
    value = SECTION_VALUES[section]
    values: dict[str, list[float | Fraction]] = {}
    for run in runs:
        for task_id, by_attempt in run.side.tasks.items():
            v = value(by_attempt, k)
            if v is not None:
                values.setdefault(task_id, []).append(v if is_exact(v) else float(v))
    return values


def pooled_values(runs: Sequence[RepeatRun], section: str, k: int | None) -> dict[str, float | Fraction]:
    """{task: pooled value} of a section: per task, the mean of its ``per_run_values``, exact
    (a Fraction) when they are (so that a comparison of sets computes delta exactly:
    comparison.paired_statistics), else with a correctly rounded sum; tasks in no run of the
    section are absent."""
    means = {task_id: exact_mean(values) for task_id, values in per_run_values(runs, section, k).items()}
    return {task_id: mean for task_id, mean in means.items() if mean is not None}


def pooled_section(values: Sequence[float], clamp: bool) -> dict[str, Any]:
    """repeated-runs.md "pooled.<section>" over the n tasks' pooled values x_i: mean,
    se = sqrt(sum((x_i - mean)^2) / (n - 1) / n) (null when n < 2), ci95 = mean -/+ z*se,
    clamped to [0, 1] when ``clamp``; all null with n = 0."""
    n = len(values)
    mean = fsum_mean(values)
    se = standard_error(values, mean) if mean is not None else None
    lower = upper = None
    if se is not None:
        lower, upper = number_or_none(mean - Z_95 * se), number_or_none(mean + Z_95 * se)
        if clamp:
            lower = None if lower is None else max(0.0, lower)
            upper = None if upper is None else min(1.0, upper)
    return {"n": n, "mean": mean, "se": se, "ci95": {"lower": lower, "upper": upper}}


def pooled_sections(runs: Sequence[RepeatRun], k: int | None) -> dict[str, Any]:
    """repeats.json's ``pooled``: every section, resources under ``resources``."""
    def one(name: str, clamp: bool) -> dict[str, Any]:
        values = pooled_values(runs, name, k)
        return pooled_section([values[t] for t in sorted(values)], clamp)

    return {**{name: one(name, name in CLAMPED) for name in SECTIONS},
            "resources": {f: one(f"resources.{f}", False) for f in COMPARISON_RESOURCE_FIELDS}}


# --- between runs and stability --------------------------------------------------------------

def between_runs(pass_at_1: Iterable[float | None]) -> dict[str, Any]:
    """repeated-runs.md "between_runs" over the runs whose pass_at_1 is a number: their
    count, mean, sample standard deviation (divisor runs - 1, null when runs < 2) and
    noise_floor95 = z * sqrt(2) * sd (how far apart two single runs land by chance)."""
    values = [float(v) for v in pass_at_1 if is_number(v)]
    n = len(values)
    mean = fsum_mean(values)
    sd = noise = None
    if n >= 2 and mean is not None:
        sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
        noise = Z_95 * math.sqrt(2) * sd
    return {"runs": n, "pass_at_1_mean": mean, "pass_at_1_sd": sd, "noise_floor95": noise}


def flip(attempts: int, successes: int) -> float:
    """The chance that two of a task's attempts, drawn without replacement, disagree:
    2 * c * (n - c) / (n * (n - 1)); n >= 2."""
    return 2 * successes * (attempts - successes) / (attempts * (attempts - 1))


def task_outcomes(runs: Iterable[RepeatRun]) -> dict[str, tuple[int, int]]:
    """{task: (eligible attempts, successes)} over every run (each after its de-duplication),
    every attempt number."""
    counts: dict[str, list[int]] = {}
    for run in runs:
        for task_id, by_attempt in run.side.tasks.items():
            c = counts.setdefault(task_id, [0, 0])
            for row in by_attempt.values():
                if is_eligible(row):
                    c[0] += 1
                    c[1] += row["success"] is True
    return {t: (n, s) for t, (n, s) in counts.items()}


def stability(runs: Iterable[RepeatRun]) -> dict[str, Any]:
    """repeated-runs.md "stability": a task with at least two eligible attempts is stable_pass
    (all succeed), stable_fail (none) or flaky; flip_rate = mean flip over classified tasks
    (stable ones count 0; null when none); flaky_tasks by flip descending, then task id."""
    classified = stable_pass = stable_fail = 0
    flips, flaky = [], []
    for task_id, (n, c) in sorted(task_outcomes(runs).items()):
        if n < 2:
            continue
        classified += 1
        f = flip(n, c)
        flips.append(f)
        if c == n:
            stable_pass += 1
        elif c == 0:
            stable_fail += 1
        else:
            flaky.append({"task_id": task_id, "attempts": n, "successes": c, "flip": f})
    flaky.sort(key=lambda t: (-t["flip"], t["task_id"]))
    return {"tasks_classified": classified, "stable_pass": stable_pass, "stable_fail": stable_fail,
            "flaky": len(flaky), "flip_rate": fsum_mean(flips), "flaky_tasks": flaky}


def within_run_stability(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """repeated-runs.md "stability" over one run alone ("This works for one run with repeats
    (metrics_k >= 2) as well"): ``rows`` are the run's attempt records (task_id, attempt,
    line, success, agent_eligible, ...), de-duplicated here as ``make_side`` does. The
    attempts of one run share its day, device and build, so this is a lower bound on
    run-to-run flakiness, not a measure of it."""
    side = make_side(rows, run_id=None, suite=None, metrics_k=None)
    return stability([RepeatRun(side, None)])


# --- repeats.json ----------------------------------------------------------------------------

def run_order(runs: Iterable[RepeatRun]) -> list[RepeatRun]:
    """started_at ascending (null last), then run id."""
    return sorted(runs, key=lambda r: (r.side.identity.started_at is None, r.side.identity.started_at or "",
                                       str(r.run_id)))


def _differs(values: Iterable[Any]) -> bool:
    """Two known (not None) values that are not equal."""
    return len({v for v in values if v is not None}) > 1


def repeats_warnings(runs: Sequence[RepeatRun]) -> list[str]:
    """suite_differs / model_differs / code_differs (two runs with known, unequal values),
    the setup's suite_version_differs, judge_differs, platform_differs, skills_differs (any
    two runs, setup.differs_among), metrics_k_differs (the runs' metrics_k, null counting as
    a value, not all equal); in REPEATS_WARNINGS order."""
    found = set(differs_among(r.side.identity.setup for r in runs))
    if _differs(r.side.suite for r in runs):
        found.add("suite_differs")
    if _differs(r.side.identity.model_name for r in runs):
        found.add("model_differs")
    if _differs(r.side.identity.git_sha for r in runs):
        found.add("code_differs")
    if len({r.side.metrics_k for r in runs}) > 1:
        found.add("metrics_k_differs")
    return [code for code in REPEATS_WARNINGS if code in found]


def repeats(runs: Sequence[RepeatRun], targets: Sequence[float] = TARGETS) -> dict[str, Any]:
    """repeats.json of a set of runs (repeated-runs.md), keys in its order, then ``planning``:
    the variance split of each gate section, runs needed for each change in ``targets``
    (planning.md section 2)."""
    ordered = run_order(runs)
    first = system_of(ordered[0]) if ordered else System(None, None, None)
    task_sets = [set(r.side.tasks) for r in runs]
    k = set_k(runs)
    return {
        "schema_version": SCHEMA_VERSION,
        "system": {"suite": first.suite, "model": first.model, "git_sha": first.git_sha},
        "warnings": repeats_warnings(runs),
        "k": k,
        "runs": [{"run_id": r.run_id, "started_at": r.side.identity.started_at,
                  "pass_at_1": r.pass_at_1 if is_number(r.pass_at_1) else None} for r in ordered],
        "tasks": {"observed": len(set().union(*task_sets)) if task_sets else 0,
                  "in_every_run": len(set.intersection(*task_sets)) if task_sets else 0},
        "pooled": pooled_sections(runs, k),
        "between_runs": between_runs(r.pass_at_1 for r in runs),
        "stability": stability(runs),
        "planning": {name: variance_split(per_run_values(runs, name, k), targets) for name in PLANNED_SECTIONS},
    }


# --- comparing two sets of runs --------------------------------------------------------------

def _side_facts(runs: Sequence[RepeatRun]) -> dict[str, Any]:
    return {"runs": [r.run_id for r in runs], "suite": runs[0].side.suite if runs else None,
            "metrics_k": set_k(runs)}


def set_warnings(baseline: Sequence[RepeatRun], candidate: Sequence[RepeatRun], paired: int) -> list[str]:
    """The repeated comparison's warnings in SET_WARNINGS order (repeated-runs.md): the
    setup's ``<part>_differs`` over any two runs of either side (setup.differs_among)."""
    every = [*baseline, *candidate]
    found = set(differs_among(r.side.identity.setup for r in every))
    if _differs(r.side.suite for r in every):
        found.add("suite_differs")
    if len({r.side.metrics_k for r in every}) > 1:
        found.add("metrics_k_differs")
    for name, runs in (("baseline", baseline), ("candidate", candidate)):
        if _differs(r.side.identity.model_name for r in runs) or _differs(r.side.identity.git_sha for r in runs):
            found.add(f"{name}_systems_differ")
    if paired == 0:
        found.add("no_paired_tasks")
    return [code for code in SET_WARNINGS if code in found]


def compare_sets(baseline: Sequence[RepeatRun], candidate: Sequence[RepeatRun],
                 max_drop: float | None = None, targets: Sequence[float] = TARGETS) -> dict[str, Any]:
    """comparison.json in the repeated form (repeated-runs.md "Comparing two sets of runs"):
    tasks observed in at least one run of each side are paired; each section pairs the
    tasks in it on both sides, b_i / c_i their pooled values, with comparison.md's paired
    statistics and its interval verdict (reversed for the resources); the gate as there.
    The gate sections also carry ``planning`` for the changes in ``targets`` (planning.md
    section 3)."""
    max_drop = check_max_drop(max_drop)
    if not baseline or not candidate:
        raise ValueError("each side of a comparison needs at least one run")
    b_tasks = set().union(*(r.side.tasks for r in baseline))
    c_tasks = set().union(*(r.side.tasks for r in candidate))
    paired = sorted(b_tasks & c_tasks)
    b_facts, c_facts = _side_facts(baseline), _side_facts(candidate)
    k = None if b_facts["metrics_k"] is None or c_facts["metrics_k"] is None else min(b_facts["metrics_k"], c_facts["metrics_k"])

    def section(name: str, more_is_better: bool = True) -> dict[str, Any]:
        b, c = pooled_values(baseline, name, k), pooled_values(candidate, name, k)
        pairs = [(b[t], c[t]) for t in paired if t in b and t in c]
        out = mean_section(pairs, more_is_better)
        if name in PLANNED_SECTIONS:
            out["planning"] = repeated_planning(per_run_values(baseline, name, k), per_run_values(candidate, name, k),
                                                out["mde80"], targets)
        return out

    sections = {
        **{name: section(name) for name in SECTIONS},
        "resources": {f: section(f"resources.{f}", more_is_better=False) for f in COMPARISON_RESOURCE_FIELDS},
    }
    b_first, c_first = pooled_values(baseline, "first_attempt", k), pooled_values(candidate, "first_attempt", k)
    both = [t for t in paired if t in b_first and t in c_first]
    return {
        "schema_version": COMPARISON_SCHEMA_VERSION,
        "mode": "repeated",
        "baseline": b_facts,
        "candidate": c_facts,
        "k": k,
        "warnings": set_warnings(baseline, candidate, len(paired)),
        "tasks": {"paired": len(paired), "only_baseline": sorted(b_tasks - c_tasks),
                  "only_candidate": sorted(c_tasks - b_tasks)},
        **sections,
        "regressions": [t for t in both if b_first[t] == 1 and c_first[t] == 0],
        "improvements": [t for t in both if b_first[t] == 0 and c_first[t] == 1],
        "gate": release_gate(sections["first_attempt"], sections["task_success"], max_drop),
    }


def pass_at_1_of(metrics: Mapping[str, Any]) -> float | None:
    """capability.pass_at_1.value of a metrics.json, None when null or absent."""
    value = ((metrics.get("capability") or {}).get("pass_at_1") or {}).get("value")
    return float(value) if is_number(value) else None


def repeat_run_of(processed: Any, run_dir: Any = None) -> RepeatRun:
    """A processed run (``pipeline.run_stages(...).processed``) as a RepeatRun."""
    from .comparison_sides import side_from_processed

    return RepeatRun(side_from_processed(processed, run_dir), pass_at_1_of(processed.metrics))
