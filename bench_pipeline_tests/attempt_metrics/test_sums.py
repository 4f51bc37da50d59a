"""Running sums of the attempt formulas (readings R42): exact integers, infinity once a sum
cannot be represented."""

from __future__ import annotations

import math

from bench_pipeline.attempt_metrics.sums import running_add
from bench_pipeline.stats import FLOAT_MAX_INT, number_or_none


def test_integers_add_exactly_and_floats_as_floats():
    assert running_add(2**60, 1) == 2**60 + 1
    assert running_add(900, 1400.5) == 2300.5


def test_an_integer_sum_beyond_the_float_range_meeting_a_float_is_infinite():
    big = running_add(FLOAT_MAX_INT, FLOAT_MAX_INT)  # an exact integer, beyond any float
    assert big == 2 * FLOAT_MAX_INT
    assert running_add(big, 1.5) == math.inf
    assert number_or_none(running_add(big, 1.5)) is None  # unavailable in the end
