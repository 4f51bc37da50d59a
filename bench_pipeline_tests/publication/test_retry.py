"""The retry policy on requests made in memory (``once`` functions that fail as told)."""

from __future__ import annotations

import pytest

from bench_pipeline.publication.retry import DeliveryFailure, Retryable, RetryPolicy, retry_after_seconds
from bench_pipeline.publication.settings import PublishOptions

FAST = PublishOptions(retries=2, backoff=0.0, max_retry_after=0.0, give_up_after=3, rate_limited_tries=4)


def answers(*outcomes):
    """A ``once`` giving each outcome in turn (an exception is raised, anything else returned)."""
    calls: list[int] = []

    def once():
        outcome = outcomes[len(calls)]
        calls.append(1)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    return once, calls


def unanswered(what="x"):
    return Retryable(DeliveryFailure(what, "no answer (ReadTimeout)", in_doubt=True))


def status(code, what="x", **kw):
    return Retryable(DeliveryFailure(what, f"HTTP {code}", status=code, **kw))


def test_transient_failures_are_retried_until_an_answer():
    once, calls = answers(unanswered(), status(503), "ok")
    assert RetryPolicy(FAST).run("x", once) == "ok" and len(calls) == 3


def test_retries_end_with_the_last_failure():
    once, calls = answers(status(500), status(502), status(504))
    with pytest.raises(DeliveryFailure, match="HTTP 504"):
        RetryPolicy(FAST).run("x", once)
    assert len(calls) == 3  # one try and two retries


def test_a_refusal_ends_at_once_and_an_unanswered_request_is_not_repeated_when_told():
    once, calls = answers(DeliveryFailure("x", "HTTP 400", status=400))
    with pytest.raises(DeliveryFailure, match="HTTP 400"):
        RetryPolicy(FAST).run("x", once)
    assert len(calls) == 1
    once, calls = answers(unanswered())
    with pytest.raises(DeliveryFailure) as failure:
        RetryPolicy(FAST).run("x", once, retry_unanswered=False)
    assert failure.value.in_doubt and len(calls) == 1


def test_rate_limits_do_not_use_up_the_retries_but_have_their_own_bound():
    once, calls = answers(status(429), status(429), status(429), "ok")
    policy = RetryPolicy(FAST)
    assert policy.run("x", once) == "ok" and len(calls) == 4 and policy.limits.count == 3
    once, calls = answers(*[status(429)] * 4)
    with pytest.raises(DeliveryFailure, match=r"rate limited 4 times in a row") as failure:
        RetryPolicy(FAST).run("x", once)
    assert failure.value.status == 429


def test_a_rate_limit_ends_at_once_when_told_not_to_wait_and_closes_no_window():
    once, calls = answers(status(429), "ok")
    policy = RetryPolicy(FAST)
    with pytest.raises(DeliveryFailure, match="HTTP 429") as failure:
        policy.run("x", once, route="DELETE /s", wait_when_limited=False)
    assert failure.value.status == 429 and len(calls) == 1 and policy.limits.count == 0
    once, calls = answers(status(503), "ok")  # other transient failures are still retried
    assert policy.run("x", once, route="DELETE /s", wait_when_limited=False) == "ok" and len(calls) == 2


def test_an_endpoint_that_keeps_failing_is_given_up_on_the_others_go_on():
    policy = RetryPolicy(PublishOptions(retries=0, backoff=0.0, give_up_after=2))
    for _ in range(2):
        with pytest.raises(DeliveryFailure):
            policy.run("x", answers(status(503))[0], route="POST /a")
    once, calls = answers("ok")
    with pytest.raises(DeliveryFailure, match=r"not attempted: 2 requests in a row failed \(last: HTTP 503\)"):
        policy.run("x", once, route="POST /a")
    assert calls == [] and policy.run("x", once, route="POST /b") == "ok"


def test_retry_after_is_read_in_seconds():
    assert retry_after_seconds({"retry-after": "7"}) == 7.0
    assert retry_after_seconds({"Retry-After": "-3"}) == 0.0
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}) is None
    assert retry_after_seconds({}) is None and retry_after_seconds(None) is None
