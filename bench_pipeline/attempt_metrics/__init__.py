"""Stage 2, derived attempt metrics (reference 3.1-3.6).

The formulas are pure functions over parsed JSON: tool classification and pairing
(``tools``), token totals (``tokens``), history (``history.derive_history``), episode
(``episode.derive_episode``), outcome and failure evidence (``outcome``) and recorded
values (``recorded``). ``assemble.derive_attempt`` builds one attempt row from a
results.jsonl row and its artifacts, choosing per field between the derived and the
recorded value as ``measured_fields`` declares each field's source (3.1, R3, R34).
"""

from __future__ import annotations

from .assemble import RunContext, derive_attempt
from .episode import EpisodeMetrics, derive_episode
from .history import HistoryMetrics, derive_history
from .outcome import failure_evidence, outcome
from .recorded import COUNT_FIELDS, COUNT_LIMIT, recorded, recorded_number
from .tokens import TOKEN_SOURCES, token_sums
from .tools import (
    DEVICE_ACTION_TOOLS,
    READ_ONLY_BRIDGE_ACTIONS,
    is_device_action,
    is_device_call,
    json_key,
    pair_tool_calls,
    parse_tool_input,
)

__all__ = [
    "COUNT_FIELDS",
    "COUNT_LIMIT",
    "DEVICE_ACTION_TOOLS",
    "READ_ONLY_BRIDGE_ACTIONS",
    "TOKEN_SOURCES",
    "EpisodeMetrics",
    "HistoryMetrics",
    "RunContext",
    "derive_attempt",
    "derive_episode",
    "derive_history",
    "failure_evidence",
    "is_device_action",
    "is_device_call",
    "json_key",
    "outcome",
    "pair_tool_calls",
    "parse_tool_input",
    "recorded",
    "recorded_number",
    "token_sums",
]
