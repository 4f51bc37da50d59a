"""Pure: where an attempt's experiment item lives (``Binding``): under the Agent's execution
trace when Langfuse holds it, else under a deterministic replay trace (outputs.md "Langfuse
publication"; metrics-reference "Experiment output and execution evidence")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .plan import AttemptPlan

# Execution-trace status of an experiment item (metrics-reference "Experiment output ...").
AVAILABLE = "available"
PENDING_OR_MISSING = "pending_or_missing"
NO_EPISODE = "no_episode"

# Binding modes: under the Agent's execution trace, or under a deterministic replay trace.
EXECUTION_TRACE = "execution_trace"
REPLAY = "replay"


@dataclass
class Binding:
    """Where an attempt's experiment item lives (kept for good once published)."""

    mode: str  # EXECUTION_TRACE | REPLAY
    trace_id: str
    parent_span_id: str | None  # execution root (EXECUTION_TRACE) or replay root span (REPLAY)
    observation_id: str  # the evaluation span = experiment item root observation
    status: str  # AVAILABLE | PENDING_OR_MISSING | NO_EPISODE

    def to_json(self) -> dict:
        return {
            "mode": self.mode, "trace_id": self.trace_id, "parent_span_id": self.parent_span_id,
            "observation_id": self.observation_id, "execution_trace_status": self.status,
        }

    @classmethod
    def from_json(cls, data: Mapping) -> Binding:
        return cls(data["mode"], data["trace_id"], data.get("parent_span_id"), data["observation_id"],
                   data["execution_trace_status"])

def decide_binding(plan: AttemptPlan, execution_root: str | None) -> Binding:
    """Binding for a new experiment item.

    ``execution_root`` is the root span id found in Langfuse for the attempt's execution
    trace (None: not found, or nothing to look up). Only a found root makes it ``available``.
    """
    if plan.episode_id is None:
        status = NO_EPISODE
    elif plan.execution_trace_id is not None and execution_root is not None:
        return Binding(EXECUTION_TRACE, plan.execution_trace_id, execution_root, plan.evaluation_span_id, AVAILABLE)
    else:
        status = PENDING_OR_MISSING
    return Binding(REPLAY, plan.replay_trace_id, plan.replay_root_span_id, plan.evaluation_span_id, status)

def binding_from_server(plan: AttemptPlan, trace_id: str, observation_id: str) -> Binding:
    """The binding of an experiment item that already exists in Langfuse (kept as it is)."""
    if trace_id == plan.replay_trace_id:
        status = NO_EPISODE if plan.episode_id is None else PENDING_OR_MISSING
        return Binding(REPLAY, trace_id, plan.replay_root_span_id, observation_id, status)
    return Binding(EXECUTION_TRACE, trace_id, None, observation_id, AVAILABLE)
