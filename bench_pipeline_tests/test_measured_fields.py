"""The measured-field declarations and every place they must reach.

Each test walks ``measured_fields.MEASURED``: a field that is declared but misses its
formula's output, the attempt row, attempts.jsonl, the frame's schema, a metrics.json
section, a report label or row, or the Langfuse scores fails here instead of being
dropped silently.
"""

from __future__ import annotations

import dataclasses

import pytest

from bench_pipeline import measured_fields
from bench_pipeline.artifacts import AVAILABLE, MISSING, ArtifactDir, JsonFile
from bench_pipeline.attempt_metrics import TOKEN_SOURCES, EpisodeMetrics, HistoryMetrics, RunContext
from bench_pipeline.attempt_metrics.assemble import AttemptSources, attempt_row
from bench_pipeline.attempt_metrics.recorded import COUNT_FIELDS, recorded_measure
from bench_pipeline.frames import attempts_frame
from bench_pipeline.measured_fields import (
    COST_TO_FIRST_SUCCESS,
    COUNT,
    DISPLAY_ORDER,
    EFFICIENCY,
    EFFICIENCY_ORDER,
    EPISODE,
    EPISODE_OVER_HISTORY,
    HISTORY,
    MEASURED,
    MS,
    PROVENANCE_ORDER,
    RECORDED,
    RELIABILITY,
    TOKENS,
    USD,
    MeasuredField,
    check_declarations,
    field_names,
    in_order,
)
from bench_pipeline.metrics_files import ATTEMPT_KEYS
from bench_pipeline.reports.format import FIELD_LABELS, fmt_mean, fmt_ms, fmt_round, fmt_usd, formatter_for
from bench_pipeline.reports.view.resources import EFFICIENCY_ROWS
from bench_pipeline.run_reader import RawRow
from bench_pipeline.schemas import AttemptMetricsSchema
from bench_pipeline.vocabulary import (
    ATTEMPT_FIELDS,
    COST_FIELDS,
    EFFICIENCY_FIELDS,
    MEASURED_FIELDS,
    NUMERIC_FIELDS,
    PROVENANCE_FIELDS,
    RELIABILITY_FIELDS,
)

NAMES = [f.name for f in MEASURED]


# --- One attempt row from values in memory ------------------------------------------------------

def _distinct_values() -> dict[str, dict[str, int]]:
    """A different count per field and source, so that the row shows which source it took:
    history 1xx, episode 2xx, recorded 3xx (positive, integral: valid for every kind)."""
    return {
        source: {name: base + i for i, name in enumerate(NAMES)}
        for source, base in (("history", 100), ("episode", 200), ("recorded", 300))
    }


def _row_of(history: HistoryMetrics | None, episode: EpisodeMetrics | None, recorded: dict) -> dict:
    data = {"task_id": "t", "attempt": 1, "status": "failed", "success": False, "agent_eligible": True,
            "failure_class": "agent", "metrics": recorded}
    available = JsonFile(AVAILABLE, {}, path="tasks/t/x.json")
    missing = JsonFile(MISSING, reason="file not found")
    sources = AttemptSources(
        history_file=available if history is not None else missing,
        episode_file=available if episode is not None else missing,
        trace_file=missing, history=history, episode=episode,
        trace_status=MISSING, final_response=None, trace_calls=None,
    )
    ctx = RunContext("run-1", None, "", {})
    return attempt_row(RawRow(1, "t", 1, data), ctx, ArtifactDir("tasks/t"), sources)


def _history(values: dict[str, int]) -> HistoryMetrics:
    names = {f.name for f in dataclasses.fields(HistoryMetrics)}
    return HistoryMetrics(
        **{n: v for n, v in values.items() if n in names},
        tokens={n: values[n] for n in field_names(kind=TOKENS)},
    )


def _episode(values: dict[str, int]) -> EpisodeMetrics:
    names = {f.name for f in dataclasses.fields(EpisodeMetrics)}
    return EpisodeMetrics(
        **{n: v for n, v in values.items() if n in names},
        tokens={n: values[n] for n in field_names(kind=TOKENS)},
    )


# --- The formulas supply what the declarations promise ----------------------------------------

