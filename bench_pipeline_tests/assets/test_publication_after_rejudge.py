"""On the Dagster path: a run published to Langfuse (the stand-in, the real SDK over HTTP), then
re-judged (an attempt's judge failed the second time: its success and quality are unknown)
and processed again: Langfuse holds the attempt's new scores and no longer the ones whose
values became unknown (docs/langfuse.md, "Idempotency and confirmed delivery", point 5)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dagster as dg
import pytest

from bench_pipeline.assets import per_run_assets
from bench_pipeline.generator import generate_runs
from bench_pipeline.partitions import runs_partitions
from bench_pipeline.publication.ids import dataset_item_id

from ..dagster_helpers import make_resources
from ..publication.server_state import item_spans
from ..support.publication_standin import SECRET, make_standin


def _judge_failed(folder: Path) -> dict:
    """The run's first passed attempt judged again, the judge failing: status judge_error and
    its judged values unknown, as the runner writes such a row (results.jsonl rewritten)."""
    path = folder / "results.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    row = next(r for r in rows if r["status"] == "passed")
    row.update(status="judge_error", success=None, agent_eligible=False, failure_class="evaluation",
               first_failure_stage="evaluation", quality_score=None, rubric_pass_count=None, rubric=[])
    row["metrics"]["judge_error"] = "judge request timed out after 60 s"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return row


def _scores_of(standin, suite: str, row: dict) -> dict[str, object]:
    span = item_spans(standin)[dataset_item_id(suite, row["task_id"], row["attempt"])]
    return {s["name"]: s["value"] for s in standin.scores.values() if s["observationId"] == span["span_id"]}


@pytest.mark.slow
def test_a_rejudged_run_processed_again_leaves_no_stale_score_in_langfuse(tmp_path, monkeypatch):
    resources = make_resources(tmp_path)
    monkeypatch.setenv("BENCH_BASELINES", str(tmp_path / "baselines.json"))
    (generated,) = generate_runs(tmp_path / "generated", runs=1, seed=5, tasks=4, repeats=2, history_messages=4,
                                 edge_cases=False)
    folder = Path(resources["settings"].runs_root) / generated.name
    shutil.move(str(generated), str(folder))
    with make_standin("v4") as standin, dg.instance_for_test() as instance:
        monkeypatch.delenv("LANGFUSE_HOST", raising=False)
        monkeypatch.setenv("LANGFUSE_BASE_URL", standin.base_url)
        monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", standin.public_key)
        monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET)
        instance.add_dynamic_partitions(runs_partitions.name, [folder.name])

        def process() -> None:
            assert dg.materialize(per_run_assets, partition_key=folder.name, instance=instance,
                                  resources=resources).success

        process()
        suite = json.loads((Path(resources["settings"].output_root) / folder.name / "metrics.json").read_text())["suite"]
        row = next(json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()
                   if json.loads(line)["status"] == "passed")
        first = _scores_of(standin, suite, row)
        assert first["benchmark.success"] == 1 and first["benchmark.status"] == "passed"
        assert "benchmark.quality_score" in first

        rejudged = _judge_failed(folder)
        assert (rejudged["task_id"], rejudged["attempt"]) == (row["task_id"], row["attempt"])
        process()
        now = _scores_of(standin, suite, row)
        assert now["benchmark.status"] == "judge_error"
        assert "benchmark.success" not in now and "benchmark.quality_score" not in now  # unknown: no score
        assert len(standin.requests_to("/api/public/scores/", "DELETE")) >= 2
        record = json.loads((Path(resources["settings"].output_root) / folder.name / "publication.json").read_text())
        assert record["status"] == "complete" and record["stale_scores"] == {}
        assert standin.internal_errors == [] and standin.unknown_requests() == []
