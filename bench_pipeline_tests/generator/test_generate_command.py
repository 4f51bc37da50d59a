"""Tests of `bench-pipeline generate` (bench_pipeline/cli.py, `cmd_generate` and its parser)
and of what the generator says it wrote (runs.py, `written_line`): where generated runs
start, what each run's line says, and the help of every option."""

from __future__ import annotations

import argparse
import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest

from bench_pipeline.baselines import RunInfo, choose_baseline
from bench_pipeline.cli import build_parser
from bench_pipeline.cli import main as cli_main
from bench_pipeline.generator import generate_runs, seeded_start
from bench_pipeline.generator import runs as runs_module
from bench_pipeline.generator.world import BASE_TIME
from bench_pipeline.identity import read_identity
from bench_pipeline.sample_runs import SAMPLES

#: A run's line: "<run id>: <status>, <n> of <planned> planned attempts run, <lines> lines in ...".
RUN_LINE = re.compile(r"^(?P<run>\S+): (?P<status>completed|running|aborted), (?P<done>\d+) of (?P<planned>\d+) "
                      r"planned attempts run, (?P<lines>\d+) lines in (?P<file>results(\.rejudged)?\.jsonl)"
                      r"(?P<rest>.*)$")


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def generate(capsys: pytest.CaptureFixture, *args: str) -> tuple[list[Path], list[str]]:
    """Run the command; return the folders it printed (stdout) and its lines on stderr."""
    assert cli_main(["generate", *args]) == 0
    out, err = capsys.readouterr()
    return [Path(line) for line in out.splitlines()], err.splitlines()


def run_lines(err: list[str]) -> dict[str, re.Match]:
    return {m["run"]: m for m in map(RUN_LINE.match, err) if m}


def started_at(run: Path) -> str:
    return json.loads((run / "manifest.json").read_bytes())["started_at"]


# ----------------------------------------------------------------------------- start times

def test_the_seeded_start_is_a_day_after_the_samples_or_later_by_seed() -> None:
    assert seeded_start(0) == datetime(2026, 11, 29, 10, 0, tzinfo=timezone.utc)
    assert seeded_start(1) == datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)
    assert seeded_start(364) == datetime(2027, 11, 28, 10, 0, tzinfo=timezone.utc)
    assert seeded_start(365) == seeded_start(0) and seeded_start(-1) == seeded_start(364)
    assert len({seeded_start(seed) for seed in range(365)}) == 365
    assert all(seeded_start(seed) > BASE_TIME for seed in range(-400, 800))


def test_the_command_starts_by_seed_and_writes_the_same_bytes_for_the_same_arguments(tmp_path, capsys) -> None:
    args = ["--runs", "3", "--tasks", "2", "--repeats", "2", "--history-messages", "6"]
    one, err = generate(capsys, str(tmp_path / "a"), "--seed", "5", *args)
    two, _ = generate(capsys, str(tmp_path / "b"), "--seed", "5", *args)
    other, _ = generate(capsys, str(tmp_path / "c"), "--seed", "6", *args)
    assert [p.name for p in one] == [p.name for p in two]
    assert snapshot(tmp_path / "a") == snapshot(tmp_path / "b")
    assert started_at(one[0]) == "2026-12-04T10:00:00Z" and one[0].name.startswith("2026-12-04T10-00-00Z-")
    assert started_at(other[0]) == "2026-12-05T10:00:00Z"
    assert "seed 5: the first run starts at 2026-12-04T10:00:00Z (docs/generator.md, \"Start times\")" in err
    starts = [started_at(p) for p in one]
    assert starts == sorted(set(starts))


def test_the_python_function_keeps_its_start_unless_given_one(tmp_path) -> None:
    """generate_runs itself still starts at BASE_TIME (the samples and the tests' run ids);
    ``start`` moves the runs' times and ids and nothing else."""
    (default,) = generate_runs(tmp_path / "a", runs=1, seed=3, tasks=2, repeats=1, history_messages=6)
    (moved,) = generate_runs(tmp_path / "b", runs=1, seed=3, tasks=2, repeats=1, history_messages=6,
                             start=seeded_start(3))
    assert started_at(default) == "2026-11-28T10:00:00Z"
    assert started_at(moved) == "2026-12-02T10:00:00Z"
    assert default.name[20:] == moved.name[20:]  # the same drawn suffix
    rows = [(default / "results.jsonl").read_text(), (moved / "results.jsonl").read_text()]
    assert rows[1] != rows[0]
    assert rows[1].replace("2026-12-02T", "2026-11-28T") == rows[0]  # only the times differ


def test_generated_runs_next_to_the_samples_have_a_baseline(tmp_path, capsys) -> None:
    """The issue's case: runs generated into a runs root holding the sample runs no longer
    tie with the samples' start, so the first of them is compared with the latest sample."""
    root = tmp_path / "runs"
    for sample in SAMPLES:
        generate_runs(root, runs=sample.runs, seed=sample.seed, tasks=2, repeats=1, history_messages=6,
                      edge_cases=sample.edge_cases, id_prefix=sample.prefix, systems=sample.systems,
                      layout=sample.layout)
    samples = {p.name for p in root.iterdir()}
    generated, _ = generate(capsys, str(root), "--runs", "2", "--tasks", "2", "--repeats", "1",
                            "--history-messages", "6")  # the default seed, 0
    infos = []
    for run in sorted(root.iterdir()):
        identity = read_identity(run)
        infos.append(RunInfo(run.name, identity.suite, identity.started_at, processed=True))
    sample_starts = {i.started_at for i in infos if i.run_id in samples}
    assert not sample_starts & {started_at(p) for p in generated}
    latest_sample = max((i for i in infos if i.run_id in samples), key=lambda i: i.order)
    first, second = (next(i for i in infos if i.run_id == p.name) for p in generated)
    assert choose_baseline(first, infos, {}).run_id == latest_sample.run_id
    assert choose_baseline(second, infos, {}).run_id == first.run_id


