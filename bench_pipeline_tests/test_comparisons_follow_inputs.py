"""Comparisons follow their inputs on the Dagster path (the main command, as scripts/run.sh
runs it): a re-judged baseline, a pin added, changed and removed, a late run, a baseline's
folder deleted. After each event exactly the affected comparisons are computed again, the
command says which and why, and every comparison equals a `bench-pipeline compare` of the
same two run folders from scratch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from bench_pipeline.cli import main as cli_main
from bench_pipeline.generator import generate_runs

ROOT = Path(__file__).resolve().parents[1]


def _main(env: dict) -> str:
    done = subprocess.run([sys.executable, "-m", "bench_pipeline.main", "--no-samples"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done.stdout


def _comparison(reports: Path, run_id: str) -> dict:
    return json.loads((reports / run_id / "comparison.json").read_bytes())


def _from_scratch(runs_root: Path, baseline: str, candidate: str, out: Path) -> dict:
    """`bench-pipeline compare BASELINE CANDIDATE` on the two run folders."""
    cli_main(["compare", str(runs_root / baseline), str(runs_root / candidate), "--output-dir", str(out)])
    return json.loads((out / "comparison.json").read_bytes())


def _check(reports: Path, runs_root: Path, tmp: Path, expected: dict[str, str]) -> None:
    """Each run's comparison is with the expected baseline and equals one from scratch."""
    for candidate, baseline in expected.items():
        got = _comparison(reports, candidate)
        assert got["baseline"]["run_id"] == baseline, candidate
        assert got["inputs"]["baseline"]["run_id"] == baseline and got["inputs"]["candidate"]["run_id"] == candidate
        fresh = _from_scratch(runs_root, baseline, candidate, tmp / f"fresh-{candidate}-{baseline}")
        assert {k: v for k, v in got.items() if k != "inputs"} == fresh, candidate


