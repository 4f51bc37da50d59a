"""Stage 3 edge cases: grouping attempt rows into tasks (metrics-reference.txt 3.7,
"aggregate.per_task" in 2; readings R19, R26, R29, R30, R31).

Grouping is by task_id and *actual* attempt number; a duplicated task/attempt keeps the
later line. The task-level metrics (pass metrics, oracle, first success, cost to first
success, per_task) are computed from attempt rows in memory (``support.attempt_rows``:
group_tasks, then the capability sections); one case goes through a run folder, where the
point is stage 2's legacy key reaching the task groups.
"""

from __future__ import annotations

import pytest

from bench_pipeline.attempt_metrics import outcome
from bench_pipeline.capability import per_task
from bench_pipeline.comparison import first_attempt_value, pass_at_k_value, task_success_value
from bench_pipeline.pipeline import run_stages
from bench_pipeline.task_groups import (
    ek_window,
    eligible_attempts,
    group_tasks,
    in_e1,
    is_eligible,
    success_rate,
    task_group,
)

from .run_builder import make_run, row
from .support.attempt_rows import attempt, in_file_order, metrics_of, unknown


def _pm(m: dict, name: str) -> tuple:
    x = m["capability"][name]
    return x["successes"], x["eligible_tasks"], x["total_tasks"], x["value"]


# --- pass_at_1 (3.7) ------------------------------------------------------------------

def test_pass_at_1_uses_actual_attempt_1():
    rows = [attempt("A", 2, "passed"), attempt("A", 3, "passed"), attempt("B", 1, "passed"), attempt("C", 1, "failed")]
    m = metrics_of(rows, 1)
    assert _pm(m, "pass_at_1") == (1, 2, 3, 0.5)
    assert m["coverage"]["pass_at_1"] == pytest.approx(2 / 3)
    assert m["coverage"]["unique_tasks"] == 3


def test_pass_at_1_ineligible_attempt_1_leaves_e1():
    rows = [attempt("A", 1, "skipped"), attempt("A", 2, "passed"), attempt("B", 1, "passed")]
    m = metrics_of(rows, 1)
    assert _pm(m, "pass_at_1") == (1, 1, 2, 1.0)
    assert m["coverage"]["pass_at_1"] == 0.5


def test_eligible_unknown_success_is_in_denominator_not_a_success():
    rows = [unknown("A"), attempt("B", 1, "passed")]
    m = metrics_of(rows, 1)
    assert _pm(m, "pass_at_1") == (1, 2, 2, 0.5)
    assert _pm(m, "pass_at_k") == (1, 2, 2, 0.5)
    assert _pm(m, "pass_pow_k") == (1, 2, 2, 0.5)


def test_at_k_1_the_three_pass_metrics_coincide():
    rows = [attempt("A", 1, "passed"), attempt("B", 1, "failed"), attempt("C", 1, "skipped"),
            attempt("C", 2, "passed"), attempt("D", 1, "passed"), attempt("D", 2, "failed")]
    m = metrics_of(rows, 1)
    assert _pm(m, "pass_at_1") == _pm(m, "pass_at_k") == _pm(m, "pass_pow_k") == (2, 3, 4, 2 / 3)
    assert m["coverage"]["pass_at_1"] == m["coverage"]["pass_at_k"] == m["coverage"]["pass_pow_k"] == 0.75


# --- pass_at_k / pass_pow_k (3.7) ----------------------------------------------------

