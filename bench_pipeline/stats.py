"""Small statistics used by the run aggregates (reference 3.8).

Pure functions on plain Python numbers; ``None`` is "unavailable".
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from numbers import Integral, Real
from typing import Any, Iterable, Sequence

#: The 97.5% quantile of the standard normal distribution: z of a two-sided 95% interval,
#: exactly as the reference (3.8) and comparison.md write it. The Wilson interval and the
#: normal (Wald, clustered, paired) intervals all use it.
Z_95 = 1.959963984540054


#: The largest integer that still converts to a float (larger ones are unavailable, R42).
FLOAT_MAX_INT = int(sys.float_info.max)

#: The largest integer a nullable Int64 column holds: the Dagster stages keep counts and
#: attempt numbers in such columns, so larger ones are not kept (docs/metric-choices.md).
INT64_MAX = 2 ** 63 - 1


def is_number(value: object) -> bool:
    """True for a finite, non-Boolean JSON number (run-directory.md, R42).

    Booleans are never numbers; NaN, infinities and integers beyond the float range
    (larger in magnitude than the largest float) are unavailable.
    """
    kind = type(value)
    if kind is int:
        return -FLOAT_MAX_INT <= value <= FLOAT_MAX_INT
    if kind is float:
        return value - value == 0  # NaN and infinities give NaN
    if isinstance(value, bool):
        return False
    if isinstance(value, int):  # int subclasses: the same rule
        return -FLOAT_MAX_INT <= value <= FLOAT_MAX_INT
    if isinstance(value, float):
        return math.isfinite(value)
    return False


def is_real_number(value: object) -> bool:
    """``is_number`` for values that may be numpy scalars (``Real``: ``int64``,
    ``float32``, ...), numpy's ``bool_`` excluded; the same range rule (R42).

    The publication takes attempt records that may come from a data frame, while the stages
    read JSON, where ``is_number`` (plain types only) is enough. Integers beyond the float
    range are unavailable here too: a score's value is a JSON double on the Langfuse wire
    (``float(value)``), which such an integer cannot become.
    """
    kind = type(value)
    if kind is float:  # plain floats and ints first: the hot path of a large run's scores
        return value - value == 0
    if kind is int:
        return -FLOAT_MAX_INT <= value <= FLOAT_MAX_INT
    if isinstance(value, bool) or not isinstance(value, Real):  # numpy's bool_ is no Real
        return False
    if isinstance(value, Integral):
        return -FLOAT_MAX_INT <= int(value) <= FLOAT_MAX_INT
    return math.isfinite(value)


def number_or_none(value: object) -> int | float | None:
    """``value`` when ``is_number(value)``, else None: the fast form used on hot paths."""
    kind = type(value)
    if kind is int:
        return value if -FLOAT_MAX_INT <= value <= FLOAT_MAX_INT else None
    if kind is float:
        return value if value - value == 0 else None
    if kind is bool or value is None:
        return None
    return value if is_number(value) else None  # int/float subclasses: the careful path


def numbers(values: Iterable[object]) -> list:
    """The values that are numbers (``is_number``), in their order.

    A column of a large run is usually all plain integers, or all floats: those are
    checked in bulk (types, range or finiteness) instead of value by value; anything
    else takes ``is_number`` per value. The result is the same either way.
    """
    present = [v for v in values if v is not None]
    kinds = set(map(type, present))
    if not present:
        return present
    if kinds == {int} and -FLOAT_MAX_INT <= min(present) and max(present) <= FLOAT_MAX_INT:
        return present
    if kinds == {float} and all(map(math.isfinite, present)):
        return present
    return list(filter(is_number, present))


def finite_sum(values: Iterable[float]) -> int | float | None:
    """The sum of numbers, None when it leaves the float range (R42 for results).

    Every value is in range (``is_number``), but their total may not be: an integer sum
    larger than the largest float, a float sum that overflows to infinity, or an integer
    that can no longer be added to a float. Such a total is unavailable, not infinite.
    """
    total: int | float = 0
    try:
        for value in values:
            total += value
    except OverflowError:
        return None
    return total if is_number(total) else None


def finite_mean(values: Sequence[float]) -> float | None:
    """Reference 3.8's ``mean = sum / count``, the sum added up in the values' order exactly
    as ``distribution``'s ``sum`` is, so a run aggregate's mean is its sum over its count.
    None for no values, or when their sum leaves the float range (R42).

    Not ``fsum_mean``: the two can differ in the last bit ([0.1, 0.2, 0.3]), and each
    output keeps the one it has always been computed with."""
    total = finite_sum(values)
    if total is None or not values:
        return None
    return total / len(values)


def fsum_mean(values: Sequence[float]) -> float | None:
    """The mean of numbers with a correctly rounded sum (``math.fsum``): the mean of
    comparison.md and repeated-runs.md (per-task values, paired and pooled means) and of
    the unbiased estimators. None for no values. A sum beyond the float range whose mean is
    within it (1e308 and 1e308: the mean of numbers in range always is) is added up scaled
    by a power of two; a sum in range is divided as it is."""
    if not values:
        return None
    n = len(values)
    try:
        value = math.fsum(values) / n
    except OverflowError:
        scale = n.bit_length()  # 2^scale > n: the scaled sum stays in range
        try:
            value = math.ldexp(math.fsum(math.ldexp(v, -scale) for v in values) / n, scale)
        except OverflowError:
            return None
    return value if is_number(value) else None


def is_exact(value: Any) -> bool:
    """Whether a value is an exact number: an int (not a Boolean) or a Fraction (the
    per-task values of the binary sections, success rates, their pooled means)."""
    return type(value) is int or type(value) is Fraction


def all_exact(values: Iterable[Any]) -> bool:
    """Whether every value is exact (``is_exact``)."""
    return all(map(is_exact, values))


def exact_mean(values: Sequence[Any]) -> Fraction | float | None:
    """The mean of exact values (``all_exact``) as an exact Fraction, so that means and
    differences of success rates (1/3, 1/2, ...) cancel exactly; of other numbers
    ``fsum_mean``. None for no values."""
    if not values:
        return None
    if all_exact(values):
        return Fraction(sum(values), len(values))
    return fsum_mean(values)


def _se(values: Sequence[float], mean: float) -> float:
    n = len(values)
    return math.sqrt(math.fsum((x - mean) ** 2 for x in values) / (n - 1) / n)


def standard_error(values: Sequence[float], mean: float) -> float | None:
    """The standard error of a mean, sqrt(sum((x_i - mean)^2) / (n - 1) / n) (comparison.md
    "Paired statistics", repeated-runs.md "pooled"); None when n < 2 or when it leaves the
    float range. Squares beyond the range whose standard error is within it (1e155, -1e155
    and 0) are computed on the values scaled by a power of two."""
    if len(values) < 2:
        return None
    try:
        value = _se(values, mean)
    except OverflowError:
        value = math.inf
    if not math.isfinite(value):
        scale = math.frexp(max(abs(mean), *map(abs, values)))[1]  # every scaled value below 1
        try:
            value = math.ldexp(_se([math.ldexp(x, -scale) for x in values], math.ldexp(mean, -scale)), scale)
        except OverflowError:
            return None
    return value if is_number(value) else None


def percentile(sorted_values: Sequence[float], p: float) -> float | None:
    """Linearly interpolated percentile of already sorted values (reference 3.8).

    h = (n - 1) * P / 100, f = floor(h), c = min(f + 1, n - 1),
    value = x[f] + (x[c] - x[f]) * (h - f). None for no values.
    """
    n = len(sorted_values)
    if n == 0:
        return None
    h = (n - 1) * p / 100
    f = math.floor(h)
    c = min(f + 1, n - 1)
    lo, hi = sorted_values[f], sorted_values[c]
    if lo == hi:
        return lo
    t = h - f
    try:
        value = lo + (hi - lo) * t
    except OverflowError:  # an integer hi - lo beyond the float range
        value = math.inf
    if not is_number(value):
        # hi - lo overflowed (values of both signs near the float range's ends): the same
        # interpolation, written so that no intermediate leaves the range.
        value = float(lo) * (1 - t) + float(hi) * t
    return value if is_number(value) else None


def distribution(values: Iterable[float]) -> dict:
    """count, sum, mean, p50, p90, p95 of the given numbers (reference 3.8).

    With no values count is 0 and every other field is None.
    """
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        return {"count": 0, "sum": None, "mean": None, "p50": None, "p90": None, "p95": None}
    total = finite_sum(xs)
    return {
        "count": n,
        "sum": total,
        "mean": total / n if total is not None else None,  # finite_mean, the sum computed once
        "p50": percentile(xs, 50),
        "p90": percentile(xs, 90),
        "p95": percentile(xs, 95),
    }


def short_distribution(values: Iterable[float]) -> dict:
    """count, mean and p50 (first-success aggregates, reference 2 "Capability")."""
    full = distribution(values)
    return {"count": full["count"], "mean": full["mean"], "p50": full["p50"]}


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float | None, float | None]:
    """Wilson score interval for s successes in n trials, clipped to [0, 1] (reference 3.8).

    Both bounds are None when n = 0.
    """
    if n == 0:
        return None, None
    p = successes / n
    zz = z * z
    d = 1 + zz / n
    center = (p + zz / (2 * n)) / d
    margin = z * math.sqrt(p * (1 - p) / n + zz / (4 * n * n)) / d
    lower, upper = max(0.0, center - margin), min(1.0, center + margin)
    # At p = 0 (p = 1) center and margin are equal in exact arithmetic, so the formula's
    # lower (upper) bound is exactly 0 (1); floating point alone would leave ~1e-17.
    if successes == 0:
        lower = 0.0
    if successes == n:
        upper = 1.0
    return lower, upper


def ratio(numerator: int | float, denominator: int | float) -> float | None:
    """numerator / denominator, None when the denominator is zero or the quotient leaves
    the float range."""
    if denominator == 0:
        return None
    try:
        value = numerator / denominator
    except OverflowError:
        return None
    return value if is_number(value) else None


def rubric_pass_rate(pass_count: object, total: object) -> float | None:
    """The stored rubric pass count divided by the stored rubric total (reference 3.6, "Quality
    score and rubric pass rate": Langfuse's ``benchmark.rubric_pass_rate``); None when the total
    is 0 or either is not a number (``is_real_number``). It is not the quality score: three yes
    verdicts of four give 0.75 though the task fails, and with --no-judge it may be 0/4."""
    if not (is_real_number(pass_count) and is_real_number(total)) or total == 0:
        return None
    return float(pass_count) / float(total)
