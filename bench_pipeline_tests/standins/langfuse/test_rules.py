"""The server rules on values in memory: score bodies per API, ingestion envelopes, run item
keys per server version, dataset bodies, the row a score replaces."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from standins.langfuse import rules

TRACE = "0123456789abcdef0123456789abcdef"


def refused(fn, *args, **kw) -> str:
    with pytest.raises(rules.RuleError) as err:
        fn(*args, **kw)
    assert err.value.status == 400
    return err.value.message


def test_modes_name_the_server_generations():
    v4, v3, sdk5 = rules.MODES["v4"], rules.MODES["v3"], rules.MODES["sdk5"]
    assert (v4.events_only, v4.v4_reads, v4.ingestion, v4.score_arrays) == (True, True, True, False)
    assert (v3.events_only, v3.v4_reads, v3.default_version) == (False, False, "3.172.0")
    assert (sdk5.score_arrays, sdk5.ingestion, sdk5.run_item_writes) == (True, False, False)


def test_a_score_is_normalised_with_its_inferred_type():
    assert rules.validate_score({"name": "x", "value": 1, "traceId": TRACE}, api="scores") == {
        "id": None, "name": "x", "value": 1.0, "dataType": "NUMERIC", "source": "API", "environment": "default",
        "traceId": TRACE, "observationId": None, "sessionId": None, "datasetRunId": None, "comment": None,
        "metadata": None, "configId": None, "queueId": None}
    assert rules.validate_score({"name": "x", "value": "ok", "sessionId": "s"}, api="scores")["dataType"] == "CATEGORICAL"
    assert rules.validate_score({"name": "b", "value": 1, "dataType": "BOOLEAN", "datasetRunId": "r"},
                                api="ingestion")["value"] == 1.0


def test_a_score_needs_exactly_one_subject():
    assert "exactly one" in refused(rules.validate_score, {"name": "x", "value": 1}, api="scores")
    assert "exactly one" in refused(rules.validate_score, {"name": "x", "value": 1, "traceId": TRACE,
                                                           "datasetRunId": "r"}, api="scores")
    assert "exactly one" in refused(rules.validate_score, {"name": "x", "value": 1, "sessionId": "s",
                                                           "observationId": "o"}, api="scores")


def test_score_values_sources_and_environments_follow_the_server():
    base = {"name": "x", "traceId": TRACE}
    assert "0 or 1" in refused(rules.validate_score, {**base, "value": 5, "dataType": "BOOLEAN"}, api="scores")
    assert "must be a number" in refused(rules.validate_score, {**base, "value": float("nan"), "dataType": "NUMERIC"},
                                         api="scores")
    assert "500" in refused(rules.validate_score, {**base, "value": "x" * 501, "dataType": "TEXT"}, api="scores")
    assert "source" in refused(rules.validate_score, {**base, "value": 1, "source": "EVAL"}, api="scores")
    assert rules.validate_score({**base, "value": 1, "source": "EVAL"}, api="ingestion")["source"] == "EVAL"
    assert "configId" in refused(rules.validate_score, {**base, "value": 1, "source": "ANNOTATION"}, api="scores")
    assert "environment" in refused(rules.validate_score, {**base, "value": 1, "environment": "langfuse-x"},
                                    api="scores")
    assert "id" in refused(rules.validate_score, {**base, "value": 1, "id": ""}, api="ingestion")
    assert rules.validate_score({**base, "value": 1, "id": ""}, api="scores")["id"] == ""


def test_an_event_envelope_needs_an_id_an_offset_timestamp_and_a_type():
    eid, etype, ts = rules.validate_event_envelope({"id": "e", "timestamp": "2026-11-30T10:00:00+01:00",
                                                    "type": "score-create"})
    assert (eid, etype, ts) == ("e", "score-create", datetime(2026, 11, 30, 9, tzinfo=timezone.utc))
    assert "offset" in refused(rules.validate_event_envelope, {"id": "e", "timestamp": "2026-11-30T10:00:00",
                                                                "type": "x"})
    assert "event id" in refused(rules.validate_event_envelope, {"id": "a\rb", "timestamp": "2026-11-30T10:00:00Z"})


def test_run_item_keys_depend_on_the_server_version():
    body = {"runName": "r", "datasetItemId": "i", "traceId": TRACE, "createdAt": "2026-11-30T10:00:00Z"}
    assert rules.validate_run_item(body, "3.160.0") is body
    assert "createdAt" in refused(rules.validate_run_item, body, "3.159.9")
    assert rules.validate_run_item({**body, "datasetVersion": "v"}, "not a version") is not None
    assert "datasetVersion" in refused(rules.validate_run_item, {**body, "datasetVersion": "v"}, "3.149.0")
    assert "must be provided" in refused(rules.validate_run_item, {"runName": "r", "datasetItemId": "i"}, "4.16.0")
    assert rules.parse_version("v3.150.2-rc") == (3, 150, 2) and rules.parse_version("x") is None


def test_dataset_and_item_bodies():
    assert rules.validate_dataset({"name": "d"}) == {"name": "d"}
    assert "name" in refused(rules.validate_dataset, {"name": ""})
    assert rules.validate_dataset_item({"datasetName": "d", "extra": 1}) == {
        "datasetName": "d", "id": None, "input": None, "expectedOutput": None, "metadata": None,
        "sourceTraceId": None, "sourceObservationId": None, "status": None}
    assert "255" in refused(rules.validate_dataset_item, {"datasetName": "d", "id": "x" * 256})
    assert "ACTIVE" in refused(rules.validate_dataset_item, {"datasetName": "d", "status": "DELETED"})


def test_a_score_replaces_the_row_of_its_id_name_and_utc_day():
    score = {"id": "s", "timestamp": "2026-11-30T23:59:59.999Z", "name": "n"}
    assert rules.score_day_key(score) == ("s", "2026-11-30", "n")
    assert rules.score_day_key({**score, "timestamp": "2026-12-01T00:00:00.000Z"}) == ("s", "2026-12-01", "n")


def test_windows_are_closed_below_and_open_above():
    low = datetime(2026, 11, 30, tzinfo=timezone.utc)
    high = low + rules.EXPERIMENT_SCORE_WINDOW
    assert rules.in_window(low, low, high) and not rules.in_window(high, low, high)
    assert rules.in_window(high - timedelta(microseconds=1), low, high)
    assert rules.iso_with_offset("2026-11-30T10:00:00Z") == datetime(2026, 11, 30, 10, tzinfo=timezone.utc)
    assert rules.iso_with_offset(5) is None and rules.iso_with_offset("2026-11-30") is None