def test_ek_requires_every_attempt_1_to_k_present_and_eligible():
    rows = [
        # A: in Ek; success only beyond k (attempt 4) does not count for pass_at_k.
        attempt("A", 1, "failed"), attempt("A", 2, "failed"), attempt("A", 3, "passed"), attempt("A", 4, "passed"),
        attempt("B", 1, "passed"), attempt("B", 2, "passed"), attempt("B", 3, "passed"),
        attempt("C", 1, "passed"), attempt("C", 2, "passed"),                                # attempt 3 missing
        attempt("D", 1, "passed"), attempt("D", 2, "skipped"), attempt("D", 3, "passed"),    # ineligible inside k
        attempt("E", 1, "passed"), attempt("E", 2, "passed"), unknown("E", 3),               # unknown is not success
        attempt("F", 1, "failed"), attempt("F", 2, "failed"), attempt("F", 3, "failed"), attempt("F", 4, "passed"),
        attempt("G", 2, "passed"), attempt("G", 3, "passed"), attempt("G", 4, "passed"),     # attempt 1 missing
    ]
    m = metrics_of(rows, 3)
    assert _pm(m, "pass_at_k") == (3, 4, 7, 0.75)        # Ek = A, B, E, F; any success: A, B, E
    assert _pm(m, "pass_pow_k") == (1, 4, 7, 0.25)       # all k successes: B
    assert m["coverage"]["pass_at_k"] == m["coverage"]["pass_pow_k"] == pytest.approx(4 / 7)
    assert _pm(m, "pass_at_1") == (4, 6, 7, pytest.approx(4 / 6))  # E1 = A..F


def test_k_larger_than_any_task_gives_null_pass_at_k():
    m = metrics_of([attempt("A", 1, "passed"), attempt("A", 2, "passed")], 3)
    pk = m["capability"]["pass_at_k"]
    assert (pk["value"], pk["successes"], pk["eligible_tasks"], pk["total_tasks"]) == (None, 0, 0, 1)
    assert pk["ci95"] == {"lower": None, "upper": None}
    assert m["capability"]["pass_pow_k"]["value"] is None
    assert m["coverage"]["pass_at_k"] == 0
    assert m["capability"]["oracle_best_score_at_k"] == {"value": None, "count": 0, "eligible_tasks": 0}


def test_k_from_observed_when_manifest_silent():
    rows = [attempt("A", 1, "failed"), attempt("A", 2, "passed"), attempt("B", 1, "failed"),
            attempt("B", 2, "failed"), attempt("B", 3, "passed")]
    m = metrics_of(rows)  # no metrics_k: stage 1's k of the rows (run_reader.resolve_metrics_k)
    assert m["coverage"]["metrics_k"] == 2
    assert _pm(m, "pass_at_k") == (1, 2, 2, 0.5)


# --- duplicates in task grouping (3.7, R29) -------------------------------------------

def test_later_duplicate_line_wins_in_task_grouping():
    rows = [attempt("A", 1, "failed", task_wall_ms=100), attempt("A", 1, "passed", task_wall_ms=300)]
    m = metrics_of(rows, 1)
    assert _pm(m, "pass_at_1") == (1, 1, 1, 1.0)
    assert m["coverage"]["unique_tasks"] == 1
    assert m["aggregate"]["per_task"]["A"]["attempts"] == 1
    assert m["aggregate"]["per_task"]["A"]["avg_wall_ms"] == 300
    assert m["capability"]["first_success_attempt"] == {"mean": 1, "p50": 1, "count": 1}
    assert m["cost_to_first_success"]["task_wall_ms"] == {"count": 1, "mean": 300, "p50": 300}


def test_later_ineligible_duplicate_removes_task_from_e1():
    rows = [attempt("A", 1, "passed"), attempt("A", 1, "skipped")]
    m = metrics_of(rows, 1)
    assert _pm(m, "pass_at_1") == (0, 0, 1, None)
    assert m["coverage"]["pass_at_1"] == 0
    assert m["capability"]["first_success_attempt"]["count"] == 0


def test_later_duplicate_wins_regardless_of_attempt_order():
    rows = [attempt("A", 2, "passed"), attempt("A", 1, "passed"), attempt("A", 2, "failed")]
    m = metrics_of(rows, 2)
    assert _pm(m, "pass_pow_k") == (0, 1, 1, 0.0)
    assert _pm(m, "pass_at_k") == (1, 1, 1, 1.0)


