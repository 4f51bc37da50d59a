"""History token sums (reference 3.5, R9, R36, R42): ``token_sums`` on the model calls'
``usage`` mappings in memory."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_pipeline.attempt_metrics import token_sums
from bench_pipeline.stats import finite_sum, number_or_none

from ..support.attempt_inputs import NAN, TOKENS


def _tokens(usages: list[dict]) -> tuple:
    sums = token_sums(usages)
    return tuple(sums[k] for k in TOKENS)


def test_token_sums_with_per_message_fallback_keys():
    usages = [
        {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12, "cached_input_tokens": 4, "reasoning_tokens": 1},
        {"prompt_tokens": 20, "completion_tokens": 3, "total_tokens": 23, "cached_tokens": 5, "reasoning_tokens": 2},
    ]
    assert _tokens(usages) == (30, 5, 35, 9, 3)


@pytest.mark.parametrize("bad", [None, "12", True, NAN, [3]])
def test_fallback_key_used_when_primary_is_not_a_number(bad):
    usage = {"input_tokens": bad, "prompt_tokens": 7, "output_tokens": bad, "completion_tokens": 2,
             "cached_input_tokens": bad, "cached_tokens": 1, "total_tokens": 9, "reasoning_tokens": 0}
    assert _tokens([usage]) == (7, 2, 9, 1, 0)


def test_primary_key_wins_over_fallback_including_zero():
    usage = {"input_tokens": 0, "prompt_tokens": 100, "output_tokens": 5, "completion_tokens": 100,
             "cached_input_tokens": 0, "cached_tokens": 100, "total_tokens": 5}
    assert _tokens([usage])[:4] == (0, 5, 5, 0)


def test_total_fallback_is_per_message():
    usages = [{"input_tokens": 10, "output_tokens": 2, "total_tokens": 50}, {"input_tokens": 3, "output_tokens": 4}]
    assert _tokens(usages)[:3] == (13, 6, 57)


def test_total_fallback_uses_input_output_fallback_keys():
    assert token_sums([{"prompt_tokens": 3, "completion_tokens": 4}])["total_tokens"] == 7


def test_total_fallback_needs_both_input_and_output():
    usages = [{"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}, {"input_tokens": 3}]
    assert _tokens(usages)[:3] == (13, None, None)


def test_total_tokens_null_falls_back_to_input_plus_output():
    """R36 reading: a total that is not a number is treated like an absent one (3.5, R9)."""
    assert token_sums([{"input_tokens": 10, "output_tokens": 2, "total_tokens": None}])["total_tokens"] == 12


def test_missing_field_on_one_message_nulls_only_that_field():
    usages = [{"input_tokens": 1, "output_tokens": 1, "reasoning_tokens": 4, "cached_input_tokens": 2},
              {"input_tokens": 2, "output_tokens": 2, "cached_input_tokens": 3}]
    assert _tokens(usages) == (3, 3, 6, 5, None)


def test_optional_token_fields_are_not_assumed_zero():
    sums = token_sums([{"input_tokens": 1, "output_tokens": 1}])
    assert (sums["cached_input_tokens"], sums["reasoning_tokens"]) == (None, None)


def test_boolean_token_values_are_not_numbers():
    sums = token_sums([{"input_tokens": True, "output_tokens": 2, "reasoning_tokens": False}])
    assert (sums["input_tokens"], sums["output_tokens"], sums["total_tokens"], sums["reasoning_tokens"]) == (
        None, 2, None, None)


# --- the one-pass and the careful path against 3.5 as written -------------------------------

def _token_sums_by_the_letter(usages: list[dict]) -> dict:
    """3.5 as written: per call each field (primary, else fallback; total else input +
    output of that call), summed; a field missing on any call is None."""

    def field(usage, key, fallback=None):
        value = number_or_none(usage.get(key))
        return value if value is not None or fallback is None else number_or_none(usage.get(fallback))

    per_call: dict[str, list] = {f: [] for f in TOKENS}
    for usage in usages:
        inp, out = field(usage, "input_tokens", "prompt_tokens"), field(usage, "output_tokens", "completion_tokens")
        total = field(usage, "total_tokens")
        if total is None and inp is not None and out is not None:
            total = inp + out
        values = (inp, out, total, field(usage, "cached_input_tokens", "cached_tokens"), field(usage, "reasoning_tokens"))
        for f, v in zip(TOKENS, values):
            per_call[f].append(v)
    # A field missing on a call is unavailable; so is a sum beyond the float range (R42).
    return {f: None if None in vs else finite_sum(vs) for f, vs in per_call.items()}


USAGE_KEYS = st.sampled_from(["input_tokens", "prompt_tokens", "output_tokens", "completion_tokens", "total_tokens",
                              "cached_input_tokens", "cached_tokens", "reasoning_tokens"])
TOKEN_VALUES = (st.none() | st.booleans() | st.integers(-10**3, 10**6) | st.integers(10**308, 10**309)
                | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=3))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.dictionaries(USAGE_KEYS, TOKEN_VALUES, max_size=8), max_size=6))
def test_token_sums_equal_the_reference_rule_call_by_call(usages):
    expected = _token_sums_by_the_letter(usages)
    got = token_sums(usages)
    assert set(got) == set(TOKENS)
    for f in TOKENS:
        assert (got[f] is None and expected[f] is None) or got[f] == expected[f] or (
            isinstance(got[f], float) and math.isnan(got[f]) and math.isnan(expected[f])), (f, got, expected)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.dictionaries(USAGE_KEYS, st.integers(-10**3, 10**6) | st.none() | st.integers(10**308, 10**309)
                                | st.sampled_from([1.5, True, "7"]), max_size=8),
                min_size=1, max_size=6))
def test_token_sums_of_mostly_plain_integers_equal_the_reference_rule(usages):
    """The one-pass path for plain integers, and its hand-over to the careful path."""
    assert token_sums(usages) == _token_sums_by_the_letter(usages)


def test_refused_counts_are_noted_by_the_calls_position_without_message_indices():
    refused: list = []
    sums = token_sums([{"input_tokens": 1, "output_tokens": 1}, {"input_tokens": "2", "prompt_tokens": 2,
                                                                 "output_tokens": 1}], refused)
    assert refused == [("[1].usage.input_tokens", "2", "a string, not a number: not counted, prompt_tokens read instead")]
    assert (sums["input_tokens"], sums["output_tokens"], sums["total_tokens"]) == (3, 2, 5)
