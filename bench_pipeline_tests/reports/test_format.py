"""The reports' labels and number formatters (reports/format.py): every unavailable value is
n/a, never 0; a measured field is formatted by its declared kind."""

from __future__ import annotations

import math

import pytest

from bench_pipeline.reports.format import (
    FIELD_LABELS,
    MS_FIELDS,
    NA,
    USD_FIELDS,
    fmt_compact,
    fmt_mean,
    fmt_ms,
    fmt_round,
    fmt_usd,
    formatter_for,
)


def test_the_labels_in_the_efficiency_tables_order():
    assert list(FIELD_LABELS.items()) == [
        ("task_wall_ms", "Task wall time"),
        ("setup_ms", "Setup time (all observed attempts)"),
        ("llm_calls", "Model calls"),
        ("llm_time_ms", "Model time"),
        ("vision_llm_calls", "Visual model calls"),
        ("vision_llm_time_ms", "Visual model time"),
        ("time_to_first_token_ms", "Time to first token"),
        ("device_execution_ms", "Device execution time"),
        ("screenshot_capture_ms", "Runner screenshot capture"),
        ("tool_calls", "Tool calls"),
        ("device_actions", "Device actions"),
        ("screenshots_taken", "Screenshots taken"),
        ("input_tokens", "Input tokens"),
        ("output_tokens", "Output tokens"),
        ("total_tokens", "Total tokens"),
        ("cached_input_tokens", "Cached input tokens"),
        ("reasoning_tokens", "Reasoning tokens"),
        ("cost_usd", "Cost (USD)"),
        ("tool_errors", "Tool errors (incl. recovered)"),
        ("replan_count", "Replans"),
        ("retry_count", "Agent retries"),
    ]


def test_the_kind_sets():
    assert MS_FIELDS == {"task_wall_ms", "setup_ms", "screenshot_capture_ms", "time_to_first_token_ms",
                         "llm_time_ms", "vision_llm_time_ms", "device_execution_ms"}
    assert USD_FIELDS == {"cost_usd"}


@pytest.mark.parametrize("field, value, text", [
    ("llm_time_ms", 850, "850 ms"),
    ("task_wall_ms", 12_340, "12.3 s"),
    ("device_execution_ms", 900_000, "15.0 min"),
    ("cost_usd", 0.01234, "$0.0123"),
    ("total_tokens", 9_612.4, "9,612"),
    ("llm_calls", 2.25, "2.2"),
    ("tool_errors", 3.0, "3"),
    ("unknown_field", 1_234.5, "1,234.5"),
])
def test_formatter_for_a_field_follows_its_kind(field, value, text):
    assert formatter_for(field)(value) == text


@pytest.mark.parametrize("formatter", [fmt_ms, fmt_usd, fmt_round, fmt_mean])
def test_an_unavailable_value_is_na(formatter):
    assert [formatter(v) for v in (None, math.nan, True, "7")] == [NA] * 4


@pytest.mark.parametrize("field, value, text", [
    ("llm_time_ms", 850, "850 ms"), ("llm_time_ms", 12_340, "12 s"), ("llm_time_ms", 4_200, "4.2 s"),
    ("cost_usd", 0.012, "$0.01"), ("total_tokens", 9_612, "9.6k"), ("total_tokens", 25_000_000, "25M"),
    ("llm_calls", 0, "0"), ("llm_calls", 2.5, "2.5"),
])
def test_compact_axis_labels_follow_the_kind(field, value, text):
    assert fmt_compact(value, field) == text
