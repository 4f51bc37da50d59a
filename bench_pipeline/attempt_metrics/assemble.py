"""One attempt row from a results.jsonl row and its artifacts (outputs.md "attempt metrics",
reference 3.1-3.6): read the artifacts, run the formulas, choose per field between the
derived and the recorded value (3.1, R3, R34), and keep the data-quality findings."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..artifacts import (
    AVAILABLE,
    INVALID,
    MISSING,
    ArtifactDir,
    JsonFile,
    artifact_file,
    read_json_file,
    resolve_artifact_dir,
)
from ..measured_fields import EPISODE, HISTORY, MEASURED, PROVENANCE_ORDER, TOKENS, MeasuredField, in_order
from ..run_reader import RawRow, RawRun
from ..vocabulary import FAILURE_EVIDENCE_FIELDS, OUTCOME_NUMBER_FIELDS
from .episode import EpisodeMetrics, derive_episode
from .evidence import attempt_evidence, observations, trace_evidence
from .history import HistoryMetrics, derive_history
from .invalid_values import invalid_values, value_text
from .outcome import failure_evidence, outcome
from .recorded import bool_or_none, field_number, recorded, recorded_measure, str_or_none


@dataclass
class RunContext:
    """What every attempt of a run shares."""

    run_id: str
    run_dir: Path
    real_run_dir: str
    suite_tasks: dict[str, dict]
    #: Folders below the run folder already known to be plain folders (not symlinks).
    checked_dirs: dict[str, bool] = field(default_factory=dict)

    @classmethod
    def of(cls, raw: RawRun) -> "RunContext":
        return cls(raw.run_id, raw.run_dir, os.path.realpath(raw.run_dir), raw.suite_tasks)


@dataclass
class AttemptSources:
    """An attempt's artifacts as the formulas took them: each file with its status, and
    what history.json, episode.json and trace.json supplied (None: unavailable)."""

    history_file: JsonFile
    episode_file: JsonFile
    trace_file: JsonFile
    history: HistoryMetrics | None
    episode: EpisodeMetrics | None
    trace_status: str
    final_response: str | None
    trace_calls: list | None


# --- Reading the artifacts ----------------------------------------------------------------------

def _read_artifact(ctx: RunContext, folder: ArtifactDir, name: str) -> JsonFile:
    relative = artifact_file(folder, name)
    if relative is None:
        return JsonFile(MISSING, reason=f"artifact folder refused: {folder.refused_reason}")
    return read_json_file(ctx.run_dir, ctx.real_run_dir, relative)


def history_messages(file: JsonFile) -> list | None:
    """The message list of an available history.json, None for the wrong shape (R3)."""
    if not file.available:
        return None
    value = file.value
    if isinstance(value, list):
        return value
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        return value["messages"]
    return None


def derived_or_invalid(formula: Callable, value: object, file: JsonFile) -> tuple[object | None, JsonFile]:
    """``formula(value)``, or (None, the file marked invalid) when the formula fails.

    The formulas accept any JSON (tests feed them arbitrary values); this is the safety net
    that keeps one file nobody foresaw from stopping a whole run: the attempt falls back to
    its recorded values and the file is listed in data_quality with the error.
    """
    if value is None:
        return None, file
    try:
        return formula(value), file
    except Exception as exc:  # noqa: BLE001 - reported as a located data-quality finding
        reason = f"could not be evaluated ({type(exc).__name__}: {str(exc)[:200]})"
        return None, JsonFile(INVALID, reason=reason, path=file.path)


def read_sources(ctx: RunContext, folder: ArtifactDir) -> AttemptSources:
    """Read the attempt's history, episode and trace files and run the formulas on them."""
    return sources_from_files(_read_artifact(ctx, folder, "history.json"),
                              _read_artifact(ctx, folder, "episode.json"),
                              _read_artifact(ctx, folder, "trace.json"))