def test_grouping_follows_line_numbers_not_list_order():
    """3.7, R29: the later *line* wins, whatever order the rows are handed over in."""
    early, late = attempt("A", 1, "failed", line=1), attempt("A", 1, "passed", line=2)
    for rows in ([early, late], [late, early]):
        (task,) = group_tasks(rows, 1)
        assert (task["attempts"], task["passed"], task["in_e1"], task["attempt1_success"]) == (1, 1, True, True)


# --- oracle_best_score_at_k (3.7) --------------------------------------------------------

def test_oracle_best_score_at_k():
    rows = [
        attempt("A", 1, "failed", quality_score=0.2), attempt("A", 2, "failed", quality_score=0.6),
        attempt("A", 3, "passed", quality_score=1.0),                      # beyond k: not used
        attempt("B", 1, "failed", quality_score=None), attempt("B", 2, "failed", quality_score=0.4),
        attempt("C", 1, "failed"), attempt("C", 2, "failed"),              # no numeric quality: omitted
        attempt("D", 1, "passed", quality_score=0.8), attempt("D", 2, "skipped", quality_score=0.9),  # not in Ek
        attempt("E", 1, "failed", quality_score=None),                     # recorded true: unavailable
        attempt("E", 2, "failed", quality_score=0.5),
    ]
    o = metrics_of(rows, 2)["capability"]["oracle_best_score_at_k"]
    assert o["eligible_tasks"] == 4
    assert o["count"] == 3
    assert o["value"] == pytest.approx((0.6 + 0.4 + 0.5) / 3)


def test_oracle_zero_quality_is_a_value():
    o = metrics_of([attempt("A", 1, "failed", quality_score=0)], 1)["capability"]["oracle_best_score_at_k"]
    assert (o["value"], o["count"], o["eligible_tasks"]) == (0, 1, 1)


# --- first success and cost to first success (3.7) --------------------------------------

def test_first_success_prefix_rules():
    rows = [
        attempt("A", 1, "failed", task_wall_ms=100, total_tokens=10, cost_usd=0.1),
        attempt("A", 2, "passed", task_wall_ms=200, total_tokens=20, cost_usd=0.2),  # beyond k=1
        attempt("B", 1, "failed"), attempt("B", 2, "skipped"), attempt("B", 3, "passed"),  # prefix ends at 2
        attempt("C", 1, "failed"), attempt("C", 3, "passed"),                         # attempt 2 missing
        attempt("D", 1, "passed", task_wall_ms=50, total_tokens=5, cost_usd=0.05),
        unknown("E", 1, total_tokens=1), attempt("E", 2, "passed", task_wall_ms=70, total_tokens=2),
        attempt("F", 2, "passed"),                                                    # no attempt 1
        attempt("G", 1, "failed"), attempt("G", 2, "failed"),                         # never succeeds
    ]
    m = metrics_of(rows, 1)
    fs = m["capability"]["first_success_attempt"]
    assert fs["count"] == 3                        # A (2), D (1), E (2)
    assert fs["mean"] == pytest.approx(5 / 3)
    assert fs["p50"] == 2
    cfs = m["cost_to_first_success"]
    assert cfs["task_wall_ms"] == {"count": 2, "mean": 175, "p50": 175}      # E lacks attempt 1's time
    assert cfs["total_tokens"]["count"] == 3
    assert cfs["total_tokens"]["mean"] == pytest.approx((30 + 5 + 3) / 3)
    assert cfs["total_tokens"]["p50"] == 5
    assert cfs["cost_usd"]["count"] == 2
    assert cfs["cost_usd"]["mean"] == pytest.approx((0.3 + 0.05) / 2)


def test_cost_to_first_success_requires_numeric_values():
    rows = [attempt("A", 1, "failed", task_wall_ms=None, cost_usd=0),  # recorded true: unavailable
            attempt("A", 2, "passed", task_wall_ms=10, cost_usd=0)]
    cfs = metrics_of(rows, 1)["cost_to_first_success"]
    assert cfs["task_wall_ms"] == {"count": 0, "mean": None, "p50": None}
    assert cfs["cost_usd"] == {"count": 1, "mean": 0, "p50": 0}