@pytest.mark.parametrize("measured", MEASURED, ids=NAMES)
def test_each_derived_field_is_an_output_of_its_sources_formula(measured: MeasuredField):
    history = {f.name for f in dataclasses.fields(HistoryMetrics)}
    episode = {f.name for f in dataclasses.fields(EpisodeMetrics)}
    if measured.kind == TOKENS:  # token totals travel together, as token_sums makes them
        assert measured.source == EPISODE_OVER_HISTORY and measured.name in TOKEN_SOURCES
        history, episode = history | set(TOKEN_SOURCES), episode | set(TOKEN_SOURCES)
    if measured.source in (HISTORY, EPISODE_OVER_HISTORY):
        assert measured.name in history
    if measured.source in (EPISODE, EPISODE_OVER_HISTORY):
        assert measured.name in episode
    if measured.source == RECORDED:
        assert measured.name not in history | episode


def test_the_token_sources_are_the_token_fields():
    assert tuple(TOKEN_SOURCES) == field_names(kind=TOKENS)


# --- The assembled attempt row --------------------------------------------------------------------

def test_with_both_files_each_field_comes_from_its_declared_source():
    values = _distinct_values()
    row = _row_of(_history(values["history"]), _episode(values["episode"]), values["recorded"])
    for f in MEASURED:
        expected = {HISTORY: values["history"], EPISODE: values["episode"],
                    EPISODE_OVER_HISTORY: values["episode"], RECORDED: values["recorded"]}[f.source][f.name]
        assert row[f.name] == expected, f.name
        if f.provenance:
            assert row["provenance"][f.name] == "derived", f.name
        else:
            assert f.name not in row["provenance"]


def test_without_files_every_field_is_the_recorded_one():
    values = _distinct_values()
    row = _row_of(None, None, values["recorded"])
    for f in MEASURED:
        assert row[f.name] == values["recorded"][f.name], f.name
        if f.provenance:
            assert row["provenance"][f.name] == "recorded", f.name


def test_an_episode_without_a_value_leaves_the_field_to_history():
    """episode_over_history: an episode that supplies nothing (no events, no token
    override) replaces nothing."""
    values = _distinct_values()
    row = _row_of(_history(values["history"]), EpisodeMetrics(), values["recorded"])
    for f in MEASURED:
        if f.source == EPISODE_OVER_HISTORY:
            assert row[f.name] == values["history"][f.name] and row["provenance"][f.name] == "derived"
        if f.source == EPISODE:
            assert row[f.name] is None and row["provenance"][f.name] == "derived"


def test_the_literal_row_of_one_attempt():
    """The same rule on named fields: tokens and tool errors from the episode, llm_calls
    from history, device time from the episode, the cost as recorded."""
    values = _distinct_values()
    row = _row_of(_history(values["history"]), _episode(values["episode"]), values["recorded"])
    assert (row["llm_calls"], row["tool_errors"], row["input_tokens"], row["device_execution_ms"],
            row["cost_usd"], row["task_wall_ms"]) == (104, 212, 215, 209, 320, 300)


def test_every_field_reaches_attempts_jsonl_the_frame_and_the_provenance():
    values = _distinct_values()
    row = _row_of(_history(values["history"]), _episode(values["episode"]), values["recorded"])
    assert set(NAMES) <= set(row) and set(NAMES) <= set(ATTEMPT_KEYS)
    assert [k for k in ATTEMPT_FIELDS if k in NAMES] == NAMES
    assert list(row["provenance"]) == list(PROVENANCE_FIELDS)
    frame = attempts_frame([row])  # validated by AttemptMetricsSchema
    assert [frame[name].iloc[0] for name in NAMES] == [row[name] for name in NAMES]


# --- Recorded values: the legacy key and positivity of a declaration ----------------------------

def test_a_legacy_key_stands_in_when_the_field_holds_no_number():
    wall = measured_fields.BY_NAME["task_wall_ms"]
    assert wall.legacy_key == "wall_ms"
    assert recorded_measure({"metrics": {"task_wall_ms": "x", "wall_ms": 1200}}, wall) == 1200
    assert recorded_measure({"metrics": {"task_wall_ms": 900, "wall_ms": 1200}}, wall) == 900
    assert recorded_measure({"metrics": {}}, wall) is None


def test_a_positive_only_field_drops_zero_and_negative_recorded_values():
    ttft = measured_fields.BY_NAME["time_to_first_token_ms"]
    assert ttft.positive_only
    assert [recorded_measure({"metrics": {ttft.name: v}}, ttft) for v in (0, -5, 12.5)] == [None, None, 12.5]


