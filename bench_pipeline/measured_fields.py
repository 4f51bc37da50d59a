"""The measured attempt metrics, each declared once (outputs.md "attempt metrics", reference 3.2-3.5).

``MEASURED`` holds one ``MeasuredField`` per number an attempt row carries besides its identity
and outcome: where the reference defines it, where its value comes from, its kind, its report
label and the metrics.json sections it belongs to. Everything that lists these fields derives
the list from here: vocabulary's field tuples (attempts.jsonl's keys and provenance,
metrics.json's efficiency, reliability and cost_to_first_success blocks, comparison.json's
resources, the Langfuse scores), the measured columns of ``schemas.AttemptMetricsSchema``,
``attempt_metrics``' count fields and per-source assembly, and ``reports.format``'s labels and
formatters.

To add a metric:

1. Declare it in ``MEASURED`` at its place in the attempt row (``MEASURED``'s order is the
   order of attempts.jsonl's keys, the frame's columns and the Langfuse scores). It then
   reaches the attempt row (``attempt_metrics.derive_attempt``), the frame's schema,
   metrics.json's sections, both reports and the Langfuse scores. In the lists whose
   published order differs from the row's (``PROVENANCE_ORDER``, ``EFFICIENCY_ORDER``,
   ``DISPLAY_ORDER``) a field they do not name comes last, in ``MEASURED``'s order.
2. Write its formula, by its source: ``history``, a field of ``HistoryMetrics`` computed by
   ``derive_history`` (attempt_metrics/history.py); ``episode``, a field of ``EpisodeMetrics``
   computed by ``derive_episode`` (attempt_metrics/episode.py); ``episode_over_history``,
   both (a token field: its ``TOKEN_SOURCES`` entry in attempt_metrics/tokens.py); a
   ``recorded`` field needs none, but the results.jsonl key it is read from belongs in
   ``vocabulary.ROW_METRICS_KEYS`` (run-directory.md's row, which the run generator writes).
   Bump ``formula.FORMULA_VERSION``.
3. Write its tests: the formula's, in bench_pipeline_tests/attempt_metrics/, and the field
   in the literal orders of bench_pipeline_tests/test_vocabulary.py.
   bench_pipeline_tests/test_measured_fields.py fails while the field misses its formula's
   output, the schema, a label or the assembled attempt row.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# --- Where a value comes from (reference 3.1, readings R3, R34) ------------------------------

#: history.json alone; the recorded value when history.json is unavailable.
HISTORY = "history"
#: episode.json alone; the recorded value when episode.json is unavailable.
EPISODE = "episode"
#: history.json, replaced by episode.json where the episode supplies a value (3.1 step 3,
#: 3.5); the recorded value when neither file is available.
EPISODE_OVER_HISTORY = "episode_over_history"
#: results.jsonl's value, always (the runner's own timers and counters, 3.2, 3.5).
RECORDED = "recorded"
SOURCES = (HISTORY, EPISODE, EPISODE_OVER_HISTORY, RECORDED)

# --- Kinds: the unit a field's name ends with (metrics-reference 2: "_ms, _tokens, _usd:
#     milliseconds, token counts, and dollars"), or an integral count ------------------------

COUNT = "count"
MS = "ms"
TOKENS = "tokens"
USD = "usd"
KINDS = (COUNT, MS, TOKENS, USD)

# --- The run-level sections a field is aggregated in (outputs.md "metrics.json", comparison.md)

EFFICIENCY = "efficiency"
RELIABILITY = "reliability"
COST_TO_FIRST_SUCCESS = "cost_to_first_success"
#: comparison.json ``resources``: per task, the field's mean over eligible attempts.
COMPARISON_RESOURCES = "comparison_resources"
SECTIONS = (EFFICIENCY, RELIABILITY, COST_TO_FIRST_SUCCESS, COMPARISON_RESOURCES)


@dataclass(frozen=True)
class MeasuredField:
    """One measured attempt metric."""

    name: str
    #: The metrics-reference section that defines it.
    reference: str
    #: One of SOURCES.
    source: str
    #: One of KINDS: COUNT fields are integers (a non-integral value is unavailable).
    kind: str
    #: The row label of the reports' distribution tables.
    label: str
    #: What the value is, in a few words (the frame column's description).
    description: str
    #: The run-level SECTIONS it is aggregated in.
    sections: frozenset[str] = frozenset()
    #: A value that is not positive is unavailable, recorded ones included (R40).
    positive_only: bool = False
    #: An older results.jsonl key read when the field's own key holds no number (R7).
    legacy_key: str | None = None

    @property
    def provenance(self) -> bool:
        """Whether the attempt row says where the value came from (derived or recorded, R34)."""
        return self.source != RECORDED


def _field(name: str, reference: str, source: str, kind: str, label: str, description: str,
           *sections: str, positive_only: bool = False, legacy_key: str | None = None) -> MeasuredField:
    return MeasuredField(name, reference, source, kind, label, description, frozenset(sections),
                         positive_only, legacy_key)


#: The measured attempt metrics, in the attempt row's order (outputs.md "attempt metrics").
MEASURED: tuple[MeasuredField, ...] = (
    _field("task_wall_ms", "3.2", RECORDED, MS, "Task wall time", "chat-request wall time (recorded)",
           EFFICIENCY, COST_TO_FIRST_SUCCESS, COMPARISON_RESOURCES, legacy_key="wall_ms"),
    _field("setup_ms", "3.2", RECORDED, MS, "Setup time (all observed attempts)", "setup time (recorded)",
           EFFICIENCY),
    _field("screenshot_capture_ms", "3.2", RECORDED, MS, "Runner screenshot capture",
           "runner screenshot time (recorded)", EFFICIENCY),
    _field("time_to_first_token_ms", "3.2", EPISODE, MS, "Time to first token",
           "episode first-token time, positive only", EFFICIENCY, positive_only=True),
    _field("llm_calls", "3.3", HISTORY, COUNT, "Model calls", "usage-bearing model messages", EFFICIENCY),
    _field("llm_time_ms", "3.3", HISTORY, MS, "Model time", "sum of the model calls' durations", EFFICIENCY),
    _field("vision_llm_calls", "3.3", HISTORY, COUNT, "Visual model calls", "calls after an image", EFFICIENCY),
    _field("vision_llm_time_ms", "3.3", HISTORY, MS, "Visual model time", "durations of the visual calls",
           EFFICIENCY),
    _field("device_actions", "3.4", HISTORY, COUNT, "Device actions", "allowlisted device calls", EFFICIENCY),
    _field("device_execution_ms", "3.4", EPISODE, MS, "Device execution time", "episode device durations",
           EFFICIENCY),
    _field("tool_calls", "3.5", HISTORY, COUNT, "Tool calls", "tool calls in history", EFFICIENCY),
    _field("screenshots_taken", "3.5", HISTORY, COUNT, "Screenshots taken", "calls with a screenshot result",
           EFFICIENCY),
    _field("tool_errors", "3.5", EPISODE_OVER_HISTORY, COUNT, "Tool errors (incl. recovered)",
           "tool-result errors", RELIABILITY),
    _field("replan_count", "3.5", EPISODE, COUNT, "Replans", "truthy needs_replan events", RELIABILITY),
    _field("retry_count", "3.5", RECORDED, COUNT, "Agent retries", "recorded retry counter", RELIABILITY),
    _field("input_tokens", "3.5", EPISODE_OVER_HISTORY, TOKENS, "Input tokens", "input tokens", EFFICIENCY),
    _field("output_tokens", "3.5", EPISODE_OVER_HISTORY, TOKENS, "Output tokens", "output tokens", EFFICIENCY),
    _field("total_tokens", "3.5", EPISODE_OVER_HISTORY, TOKENS, "Total tokens", "total tokens",
           EFFICIENCY, COST_TO_FIRST_SUCCESS, COMPARISON_RESOURCES),
    _field("cached_input_tokens", "3.5", EPISODE_OVER_HISTORY, TOKENS, "Cached input tokens",
           "cached input tokens", EFFICIENCY),
    _field("reasoning_tokens", "3.5", EPISODE_OVER_HISTORY, TOKENS, "Reasoning tokens", "reasoning tokens",
           EFFICIENCY),
    _field("cost_usd", "3.5", RECORDED, USD, "Cost (USD)", "recorded cost in dollars",
           EFFICIENCY, COST_TO_FIRST_SUCCESS, COMPARISON_RESOURCES),
)

BY_NAME: dict[str, MeasuredField] = {f.name: f for f in MEASURED}

# --- Published orders other than the row's ---------------------------------------------------
# Each names fields in the order a published file has them; a field it does not name follows
# the named ones, in MEASURED's order.

#: The ``provenance`` object of an attempts.jsonl line (R34): history's fields, episode's,
#: the token totals, then tool_errors.
PROVENANCE_ORDER = (
    "llm_calls", "llm_time_ms", "vision_llm_calls", "vision_llm_time_ms", "tool_calls",
    "screenshots_taken", "device_actions",
    "device_execution_ms", "replan_count", "time_to_first_token_ms",
    "input_tokens", "output_tokens", "total_tokens", "cached_input_tokens", "reasoning_tokens",
    "tool_errors",
)
#: metrics.json ``efficiency`` (outputs.md "Efficiency fields").
EFFICIENCY_ORDER = (
    "task_wall_ms", "setup_ms", "llm_time_ms", "llm_calls", "vision_llm_calls",
    "vision_llm_time_ms", "time_to_first_token_ms", "device_execution_ms",
    "screenshot_capture_ms", "tool_calls", "device_actions", "screenshots_taken",
    "input_tokens", "output_tokens", "total_tokens", "cached_input_tokens", "reasoning_tokens",
    "cost_usd",
)
#: The reports' distribution tables: the efficiency rows with each count before its time
#: ("Model calls", then "Model time"), then the reliability fields.
DISPLAY_ORDER = (
    "task_wall_ms", "setup_ms", "llm_calls", "llm_time_ms", "vision_llm_calls",
    "vision_llm_time_ms", "time_to_first_token_ms", "device_execution_ms",
    "screenshot_capture_ms", "tool_calls", "device_actions", "screenshots_taken",
    "input_tokens", "output_tokens", "total_tokens", "cached_input_tokens", "reasoning_tokens",
    "cost_usd",
)


def in_order(fields: Iterable[MeasuredField], order: tuple[str, ...] = ()) -> tuple[MeasuredField, ...]:
    """``fields`` with those ``order`` names first, in its order, then the others in
    MEASURED's order."""
    chosen = {f.name: f for f in fields}
    named = tuple(chosen[name] for name in order if name in chosen)
    return named + tuple(f for f in MEASURED if f.name in chosen and f.name not in order)


