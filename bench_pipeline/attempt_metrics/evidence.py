"""What reports and Langfuse show for an attempt (docs/design.md): the trace's final response
and tool calls, observations and the row's evidence. No formula reads these."""

from __future__ import annotations

from ..artifacts import AVAILABLE, INVALID, MISSING, ArtifactDir, JsonFile
from ..layouts import trace_call
from ..vocabulary import ERROR_TEXT_FIELDS
from .episode import EpisodeMetrics
from .recorded import bool_or_none, recorded, str_or_none


def trace_evidence(file: JsonFile) -> tuple[str, str | None, list | None]:
    """trace.json status, final response and tool calls for the experiment output (1);
    each call as ``{name, arguments}``, from the runner's ``{tool, input}`` too
    (layouts.trace_call)."""
    if not file.available:
        return file.status, None, None
    value = file.value
    if not isinstance(value, dict):
        return INVALID, None, None
    final = value.get("final_response")
    calls = value.get("tool_calls", [])
    if not (final is None or isinstance(final, str)) or not isinstance(calls, list):
        return INVALID, None, None
    tool_calls = [trace_call(c) for c in calls if isinstance(c, dict)]
    return AVAILABLE, final, tool_calls


def observations(entries: object) -> dict[str, bool]:
    """{observation id: passed in this row} (reference 3.8 observations, R38)."""
    result: dict[str, bool] = {}
    if not isinstance(entries, list):
        return result
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            result[entry["id"]] = result.get(entry["id"], False) or entry.get("passed") is True
    return result


def attempt_evidence(
    row: dict,
    folder: ArtifactDir,
    trace_file: JsonFile,
    trace_status: str,
    final_response: str | None,
    trace_calls: list | None,
    epi: EpisodeMetrics | None,
) -> dict:
    """The attempt row's ``evidence``: its folder, trace, ids, checks, errors and times."""
    row_episode = str_or_none(row.get("episode_id"))
    file_episode = epi.episode_id if epi is not None else None
    if row_episode is not None and file_episode is not None and row_episode != file_episode:
        episode_id = None  # ambiguous (run-directory.md episode.json)
    else:
        episode_id = row_episode if row_episode is not None else file_episode
    errors = {k: recorded(row, k) for k in ERROR_TEXT_FIELDS if isinstance(recorded(row, k), str)}
    return {
        "dir": folder.relative,
        "trace_artifact": {
            "status": trace_status,
            "path": trace_file.path if trace_status != MISSING else None,
        },
        "final_response": final_response,
        "tool_calls": trace_calls,
        "episode_id": episode_id,
        "trace_id": epi.trace_id if epi is not None else None,
        "hard_assertions": row.get("hard_assertions"),
        "hard_assertion_failures": row.get("hard_assertion_failures"),
        "rubric": row.get("rubric"),
        "rubric_spec": row.get("rubric_spec"),
        "environment_state_assertions": row.get("environment_state_assertions"),
        "trace_observations": row.get("trace_observations"),
        "expected_answer_match": bool_or_none(row.get("expected_answer_match")),
        "expected_recalled_memory_match": bool_or_none(row.get("expected_recalled_memory_match")),
        "memory_recall_evidence_source": str_or_none(row.get("memory_recall_evidence_source")),
        "errors": errors,
        "started_at": str_or_none(row.get("started_at")),
        "finished_at": str_or_none(row.get("finished_at")),
    }
