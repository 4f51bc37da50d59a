"""The view of a run, assembled from its sections (bench_pipeline/reports/view/run_view.py)."""

from bench_pipeline.reports.view.run_view import RunView, build_view

ATTEMPTS = [
    {"line": 1, "task_id": "A", "attempt": 1, "status": "passed", "agent_eligible": True, "success": True,
     "success_raw": True, "failure_class": None, "category": "c", "task_wall_ms": 100, "total_tokens": 10,
     "cost_usd": None, "evidence": {"dir": "tasks/A"}, "provenance": {}},
    {"line": 2, "task_id": "B", "attempt": 1, "status": "failed", "agent_eligible": True, "success": False,
     "success_raw": False, "failure_class": "agent", "category": "c", "task_wall_ms": 300, "total_tokens": 30,
     "cost_usd": None, "evidence": {"dir": None}, "provenance": {}},
]
METRICS = {"run_id": "r", "coverage": {"metrics_k": 1}, "aggregate": {"per_task": {"B": {"avg_wall_ms": 300}}},
           "data_quality": {"unsafe_artifact_dirs": [{"line": 2}]}}


def test_build_view_names_each_section():
    view = build_view(METRICS, ATTEMPTS, {"model": {"name": "m"}}, "r", evidence_base="..")
    assert isinstance(view, RunView)
    assert (view.run.run_id, view.run.model, view.run.k) == ("r", "m", 1)
    assert view.stability is None and view.comparison is None  # k = 1; no baseline
    assert view.exclusions.n_attempts == 2 and view.exclusions.ineligible == 0
    assert [t.task_id for t in view.failed_tasks] == ["B"]
    assert view.failed_tasks[0].attempts[0]["folder_text"] == "n/a (artifact_dir refused as unsafe)"
    assert view.tasks.unsafe_lines == {2} and [r["task_id"] for r in view.tasks.rows] == ["A", "B"]
    assert [t["task_id"] for t in view.resources.slowest] == ["B"]  # per_task has A's avg_wall_ms missing
    assert view.capability.cautions[0].startswith("k = 1")
    assert view.data_quality.present and view.cap == 25


def test_build_view_tolerates_missing_documents():
    view = build_view(None, [], None, "r")
    assert view.run.k is None and view.tasks.rows == [] and view.failures.class_total == 0
