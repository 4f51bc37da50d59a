"""Edge cases of the small statistics (metrics-reference.txt 3.8, run-directory.md, R42).

Written from the specification: percentiles by linear interpolation, count/sum/mean with
nulls for no values, Wilson 95% bounds clipped to [0, 1] and null for n = 0, and what
counts as a number (never a Boolean, never NaN/Infinity or an integer beyond float range).
"""

from __future__ import annotations

import math

import pytest

from bench_pipeline.pipeline import run_stages
from bench_pipeline.stats import (
    Z_95,
    distribution,
    finite_mean,
    fsum_mean,
    is_number,
    is_real_number,
    numbers,
    percentile,
    rubric_pass_rate,
    standard_error,
    wilson_interval,
)

from .run_builder import make_run, row
from .support.attempt_rows import attempt, metrics_of


# --- percentiles (3.8) -----------------------------------------------------------------

def test_percentile_reference_example():
    xs = [100, 200, 900]
    assert percentile(xs, 50) == 200
    assert percentile(xs, 90) == pytest.approx(760)
    assert percentile(xs, 95) == pytest.approx(830)


@pytest.mark.parametrize(
    ("values", "p", "expected"),
    [
        ([1, 2, 3, 4], 50, 2.5),          # h = 1.5
        ([0, 10], 95, 9.5),               # h = 0.95
        ([0, 10], 0, 0),
        ([0, 10], 100, 10),               # c = min(f + 1, n - 1)
        ([5, 5, 5], 90, 5),
        ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 90, 9.1),
        ([-4, 0, 4], 50, 0),
    ],
)
def test_percentile_linear_interpolation(values, p, expected):
    assert percentile(values, p) == pytest.approx(expected)


def test_percentile_single_sample_equals_it():
    assert percentile([42], 50) == percentile([42], 90) == percentile([42], 95) == 42


def test_percentile_no_values_is_null():
    assert percentile([], 50) is None


# --- distributions (3.8) ---------------------------------------------------------------

def test_distribution_unsorted_input():
    d = distribution([900, 100, 200])
    assert d["count"] == 3
    assert d["sum"] == 1200
    assert d["mean"] == 400
    assert d["p50"] == 200
    assert d["p90"] == pytest.approx(760)
    assert d["p95"] == pytest.approx(830)


def test_distribution_empty_is_count_zero_and_nulls():
    assert distribution([]) == {"count": 0, "sum": None, "mean": None, "p50": None, "p90": None, "p95": None}


def test_distribution_includes_zero_values():
    d = distribution([0, 0, 6])
    assert (d["count"], d["sum"], d["mean"], d["p50"]) == (3, 6, 2, 0)


# --- Wilson bounds (3.8) ---------------------------------------------------------------

def test_wilson_null_with_no_trials():
    assert wilson_interval(0, 0) == (None, None)


#: Wilson bounds at z = 1.959963984540054 (reference 3.8): p = s/n, d = 1 + z^2/n,
#: center = (p + z^2/(2n)) / d, margin = z * sqrt(p(1-p)/n + z^2/(4n^2)) / d, evaluated once
#: and written out. 3 of 4 is the reference's worked example (0.300641, 0.954412).
WILSON_BOUNDS = [
    (1, 1, 0.20654931437723745, 1.0),
    (0, 1, 0.0, 0.7934506856227626),
    (1, 10, 0.017876213095072896, 0.4041500267952385),
    (5, 7, 0.35893445183261935, 0.9177810759959433),
    (3, 4, 0.30064184258240184, 0.9544127391902995),
    (50, 100, 0.4038315303659956, 0.5961684696340044),
    (99, 100, 0.9455138038212946, 0.9982325679358593),
    (1, 2, 0.09453120573423074, 0.9054687942657693),
]


@pytest.mark.parametrize(("s", "n", "lower", "upper"), WILSON_BOUNDS)
def test_wilson_matches_reference_formula(s, n, lower, upper):
    got_lower, got_upper = wilson_interval(s, n)
    assert got_lower == pytest.approx(lower, abs=1e-12)
    assert got_upper == pytest.approx(upper, abs=1e-12)
    assert 0 <= got_lower <= s / n <= got_upper <= 1


def test_wilson_clipped_at_zero_and_one():
    # s = 0: center = margin exactly, so the lower bound is 0; s = n: the upper bound is 1.
    lower, upper = wilson_interval(0, 5)
    assert lower == 0
    assert upper == pytest.approx(0.43448246478317476)
    lower, upper = wilson_interval(5, 5)
    assert upper == 1
    assert lower == pytest.approx(0.5655175352168251)


def test_wilson_z_is_the_reference_constant():
    assert Z_95 == 1.959963984540054


# --- what is a number (run-directory.md, R42) ------------------------------------------

@pytest.mark.parametrize("value", [0, 1, -3, 2.5, 0.0, 10**300, 1e308])
def test_numbers(value):
    assert is_number(value) is True


@pytest.mark.parametrize(
    "value",
    [True, False, None, "1", "NaN", [1], {"a": 1}, float("nan"), float("inf"), float("-inf"), 10**400, -(10**400)],
)
def test_not_numbers(value):
    assert is_number(value) is False


