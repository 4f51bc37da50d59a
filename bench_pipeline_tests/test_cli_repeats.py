"""`bench-pipeline repeats` and `compare --baseline ... --candidate ...` (repeated-runs.md):
each run processed, the files written, and the exit codes (0, 1 gate fail, 3 gate inconclusive,
2 bad input)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from urllib.parse import unquote

import pytest

from bench_pipeline import cli
from bench_pipeline.comparison import compare
from bench_pipeline.comparison_sides import side_from_output

from .run_builder import make_run, row

SYSTEM = {"status": "completed", "metrics_k": 1, "model": {"name": "m", "provider": "p"},
          "code": {"git_sha": "abc1234", "dirty": False}}


def _system_runs(root, outcomes_per_run, *, prefix="r", model="m", sha="abc1234", setup=None):
    """One run folder per {task: status} mapping, all of one system unless told otherwise
    (``setup``: manifest keys of the measurement setup). Each row names its run's episode, as
    real rows carry their own ids and times: two runs are never byte-identical by chance."""
    manifest = {**SYSTEM, "model": {"name": model, "provider": "p"}, "code": {"git_sha": sha, "dirty": False},
                **(setup or {})}
    return [make_run(root, [row(t, 1, s, episode_id=f"{prefix}{i}-{t}") for t, s in outcomes.items()],
                     run_id=f"{prefix}{i}", manifest={**manifest, "started_at": f"2026-11-0{i}T00:00:00Z"})
            for i, outcomes in enumerate(outcomes_per_run, start=1)]


def _run(*args):
    return subprocess.run([sys.executable, "-m", "bench_pipeline.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def test_repeats_pools_three_runs_and_names_the_flaky_task(tmp_path):
    folders = _system_runs(tmp_path / "runs", [{"a": "passed", "b": "passed", "c": "failed"},
                                                {"a": "passed", "b": "failed", "c": "failed"},
                                                {"a": "passed", "b": "passed", "c": "failed"}])
    out = tmp_path / "out"
    done = _run("repeats", *folders, "--output-dir", out)
    assert done.returncode == 0, done.stderr
    doc = json.loads((out / "repeats.json").read_text())
    assert doc["system"] == {"suite": "suite-x", "model": "m", "git_sha": "abc1234"} and doc["warnings"] == []
    assert [r["run_id"] for r in doc["runs"]] == ["r1", "r2", "r3"]
    assert [r["pass_at_1"] for r in doc["runs"]] == [2 / 3, 1 / 3, 2 / 3]
    assert doc["stability"]["flaky_tasks"] == [{"task_id": "b", "attempts": 3, "successes": 2, "flip": 2 / 3}]
    assert doc["pooled"]["first_attempt"]["mean"] == pytest.approx(5 / 9, rel=1e-12)  # (1 + 2/3 + 0) / 3
    md = (out / "repeats.md").read_text()
    assert md.startswith("# Repeated runs of `suite-x / m / abc1234`")
    assert "Two single runs of this system differ in pass@1 by up to " in md
    assert "| `b` | 3 | 2 | 66.7% |" in md and "[`r1`](<../runs/r1/tasks/b/>)" in md  # flip as a percent
    assert "[`r2`](<runs/r2/report.html>)" in md
    for run_id in ("r1", "r2", "r3"):
        assert (out / "runs" / run_id / "report.html").is_file()
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("repeats: 3 run(s) of suite-x / m / abc1234: pooled first attempt 55.6% [")
    assert "flip rate 22.2% (1 flaky of 3 tasks)" in last


def test_repeats_refuses_a_folder_that_is_not_a_run_and_the_same_run_twice(tmp_path):
    folders = _system_runs(tmp_path / "runs", [{"a": "passed"}, {"a": "failed"}])
    (tmp_path / "empty").mkdir()
    assert cli.main(["repeats", str(folders[0]), str(tmp_path / "empty"), "--output-dir", str(tmp_path / "o")]) == 2
    assert not (tmp_path / "o").exists()  # checked before anything is processed
    twice = _run("repeats", folders[0], folders[1], folders[0], "--output-dir", tmp_path / "o2")
    assert twice.returncode == 2 and "the same run folder twice" in twice.stderr
    assert len(twice.stderr.strip().splitlines()) == 1
    other = make_run(tmp_path / "elsewhere", [row("a")], run_id="r1", manifest=SYSTEM)  # same run id, other folder
    same_id = _run("repeats", folders[0], other, "--output-dir", tmp_path / "o3")
    assert same_id.returncode == 2 and "the same run twice (run id 'r1'" in same_id.stderr


def test_a_copied_run_folder_is_one_measurement_and_refused_by_repeats_and_set_compare(tmp_path):
    """repeated-runs.md "Systems": byte-identical results (a copy under another name) are one
    measurement, refused as bad input (exit 2, one line naming both folders) before anything
    is processed, by ``repeats`` and by the set form of ``compare``."""
    folders = _system_runs(tmp_path / "runs", [{"a": "passed", "b": "failed"}, {"a": "passed", "b": "passed"}])
    copy = tmp_path / "runs" / "r1-copy"
    shutil.copytree(folders[0], copy)
    done = _run("repeats", folders[0], folders[1], copy, "--output-dir", tmp_path / "o")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: {copy} and {folders[0]}: byte-identical results.jsonl, the same run twice (one measurement, not "
        "two); give only one of them"]
    assert not (tmp_path / "o").exists()
    both = _run("compare", "--baseline", folders[0], "--baseline", copy, "--candidate", folders[1],
                "--output-dir", tmp_path / "c")
    assert both.returncode == 2 and len(both.stderr.strip().splitlines()) == 1
    assert f"{copy} and {folders[0]}: byte-identical results.jsonl" in both.stderr
    across = _run("compare", "--baseline", folders[0], "--candidate", copy, "--output-dir", tmp_path / "c2")
    assert across.returncode == 2 and "byte-identical" in across.stderr  # on both sides, the same measurement
    # the runner's re-judged copy is the file a run reads: equal results.jsonl under other re-judgements differ
    (copy / "results.rejudged.jsonl").write_text(json.dumps(row("a", 1, "failed")) + "\n", encoding="utf-8")
    rejudged = _run("repeats", folders[0], copy, "--output-dir", tmp_path / "o2")
    assert rejudged.returncode == 0, rejudged.stderr
    # the positional form compares a run with its copy as asked (no change, nothing refused)
    assert _run("compare", folders[0], copy, "--output-dir", tmp_path / "p").returncode == 0


def test_repeated_compare_with_one_run_per_side_equals_the_positional_one(tmp_path):
    base = _system_runs(tmp_path / "runs", [{f"t{i}": "passed" for i in range(10)}], prefix="b")
    cand = _system_runs(tmp_path / "runs", [{f"t{i}": "failed" if i < 2 else "passed" for i in range(10)}], prefix="c",
                        sha="def5678")
    done = _run("compare", "--baseline", base[0], "--candidate", cand[0], "--output-dir", tmp_path / "rep")
    assert done.returncode == 0, done.stderr
    repeated = json.loads((tmp_path / "rep" / "comparison.json").read_text())
    assert repeated["schema_version"] == 2 and repeated["mode"] == "repeated"
    assert repeated["baseline"] == {"runs": ["b1"], "suite": "suite-x", "metrics_k": 1}
    positional = compare(side_from_output(tmp_path / "rep" / "baseline" / "b1"),
                         side_from_output(tmp_path / "rep" / "candidate" / "c1"))
    for name in ("first_attempt", "task_success"):
        for key in ("n", "delta", "se", "ci95", "mde80"):
            assert repeated[name][key] == positional[name][key], (name, key)
    md = (tmp_path / "rep" / "comparison.md").read_text()
    assert md.startswith("# Compared: 1 candidate run against 1 baseline run")
    assert "| First attempt (pass@1) | 10 | 100.0% | 80.0% | -20.0 pp |" in md
    assert done.stderr.strip().splitlines()[-1].startswith("gate pass: 1 candidate run(s) against 1 baseline run(s)")


def test_repeated_compare_exit_codes_and_bad_input(tmp_path):
    base = _system_runs(tmp_path / "runs", [{f"t{i}": "passed" for i in range(10)}] * 2, prefix="b")
    cand = _system_runs(tmp_path / "runs", [{f"t{i}": "failed" for i in range(10)}] * 2, prefix="c")
    args = ["compare", "--baseline", base[0], "--baseline", base[1], "--candidate", cand[0], "--candidate", cand[1]]
    failed = _run(*args, "--output-dir", tmp_path / "f")
    assert failed.returncode == 1
    assert "gate fail: 2 candidate run(s) against 2 baseline run(s), 10 paired task(s): the first attempt is a " \
           "significant regression" in failed.stderr
    result = json.loads((tmp_path / "f" / "comparison.json").read_text())
    assert result["baseline"]["runs"] == ["b1", "b2"] and result["regressions"] == [f"t{i}" for i in range(10)]
    assert "2 runs pooled (`b1`, `b2`)" in (tmp_path / "f" / "comparison.md").read_text()
    margin = _run("compare", "--baseline", base[0], "--candidate", base[1], "--output-dir", tmp_path / "m",
                  "--max-drop", "0.05")
    assert margin.returncode == 0 and "both 95% intervals stay above" not in margin.stderr  # no variation: no interval
    # an empty candidate run on the set form: nothing paired, inconclusive, exit 3
    empty = make_run(tmp_path / "runs", [], run_id="e1", manifest=SYSTEM)
    (empty / "results.jsonl").write_text("", encoding="utf-8")
    nothing = _run("compare", "--baseline", base[0], "--baseline", base[1], "--candidate", empty,
                   "--output-dir", tmp_path / "e", "--max-drop", "0.05")
    assert nothing.returncode == 3, nothing.stderr
    assert nothing.stderr.strip().splitlines()[-1].startswith(
        "gate inconclusive: 1 candidate run(s) against 2 baseline run(s), 0 paired task(s): the data cannot decide")
    result = json.loads((tmp_path / "e" / "comparison.json").read_text())
    assert result["gate"] == {"result": "inconclusive", "max_drop": 0.05,
                              "reasons": ["first_attempt_no_evidence", "task_success_no_evidence"]}
    md = (tmp_path / "e" / "comparison.md").read_text()
    assert "**Release gate: inconclusive**: the data cannot decide" in md
    assert "Reasons: `first_attempt_no_evidence`, `task_success_no_evidence`." in md
    (tmp_path / "empty").mkdir()
    assert cli.main(["compare", "--baseline", str(base[0]), "--candidate", str(tmp_path / "empty"),
                     "--output-dir", str(tmp_path / "x")]) == 2
    assert cli.main(["compare", "--baseline", str(base[0]), "--candidate", str(base[0]),
                     "--output-dir", str(tmp_path / "x")]) == 2
    assert cli.main(["compare", str(base[0]), "--candidate", str(cand[0]), "--output-dir", str(tmp_path / "x")]) == 2
    assert cli.main(["compare", "--baseline", str(base[0]), "--output-dir", str(tmp_path / "x")]) == 2
    assert not (tmp_path / "x").exists()


PIXEL = {"judge": {"enabled": True, "model": "judge-a"}, "platform": {"device": "pixel-8", "os": "android-15"},
         "active_skills": ["calendar"]}


def test_repeats_names_the_setup_its_differences_and_a_run_without_usable_rows(tmp_path):
    """repeats.md names what the runs were measured with; runs on two devices get
    platform_differs; a run with no usable rows is pooled as given (the specification's
    repeats.json) but repeats.md says it adds nothing."""
    pixel = _system_runs(tmp_path / "runs", [{"a": "passed"}, {"a": "failed"}], setup=PIXEL)
    emulator = _system_runs(tmp_path / "runs", [{"a": "passed"}], prefix="e",
                            setup={**PIXEL, "platform": {"device": "emulator", "os": "android-15"}})
    empty = make_run(tmp_path / "runs", [row("a", 1, "skipped")], run_id="x1", manifest={**SYSTEM, **PIXEL})
    done = _run("repeats", *pixel, *emulator, empty, "--output-dir", tmp_path / "o")
    assert done.returncode == 0, done.stderr
    doc = json.loads((tmp_path / "o" / "repeats.json").read_text())
    assert doc["warnings"] == ["platform_differs"] and len(doc["runs"]) == 4
    assert doc["between_runs"]["runs"] == 3  # x1 has no pass@1
    md = (tmp_path / "o" / "repeats.md").read_text()
    assert "- r1, r2, x1 measured with: suite version unknown; judge judge-a; platform pixel-8 / android-15; " \
           "active skills calendar." in md
    assert "- e1 measured with: suite version unknown; judge judge-a; platform emulator / android-15; " in md
    assert "- x1 has no usable rows (no eligible attempt): it adds nothing to the pooled values, the stability or " \
           "the noise floor" in md
    assert "(`platform_differs` in repeats.json)" in md
    one = _run("repeats", *pixel, "--output-dir", tmp_path / "p")
    assert one.returncode == 0, one.stderr
    assert "- The runs were measured with: suite version unknown; judge judge-a; platform pixel-8 / android-15; " \
           "active skills calendar." in (tmp_path / "p" / "repeats.md").read_text()


def test_the_set_comparison_names_each_sides_setup_and_what_differs(tmp_path):
    base = _system_runs(tmp_path / "runs", [{"a": "passed", "b": "passed"}] * 2, prefix="b", setup=PIXEL)
    cand = _system_runs(tmp_path / "runs", [{"a": "passed", "b": "passed"}], prefix="c",
                        setup={**PIXEL, "judge": {"enabled": False}})
    done = _run("compare", "--baseline", base[0], "--baseline", base[1], "--candidate", cand[0],
                "--output-dir", tmp_path / "o")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "o" / "comparison.json").read_text())["warnings"] == ["judge_differs"]
    md = (tmp_path / "o" / "comparison.md").read_text()
    top = md[:md.index("## Paired sections")]
    assert "- The baseline's runs were measured with: suite version unknown; judge judge-a; platform pixel-8 / " \
           "android-15; active skills calendar." in top
    assert "- The candidate's runs were measured with: suite version unknown; no judge; " in top
    assert "- The judges differ (judge judge-a for the baseline, no judge for the candidate): a comparison across " \
           "judges mixes the change of judge with the agent's" in top
    assert "system `suite-x / m / abc1234 (no judge, pixel-8 / android-15)`" in top
    assert "(`judge_differs` in comparison.json)" in top


def _measured_runs(root, run_ids, outcomes, quality, *, sha, setup, skipped=()):
    """One run folder per id, each task's attempt 1 with its status, quality score and
    evidence folder (tasks/<task>, which exists); ``skipped``: (run id, task) pairs whose attempt
    1 was skipped (not eligible)."""
    manifest = {**SYSTEM, "code": {"git_sha": sha, "dirty": False}, **setup}
    return [make_run(root, [row(t, 1, "skipped" if (rid, t) in skipped else status, episode_id=f"{rid}-{t}",
                                quality_score=quality[t], artifact_dir=f"tasks/{t}")
                            for t, status in outcomes.items()],
                     run_id=rid, manifest={**manifest, "started_at": f"2026-11-0{i}T00:00:00Z"},
                     artifacts={f"tasks/{t}": {"history.json": []} for t in outcomes})
            for i, rid in enumerate(run_ids, start=1)]


def test_the_set_comparison_lists_verdicts_and_links_the_evidence_of_changed_tasks(tmp_path):
    """Two runs a side: the candidate improves the first attempt and regresses in quality. The
    repeated comparison.md lists every verdict, links each regressed and improved task's
    attempt 1 evidence in every run that decided it, and keeps the setup lines at the top."""
    tasks = [f"t{i}" for i in range(10)]
    base = _measured_runs(tmp_path / "runs", ["b1", "b2"],
                          {t: "failed" if i < 6 else "passed" for i, t in enumerate(tasks)},
                          {t: 0.9 if i % 2 == 0 else 0.8 for i, t in enumerate(tasks)}, sha="abc1234", setup=PIXEL,
                          skipped={("b2", "t5")})
    cand = _measured_runs(tmp_path / "runs", ["c1", "c2"], {t: "failed" if t == "t9" else "passed" for t in tasks},
                          {t: 0.6 if i % 2 == 0 else 0.7 for i, t in enumerate(tasks)}, sha="def5678",
                          setup={**PIXEL, "platform": {"device": "emulator", "os": "android-15"}})
    out = tmp_path / "o"
    done = _run("compare", "--baseline", base[0], "--baseline", base[1], "--candidate", cand[0], "--candidate", cand[1],
                "--output-dir", out)
    assert done.returncode == 0, done.stderr  # both gate sections improve: pass
    result = json.loads((out / "comparison.json").read_text())
    assert result["improvements"] == ["t0", "t1", "t2", "t3", "t4", "t5"] and result["regressions"] == ["t9"]
    assert (result["first_attempt"]["verdict"], result["quality"]["verdict"]) == ("improvement", "regression")
    md = (out / "comparison.md").read_text()
    top = md[:md.index("## Verdicts")]
    assert "- The baseline's runs were measured with: suite version unknown; judge judge-a; platform pixel-8 / " \
           "android-15; active skills calendar." in top
    assert "- The candidate's runs were measured with: suite version unknown; judge judge-a; platform emulator / " \
           "android-15; active skills calendar." in top
    assert "- The platforms differ (pixel-8 / android-15 for the baseline, emulator / android-15 for the " \
           "candidate)" in top
    assert "- The code versions differ (abc1234 for the baseline, def5678 for the candidate): this compares two " \
           "builds of the agent on one model." in top
    # first attempt per task: +1 for t0..t5, 0 for t6..t8, -1 for t9: +50.0 pp, se = sqrt(4.5 / 9 / 10) = 0.2236,
    # interval [+6.2 pp, +93.8 pp]; quality -0.3 on even tasks, -0.1 on odd ones: -0.200 +/- 0.065
    assert "## Verdicts\n\n- First attempt (pass@1): **improvement**\n- pass@k (k=1): **improvement**\n" \
           "- pass^k (k=1): **improvement**\n- Task success (task-weighted): **improvement**\n" \
           "- Quality score: **regression**\n- Task wall time: **n/a**\n" in md
    assert "| First attempt (pass@1) | 10 | 40.0% | 90.0% | +50.0 pp | [+6.2 pp, +93.8 pp] |" in md
    assert "| Quality score | 10 | 0.850 | 0.650 | -0.200 | [-0.265, -0.135] |" in md
    assert "Regressed: tasks whose first attempt succeeded in every baseline run and failed in every candidate run " \
           "(1):" in md
    assert "| `t9` | `b1` [`tasks/t9`](<../runs/b1/tasks/t9/>); `b2` [`tasks/t9`](<../runs/b2/tasks/t9/>) | " \
           "`c1` [`tasks/t9`](<../runs/c1/tasks/t9/>); `c2` [`tasks/t9`](<../runs/c2/tasks/t9/>) |" in md
    # b2's attempt 1 of t5 was skipped: it decided nothing and is not linked
    assert "| `t5` | `b1` [`tasks/t5`](<../runs/b1/tasks/t5/>) | `c1` [`tasks/t5`](<../runs/c1/tasks/t5/>); " in md
    links = re.findall(r"\]\(<([^>]+)>\)", md)
    assert len(links) == 7 * 4 - 1
    for link in links:
        assert (out / unquote(link)).resolve().is_dir(), link
        assert (out / unquote(link) / "history.json").is_file(), link