def test_first_success_beyond_k():
    rows = [attempt("A", n, "failed") for n in (1, 2, 3, 4)] + [attempt("A", 5, "passed")]
    fs = metrics_of(rows, 2)["capability"]["first_success_attempt"]
    assert fs == {"mean": 5, "p50": 5, "count": 1}


# --- aggregate.per_task (2, R29, R30, R31) ----------------------------------------------

PER_TASK_KEYS = {"attempts", "eligible_attempts", "passed", "failed", "pass_rate", "best_quality",
                 "avg_quality", "avg_wall_ms", "first_attempt_passed"}


def test_per_task_counts_and_known_values():
    rows = [
        attempt("T", 3, "skipped", quality_score=0.9, task_wall_ms=1000),
        attempt("T", 2, "passed", quality_score=0.5, task_wall_ms=200),
        attempt("T", 1, "failed", quality_score=0.0, task_wall_ms=100),
        unknown("T", 4),
    ]
    pt = metrics_of(rows)["aggregate"]["per_task"]["T"]
    assert set(pt) == PER_TASK_KEYS
    assert pt["attempts"] == 4
    assert pt["eligible_attempts"] == 3
    assert (pt["passed"], pt["failed"]) == (1, 1)
    assert pt["pass_rate"] == pytest.approx(1 / 3)
    assert pt["best_quality"] == 0.5                       # the ineligible 0.9 is left out (R30)
    assert pt["avg_quality"] == pytest.approx((0.5 + 0.0) / 2)
    assert pt["avg_wall_ms"] == pytest.approx((200 + 100) / 2)
    assert pt["first_attempt_passed"] is False             # attempt 1 by number, not line order


def test_per_task_first_attempt_passed_is_first_eligible():
    rows = [attempt("U", 1, "skipped"), attempt("U", 2, "passed"), attempt("U", 3, "failed")]
    pt = metrics_of(rows)["aggregate"]["per_task"]["U"]
    assert pt["first_attempt_passed"] is True
    assert pt["pass_rate"] == 0.5


def test_per_task_first_eligible_unknown_is_null():
    rows = [attempt("U", 1, "skipped"), unknown("U", 2), attempt("U", 3, "passed")]
    pt = metrics_of(rows)["aggregate"]["per_task"]["U"]
    assert pt["first_attempt_passed"] is None
    assert (pt["eligible_attempts"], pt["passed"], pt["failed"]) == (2, 1, 0)
    assert pt["pass_rate"] == 0.5


def test_per_task_all_ineligible():
    """R30: a task without an eligible attempt stays listed, with its counts and nulls, even
    when its ineligible attempts have a quality and a wall time."""
    rows = [attempt("V", 1, "skipped", quality_score=0.3, task_wall_ms=40), attempt("V", 2, "judge_error")]
    pt = metrics_of(rows)["aggregate"]["per_task"]["V"]
    assert pt == {"attempts": 2, "eligible_attempts": 0, "passed": 0, "failed": 0, "pass_rate": None,
                  "best_quality": None, "avg_quality": None, "avg_wall_ms": None, "first_attempt_passed": None}


def test_per_task_ineligible_timeout_and_judge_error_keep_out_their_numbers():
    """R30: an ineligible timeout and an ineligible judge error with wall times and
    qualities change none of the task's quality or wall-time values."""
    rows = [
        attempt("Y", 1, "failed", quality_score=0.25, task_wall_ms=1000),
        attempt("Y", 2, "timeout", agent_eligible=False, success=None, failure_class="unknown",
                quality_score=1.0, task_wall_ms=300000),
        attempt("Y", 3, "judge_error", quality_score=0.9, task_wall_ms=5000),
        attempt("Y", 4, "passed", quality_score=0.75, task_wall_ms=3000),
    ]
    pt = metrics_of(rows)["aggregate"]["per_task"]["Y"]
    assert (pt["attempts"], pt["eligible_attempts"], pt["passed"], pt["failed"]) == (4, 2, 1, 1)
    assert (pt["best_quality"], pt["avg_quality"], pt["avg_wall_ms"]) == (0.75, 0.5, 2000)


