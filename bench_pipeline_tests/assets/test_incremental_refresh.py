"""The catalog refresh is incremental (assets/refresh_state.py) and gives what a refresh from
scratch gives, byte for byte: after every event of a random sequence (a new run, a late run, a
re-judged run, a run processed again unchanged, a run's partition deleted), the incremental
refresh's catalog, trends, systems' files and suite pages equal those of a refresh from scratch
on the same inputs (run tag ``bench/refresh=from_scratch``), and it reads only what changed."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import dagster as dg
import pytest

from bench_pipeline.assets import cross_run_assets, per_run_assets
from bench_pipeline.assets.refresh_state import FROM_SCRATCH_TAG
from bench_pipeline.generator import generate_runs
from bench_pipeline.partitions import runs_partitions

from ..dagster_helpers import make_resources


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    for var in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("BENCH_BASELINES", str(tmp_path / "baselines.json"))


def _refresh(instance, resources, scratch: bool = False) -> dict:
    """One refresh; {asset: its materialization metadata}."""
    result = dg.materialize(cross_run_assets, instance=instance, resources=resources,
                            tags={FROM_SCRATCH_TAG: "from_scratch"} if scratch else {})
    assert result.success
    return {e.asset_key.path[-1]: {k: v.value for k, v in e.materialization.metadata.items()}
            for e in result.get_asset_materialization_events()}


def _outputs(root: Path) -> dict[str, bytes]:
    """Everything the refresh wrote: the stored catalog and trends, its kept state, the systems'
    and suites' files."""
    found = {}
    for base in (root / "storage", root / "reports"):
        for path in sorted(base.rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.is_file() and (rel.startswith(("storage/run_catalog", "storage/suite_trends", "storage/system_repeats",
                                                   "storage/cross_run_state", "reports/_systems", "reports/_suites"))):
                found[rel] = path.read_bytes()
    return found


def _process(instance, resources, key: str) -> None:
    assert dg.materialize(per_run_assets, partition_key=key, instance=instance, resources=resources).success


def _rejudge(folder: Path, rng: random.Random, runner: bool) -> None:
    """Flip the outcome of some rows (a re-judged run: its results change, so does its
    fingerprint). In the runner's layout, as its re-judge does: the outcome in each row's
    ``metrics``, the rows written to results.rejudged.jsonl beside results.jsonl."""
    rejudged = folder / "results.rejudged.jsonl"
    path = rejudged if runner and rejudged.is_file() else folder / "results.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for row in rng.sample(rows, max(1, len(rows) // 3)):
        passed = row.get("status") == "passed"
        row.update(status="failed" if passed else "passed")
        (row["metrics"] if runner else row)["success"] = not passed
    (rejudged if runner else path).write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.slow
@pytest.mark.parametrize(("seed", "layout"), [(3, "flat"), (11, "runner")])
def test_the_incremental_refresh_equals_a_refresh_from_scratch_after_random_events(tmp_path, seed, layout):
    rng = random.Random(seed)
    resources = make_resources(tmp_path)
    generated = generate_runs(tmp_path / "generated", runs=9, seed=seed, tasks=4, repeats=2, history_messages=4,
                              edge_cases=False, systems=2, layout=layout)
    waiting = sorted(generated)
    rng.shuffle(waiting)  # so that some runs arrive after later ones: late runs
    runs = Path(resources["settings"].runs_root)
    with dg.instance_for_test() as instance:
        present: list[str] = []

        def arrive() -> str:
            folder = waiting.pop()
            shutil.move(str(folder), str(runs / folder.name))
            instance.add_dynamic_partitions(runs_partitions.name, [folder.name])
            _process(instance, resources, folder.name)
            present.append(folder.name)
            return folder.name

        for _ in range(3):
            arrive()
        _refresh(instance, resources)
        events = ["new"] * 4 + ["rejudge", "rejudge", "again", "delete"]
        rng.shuffle(events)
        for event in events:
            if event == "new" and waiting:
                arrive()
            elif event == "rejudge":  # not the newest partition: what the refresh keeps is in partition order
                key = rng.choice(present[:-1])
                _rejudge(runs / key, rng, runner=layout == "runner")
                _process(instance, resources, key)
            elif event == "again":
                _process(instance, resources, rng.choice(present))
            elif event == "delete" and len(present) > 2:
                key = present.pop(rng.randrange(len(present)))
                instance.delete_dynamic_partition(runs_partitions.name, key)
            incremental = _refresh(instance, resources)
            made = _outputs(tmp_path)
            scratch = _refresh(instance, resources, scratch=True)
            assert _outputs(tmp_path) == made, event
            assert scratch["run_catalog"]["runs_kept"] == 0
            assert incremental["run_catalog"]["dagster/row_count"] == len(present)
            # the incremental refresh read the stored values of the run the event changed, at most,
            # and made again only the system and the suite page that show it
            assert incremental["run_catalog"]["runs_read"] <= 1, event
            assert incremental["system_repeats"]["systems_made"] <= 1, event
            assert incremental["suite_pages"]["pages_written"] <= 1, event
            if event == "again":  # the run's values are the same (its comparison may follow a changed baseline)
                assert incremental["system_repeats"]["systems_made"] == 0
                assert incremental["system_repeats"]["runs_read"] == 0
        idle = _refresh(instance, resources)  # nothing changed since the last refresh: nothing read or made
        assert (idle["run_catalog"]["runs_read"], idle["system_repeats"]["runs_read"],
                idle["system_repeats"]["systems_made"], idle["suite_pages"]["pages_written"]) == (0, 0, 0, 0)
        assert _outputs(tmp_path) == made
