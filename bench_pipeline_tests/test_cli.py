"""`bench-pipeline process`: every output written, the publication's evidence kept; and
`bench-pipeline compare`: both runs processed, the comparison written, and the exit code a
CI job reads (0 gate passes, 1 gate fails, 3 gate inconclusive, 2 bad input with a one-line
reason)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bench_pipeline import cli
from bench_pipeline.generator import generate_runs

from .publication.server_state import item_spans
from .run_builder import make_run, row
from .support.publication_standin import MODES, SECRET, make_standin

TASKS = [f"t{i}" for i in range(10)]


@pytest.fixture(scope="module")
def one_run(tmp_path_factory):
    return generate_runs(tmp_path_factory.mktemp("runs"), runs=1, seed=11, tasks=12, repeats=3, history_messages=20)[0]


def test_cli_process_writes_every_output(one_run, tmp_path):
    run = one_run
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "bench_pipeline.cli", "process", str(run), "--output-dir", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert {p.name for p in out.iterdir()} >= {"metrics.json", "attempts.jsonl", "summary.md", "report.html"}
    assert run.name in done.stderr and "attempts" in done.stderr
    # The command ends without tearing down the heap: its output is still complete.
    assert [line.split(":")[0] for line in done.stdout.splitlines()] == [
        "metrics.json", "attempts.jsonl", "summary.md", "report.html"]


def test_cli_process_on_a_non_run_names_the_path(tmp_path):
    done = subprocess.run([sys.executable, "-m", "bench_pipeline.cli", "process", str(tmp_path), "--output-dir", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert str(tmp_path) in done.stderr and "no results.jsonl" in done.stderr



@pytest.mark.parametrize("name", ["a-file", "x" * 300])
def test_cli_process_with_an_output_folder_that_cannot_be_made_says_why(one_run, tmp_path, capsys, name):
    (tmp_path / "a-file").write_text("not a folder")
    assert cli.main(["process", str(one_run), "--output-dir", str(tmp_path / name)]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith(f"error: {tmp_path / name}: ") and ("File exists" in line or "File name too long" in line)

def test_cli_process_publish_keeps_the_evidence_the_trace_output_shows(one_run, tmp_path):
    """--publish keeps each attempt's trace final response and tool calls (the command
    otherwise drops them once the files are written); without keys they go to the outbox."""
    run = one_run
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANGFUSE_")}
    done = subprocess.run([sys.executable, "-m", "bench_pipeline.cli", "process", str(run), "--output-dir", str(out),
                           "--publish"], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    # what it says: written to the outbox, never "published"
    assert "attempts written to the outbox (Langfuse not configured)" in done.stderr
    assert "attempts published" not in done.stderr
    assert "langfuse: not configured" in done.stdout and str(out / "langfuse_outbox.jsonl") in done.stdout
    finals = [json.loads(line)["evidence"]["final_response"]
              for line in (out / "attempts.jsonl").read_text().splitlines()]
    expected = next(f for f in finals if f)
    published = set()
    for line in (out / "langfuse_outbox.jsonl").read_text().splitlines():
        request = json.loads(line)
        if request["kind"] != "spans":
            continue
        for resource in request["body"]["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    for attr in span["attributes"]:
                        if attr["key"] == "langfuse.observation.output":
                            published.add(json.loads(attr["value"]["stringValue"]).get("final_response"))
    assert expected in published


def _runs(tmp_path, candidate_status="passed", lost=0):
    """A baseline whose ten tasks pass attempt 1, and a candidate where ``lost`` of them
    fail it (the rest as ``candidate_status``)."""
    manifest = {"status": "completed", "metrics_k": 1}
    base = make_run(tmp_path / "runs", [row(t) for t in TASKS], run_id="base", manifest=manifest)
    rows = [row(t, 1, "failed" if i < lost else candidate_status) for i, t in enumerate(TASKS)]
    cand = make_run(tmp_path / "runs", rows, run_id="cand", manifest=manifest)
    return base, cand


def _command(*args):
    return subprocess.run([sys.executable, "-m", "bench_pipeline.cli", "compare", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def test_exit_0_when_the_gate_passes_and_every_file_is_written(tmp_path):
    base, cand = _runs(tmp_path, lost=1)
    out = tmp_path / "out"
    done = _command(base, cand, "--output-dir", out)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("gate pass: cand against base, 10 paired task(s): no significant regression "
                                  "found, which is not evidence of none: a true drop in first attempt smaller than ")
    assert len(done.stderr.strip().splitlines()) == 1
    # the gate passes without a margin: the line states the drops that could have gone unseen
    assert done.stderr.count("could have gone unseen") == 2 and "--max-drop X" in done.stderr
    for run in ("baseline", "candidate"):
        assert {"metrics.json", "attempts.jsonl", "summary.md", "report.html"} <= {p.name for p in (out / run).iterdir()}
    assert (out / "comparison.json").read_bytes() == (out / "candidate" / "comparison.json").read_bytes()
    result = json.loads((out / "comparison.json").read_text())
    assert result["baseline"]["run_id"] == "base" and result["first_attempt"]["baseline_only"] == 1
    assert result["regressions"] == ["t0"] and result["gate"] == {"result": "pass", "max_drop": None, "reasons": []}
    # comparison.md: the candidate's, with its links made from OUT
    top, inner = (out / "comparison.md").read_text(), (out / "candidate" / "comparison.md").read_text()
    assert "| `t0` | [`tasks/t0`](<../runs/base/tasks/t0/>) | [`tasks/t0`](<../runs/cand/tasks/t0/>) |" in top
    assert top.replace("](<../runs/", "](<../../runs/") == inner
    lines = done.stdout.splitlines()
    assert lines[0].startswith("baseline/metrics.json: ") and lines[-1] == f"comparison.md: {out / 'comparison.md'}"


def test_exit_1_when_the_gate_fails(tmp_path):
    base, cand = _runs(tmp_path, lost=10)
    done = _command(base, cand, "--output-dir", tmp_path / "out")
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("gate fail: cand against base, 10 paired task(s): the first attempt is a "
                                  "significant regression; task success is a significant regression. (reasons: "
                                  "first_attempt_regression, task_success_regression; ")
    assert "could have gone unseen" not in done.stderr


def test_exit_3_when_a_margin_is_not_shown(tmp_path):
    """One task lost in twenty: not significant, but the interval's lower bound (about
    -0.15) is below -0.1: the margin is not shown to hold, which is not a regression either."""
    manifest = {"status": "completed", "metrics_k": 1}
    tasks = [f"t{i:02d}" for i in range(20)]
    base = make_run(tmp_path / "runs", [row(t) for t in tasks], run_id="base", manifest=manifest)
    cand = make_run(tmp_path / "runs", [row(t, 1, "failed" if t == "t00" else "passed") for t in tasks],
                    run_id="cand", manifest=manifest)
    assert cli.main(["compare", str(base), str(cand), "--output-dir", str(tmp_path / "a"), "--max-drop", "0.2"]) == 0
    assert cli.main(["compare", str(base), str(cand), "--output-dir", str(tmp_path / "b"), "--max-drop", "0.1"]) == 3
    gate = json.loads((tmp_path / "b" / "comparison.json").read_text())["gate"]
    assert gate == {"result": "inconclusive", "max_drop": 0.1,
                    "reasons": ["first_attempt_below_margin", "task_success_below_margin"]}
    done = _command(base, cand, "--output-dir", tmp_path / "c", "--max-drop", "0.1")
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("gate inconclusive: cand against base, 20 paired task(s): the data cannot decide, so "
                                  "this is neither a pass nor a fail: the first attempt's 95% interval")
    assert "reaches below -10.0 pp, the allowed drop: a drop of up to 14.8 pp is not ruled out" in done.stderr
    assert "(reasons: first_attempt_below_margin, task_success_below_margin; " in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_exit_3_for_an_empty_candidate_and_for_disjoint_task_sets(tmp_path):
    """An empty candidate (results.jsonl empty) and a candidate with none of the baseline's
    tasks: nothing is paired, so the gate cannot decide, with or without a margin."""
    manifest = {"status": "completed", "metrics_k": 1}
    base = make_run(tmp_path / "runs", [row(t) for t in TASKS], run_id="base", manifest=manifest)
    empty = make_run(tmp_path / "runs", [], run_id="empty", manifest=manifest)
    (empty / "results.jsonl").write_text("", encoding="utf-8")
    other = make_run(tmp_path / "runs", [row(f"other-{t}") for t in TASKS], run_id="other", manifest=manifest)
    for cand, extra in ((empty, []), (empty, ["--max-drop", "0.05"]), (other, [])):
        out = tmp_path / f"out-{cand.name}-{len(extra)}"
        done = _command(base, cand, "--output-dir", out, *extra)
        assert done.returncode == 3, done.stderr
        assert done.stderr.startswith(f"gate inconclusive: {cand.name} against base, 0 paired task(s): the data cannot "
                                      "decide, so this is neither a pass nor a fail: the first attempt has no paired task")
        assert "(reasons: first_attempt_no_evidence, task_success_no_evidence; warnings: no_paired_tasks; " in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
        gate = json.loads((out / "comparison.json").read_text())["gate"]
        assert gate["result"] == "inconclusive"
        assert gate["reasons"] == ["first_attempt_no_evidence", "task_success_no_evidence"]
        assert "**Release gate: inconclusive**" in (out / "comparison.md").read_text()


def test_exit_2_for_a_folder_that_is_not_a_run(tmp_path):
    base, _ = _runs(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    done = _command(base, empty, "--output-dir", tmp_path / "out")
    assert done.returncode == 2
    assert done.stderr == f"error: {empty}: no results.jsonl, so not a benchmark run folder\n"
    assert not (tmp_path / "out").exists()  # both folders are checked before either is processed
    done = _command(tmp_path / "missing", base, "--output-dir", tmp_path / "out")
    assert done.returncode == 2 and "missing: no results.jsonl" in done.stderr


@pytest.mark.parametrize("command", ["process", "compare", "repeats"])
def test_exit_2_for_a_run_in_a_bucket_with_what_to_do_instead(tmp_path, capsys, command):
    args = {"process": ["process", "s3://bench/runs/r1"], "compare": ["compare", "s3://bench/runs/r0", "s3://bench/runs/r1"],
            "repeats": ["repeats", "s3://bench/runs/r1"]}[command]
    assert cli.main([*args, "--output-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr()
    text = err.out + err.err
    assert "a run in a bucket; the command line reads local run folders only" in text
    assert "BENCH_RUNS_ROOT=s3://bench/runs" in text


def test_exit_2_for_an_unreadable_file(tmp_path, monkeypatch, capsys):
    base, cand = _runs(tmp_path)
    real_open = open

    def refusing_open(path, *args, **kwargs):  # results.jsonl of the candidate cannot be read
        if str(path).endswith("cand/results.jsonl"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", refusing_open)
    assert cli.main(["compare", str(base), str(cand), "--output-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {cand / 'results.jsonl'}: cannot be read (Permission denied)\n"


def test_exit_2_for_an_unreadable_baseline_output(tmp_path, monkeypatch, capsys):
    """The baseline's processed attempts.jsonl cannot be read back: bad input, not a gate result."""
    base, cand = _runs(tmp_path)
    from bench_pipeline import comparison_sides

    def refusing(out_dir, run_dir=None):
        raise comparison_sides.ComparisonInputError(f"{out_dir / 'attempts.jsonl'}: cannot be read (Permission denied)")

    monkeypatch.setattr("bench_pipeline.comparison_sides.side_from_output", refusing)
    assert cli.main(["compare", str(base), str(cand), "--output-dir", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.endswith("baseline/attempts.jsonl: cannot be read (Permission denied)\n")


@pytest.mark.parametrize("margin", ["-0.1", "1.5", "nan"])
def test_exit_2_for_a_margin_outside_zero_to_one(tmp_path, capsys, margin):
    base, cand = _runs(tmp_path)
    assert cli.main(["compare", str(base), str(cand), "--output-dir", str(tmp_path / "out"), "--max-drop", margin]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --max-drop: max_drop must be a number from 0 to 1") and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("mode", MODES)
def test_cli_process_publish_delivers_everything_before_the_process_ends(one_run, tmp_path, mode):
    """The command ends without freeing its heap (bulk.exit_now) only after the publication
    is delivered: a Langfuse server has every attempt's evaluation once the command exited."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANGFUSE_")}
    with make_standin(mode) as standin:
        env.update({"LANGFUSE_BASE_URL": standin.base_url, "LANGFUSE_PUBLIC_KEY": standin.public_key,
                    "LANGFUSE_SECRET_KEY": SECRET})
        done = subprocess.run([sys.executable, "-m", "bench_pipeline.cli", "process", str(one_run), "--output-dir",
                               str(tmp_path / "out"), "--publish"], capture_output=True, text=True, timeout=300,
                              env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "published run" in done.stdout
        attempts = len((tmp_path / "out" / "attempts.jsonl").read_text().splitlines())
        assert len(item_spans(standin)) == attempts
        assert standin.internal_errors == [] and standin.unknown_requests() == []


def test_backfill_says_when_no_daemon_runs_it():
    """`bench-pipeline backfill` launches the backfill whether or not a daemon runs, and says
    when none has written a heartbeat lately: nothing runs it until one starts."""
    from types import SimpleNamespace

    from bench_pipeline.backfill import HEARTBEAT_RECENT_SECONDS, no_daemon_note

    now = 1_000_000.0
    beat = lambda ago: SimpleNamespace(timestamp=now - ago)  # noqa: E731
    assert no_daemon_note({"SENSOR": beat(200), "BACKFILL": beat(30)}, now, "/h") is None  # one recent is enough
    never = no_daemon_note({}, now, "/h")
    assert never == (
        f"warning: no Dagster daemon is running on the instance /h (no daemon heartbeat in the last "
        f"{HEARTBEAT_RECENT_SECONDS} s; never), so nothing runs the backfill yet. Start one with the same "
        f"DAGSTER_HOME: scripts/ui.sh (the UI and its daemon) or .venv/bin/dagster-daemon run -w workspace.yaml; "
        f"it picks the backfill up within 30 s (a daemon started seconds ago may not have written its first "
        f"heartbeat yet)")
    assert "(no daemon heartbeat in the last 120 s; last 3 h ago)" in no_daemon_note({"BACKFILL": beat(3 * 3600)}, now, "/h")
    assert "; last 10 min ago)" in no_daemon_note({"BACKFILL": beat(600)}, now, "/h")
