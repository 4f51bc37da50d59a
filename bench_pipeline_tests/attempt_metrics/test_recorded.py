"""Recorded values of a results row (run-directory.md "metrics", R6, R34, R42):
``recorded`` and ``recorded_number`` on row objects in memory."""

from __future__ import annotations

import pytest

from bench_pipeline.attempt_metrics import recorded, recorded_number

from ..run_builder import row
from ..support.attempt_inputs import NAN


def test_metrics_key_wins_over_top_level():
    r = row("t", status="failed", metrics={"task_wall_ms": 1000, "setup_ms": 5}, task_wall_ms=50, setup_ms=7)
    assert (recorded_number(r, "task_wall_ms"), recorded_number(r, "setup_ms")) == (1000, 5)


def test_metrics_key_wins_even_when_null():
    r = row("t", status="failed", metrics={"setup_ms": None, "tool_calls": None, "cost_usd": None},
            setup_ms=7, tool_calls=3, cost_usd=0.5)
    assert recorded(r, "setup_ms") is None
    assert recorded_number(r, "setup_ms") is None
    assert recorded_number(r, "tool_calls") is None
    assert recorded_number(r, "cost_usd") is None


def test_legacy_top_level_values_are_used_when_metrics_lacks_them():
    r = row("t", status="failed", metrics={"setup_ms": 3}, screenshot_capture_ms=40, tool_calls=6, retry_count=1,
            cost_usd=0.25)
    keys = ("setup_ms", "screenshot_capture_ms", "tool_calls", "retry_count", "cost_usd")
    assert tuple(recorded_number(r, k) for k in keys) == (3, 40, 6, 1, 0.25)


@pytest.mark.parametrize("value", [True, False, "12", NAN, float("inf"), 10**400, [1], {"v": 1}])
def test_boolean_or_non_finite_is_never_a_number(value):
    keys = ["setup_ms", "screenshot_capture_ms", "retry_count", "cost_usd", "task_wall_ms"]
    r = row("t", status="failed", metrics={k: value for k in keys})
    for k in keys:
        assert recorded_number(r, k) is None, k



@pytest.mark.parametrize("value, expected", [(0, 0), (0.25, 0.25), (1, 1), (1.0, 1.0), (7.5, None), (-0.1, None),
                                             (1.0000001, None), (100, None)])
def test_a_quality_score_outside_0_to_1_is_not_a_quality_score(value, expected):
    """run-directory.md: quality_score is a "number in [0, 1] or null"; 7.5 (another scale)
    is unavailable, not a proportion above 1 averaged into best and mean quality."""
    assert recorded_number(row("t", metrics={"quality_score": value}), "quality_score") == expected