def _rejudge(run: Path) -> None:
    """The runner's re-judge: every first attempt that passed now fails (results.rejudged.jsonl)."""
    rows = [json.loads(line) for line in (run / "results.jsonl").read_bytes().splitlines() if line.strip()]
    for row in rows:
        if row["attempt"] == 1 and row["metrics"].get("success") is True:
            row["status"] = "failed"
            row["metrics"].update(success=False, failure_class="agent", first_failure_stage="final_response",
                                  quality_score=0.0)
    (run / "results.rejudged.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))


def _materialized(home: Path, asset: str, run_id: str) -> int:
    """How many times the Dagster instance recorded ``asset`` materialized for the run's partition."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return len(instance.fetch_materializations(dg.AssetRecordsFilter(dg.AssetKey(asset), asset_partitions=[run_id]),
                                                   limit=100).records)


def _recompared(out: str) -> set[str]:
    """The runs the command compared again, found before (with the runs it processed) or after."""
    return {line.split(":", 1)[0] for line in out.splitlines()
            if "its comparison is behind its inputs" in line
            or "to be compared again after the runs this command processes" in line}


@pytest.mark.slow
def test_comparisons_follow_rejudges_pins_late_runs_and_deleted_baselines(tmp_path):
    env = {**os.environ, "BENCH_HOME": str(tmp_path / "data"), "DAGSTER_HOME": str(tmp_path / "home"),
           "BENCH_QUIET_SECONDS": "0"}
    for var in ("BENCH_RUNS_ROOT", "BENCH_OUTPUT_ROOT", "BENCH_STORAGE_BASE", "BENCH_BASELINES",
                "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY", "LANGFUSE_BASE_URL", "LANGFUSE_HOST"):
        env.pop(var, None)
    (tmp_path / "home").mkdir()
    shutil.copy(ROOT / "deploy" / "dagster.local.yaml", tmp_path / "home" / "dagster.yaml")
    runs_root, reports = tmp_path / "data" / "runs", tmp_path / "data" / "reports"
    r0, r1, r2 = (p.name for p in generate_runs(runs_root, runs=3, seed=8, tasks=6, repeats=2, history_messages=6,
                                                 edge_cases=False, layout="runner"))
    for run in (r0, r1, r2):  # no re-judged copy yet
        (runs_root / run / "results.rejudged.jsonl").unlink(missing_ok=True)
    out = _main(env)
    assert _recompared(out) == set()
    _check(reports, runs_root, tmp_path, {r1: r0, r2: r1})
    before = _comparison(reports, r2)
    home = tmp_path / "home"
    r2_files = {name: (reports / r2 / name).read_bytes() for name in ("metrics.json", "attempts.jsonl")}

    # 1. the baseline of r2 is re-judged: r1 is processed again, then r2's comparison, and nothing else
    _rejudge(runs_root / r1)
    out = _main(env)
    assert _recompared(out) == {r2}
    assert f"its baseline '{r1}' was processed again since" in out
    _check(reports, runs_root, tmp_path, {r1: r0, r2: r1})
    after = _comparison(reports, r2)
    assert after["first_attempt"] != before["first_attempt"]
    assert after["inputs"]["baseline"]["data_version"] != before["inputs"]["baseline"]["data_version"]
    assert "catalog: ok" in out
    # r2's own stages were not derived again: only its comparison and reports were made again
    assert [_materialized(home, a, r2) for a in ("raw_results", "attempt_metrics", "capability_aggregates",
                                                 "langfuse_publication", "run_comparison", "reports")] == [1, 1, 1, 1, 2, 2]
    assert [_materialized(home, a, r1) for a in ("attempt_metrics", "run_comparison")] == [2, 2]
    assert r2_files == {name: (reports / r2 / name).read_bytes() for name in r2_files}
    assert f"Compared with `{r1}`" in (reports / r2 / "summary.md").read_text()

    # nothing changed: nothing computed again
    out = _main(env)
    assert _recompared(out) == set() and "catalog: up to date" in out

    # 2. a pin added, changed, removed
    pins = tmp_path / "data" / "baselines.json"
    suite = _comparison(reports, r2)["baseline"]["suite"]
    first = "no earlier processed run of suite"
    assert f"## Not compared\n\nThis run has no baseline, so no comparison: {first}" in (
        reports / r0 / "summary.md").read_text()
    pins.write_text(json.dumps({suite: r0}))
    assert _recompared(_main(env)) == {r0, r2}  # r0, still without a baseline, now for another reason
    _check(reports, runs_root, tmp_path, {r1: r0, r2: r0})
    assert "no comparison: it is the pinned baseline of suite" in (reports / r0 / "summary.md").read_text()
    assert "no comparison: it is the pinned baseline of suite" in (reports / r0 / "report.html").read_text()
    pins.write_text(json.dumps({suite: r1}))
    assert _recompared(_main(env)) == {r0, r1, r2}  # r1 is the pin itself now: no baseline
    assert not (reports / r1 / "comparison.json").exists()
    _check(reports, runs_root, tmp_path, {r0: r1, r2: r1})
    # a typo in the pins file: an error naming it, and no comparison rewritten as if unpinned
    pins.write_text(json.dumps({suite: r1})[:-1] + ",}")
    broken = subprocess.run([sys.executable, "-m", "bench_pipeline.main", "--no-samples"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=600)
    assert broken.returncode == 2, broken.stdout[-2000:] + broken.stderr[-2000:]
    assert f"error: the pinned baselines file {pins} is not valid JSON (" in broken.stderr
    assert not _recompared(broken.stdout)
    _check(reports, runs_root, tmp_path, {r0: r1, r2: r1})
    pins.write_text(json.dumps({suite: r1}))
    pins.unlink()
    assert _recompared(_main(env)) == {r0, r1}
    assert not (reports / r0 / "comparison.json").exists()
    assert f"no comparison: {first}" in (reports / r0 / "summary.md").read_text()
    _check(reports, runs_root, tmp_path, {r1: r0, r2: r1})

    # 3. a run uploaded late, started between r0 and r1: r1's new baseline
    late = "late-run"
    shutil.copytree(runs_root / r0, runs_root / late)
    manifest = json.loads((runs_root / late / "manifest.json").read_bytes())
    started = json.loads((runs_root / r1 / "manifest.json").read_bytes())["started_at"]
    manifest.update(run_id=late, started_at=_just_before(started))
    (runs_root / late / "manifest.json").write_text(json.dumps(manifest))
    out = _main(env)
    assert _recompared(out) == {r1}
    _check(reports, runs_root, tmp_path, {late: r0, r1: late, r2: r1})

    # 4. the late run's folder deleted: r1 is compared with r0 again
    (page,) = (reports / "_suites").glob("*/index.html")
    assert late in page.read_text()
    shutil.rmtree(runs_root / late)
    out = _main(env)
    assert _recompared(out) == {r1}
    assert "(its folder is gone)" in out
    assert f"{late}: its folder is gone: no longer one of the runs" in out and "catalog: ok" in out
    _check(reports, runs_root, tmp_path, {r1: r0, r2: r1})
    assert late not in page.read_text()  # nor in its system's repeats
    assert not [p for p in (reports / "_systems").glob("*/repeats.json") if late in p.read_text()]

    # 5. the late run's folder back, its results file changed meanwhile: processed again, said why
    shutil.copytree(runs_root / r0, runs_root / late)
    (runs_root / late / "manifest.json").write_text(json.dumps(manifest))
    with open(runs_root / late / "results.jsonl", "a") as results:
        results.write("\n")
    out = _main(env)
    assert f"{late}: its folder changed since it was processed" in out and _recompared(out) == {r1}
    _check(reports, runs_root, tmp_path, {late: r0, r1: late, r2: r1})

    # 6. r1 changed and, in the same command, a new run that is r1's new baseline (r1's start,
    # an id that sorts first): its folder's partition is the last, yet it is processed first,
    # so r1 is compared with it at once, not with `late` and then again
    newest = "0-late"
    shutil.copytree(runs_root / r0, runs_root / newest)
    (runs_root / newest / "manifest.json").write_text(json.dumps({**manifest, "run_id": newest, "started_at": started}))
    with open(runs_root / r1 / "results.rejudged.jsonl", "a") as results:
        results.write("\n")
    out = _main(env)
    assert _recompared(out) == {r2}
    assert f"{r1}: ok (" in out and f"against {newest}," in out.split(f"{r1}: ok (", 1)[1].splitlines()[0]
    _check(reports, runs_root, tmp_path, {newest: late, r1: newest, r2: r1})


def _just_before(timestamp: str) -> str:
    """An ISO timestamp (``...Z``) one second earlier."""
    from datetime import datetime, timedelta

    moment = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ") - timedelta(seconds=1)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
