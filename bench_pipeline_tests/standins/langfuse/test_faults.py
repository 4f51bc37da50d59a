"""The fault plan on values in memory: which request a fault takes, how often, in order."""

from __future__ import annotations

from standins.langfuse.faults import FaultPlan, FiredFault


def test_faults_fire_in_the_order_added_on_matching_requests_only():
    plan = FaultPlan()
    first = plan.fail("/api/public/scores", status=503, times=2, method="post")
    dropped = plan.drop("/api/public/scores", after_processing=True)
    assert plan.take("GET", "/api/public/scores") is dropped  # the method does not match the first
    assert plan.take("POST", "/api/public/scores") is first and plan.take("POST", "/api/public/scores/x") is first
    assert plan.take("POST", "/api/public/scores") is None
    assert (first.remaining, first.fired, dropped.after_processing) == (0, 2, True)
    assert plan.pending() == []
    assert plan.history[-3:] == [FiredFault("drop", "GET", "/api/public/scores", None),
                                 FiredFault("status", "POST", "/api/public/scores", 503),
                                 FiredFault("status", "POST", "/api/public/scores/x", 503)]


def test_a_fault_with_min_bytes_spares_small_bodies():
    plan = FaultPlan()
    fault = plan.rate_limit("/api/public/otel", retry_after=2, min_bytes=10)
    assert plan.take("POST", "/api/public/otel/v1/traces", size=9) is None
    assert plan.take("POST", "/api/public/otel/v1/traces", size=10) is fault
    assert (fault.kind, fault.status, fault.retry_after) == ("status", 429, 2)


def test_delays_and_clearing():
    plan = FaultPlan()
    delay = plan.delay("/api/public/projects", seconds=0.5, times=3)
    assert plan.pending() == [delay] and delay.seconds == 0.5
    plan.clear()
    assert plan.pending() == [] and plan.take("GET", "/api/public/projects") is None