# --- the same rules in the run aggregates (the first case through a whole run) -----------

def test_distribution_through_pipeline_skips_unavailable_values(tmp_path):
    """Booleans, NaN, Infinity and huge integers are unavailable, so not in the sample."""
    rows = [
        row("a", metrics={"task_wall_ms": 100}),
        row("b", metrics={"task_wall_ms": True}),
        row("c", metrics={"task_wall_ms": float("nan")}),
        row("d", metrics={"task_wall_ms": float("inf")}),
        row("e", metrics={"task_wall_ms": 10**400}),
        row("f", metrics={"task_wall_ms": 300}),
    ]
    dist = run_stages(make_run(tmp_path, rows)).processed.metrics["efficiency"]["task_wall_ms"]
    assert dist == {"count": 2, "sum": 400, "mean": 200, "p50": 200, "p90": pytest.approx(280), "p95": pytest.approx(290)}


def test_attempt_success_interval_of_the_eligible_rows():
    rows = [attempt("a"), attempt("b", status="failed"), attempt("c", status="failed"), attempt("d", status="skipped")]
    asr = metrics_of(rows)["capability"]["attempt_success_rate"]
    # 1 success of 3 eligible rows (the skipped row is ineligible): Wilson bounds at s = 1, n = 3
    assert asr["ci95"]["lower"] == pytest.approx(0.06149194472039621)
    assert asr["ci95"]["upper"] == pytest.approx(0.7923403991979522)


def test_the_float_range_boundary_is_the_largest_float():
    """R42 "integers beyond the float range": larger than the largest float, even where
    float() would still round such an integer down to it."""
    from bench_pipeline.stats import FLOAT_MAX_INT, number_or_none

    assert FLOAT_MAX_INT == int(1.7976931348623157e308)
    assert is_number(FLOAT_MAX_INT) and is_number(-FLOAT_MAX_INT)
    assert float(FLOAT_MAX_INT + 1) == 1.7976931348623157e308  # rounds, yet is beyond the range
    assert not is_number(FLOAT_MAX_INT + 1) and number_or_none(FLOAT_MAX_INT + 1) is None


class _Int(int):
    pass


class _Float(float):
    pass


@pytest.mark.parametrize("value", [0, -7, 2.5, 10**308, 10**309, float("nan"), float("-inf"), True, None, "3",
                                   _Int(4), _Int(10**400), _Float(1.5), _Float("inf")])
def test_number_or_none_agrees_with_is_number(value):
    from bench_pipeline.stats import number_or_none

    got = number_or_none(value)
    assert (got is not None) == is_number(value)
    assert got is None or got is value


# --- totals that leave the float range (R42 for results) ---------------------------------

def test_a_sum_beyond_the_float_range_is_unavailable():
    from bench_pipeline.stats import FLOAT_MAX_INT, finite_mean, finite_sum, ratio

    assert finite_sum([1, 2.5, 3]) == 6.5 and finite_sum([]) == 0
    assert finite_sum([1.7e308, 1.7e308]) is None  # a float sum overflowing to infinity
    assert finite_sum([FLOAT_MAX_INT, FLOAT_MAX_INT]) is None  # an integer sum beyond the range
    assert finite_sum([FLOAT_MAX_INT, FLOAT_MAX_INT, 0.5]) is None  # ... that then meets a float
    assert finite_sum([FLOAT_MAX_INT, -FLOAT_MAX_INT, 7]) == 7  # exact integer arithmetic
    assert finite_mean([]) is None and finite_mean([1.7e308, 1.7e308]) is None and finite_mean([1, 2]) == 1.5
    assert ratio(FLOAT_MAX_INT, 1) is not None and ratio(10**400, 1) is None and ratio(1, 0) is None


def test_percentiles_of_values_near_both_ends_of_the_float_range():
    """x[f] + (x[c] - x[f]) * t overflows when the values span more than the float range;
    the same interpolation is then computed without leaving it."""
    from bench_pipeline.stats import FLOAT_MAX_INT

    assert percentile([-1.7e308, 1.7e308], 50) == 0.0
    assert percentile([-FLOAT_MAX_INT, FLOAT_MAX_INT], 50) == 0.0
    assert percentile([1, 2, 3, 4], 90) == pytest.approx(3.7)
    d = distribution([1.7e308, 1.7e308, 1.0])
    assert (d["count"], d["sum"], d["mean"], d["p50"]) == (3, None, None, 1.7e308)


@pytest.mark.parametrize("values", [
    [], [None, None], [3, None, 1, 2], [2.5, None, -0.0, 1e308], [1, 2.5, None, 3],
    [1, 10**309, -(10**309), 2], [1.5, float("nan"), 2.5, float("inf")], [True, 1, False, 0.0],
    [_Int(4), 5], [_Float(1.5), 2.0], ["3", 3, [1], {"a": 1}], [10**308, -(10**308)],
])
def test_numbers_keeps_exactly_the_numbers_in_order(values):
    got = numbers(iter(values))
    expected = [v for v in values if is_number(v)]
    assert got == expected and all(a is b for a, b in zip(got, expected))


