"""publication.json: a fresh record, the target's fingerprint, and what is saved before sending."""

from __future__ import annotations

import json
import re

from bench_pipeline.publication.record import (
    CONFIRMED,
    IN_DOUBT,
    PLANNED,
    fresh_record,
    load_record,
    now_iso,
    save_record,
    target_fingerprint,
)
from bench_pipeline.publication.settings import LangfuseSettings

from .builders import plan


def test_a_fresh_record_names_the_run_and_holds_nothing_confirmed():
    record = fresh_record(plan(), "t1")
    assert (record["run_id"], record["dataset"], record["target"], record["status"]) == (
        "run-7", "android-core", "t1", "incomplete")
    assert record["items"] == record["bindings"] == record["attempt_scores"] == {} and record["run_scores"] is None


def test_the_target_is_identified_without_storing_the_url_or_key():
    one = target_fingerprint(LangfuseSettings("https://lf.example", "pk-lf-1", "sk"))
    assert len(one) == 16 and "lf.example" not in one
    assert one == target_fingerprint(LangfuseSettings("https://lf.example/", "pk-lf-1", "other secret"))
    assert one != target_fingerprint(LangfuseSettings("https://lf.example", "pk-lf-2", "sk"))
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", now_iso())


def test_what_is_not_confirmed_is_saved_in_doubt_and_read_back_for_the_same_run_only(tmp_path):
    path = tmp_path / "publication.json"
    record = fresh_record(plan(), "t1")
    record["bindings"] = {"a": {"state": PLANNED, "run_item": PLANNED}, "b": {"state": CONFIRMED}}
    save_record(path, record)
    on_disk = json.loads(path.read_text())
    assert on_disk["bindings"] == {"a": {"state": IN_DOUBT, "run_item": IN_DOUBT}, "b": {"state": CONFIRMED}}
    assert record["bindings"]["a"]["state"] == PLANNED  # the record in memory is as it was
    assert load_record(path, plan(), "t1")["bindings"]["a"]["state"] == IN_DOUBT
    assert load_record(path, plan(), "another target")["bindings"] == {}
    path.write_text("{not json")
    assert load_record(path, plan(), "t1")["bindings"] == {}