def sources_from_files(history_file: JsonFile, episode_file: JsonFile, trace_file: JsonFile) -> AttemptSources:
    """The formulas run on the three files as read; a file of the wrong shape, or one a
    formula fails on, is marked invalid (R3). Pure: the reading is ``read_sources``'."""
    messages = history_messages(history_file)
    if history_file.available and messages is None:
        history_file = JsonFile(INVALID, reason="neither an array nor {\"messages\": [...]}", path=history_file.path)
    episode_obj = episode_file.value if episode_file.available and isinstance(episode_file.value, dict) else None
    if episode_file.available and episode_obj is None:
        episode_file = JsonFile(INVALID, reason="not a JSON object", path=episode_file.path)
    trace_status, final_response, trace_calls = trace_evidence(trace_file)

    hist, history_file = derived_or_invalid(derive_history, messages, history_file)
    epi, episode_file = derived_or_invalid(derive_episode, episode_obj, episode_file)
    return AttemptSources(history_file, episode_file, trace_file, hist, epi, trace_status, final_response, trace_calls)


# --- Data-quality findings ----------------------------------------------------------------------

def unsafe_dir_finding(raw: RawRow, folder: ArtifactDir) -> dict | None:
    """The finding for a refused artifact folder (R2), None for a usable one."""
    if not folder.refused:
        return None
    return {
        "line": raw.line,
        "task_id": raw.task_id,
        "attempt": raw.attempt,
        "artifact_dir": raw.data.get("artifact_dir") if "artifact_dir" in raw.data else None,
        "reason": folder.refused_reason,
    }


def artifact_findings(raw: RawRow, sources: AttemptSources) -> list[dict]:
    """A located finding per artifact file that exists but cannot be used (R3)."""
    findings = []
    for name, f, status in (
        ("history.json", sources.history_file, sources.history_file.status),
        ("episode.json", sources.episode_file, sources.episode_file.status),
        ("trace.json", sources.trace_file, sources.trace_status),
    ):
        if status not in (AVAILABLE, MISSING):
            findings.append({
                "line": raw.line, "task_id": raw.task_id, "attempt": raw.attempt,
                "file": f.path or name, "status": status,
                "reason": f.reason or "unexpected structure",
            })
    return findings


def artifact_value_findings(raw: RawRow, sources: AttemptSources) -> list[dict]:
    """A located finding per value of history.json or episode.json that a formula reads and
    refuses as of the wrong type (``HistoryMetrics.refused``, ``EpisodeMetrics.refused``):
    ``{line, task_id, attempt, file, field, value, reason}``, ``field`` where in the file
    (``[3].duration_ms``: the fourth message's; ``events[2].duration_ms``), ``value`` a short
    text of it (``invalid_values.value_text``)."""
    return [{"line": raw.line, "task_id": raw.task_id, "attempt": raw.attempt, "file": file.path or name,
             "field": where, "value": value_text(value), "reason": reason}
            for name, file, metrics in (("history.json", sources.history_file, sources.history),
                                        ("episode.json", sources.episode_file, sources.episode))
            if metrics is not None
            for where, value, reason in metrics.refused]


# --- Choosing the values (3.1, R3, R34) ---------------------------------------------------------

#: The measured fields with a provenance entry, in the provenance object's order.
_WITH_PROVENANCE = in_order((f for f in MEASURED if f.provenance), PROVENANCE_ORDER)


def _supplied(metrics: HistoryMetrics | EpisodeMetrics, measured: MeasuredField) -> object:
    """The value a file's formula supplies for a field (token totals are kept together)."""
    if measured.kind == TOKENS:
        return metrics.tokens.get(measured.name)
    return getattr(metrics, measured.name)


def _sourced(
    row: dict, measured: MeasuredField, hist: HistoryMetrics | None, epi: EpisodeMetrics | None,
) -> tuple[object, str]:
    """A field's value and provenance by its source (3.1, R3): an available episode.json's
    value (for a field the episode replaces, only a value it supplies), else an available
    history.json's, else the recorded one."""
    source = measured.source
    if epi is not None and source != HISTORY:
        value = _supplied(epi, measured)
        if source == EPISODE or value is not None:
            return value, "derived"
    if hist is not None and source != EPISODE:
        return _supplied(hist, measured), "derived"
    return recorded_measure(row, measured), "recorded"