def field_names(
    *,
    source: str | None = None,
    kind: str | None = None,
    section: str | None = None,
    provenance: bool | None = None,
    order: tuple[str, ...] = (),
) -> tuple[str, ...]:
    """The names of the measured fields matching every given filter, in ``order`` (see
    ``in_order``)."""
    return tuple(f.name for f in in_order((
        f for f in MEASURED
        if (source is None or f.source == source)
        and (kind is None or f.kind == kind)
        and (section is None or section in f.sections)
        and (provenance is None or f.provenance == provenance)
    ), order))


def check_declarations(
    fields: tuple[MeasuredField, ...],
    provenance_order: tuple[str, ...],
    efficiency_order: tuple[str, ...],
    display_order: tuple[str, ...],
) -> None:
    """Refuse declarations the derivations would misread (ValueError): a name declared
    twice, an unknown source, kind or section, no label, or an order that names a field
    twice, an undeclared one or one that is not in its list."""
    by_name = {f.name: f for f in fields}
    if len(by_name) != len(fields):
        raise ValueError("a measured field is declared twice")
    for f in fields:
        if f.source not in SOURCES or f.kind not in KINDS or not f.sections <= set(SECTIONS) or not f.label:
            raise ValueError(f"measured field {f.name!r}: unknown source, kind or section, or no label")
    for order, fits in ((provenance_order, lambda f: f.provenance),
                        (efficiency_order, lambda f: EFFICIENCY in f.sections),
                        (display_order, lambda f: True)):
        if len(set(order)) != len(order) or not all(n in by_name and fits(by_name[n]) for n in order):
            raise ValueError(f"an order names a field twice, or one it cannot hold: {order}")


check_declarations(MEASURED, PROVENANCE_ORDER, EFFICIENCY_ORDER, DISPLAY_ORDER)
