"""The header and "Run facts" (bench_pipeline/reports/view/run_facts.py)."""

import pytest

from bench_pipeline.reports.view.run_facts import K_SOURCES, k_source, manifest_facts, run_header, view_k

MANIFEST = {
    "status": "completed", "started_at": "t0", "finished_at": "t1",
    "code": {"git_sha": "abc", "dirty": True}, "suite": {"name": "core", "version": "7"},
    "model": {"provider": "p", "name": "m"}, "judge": {"enabled": False},
    "platform": {"os": "android"}, "active_skills": [], "repeats": 3, "metrics_k": 3, "planned": [{}, {}],
}
METRICS = {"schema_version": 1, "formula_version": "f1", "generated_at": "g", "coverage": {"metrics_k": 2}}


def test_view_k_prefers_metrics_then_the_manifest():
    assert view_k(METRICS, MANIFEST) == 2
    assert view_k({}, MANIFEST) == 3
    assert view_k({"coverage": {"metrics_k": None}}, MANIFEST) is None  # a null metrics_k is kept
    assert view_k(None, None) is None


def test_manifest_facts():
    facts = dict(manifest_facts(MANIFEST, METRICS, "run-1"))
    assert facts["Run id"] == "run-1"
    assert facts["Run status"] == "completed, t0 to t1"
    runner = dict(manifest_facts({"started_at": "t0", "finished_at": "t1"}, {}, "r"))
    assert runner["Run status"] == "no status recorded, t0 to t1"  # the runner writes none
    assert facts["Suite"] == "core (version 7)"
    assert facts["Model"] == "p / m"
    assert facts["Judge"].startswith("disabled (--no-judge")
    assert facts["Code"] == "abc (dirty working tree)"
    assert facts["Platform"] == "os android"
    assert facts["Active skills"] == "none"
    assert facts["Repeat plan"] == "repeats 3 · metrics_k 3 · 2 planned tasks"
    # metrics.json's k (2) is not the manifest's (3) nor its plan's: the fact says so
    assert facts["k"] == "2, from metrics.json's coverage.metrics_k (neither the manifest's metrics_k nor its plan gives it)"
    assert facts["Metrics"] == "schema 1 · formula f1 · generated g"


def test_run_header():
    header = run_header(METRICS, MANIFEST, "run-1", 2)
    assert (header.run_id, header.suite, header.model, header.k, header.k_text) == ("run-1", "core", "m", 2, "2")
    assert (header.generated_at, header.formula_version) == ("g", "f1")
    assert header.facts[0] == ("Run id", "run-1")
    bare = run_header({"suite": "s"}, {"model": "plain"}, "r", None)
    assert (bare.suite, bare.model, bare.k_text) == ("s", "plain", "n/a")


PLAN = [{"task_id": "a", "attempts": 3}, {"task_id": "b", "attempts": 4}, {"task_id": "c", "attempts": 0}]


@pytest.mark.parametrize(("manifest", "k", "source"), [
    ({"metrics_k": 3, "planned": PLAN}, 3, "manifest"),
    ({"planned": PLAN}, 3, "plan"),              # the fewest attempts a valid planned entry gives
    ({"metrics_k": None, "planned": []}, 2, "observed"),  # no valid plan: the attempts observed
    ({}, 2, "observed"),
    ({"metrics_k": 5}, 3, "metrics"),            # metrics.json disagrees with the manifest
    ({}, None, None),
])
def test_k_source_says_where_k_came_from(manifest, k, source):
    """As run_reader.resolve_metrics_k found it: the manifest's metrics_k, else the plan, else
    the attempts observed."""
    assert k_source({"coverage": {"metrics_k": k}}, manifest) == source


def test_k_source_without_a_coverage_block_is_the_manifests():
    assert k_source({}, {"metrics_k": 3}) == "manifest" and k_source(None, None) is None


def test_a_k_from_the_plan_is_said_in_the_header_and_the_facts():
    """The manifest gives no metrics_k (the runner's layout): "metrics_k not given" is no longer
    n/a beside k = 3 without a word; the header and "Run facts" say where 3 came from."""
    manifest = {"planned": PLAN}
    metrics = {"coverage": {"metrics_k": 3}}
    header = run_header(metrics, manifest, "r", view_k(metrics, manifest))
    assert (header.k_text, header.k_source) == ("3", "from the plan")
    assert header.k_source_text == K_SOURCES["plan"][1]
    facts = dict(header.facts)
    assert facts["Repeat plan"] == "repeats not given · metrics_k not given · 3 planned tasks"
    assert facts["k"] == ("3, from the plan: the manifest gives no metrics_k, so k is the fewest attempts the plan "
                          "gives a task")
    one = dict(manifest_facts({"planned": PLAN[:1]}, {"coverage": {"metrics_k": 3}}, "r"))
    assert one["Repeat plan"].endswith("· 1 planned task")  # one, not "1 planned tasks"
    none = dict(manifest_facts({}, {"coverage": {"metrics_k": None}}, "r"))
    assert none["k"] == "unknown: the manifest gives no metrics_k and no plan, and no attempt was observed"
