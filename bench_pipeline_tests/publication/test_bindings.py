"""Pure bindings: where an experiment item lives for each execution trace status."""

from __future__ import annotations

from bench_pipeline.publication.bindings import (
    AVAILABLE,
    EXECUTION_TRACE,
    NO_EPISODE,
    PENDING_OR_MISSING,
    REPLAY,
    decide_binding,
)

from .builders import attempt, plan


def test_bindings_for_the_three_execution_trace_statuses():
    p = plan([attempt(), attempt(n=2, evidence={"episode_id": None}),
              attempt(n=3, evidence={"trace_id": None})])
    known, no_episode, no_trace = p.attempts
    available = decide_binding(known, "00000000000000aa")
    assert (available.mode, available.status) == (EXECUTION_TRACE, AVAILABLE)
    assert available.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736" and available.parent_span_id == "00000000000000aa"
    pending = decide_binding(known, None)
    assert (pending.mode, pending.status, pending.trace_id) == (REPLAY, PENDING_OR_MISSING, known.replay_trace_id)
    assert decide_binding(no_episode, "00000000000000aa").status == NO_EPISODE
    assert no_episode.execution_trace_id is None
    assert decide_binding(no_trace, None).status == PENDING_OR_MISSING
    assert available.observation_id == pending.observation_id == known.evaluation_span_id
