"""Tests of the generator's records (bench_pipeline/generator/records.py)."""

from __future__ import annotations

from bench_pipeline.generator.records import Task


def test_suite_entry_lists_what_suite_json_holds() -> None:
    task = Task(id="t", category="qa", prompt="Pick B.", rubric_spec=[{"id": "r1", "requirement": "B"}],
                expected_answer="B", expected_memory_ids=["m1"], env_checks=["c"], skill="web",
                timeout_s=120, pass_probability=0.5)
    assert task.suite_entry() == {
        "id": "t", "category": "qa", "prompt": "Pick B.", "rubric_spec": [{"id": "r1", "requirement": "B"}],
        "expected_answer": "B", "expected_memory_ids": ["m1"], "timeout_s": 120,
    }