def test_per_task_formula_in_memory():
    """task_group and capability.per_task on one task's attempts (R30, R31)."""
    by_attempt = {
        1: attempt("Z", 1, "skipped", line=1, quality_score=0.9, task_wall_ms=90000),  # ineligible, with numbers
        2: attempt("Z", 2, "failed", line=2, quality_score=0.2, task_wall_ms=1000),
        3: attempt("Z", 3, "passed", line=3, task_wall_ms=3000),                       # eligible without a quality
        4: unknown("Z", 4, line=4, quality_score=0.6),                                  # unknown success, no wall time
    }
    pt = per_task([task_group("Z", by_attempt, None)])["Z"]
    assert pt == {"attempts": 4, "eligible_attempts": 3, "passed": 1, "failed": 1,
                  "pass_rate": pytest.approx(1 / 3), "best_quality": 0.6,
                  "avg_quality": pytest.approx(0.4), "avg_wall_ms": 2000, "first_attempt_passed": False}
    only_ineligible = per_task([task_group("Z", {1: by_attempt[1]}, None)])["Z"]
    assert only_ineligible == {"attempts": 1, "eligible_attempts": 0, "passed": 0, "failed": 0, "pass_rate": None,
                               "best_quality": None, "avg_quality": None, "avg_wall_ms": None,
                               "first_attempt_passed": None}


def test_per_task_without_numbers():
    pt = metrics_of([attempt("W", 1, "failed", quality_score=None, task_wall_ms=None)])["aggregate"]["per_task"]["W"]
    assert (pt["best_quality"], pt["avg_quality"], pt["avg_wall_ms"]) == (None, None, None)
    assert (pt["pass_rate"], pt["first_attempt_passed"]) == (0.0, False)


def test_per_task_uses_deduplicated_attempts():
    rows = [attempt("X", 1, "failed", quality_score=0.1), attempt("X", 1, "passed", quality_score=0.7),
            attempt("X", 2, "failed")]
    m = metrics_of(rows)
    pt = m["aggregate"]["per_task"]["X"]
    assert (pt["attempts"], pt["eligible_attempts"], pt["passed"], pt["failed"]) == (2, 2, 1, 1)
    assert (pt["best_quality"], pt["avg_quality"]) == (0.7, 0.7)
    assert pt["first_attempt_passed"] is True
    assert m["aggregate"]["tasks"] == 3                    # legacy meaning: attempt rows


def test_per_task_has_every_observed_task():
    rows = [attempt("a"), attempt("b", 2, "failed"), attempt("c", 1, "skipped")]
    pt = metrics_of(rows)["aggregate"]["per_task"]
    assert set(pt) == {"a", "b", "c"}


def test_task_rows_in_order_of_first_appearance():
    """3.7: one task row per observed task, in the order the tasks first appear."""
    rows = in_file_order([attempt("b", 2, "failed"), attempt("a"), attempt("b", 1), attempt("c", 1, "skipped")])
    assert [t["task_id"] for t in group_tasks(rows, 1)] == ["b", "a", "c"]


def test_per_task_avg_wall_uses_legacy_wall_ms(tmp_path):
    """Through a run folder: stage 2 reads the legacy wall_ms key (R7), in ``metrics`` or at
    the top level, into task_wall_ms, which per_task and cost to first success use."""
    rows = [row("L", 1, "failed", metrics={"wall_ms": 100}), row("L", 2, "passed", wall_ms=300, metrics={})]
    m = run_stages(make_run(tmp_path, rows, manifest={"status": "completed", "metrics_k": 1})).processed.metrics
    assert m["aggregate"]["per_task"]["L"]["avg_wall_ms"] == 200
    assert m["cost_to_first_success"]["task_wall_ms"] == {"count": 1, "mean": 400, "p50": 400}


# --- E1, Ek and the task's success rate, in memory (3.7; one definition, read by comparison) --

