"""One run partition's work: the order the partitions of a step go in, and the stages each stores."""

from __future__ import annotations

from bench_pipeline.assets.partition_work import STAGES, STORED_STAGES, PartitionJob, in_dependency_order, startable
from bench_pipeline.publication.settings import LangfuseSettings


def job(key: str, after: str | None = None) -> PartitionJob:
    return PartitionJob(key, key, key, "storage", LangfuseSettings(None, None, None), None, after=after)


def test_a_run_is_processed_after_its_baseline_in_the_same_step():
    jobs = [job("c", after="b"), job("b", after="a"), job("a"), job("x", after="not-in-this-step")]
    assert [j.key for j in in_dependency_order(jobs)] == ["a", "x", "b", "c"]
    cycle = [job("p", after="q"), job("q", after="p")]
    assert [j.key for j in in_dependency_order(cycle)] == ["p", "q"]


def test_a_job_may_start_once_its_baseline_is_done_or_not_in_the_step():
    waiting = [job("c", after="b"), job("b", after="a"), job("x", after="elsewhere")]
    keys = {"a", "b", "c", "x"}
    assert [j.key for j in startable(waiting, keys, done=set(), busy=True)] == ["x"]
    assert [j.key for j in startable(waiting, keys, done={"a"}, busy=True)] == ["b", "x"]
    assert [j.key for j in startable(waiting, keys, done={"a", "b"}, busy=False)] == ["c", "b", "x"]


def test_a_cycle_is_broken_in_list_order_only_when_nothing_runs():
    cycle = [job("p", after="q"), job("q", after="p")]
    assert startable(cycle, {"p", "q"}, done=set(), busy=True) == []  # a running job may end the wait
    assert [j.key for j in startable(cycle, {"p", "q"}, done=set(), busy=False)] == ["p"]
    assert startable([], {"p"}, done=set(), busy=False) == []


def test_every_stage_before_the_publication_is_stored_in_stage_order():
    assert STAGES == ("raw_results", "attempt_metrics", "task_groups", "capability_aggregates", "run_comparison",
                      "reports", "langfuse_publication")
    assert set(STORED_STAGES) == set(STAGES[:-1])