def measured_values(
    row: dict, hist: HistoryMetrics | None, epi: EpisodeMetrics | None,
) -> tuple[dict[str, object], dict[str, str]]:
    """Every measured field's value, in the row's order, and the provenance ("derived" or
    "recorded") of those derived from artifacts, in the provenance object's order (R34)."""
    derived: dict[str, object] = {}
    provenance: dict[str, str] = {}
    for measured in _WITH_PROVENANCE:
        derived[measured.name], provenance[measured.name] = _sourced(row, measured, hist, epi)
    values = {
        m.name: derived[m.name] if m.provenance else recorded_measure(row, m) for m in MEASURED
    }
    return values, provenance


def failure_fields(
    row: dict, success: bool | None, hist: HistoryMetrics | None, epi: EpisodeMetrics | None,
) -> tuple[str | None, str | None, str]:
    """(first_failure_stage, failure_event_ref, provenance): ``failure_evidence`` over the
    recorded labels and the files' first errors; a passing result clears both (3.1 step 4)."""
    stage, ref, source = failure_evidence(
        str_or_none(row.get("first_failure_stage")),
        str_or_none(recorded(row, "failure_event_ref")),
        (hist.first_error_ref, hist.first_error_stage) if hist is not None else None,
        (epi.first_error_ref, epi.first_error_stage) if epi is not None else None,
    )
    if success is True:
        stage, ref = None, None
    return stage, ref, source


def _category(row: dict, suite_task: dict | None) -> str | None:
    """The row's category, else the suite task's (outputs.md, R24)."""
    if isinstance(row.get("category"), str):
        return row["category"]
    if suite_task is not None and isinstance(suite_task.get("category"), str):
        return suite_task["category"]
    return None


# --- The row ------------------------------------------------------------------------------------

def derive_attempt(raw: RawRow, ctx: RunContext) -> dict:
    """One attempt-metrics row (outputs.md) from a results row and its artifacts (3.1-3.6).

    Data-quality findings made on the way (a refused folder, a broken artifact) are kept
    in ``evidence.findings`` so that stage 4 can list them with their location.
    """
    folder = resolve_artifact_dir(
        ctx.run_dir, ctx.real_run_dir, raw.data.get("artifact_dir"), raw.task_id, raw.attempt, ctx.checked_dirs
    )
    return attempt_row(raw, ctx, folder, read_sources(ctx, folder))


def attempt_row(raw: RawRow, ctx: RunContext, folder: ArtifactDir, sources: AttemptSources) -> dict:
    """The attempt row of ``derive_attempt`` from the artifacts already read: identity,
    outcome, the measured values and their provenance, recovery, observations, evidence."""
    row = raw.data
    hist, epi = sources.history, sources.episode
    outcome_fields = outcome(row)
    values, provenance = measured_values(row, hist, epi)
    stage, ref, failure_source = failure_fields(row, outcome_fields["success"], hist, epi)
    for name in FAILURE_EVIDENCE_FIELDS:
        provenance[name] = failure_source

    evidence = attempt_evidence(row, folder, sources.trace_file, sources.trace_status,
                                sources.final_response, sources.trace_calls, epi)
    evidence["findings"] = {"unsafe_dir": unsafe_dir_finding(raw, folder),
                            "artifacts": artifact_findings(raw, sources),
                            "values": invalid_values(raw),
                            "artifact_values": artifact_value_findings(raw, sources)}
    return {
        "run_id": ctx.run_id,
        "task_id": raw.task_id,
        "attempt": raw.attempt,
        "line": raw.line,
        "category": _category(row, ctx.suite_tasks.get(raw.task_id)),
        "artifact_dir": str_or_none(row.get("artifact_dir")),
        **outcome_fields,
        **{k: field_number(row.get(k), k) for k in OUTCOME_NUMBER_FIELDS},
        "first_failure_stage": stage,
        "failure_event_ref": ref,
        **values,
        "recovery_attempted": bool_or_none(row.get("recovery_attempted")),
        "recovery_succeeded": bool_or_none(row.get("recovery_succeeded")),
        "provenance": provenance,
        "observations": observations(row.get("trace_observations")),
        "evidence": evidence,
    }
