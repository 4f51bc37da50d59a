"""Pure ids: the suite name, item ids, the experiment id, trace and span ids, trace URLs."""

from __future__ import annotations

from langfuse import Langfuse

from bench_pipeline.publication.ids import (
    attempt_score_id,
    dataset_item_id,
    dataset_name,
    evaluation_span_id,
    experiment_id,
    normalize_trace_id,
    replay_root_span_id,
    replay_trace_id,
    run_score_id,
    trace_url,
)

from .builders import MANIFEST, SUITE_DEF


def test_dataset_name_prefers_metrics_then_manifest_then_suite():
    assert dataset_name({"suite": "s1"}, MANIFEST, SUITE_DEF) == "s1"
    assert dataset_name({"suite": None}, {"suite": {"name": "from-manifest"}}, SUITE_DEF) == "from-manifest"
    assert dataset_name({"suite": None}, {"suite": "plain"}, {}) == "plain"
    assert dataset_name({"suite": None}, {}, {"name": "from-suite"}) == "from-suite"
    assert dataset_name({"suite": None}, {}, {}) == "unknown-suite"


def test_dataset_item_ids_are_deterministic_readable_and_bounded():
    assert dataset_item_id("android-core", "open_settings", 2) == "android-core:open_settings:2"
    assert dataset_item_id("android-core", "open_settings", 2) == dataset_item_id("android-core", "open_settings", 2)
    # ambiguous or long parts are hashed; the two hashed ids differ
    a, b = dataset_item_id("a:b", "c", 1), dataset_item_id("a", "b:c", 1)
    assert a != b and a.startswith("bench-item-") and ":" not in a
    long = dataset_item_id("s" * 200, "t" * 200, 1)
    assert len(long) <= 255 and long.startswith("bench-item-")
    assert dataset_item_id("s", "t\nx", 1).startswith("bench-item-")
    ids = {dataset_item_id("s", f"t{i}", n) for i in range(50) for n in (1, 2, 3)}
    assert len(ids) == 150


def test_experiment_id_matches_the_sdk_formula():
    ours = experiment_id("proj-1", "ds-9", "run-7")
    sdk = Langfuse._create_experiment_id(object(), project_id="proj-1", dataset_id="ds-9", run_name="run-7")
    assert ours == sdk and len(ours) == 16
    assert experiment_id("proj-1", "ds-9", "run-8") != ours


def test_trace_and_span_ids_are_stable_hex_and_distinct():
    args = ("android-core", "run-7", "android-core:open_settings:1")
    t, r, e = replay_trace_id(*args), replay_root_span_id(*args), evaluation_span_id(*args)
    assert len(t) == 32 and len(r) == 16 and len(e) == 16 and r != e
    assert all(c in "0123456789abcdef" for c in t + r + e)
    assert replay_trace_id("android-core", "run-8", args[2]) != t  # per run
    assert attempt_score_id(*args, "benchmark.success") != attempt_score_id(*args, "benchmark.status")
    assert run_score_id("android-core", "run-7", "x") == run_score_id("android-core", "run-7", "x")


def test_trace_url_and_trace_id_normalisation():
    assert trace_url("https://user:pw@lf.example/", "p1", "a" * 32) == f"https://lf.example/project/p1/traces/{'a' * 32}"
    assert trace_url(None, "p1", "a" * 32) is None and trace_url("https://x", None, "a" * 32) is None
    assert normalize_trace_id("4BF92F3577B34DA6A3CE929D0E0E4736") == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert normalize_trace_id("not-hex") is None and normalize_trace_id("0" * 32) is None


def test_dataset_name_of_a_runner_manifest():
    """A runner's manifest names its suite only by suite_path: suite.json's name comes first (R2)."""
    runner = {"suite_path": "suites/android_core_v2.json", "suite_sha256": "ab" * 32}
    assert dataset_name({"suite": None}, runner, {"name": "android-core"}) == "android-core"
    assert dataset_name({"suite": None}, runner, {}) == "android_core_v2"
    assert dataset_name({"suite": None}, {"suite_path": "C:\\bench\\suites\\smoke.yaml"}, {"tasks": []}) == "smoke"