def _att(success: bool | None, eligible: bool, n: int = 1) -> dict:
    """Attempt ``n`` of task A with this success and eligibility."""
    status = {True: "passed", False: "failed", None: "judge_error"}[success]
    return attempt("A", n, status, line=n, success=success, agent_eligible=eligible)


def test_e1_and_ek_membership_in_memory():
    full = {1: _att(False, True, 1), 2: _att(True, True, 2), 3: _att(True, True, 3)}
    assert in_e1(full) and ek_window(full, 3) == [full[1], full[2], full[3]]
    assert ek_window(full, 2) == [full[1], full[2]]
    gap = {1: _att(True, True, 1), 3: _att(True, True, 3), 4: _att(True, True, 4)}  # 3 rows, attempt 2 missing
    assert in_e1(gap) and ek_window(gap, 3) is None
    late = {2: _att(True, True, 2)}
    assert not in_e1(late) and ek_window(late, 1) is None
    ineligible_first = {1: _att(None, False, 1), 2: _att(True, True, 2)}
    assert not in_e1(ineligible_first) and ek_window(ineligible_first, 2) is None
    assert ek_window(full, None) is None and ek_window(full, 0) is None  # k unknown
    assert ek_window(full, 10**12) is None  # k far beyond the task's attempts (R26)


def test_success_rate_over_every_eligible_attempt():
    by_attempt = {1: _att(True, True, 1), 2: _att(False, True, 2), 3: _att(None, True, 3), 4: _att(None, False, 4),
                  5: _att(True, True, 5)}
    eligible = eligible_attempts(by_attempt)
    assert eligible == [by_attempt[1], by_attempt[2], by_attempt[3], by_attempt[5]]
    assert success_rate(eligible) == 0.5  # 2 successes / 4 eligible (unknown counts, R19; beyond k too)
    assert success_rate([]) is None


@pytest.mark.parametrize("raw", [True, False, None, 1, 0, "true", "yes", "", [], {}])
def test_eligibility_after_derivation_is_boolean_so_both_readings_agree(raw):
    """The attempt frame's agent_eligible comes from attempt_metrics.outcome: a raw value that is
    not a Boolean (1, "true", null, ...) is inferred from status and class, so the value E1/Ek
    read is always True or False and "truthy" and "is True" cannot differ on it. The one rule
    (``is_eligible``: only True) is what task groups and comparison both read."""
    for status in ("passed", "failed", "timeout", "skipped", "judge_error"):
        derived = outcome({"status": status, "agent_eligible": raw, "failure_class": None, "success": None})
        assert type(derived["agent_eligible"]) is bool
        assert is_eligible(derived) is bool(derived["agent_eligible"])


def test_non_boolean_eligibility_is_not_eligible():
    """A truthy non-Boolean (a hand-edited attempts.jsonl) is not eligible: the rule is
    "agent_eligible is true", for task groups and comparison alike."""
    by_attempt = {1: {**_att(True, True, 1), "agent_eligible": 1}, 2: {**_att(True, True, 2), "agent_eligible": "yes"}}
    assert not is_eligible(by_attempt[1]) and not in_e1(by_attempt) and ek_window(by_attempt, 2) is None
    assert first_attempt_value(by_attempt) is None and pass_at_k_value(by_attempt, 2) is None
    assert task_success_value(by_attempt) is None
    task = task_group("A", by_attempt, 2)
    assert (task["in_e1"], task["in_ek"], task["eligible_attempts"], task["pass_rate"]) == (False, False, 0, None)


def test_task_group_and_comparison_read_the_same_membership():
    rows = {1: _att(True, True, 1), 2: _att(False, True, 2), 3: _att(True, False, 3)}
    for k in (1, 2, 3):
        group = task_group("A", rows, k)
        assert group["in_e1"] is (first_attempt_value(rows) is not None)
        assert group["in_ek"] is (pass_at_k_value(rows, k) is not None)
        assert group["pass_rate"] == task_success_value(rows) == 0.5