def test_count_fields_are_the_count_kind_and_the_rubric_counts():
    assert COUNT_FIELDS == frozenset(field_names(kind=COUNT)) | {"rubric_pass_count", "rubric_total"}
    assert recorded_measure({"metrics": {"llm_calls": 2.5}}, measured_fields.BY_NAME["llm_calls"]) is None
    assert recorded_measure({"metrics": {"llm_time_ms": 2.5}}, measured_fields.BY_NAME["llm_time_ms"]) == 2.5


# --- Schema, sections, reports, Langfuse ----------------------------------------------------------

@pytest.mark.parametrize("measured", MEASURED, ids=NAMES)
def test_each_field_has_its_schema_column(measured: MeasuredField):
    column = AttemptMetricsSchema.to_schema().columns[measured.name]
    assert str(column.dtype) == ("Int64" if measured.kind == COUNT else "Float64")
    assert column.nullable
    assert measured.reference in column.description


@pytest.mark.parametrize("measured", MEASURED, ids=NAMES)
def test_each_field_has_its_label_formatter_and_score(measured: MeasuredField):
    assert FIELD_LABELS[measured.name] == measured.label
    assert formatter_for(measured.name) is {MS: fmt_ms, USD: fmt_usd, TOKENS: fmt_round, COUNT: fmt_mean}[measured.kind]
    assert measured.name in NUMERIC_FIELDS and measured.name in MEASURED_FIELDS


def test_each_section_lists_exactly_its_declared_fields():
    for section, listed in ((EFFICIENCY, EFFICIENCY_FIELDS), (RELIABILITY, RELIABILITY_FIELDS),
                            (COST_TO_FIRST_SUCCESS, COST_FIELDS)):
        assert set(listed) == {f.name for f in MEASURED if section in f.sections}, section
        assert len(set(listed)) == len(listed)


def test_the_efficiency_table_shows_every_efficiency_field():
    """The report's efficiency rows (FIELD_LABELS' order filtered by the section) miss none."""
    assert sorted(EFFICIENCY_ROWS) == sorted(EFFICIENCY_FIELDS)


# --- Orders and declarations ----------------------------------------------------------------------

def test_a_field_an_order_does_not_name_comes_last_in_declaration_order():
    chosen = [measured_fields.BY_NAME[n] for n in ("cost_usd", "llm_calls", "setup_ms", "tool_calls")]
    assert [f.name for f in in_order(chosen, ("tool_calls", "llm_calls"))] == [
        "tool_calls", "llm_calls", "setup_ms", "cost_usd"]


def test_field_names_filters_combine():
    assert field_names(source=RECORDED, kind=MS) == ("task_wall_ms", "setup_ms", "screenshot_capture_ms")
    assert field_names(section=COST_TO_FIRST_SUCCESS, kind=TOKENS) == ("total_tokens",)
    assert field_names(provenance=False) == ("task_wall_ms", "setup_ms", "screenshot_capture_ms", "retry_count",
                                             "cost_usd")


def _declared(**changes) -> tuple[MeasuredField, ...]:
    return tuple(dataclasses.replace(f, **changes) if f.name == "llm_calls" else f for f in MEASURED)


@pytest.mark.parametrize("fields, orders, message", [
    (MEASURED + (MEASURED[0],), (), "declared twice"),
    (_declared(source="trace"), (), "unknown source"),
    (_declared(kind="bytes"), (), "unknown source, kind"),
    (_declared(sections=frozenset({"latency"})), (), "or section"),
    (_declared(label=""), (), "no label"),
    (MEASURED, (("setup_ms",), EFFICIENCY_ORDER, DISPLAY_ORDER), "cannot hold"),  # recorded: no provenance
    (MEASURED, (PROVENANCE_ORDER, ("tool_errors",), DISPLAY_ORDER), "cannot hold"),  # not efficiency
    (MEASURED, (PROVENANCE_ORDER, EFFICIENCY_ORDER, ("cost_usd", "cost_usd")), "twice"),
    (MEASURED, (PROVENANCE_ORDER, EFFICIENCY_ORDER, ("gpu_ms",)), "cannot hold"),
])
def test_a_declaration_the_derivations_would_misread_is_refused(fields, orders, message):
    with pytest.raises(ValueError, match=message):
        check_declarations(fields, *(orders or (PROVENANCE_ORDER, EFFICIENCY_ORDER, DISPLAY_ORDER)))


def test_the_declarations_as_shipped_are_accepted():
    check_declarations(MEASURED, PROVENANCE_ORDER, EFFICIENCY_ORDER, DISPLAY_ORDER)