# ----------------------------------------------------------------------------- what it says

def results_lines(run: Path, name: str) -> int:
    return (run / name).read_bytes().count(b"\n")


def test_each_run_line_says_how_many_lines_were_written_and_why_they_differ(tmp_path, capsys) -> None:
    """Edge cases on (the default): the command says so once, and each run's line gives the
    attempts run against the plan and the lines its results file has, with the edge cases
    that make them differ; every count is the file's."""
    folders, err = generate(capsys, str(tmp_path), "--runs", "12", "--seed", "2", "--tasks", "6", "--repeats", "3",
                            "--history-messages", "6", "--layout", "runner")
    assert err[0].startswith("edge cases on (the default): ") and err[0].endswith("; --no-edge-cases writes clean runs")
    lines = run_lines(err)
    assert list(lines) == [p.name for p in folders]
    differing = 0
    for run in folders:
        said = lines[run.name]
        assert said["planned"] == "18"
        assert int(said["lines"]) == results_lines(run, said["file"]) == results_lines(run, "results.jsonl")
        assert (said["file"] == "results.rejudged.jsonl") == (run / "results.rejudged.jsonl").is_file()
        counts = {name: int(n) for n, name in re.findall(r"(\d+) ([a-zA-Z_ -]+?)(?:,|$)",
                                                          said["rest"].removeprefix("; edge cases: "))}
        extra = sum(n for name, n in counts.items() if not name.startswith("attempt"))
        missing = counts.get("attempt without a line", 0) + counts.get("attempts without a line", 0)
        assert int(said["lines"]) == int(said["done"]) - missing + extra, said.group(0)
        differing += said["lines"] != said["done"]
    assert differing >= 3  # the seed's runs show the case the issue saw


def test_an_attempt_without_a_line_counts_once_whatever_else_hit_it(tmp_path, monkeypatch) -> None:
    """An attempt without a line has no copy or duplicate either: the line counts only it
    (seed 3: its first run has no run-level edge case)."""
    hits = iter([frozenset({"missing_row", "duplicate_row", "missing_task_id"}), frozenset({"duplicate_row"})])
    monkeypatch.setattr(runs_module, "draw_row_edges", lambda rng: next(hits, frozenset()))
    said: list[str] = []
    (run,) = generate_runs(tmp_path, runs=1, seed=3, tasks=2, repeats=2, history_messages=6, progress=said.append)
    assert results_lines(run, "results.jsonl") == 4
    assert said == [f"{run.name}: completed, 4 of 4 planned attempts run, 4 lines in results.jsonl; "
                    "edge cases: 1 attempt without a line, 1 later duplicate"]


def test_without_edge_cases_every_attempt_is_one_line_and_the_command_says_so(tmp_path, capsys) -> None:
    folders, err = generate(capsys, str(tmp_path), "--runs", "2", "--seed", "2", "--tasks", "3", "--repeats", "2",
                            "--history-messages", "6", "--no-edge-cases")
    assert err[0] == "edge cases off (--no-edge-cases): clean runs, one valid line in results.jsonl per attempt run"
    for run in folders:
        assert run_lines(err)[run.name].group(0) == (f"{run.name}: completed, 6 of 6 planned attempts run, "
                                                     "6 lines in results.jsonl")
        assert results_lines(run, "results.jsonl") == 6


def test_a_run_cut_short_says_so(tmp_path) -> None:
    """A running or aborted run (>= 10 and >= 50 runs) ran fewer attempts than planned."""
    said: list[str] = []
    generate_runs(tmp_path, runs=50, seed=4, tasks=2, repeats=2, history_messages=4, progress=said.append)
    short = [m for m in map(RUN_LINE.match, said) if m and m["status"] != "completed"]
    assert {m["status"] for m in short} == {"running", "aborted"}
    assert all(int(m["done"]) < int(m["planned"]) == 4 for m in short)


# ----------------------------------------------------------------------------- help

def generate_parser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["generate"]


def test_every_option_of_generate_has_a_help_text() -> None:
    parser = generate_parser()
    actions = [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]
    assert {a.dest for a in actions} == {"out_root", "runs", "seed", "tasks", "repeats", "history_messages",
                                         "no_edge_cases", "systems", "layout"}
    for action in actions:
        assert action.help and len(action.help) > 20, action.dest
    text = " ".join(parser.format_help().split())
    assert "edge cases are on by default" in text and "2026-11-29T10:00:00Z for seed 0" in text


def test_generating_over_an_existing_run_folder_is_an_error_line_not_a_traceback(tmp_path, capsys) -> None:
    """The same seed into the same folder twice: the second writes nothing over the first and
    exits 2 with one line naming the folder, as the other commands report bad input."""
    args = [str(tmp_path / "runs"), "--runs", "1", "--tasks", "2", "--repeats", "1", "--history-messages", "6"]
    (first,), _ = generate(capsys, *args)
    before = snapshot(tmp_path / "runs")
    assert cli_main(["generate", *args]) == 2
    err = capsys.readouterr().err
    assert f"error: {first}: a run folder of that id exists already and is never overwritten" in err
    assert "Traceback" not in err
    assert snapshot(tmp_path / "runs") == before