def test_the_two_means_differ_in_the_last_bit_and_each_keeps_its_rule():
    """finite_mean is reference 3.8's mean = sum / count with the sum added up in order (the
    run aggregates, whose sum metrics.json shows beside it); fsum_mean sums exactly first
    (comparison.md, repeated-runs.md, the estimators). 0.1 + 0.2 + 0.3 in order is
    0.6000000000000001; exactly rounded it is 0.6."""
    values = [0.1, 0.2, 0.3]
    assert finite_mean(values) == 0.6000000000000001 / 3
    assert fsum_mean(values) == 0.6 / 3
    assert finite_mean(values) != fsum_mean(values)
    assert distribution(values)["mean"] == finite_mean(values)
    assert finite_mean([1, 2]) == fsum_mean([1, 2]) == 1.5
    assert fsum_mean([]) is None


def test_a_mean_whose_sum_overflows_is_still_the_mean():
    """docs/metric-choices.md: only a mean whose value leaves the float range is null, and a
    mean of numbers in range never does: a sum beyond the range is added up scaled."""
    assert fsum_mean([1.7e308, 1.7e308]) == 1.7e308
    assert fsum_mean([1e308, 1e308, 1e308, 1e308]) == 1e308
    assert fsum_mean([1.7e308, 1.7e308, -1.7e308]) == 1.7e308 / 3
    assert fsum_mean([1e308, 5.0]) == 5e307
    # a sum in range is divided as it is (the scaled path is only for an overflowing sum)
    assert fsum_mean([0.1, 0.2, 0.3]) == 0.6 / 3


def test_standard_error_of_a_mean():
    # x = 0, 1, 1, 0: mean 0.5, sum of squares 4 * 0.25 = 1, se = sqrt(1 / 3 / 4) = sqrt(1/12)
    assert standard_error([0, 1, 1, 0], 0.5) == math.sqrt(1 / 3 / 4)
    assert standard_error([0.5], 0.5) is None and standard_error([], 0) is None
    assert standard_error([0, 0, 0], 0.0) == 0.0
    # squares beyond the float range, standard errors within it: computed on scaled values
    assert standard_error([-1.7e308, 1.7e308], 0.0) == 1.7e308
    assert standard_error([1e155, -1e155, 0.0], 0.0) == pytest.approx(1e155 / math.sqrt(3), rel=1e-15)
    values = [1e300, 1.0, 1e-300]
    assert standard_error(values, fsum_mean(values)) == pytest.approx(1e300 / 3, rel=1e-15)
    # deviations beyond the range whose standard error is too: null
    assert standard_error([1.7e308, 1.7e308], -1.7e308) is None  # 3.4e308


def test_z_95_is_the_normal_quantile_of_both_interval_kinds():
    """One z for the Wilson interval and the normal intervals (reference 3.8, comparison.md):
    the default z of wilson_interval is Z_95."""
    assert Z_95 == 1.959963984540054
    assert wilson_interval(1, 2) == wilson_interval(1, 2, z=1.959963984540054)
    assert wilson_interval(1, 2) != wilson_interval(1, 2, z=1.96)


# --- numbers that may be numpy scalars, and the rubric pass rate (3.6) ------------------


def test_is_real_number_takes_numpy_scalars_under_the_same_rules():
    import numpy as np

    assert is_real_number(np.int64(3)) and is_real_number(np.float32(0.5)) and is_real_number(np.float64(2.0))
    assert not is_number(np.int64(3))  # the stages read JSON: plain types only
    assert not is_real_number(np.bool_(True)) and not is_real_number(True)
    assert not is_real_number(np.float64("nan")) and not is_real_number(float("inf"))
    assert not is_real_number("1") and not is_real_number(None)
    for value in (0, -7, 1.5, 10 ** 300, -(10 ** 300)):
        assert is_real_number(value) == is_number(value) is True


def test_an_integer_beyond_the_float_range_is_no_number_either_way():
    """The rule the two definitions disagreed on: the publication's took any integer, which the
    wire (a score value is a JSON double, ``float(value)``) cannot carry; R42 makes it unavailable."""
    huge = 10 ** 400
    assert not is_number(huge) and not is_real_number(huge) and not is_real_number(-huge)
    with pytest.raises(OverflowError):
        float(huge)


def test_rubric_pass_rate_is_the_stored_count_over_the_stored_total():
    assert rubric_pass_rate(3, 4) == 0.75  # the reference's example: quality 0.75, the task fails
    assert rubric_pass_rate(0, 4) == 0.0  # --no-judge: quality may be 1 while the ratio is 0/4
    assert rubric_pass_rate(0, 0) is None and rubric_pass_rate(2, 0) is None  # omitted when the total is 0
    assert rubric_pass_rate(None, 4) is None and rubric_pass_rate(3, None) is None
    assert rubric_pass_rate(True, 1) is None and rubric_pass_rate(1, float("nan")) is None
    assert rubric_pass_rate(10 ** 400, 4) is None
    assert type(rubric_pass_rate(1, 2)) is float and rubric_pass_rate(1, 2) == 0.5
