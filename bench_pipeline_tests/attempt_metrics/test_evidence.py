"""What an attempt row shows besides its numbers (docs/design.md): the trace's final response
and tool calls, observations (reference 3.8, R38) and the evidence object."""

from __future__ import annotations

from bench_pipeline.artifacts import AVAILABLE, INVALID, MISSING, ArtifactDir, JsonFile
from bench_pipeline.attempt_metrics import EpisodeMetrics
from bench_pipeline.attempt_metrics.evidence import attempt_evidence, observations, trace_evidence


def test_a_trace_gives_its_final_response_and_named_calls():
    trace = JsonFile(AVAILABLE, {"final_response": "B", "tool_calls": [
        {"name": "tap", "arguments": {"x": 1}, "id": "c1"}, "not a call", {"arguments": {}}]})
    assert trace_evidence(trace) == (AVAILABLE, "B", [{"name": "tap", "arguments": {"x": 1}},
                                                      {"name": None, "arguments": {}}])


def test_a_trace_of_the_wrong_shape_is_invalid_and_a_missing_one_stays_missing():
    assert trace_evidence(JsonFile(AVAILABLE, ["x"])) == (INVALID, None, None)
    assert trace_evidence(JsonFile(AVAILABLE, {"final_response": 3})) == (INVALID, None, None)
    assert trace_evidence(JsonFile(AVAILABLE, {"tool_calls": {}})) == (INVALID, None, None)
    assert trace_evidence(JsonFile(MISSING)) == (MISSING, None, None)
    assert trace_evidence(JsonFile(AVAILABLE, {})) == (AVAILABLE, None, [])


def test_an_observation_passes_when_any_of_its_entries_passed():
    entries = [{"id": "a", "passed": False}, {"id": "a", "passed": True}, {"id": "b", "passed": "yes"},
               {"id": 3, "passed": True}, "x"]
    assert observations(entries) == {"a": True, "b": False}
    assert observations({"id": "a"}) == {}


def _evidence(row: dict, epi: EpisodeMetrics | None) -> dict:
    return attempt_evidence(row, ArtifactDir("tasks/t"), JsonFile(MISSING), MISSING, None, None, epi)


def test_the_episode_id_of_the_row_and_of_the_file_must_agree():
    epi = EpisodeMetrics(episode_id="e-1", trace_id="tr-9")
    assert _evidence({"episode_id": "e-1"}, epi)["episode_id"] == "e-1"
    assert _evidence({}, epi)["episode_id"] == "e-1"
    assert _evidence({"episode_id": "e-2"}, epi)["episode_id"] is None  # ambiguous
    assert _evidence({"episode_id": "e-2"}, None)["episode_id"] == "e-2"
    assert _evidence({}, epi)["trace_id"] == "tr-9"


def test_the_evidence_keeps_the_error_texts_and_typed_checks():
    row = {"error": "boom", "metrics": {"judge_error": "late", "episode_error": 5},
           "expected_answer_match": "yes", "memory_recall_evidence_source": "inline",
           "started_at": "2026-01-01T00:00:00Z", "finished_at": 7}
    evidence = _evidence(row, None)
    assert evidence["errors"] == {"error": "boom", "judge_error": "late"}
    assert evidence["expected_answer_match"] is None and evidence["memory_recall_evidence_source"] == "inline"
    assert (evidence["started_at"], evidence["finished_at"]) == ("2026-01-01T00:00:00Z", None)
    assert evidence["dir"] == "tasks/t" and evidence["trace_artifact"] == {"status": MISSING, "path": None}
