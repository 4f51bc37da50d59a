"""How failed per-item writes are summed up in the error message."""

from __future__ import annotations

from bench_pipeline.publication.retry import DeliveryFailure
from bench_pipeline.publication.steps.item_writes import RUN_ITEM_DOUBTFUL, summary


def test_the_first_tried_failure_and_how_many_were_not_tried():
    failures = [DeliveryFailure("a", "HTTP 500: boom"), DeliveryFailure("b", "HTTP 503: busy"),
                DeliveryFailure("c", "not attempted: 20 requests in a row failed (last: HTTP 500: boom)"),
                DeliveryFailure("d", "not attempted: 20 requests in a row failed (last: HTTP 500: boom)")]
    assert summary(failures) == "HTTP 500: boom; 2 not attempted: 20 requests in a row failed (last: HTTP 500: boom)"
    assert summary(failures[:1]) == "HTTP 500: boom"
    assert summary([]) == ""


def test_a_5xx_to_a_run_item_leaves_it_in_doubt():
    assert RUN_ITEM_DOUBTFUL == {500, 502, 503, 504} and 429 not in RUN_ITEM_DOUBTFUL
