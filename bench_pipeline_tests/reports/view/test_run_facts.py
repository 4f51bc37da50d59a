"""The header and "Run facts" (bench_pipeline/reports/view/run_facts.py)."""

from bench_pipeline.reports.view.run_facts import manifest_facts, run_header, view_k

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
    assert facts["Suite"] == "core (version 7)"
    assert facts["Model"] == "p / m"
    assert facts["Judge"].startswith("disabled (--no-judge")
    assert facts["Code"] == "abc (dirty working tree)"
    assert facts["Platform"] == "os android"
    assert facts["Active skills"] == "none"
    assert facts["Repeat plan"] == "repeats 3 · metrics_k 3 · 2 planned tasks"
    assert facts["Metrics"] == "schema 1 · formula f1 · generated g"


def test_run_header():
    header = run_header(METRICS, MANIFEST, "run-1", 2)
    assert (header.run_id, header.suite, header.model, header.k, header.k_text) == ("run-1", "core", "m", 2, "2")
    assert (header.generated_at, header.formula_version) == ("g", "f1")
    assert header.facts[0] == ("Run id", "run-1")
    bare = run_header({"suite": "s"}, {"model": "plain"}, "r", None)
    assert (bare.suite, bare.model, bare.k_text) == ("s", "plain", "n/a")
