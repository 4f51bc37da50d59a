"""Stage 1 edge cases: reading a run folder (run-directory.md; readings R1, R2, R26, R27,
R29, R32, R33, R42, R43).

Each test builds a run folder on disk and checks what the specification says the pipeline
must see: the run id, the suite name, which results lines are rows and which are bad rows,
metrics_k, the planned/missing attempts and the duplicate finding.
"""

from __future__ import annotations

import json

import pytest

from bench_pipeline.pipeline import run_stages
from bench_pipeline.run_reader import NotARunFolderError, planned_attempts, read_run

from .run_builder import make_run, row


def _attempt(processed, task_id: str, attempt: int = 1) -> dict:
    found = [a for a in processed.attempts if a["task_id"] == task_id and a["attempt"] == attempt]
    assert found, f"no attempt row {task_id}#{attempt}"
    return found[-1]


def _bad_lines(metrics: dict) -> list[int]:
    return [b["line"] for b in metrics["data_quality"]["bad_rows"]]


# --- not a run folder ------------------------------------------------------------------

def test_folder_without_results_raises_naming_the_path(tmp_path):
    folder = tmp_path / "not-a-run"
    folder.mkdir()
    (folder / "manifest.json").write_text('{"status": "completed"}', encoding="utf-8")
    with pytest.raises(NotARunFolderError) as info:
        run_stages(folder).processed
    assert str(folder) in str(info.value)
    with pytest.raises(NotARunFolderError):
        read_run(folder)


def test_a_results_file_that_is_no_regular_file_is_named_as_such(tmp_path):
    """A results.jsonl that is a folder or a FIFO: the error says what is there, not that
    there is no results.jsonl."""
    import os

    folder = tmp_path / "odd"
    (folder / "results.jsonl").mkdir(parents=True)
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "results.jsonl")
    for run in (folder, fifo):
        with pytest.raises(NotARunFolderError) as info:
            read_run(run)
        assert str(info.value) == (f"{run / 'results.jsonl'}: not a regular file (a folder, a FIFO or a device), "
                                   "so no rows can be read from it")


def test_a_byte_order_mark_at_the_start_of_the_results_is_ignored(tmp_path):
    """A results.jsonl saved by an editor that starts files with a UTF-8 BOM keeps its first
    row (RFC 8259 lets a parser ignore the mark); the manifest's BOM is ignored as well."""
    run = make_run(tmp_path, [row("t"), row("u")], manifest={"status": "completed", "metrics_k": 1})
    for name in ("results.jsonl", "manifest.json"):
        (run / name).write_bytes(b"\xef\xbb\xbf" + (run / name).read_bytes())
    raw = read_run(run)
    assert [r.task_id for r in raw.rows] == ["t", "u"] and raw.bad_rows == []
    assert raw.manifest == {"status": "completed", "metrics_k": 1}


def test_missing_manifest_and_suite_are_not_fatal(tmp_path):
    run = make_run(tmp_path, [row("t")])
    (run / "manifest.json").unlink()
    (run / "suite.json").unlink()
    m = run_stages(run).processed.metrics
    assert m["coverage"]["attempts"] == 1
    assert m["suite"] is None
    assert m["coverage"]["metrics_k"] == 1  # observed: highest attempt of the only task


def test_malformed_manifest_and_suite_are_not_fatal(tmp_path):
    run = make_run(tmp_path, [row("t", 1), row("t", 2)])
    (run / "manifest.json").write_text('{"status": "completed", "metrics_k": ', encoding="utf-8")
    (run / "suite.json").write_bytes(b"\xff\xfe not json")
    m = run_stages(run).processed.metrics
    assert m["coverage"]["attempts"] == 2
    assert m["coverage"]["metrics_k"] == 2
    assert m["coverage"]["planned_attempts"] is None
    assert m["suite"] is None


# --- R1, R2 --------------------------------------------------------------------------------

def test_run_id_is_folder_name_not_manifest_run_id(tmp_path):
    run = make_run(tmp_path, [row("t")], run_id="folder-id", manifest={"status": "completed", "run_id": "manifest-id"})
    p = run_stages(run).processed
    assert p.metrics["run_id"] == "folder-id"
    assert _attempt(p, "t")["run_id"] == "folder-id"


@pytest.mark.parametrize(
    ("suite", "manifest_suite", "expected"),
    [
        ({"name": "from-suite", "tasks": []}, {"name": "from-manifest"}, "from-suite"),
        ({"tasks": []}, {"name": "from-manifest", "version": "7"}, "from-manifest"),
        ({"tasks": []}, "plain-string", "plain-string"),
        ({"tasks": []}, None, None),
        ({"name": 5, "tasks": []}, {"name": "from-manifest"}, "from-manifest"),
    ],
)
def test_suite_name_precedence(tmp_path, suite, manifest_suite, expected):
    manifest = {"status": "completed"}
    if manifest_suite is not None:
        manifest["suite"] = manifest_suite
    m = run_stages(make_run(tmp_path, [row("t")], suite=suite, manifest=manifest)).processed.metrics
    assert m["suite"] == expected


# --- blank lines and bad rows (R27, R33) -------------------------------------------------

def test_blank_and_whitespace_lines_are_ignored_and_line_numbers_kept(tmp_path):
    rows = [row("a"), "", "   \t ", row("b"), "not json"]
    p = run_stages(make_run(tmp_path, rows)).processed
    assert p.metrics["coverage"]["attempts"] == 2
    assert _attempt(p, "a")["line"] == 1
    assert _attempt(p, "b")["line"] == 4
    assert _bad_lines(p.metrics) == [5]


BAD_LINES = [
    "not json",
    "[1, 2]",
    "42",
    '"task"',
    "null",
    '{"attempt": 1, "status": "passed"}',                 # no task_id
    '{"task_id": 7, "attempt": 1, "status": "passed"}',   # non-string task_id
    '{"task_id": null, "attempt": 1}',
    '{"task_id": ["t"], "attempt": 1}',
    '{"task_id": "t", "attempt": 0, "status": "passed"}',
    '{"task_id": "t", "attempt": -1, "status": "passed"}',
    '{"task_id": "t", "attempt": "2", "status": "passed"}',
    '{"task_id": "t", "attempt": 2.0, "status": "passed"}',
    '{"task_id": "t", "attempt": 1.5, "status": "passed"}',
    '{"task_id": "t", "attempt": true, "status": "passed"}',
    '{"task_id": "t", "attempt": NaN, "status": "passed"}',
    '{"task_id": "t", "attempt": [1], "status": "passed"}',
    '{"task_id": "t", "attempt": 1, "status": ',          # truncated
    '{"task_id": "t", "attempt": 1} {"task_id": "u"}',     # two values on one line
    '{"task_id": "t", "attempt": 1} trailing',
]


@pytest.mark.parametrize("line", BAD_LINES)
def test_each_bad_row_is_reported_and_excluded(tmp_path, line):
    p = run_stages(make_run(tmp_path, [row("good"), line])).processed
    assert p.metrics["coverage"]["attempts"] == 1
    assert p.metrics["coverage"]["unique_tasks"] == 1
    bad = p.metrics["data_quality"]["bad_rows"]
    assert len(bad) == 1
    assert bad[0]["line"] == 2
    assert isinstance(bad[0]["reason"], str) and bad[0]["reason"]


def test_bad_rows_together_keep_their_line_numbers(tmp_path):
    rows = [row("g1")] + BAD_LINES + [row("g2")]
    p = run_stages(make_run(tmp_path, rows)).processed
    assert _bad_lines(p.metrics) == list(range(2, 2 + len(BAD_LINES)))
    assert _attempt(p, "g2")["line"] == 2 + len(BAD_LINES)
    assert p.metrics["aggregate"]["tasks"] == 2


def test_non_utf8_line_is_a_bad_row(tmp_path):
    run = make_run(tmp_path, [row("x")])
    good = json.dumps(row("a")).encode()
    (run / "results.jsonl").write_bytes(
        good + b"\n" + b'{"task_id": "t\xff", "attempt": 1, "status": "passed"}\n' + b"\xfe\xff\n" + json.dumps(row("b")).encode() + b"\n"
    )
    p = run_stages(run).processed
    assert _bad_lines(p.metrics) == [2, 3]
    assert sorted(a["task_id"] for a in p.attempts) == ["a", "b"]
    assert _attempt(p, "b")["line"] == 4


def test_crlf_line_endings_are_rows(tmp_path):
    run = make_run(tmp_path, [row("x")])
    (run / "results.jsonl").write_bytes(
        json.dumps(row("a")).encode() + b"\r\n" + json.dumps(row("b", status="failed")).encode() + b"\r\n\r\n"
    )
    p = run_stages(run).processed
    assert p.metrics["data_quality"]["bad_rows"] == []
    assert p.metrics["coverage"]["attempts"] == 2


def test_last_line_without_newline_is_a_row(tmp_path):
    run = make_run(tmp_path, [row("x")])
    (run / "results.jsonl").write_text(json.dumps(row("a")) + "\n" + json.dumps(row("b")), encoding="utf-8")
    assert run_stages(run).processed.metrics["coverage"]["attempts"] == 2


@pytest.mark.parametrize("attempt_field", [{"attempt": None}, {}])
def test_null_or_absent_attempt_means_one(tmp_path, attempt_field):
    r = {"task_id": "t", "status": "passed", "success": True, "agent_eligible": True, **attempt_field}
    p = run_stages(make_run(tmp_path, [r])).processed
    assert p.metrics["data_quality"]["bad_rows"] == []
    assert _attempt(p, "t", 1)["attempt"] == 1
    assert p.metrics["capability"]["pass_at_1"]["successes"] == 1


def test_row_with_unknown_keys_is_kept(tmp_path):
    p = run_stages(make_run(tmp_path, [row("t", some_future_key={"x": 1}, metrics={"new_metric": 3})])).processed
    assert p.metrics["data_quality"]["bad_rows"] == []
    assert p.metrics["coverage"]["attempts"] == 1


def test_a_line_nested_deeper_than_the_writer_writes_is_a_bad_row_saying_so(tmp_path):
    """A row whose unknown key nests 253 arrays (the row 254 deep) is kept with it; one level
    more makes the line a bad row, which says why (artifacts.MAX_DEPTH)."""
    deep = "x"
    for _ in range(253):
        deep = [deep]
    run = make_run(tmp_path, [row("t", deep_unknown=deep), row("u", deep_unknown=[deep])])
    raw = read_run(run)
    assert [r.task_id for r in raw.rows] == ["t"]
    assert raw.rows[0].data["deep_unknown"] == deep
    assert [(b["line"], b["reason"][:40]) for b in raw.bad_rows] == [(2, "JSON nested deeper than 254 levels (arra")]


# --- R42: NaN, Infinity, huge integers -------------------------------------------------

def test_line_with_nan_infinity_and_huge_ints_is_still_a_row(tmp_path):
    big = "1" + "0" * 400
    line = (
        '{"task_id": "n", "attempt": 1, "status": "passed", "success": true, "agent_eligible": true,'
        ' "quality_score": NaN, "rubric_pass_count": ' + big + ', "rubric_total": Infinity,'
        ' "metrics": {"task_wall_ms": NaN, "setup_ms": -Infinity, "llm_calls": ' + big + ','
        ' "tool_calls": 1e400, "input_tokens": -' + big + ', "cost_usd": Infinity}}'
    )
    p = run_stages(make_run(tmp_path, [line, row("ok", metrics={"task_wall_ms": 10})])).processed
    m = p.metrics
    assert m["data_quality"]["bad_rows"] == []
    assert m["coverage"]["attempts"] == 2
    a = _attempt(p, "n")
    for key in ("quality_score", "rubric_pass_count", "rubric_total", "task_wall_ms", "setup_ms",
                "llm_calls", "tool_calls", "input_tokens", "cost_usd"):
        assert a[key] is None, key
    assert a["success"] is True
    assert m["capability"]["pass_at_1"]["successes"] == 2
    assert m["efficiency"]["task_wall_ms"]["count"] == 1
    assert m["efficiency"]["setup_ms"]["count"] == 0
    assert m["aggregate"]["per_task"]["n"]["best_quality"] is None
    # metrics.json stays strict JSON.
    json.dumps(m, allow_nan=False)
    json.dumps(p.attempts, allow_nan=False, default=str)


# --- duplicates (R29, R33) --------------------------------------------------------------

def test_duplicates_reported_once_per_task_attempt_with_all_lines(tmp_path):
    legacy = {"task_id": "t", "status": "passed", "success": True, "agent_eligible": True}
    rows = [row("t", 1), row("t", 2), row("t", 1, "failed"), legacy, row("u"), row("u"), row("v")]
    m = run_stages(make_run(tmp_path, rows)).processed.metrics
    dups = sorted(m["data_quality"]["duplicate_rows"], key=lambda d: d["task_id"])
    assert dups == [
        {"task_id": "t", "attempt": 1, "lines": [1, 3, 4]},
        {"task_id": "u", "attempt": 1, "lines": [5, 6]},
    ]
    assert m["coverage"]["attempts"] == 7
    assert m["coverage"]["unique_tasks"] == 3


def test_no_duplicates_gives_empty_list(tmp_path):
    m = run_stages(make_run(tmp_path, [row("t", 1), row("t", 2)])).processed.metrics
    assert m["data_quality"]["duplicate_rows"] == []


# --- metrics_k (R26) ---------------------------------------------------------------------

PLANNED = [{"task_id": "a", "attempts": 3}, {"task_id": "b", "attempts": 2}]


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        ({"metrics_k": 4, "planned": PLANNED}, 4),
        ({"metrics_k": 1, "planned": PLANNED}, 1),
        ({"metrics_k": 0, "planned": PLANNED}, 2),
        ({"metrics_k": -1, "planned": PLANNED}, 2),
        ({"metrics_k": "3", "planned": PLANNED}, 2),
        ({"metrics_k": 3.0, "planned": PLANNED}, 2),
        ({"metrics_k": True, "planned": PLANNED}, 2),
        ({"metrics_k": None, "planned": PLANNED}, 2),
        ({"planned": PLANNED}, 2),
        # Only valid planned entries count: string task_id and positive integer attempts.
        ({"planned": [{"task_id": "a", "attempts": 3}, {"task_id": 5, "attempts": 1},
                      {"task_id": "c", "attempts": 0}, {"task_id": "d", "attempts": "1"},
                      {"task_id": "e", "attempts": True}, {"task_id": "f", "attempts": 1.0},
                      {"task_id": "g"}, "junk", 7]}, 3),
        # No valid planned entry: min over observed tasks of their highest attempt (a: 3, b: 2).
        ({"planned": [{"task_id": 5, "attempts": 1}]}, 2),
        ({"planned": []}, 2),
        ({"planned": "x"}, 2),
        ({}, 2),
    ],
)
def test_metrics_k_chain(tmp_path, manifest, expected):
    rows = [row("a", 1), row("a", 2), row("a", 3), row("b", 1), row("b", 2)]
    m = run_stages(make_run(tmp_path, rows, manifest={"status": "completed", **manifest})).processed.metrics
    assert m["coverage"]["metrics_k"] == expected


def test_metrics_k_observed_uses_highest_attempt_not_count(tmp_path):
    rows = [row("a", 3), row("b", 1), row("b", 4)]
    m = run_stages(make_run(tmp_path, rows)).processed.metrics
    assert m["coverage"]["metrics_k"] == 3


def test_metrics_k_null_when_nothing_known(tmp_path):
    m = run_stages(make_run(tmp_path, [])).processed.metrics
    assert m["coverage"]["metrics_k"] is None


def test_metrics_k_ignores_bad_rows(tmp_path):
    rows = [row("a", 1), row("a", 2), '{"task_id": "b", "attempt": "9"}']
    m = run_stages(make_run(tmp_path, rows)).processed.metrics
    assert m["coverage"]["metrics_k"] == 2
    assert m["coverage"]["unique_tasks"] == 1


# --- planned / missing (R32, R33) ---------------------------------------------------------

def test_no_planned_list_gives_nulls(tmp_path):
    m = run_stages(make_run(tmp_path, [row("a")])).processed.metrics
    assert m["coverage"]["planned_attempts"] is None
    assert m["coverage"]["missing_attempts"] is None


def test_empty_planned_list_gives_zeros(tmp_path):
    m = run_stages(make_run(tmp_path, [row("a")], manifest={"status": "completed", "planned": []})).processed.metrics
    assert m["coverage"]["planned_attempts"] == 0
    assert m["coverage"]["missing_attempts"] == 0
    assert m["data_quality"]["missing_attempts"] == []


def test_missing_attempts_in_plan_order_and_extras_not_missing(tmp_path):
    manifest = {"status": "completed", "planned": [
        {"task_id": "b", "attempts": 2},
        {"task_id": "a", "attempts": 3},
        {"task_id": "z", "attempts": 0},      # invalid entry: not planned
        {"task_id": 9, "attempts": 2},        # invalid entry: not planned
    ]}
    rows = [row("a", 1), row("a", 3), row("b", 2), row("extra", 1), row("a", 5)]
    m = run_stages(make_run(tmp_path, rows, manifest=manifest)).processed.metrics
    assert m["coverage"]["planned_attempts"] == 5
    assert m["coverage"]["missing_attempts"] == 2
    assert m["data_quality"]["missing_attempts"] == [
        {"task_id": "b", "attempt": 1},
        {"task_id": "a", "attempt": 2},
    ]


def test_missing_attempts_all_present(tmp_path):
    manifest = {"status": "completed", "planned": [{"task_id": "a", "attempts": 2}]}
    m = run_stages(make_run(tmp_path, [row("a", 1), row("a", 2)], manifest=manifest)).processed.metrics
    assert (m["coverage"]["planned_attempts"], m["coverage"]["missing_attempts"]) == (2, 0)
    assert m["data_quality"]["missing_attempts"] == []


def test_legacy_row_without_attempt_satisfies_planned_attempt_one(tmp_path):
    manifest = {"status": "completed", "planned": [{"task_id": "a", "attempts": 1}]}
    legacy = {"task_id": "a", "status": "passed"}
    m = run_stages(make_run(tmp_path, [legacy], manifest=manifest)).processed.metrics
    assert m["coverage"]["missing_attempts"] == 0


def test_plan_keeps_plan_order_and_counts_a_repeated_task_once():
    """R26/R32: a task named again adds only attempts beyond those already planned; the
    pairs keep the order in which they were first planned."""
    plan = planned_attempts({"planned": [
        {"task_id": "a", "attempts": 2}, {"task_id": "b", "attempts": 1},
        {"task_id": "a", "attempts": 3}, {"task_id": "a", "attempts": 1},
        {"task_id": "b", "attempts": True},  # not a positive integer: not planned
    ]})
    assert list(plan.pairs()) == [("a", 1), ("a", 2), ("b", 1), ("a", 3)]
    assert plan.size == 4
    assert plan.missing({("a", 2), ("a", 7), ("c", 1)}, cap=10) == (
        3, [{"task_id": "a", "attempt": 1}, {"task_id": "b", "attempt": 1}, {"task_id": "a", "attempt": 3}])
    assert plan.missing({("a", 2)}, cap=2) == (3, [{"task_id": "a", "attempt": 1}, {"task_id": "b", "attempt": 1}])
    assert planned_attempts({"planned": []}).size == 0
    assert planned_attempts({}) is None


def test_huge_planned_attempts_are_counted_not_enumerated(tmp_path):
    """R26 sets no upper bound on ``attempts`` or metrics_k: plans of 10**9 and 10**18
    attempts per task are counted exactly and quickly; data_quality names the first
    MISSING_LIST_CAP missing pairs in plan order, and run_files says the listing stops."""
    import time

    from bench_pipeline.pipeline import run_stages
    from bench_pipeline.run_reader import MISSING_LIST_CAP

    manifest = {"status": "aborted", "planned": [
        {"task_id": "a", "attempts": 10 ** 9}, {"task_id": "b", "attempts": 10 ** 18}]}
    rows = [row("a", 1), row("a", 3), row("b", 10 ** 17), row("b", 10 ** 19)]
    run = make_run(tmp_path, rows, manifest=manifest)
    started = time.monotonic()
    result = run_stages(run, tmp_path / "out")
    written = result.written
    assert time.monotonic() - started < 30  # the plan is never enumerated (was: hours)
    m = json.loads(written["metrics.json"].read_text())
    assert m["coverage"]["metrics_k"] == 10 ** 9  # the smallest planned attempts (R26)
    assert m["coverage"]["planned_attempts"] == 10 ** 9 + 10 ** 18
    assert m["coverage"]["missing_attempts"] == 10 ** 9 + 10 ** 18 - 3  # b#10**19 is outside the plan
    listed = m["data_quality"]["missing_attempts"]
    assert len(listed) == MISSING_LIST_CAP
    assert listed[:2] == [{"task_id": "a", "attempt": 2}, {"task_id": "a", "attempt": 4}]
    assert listed[-1] == {"task_id": "a", "attempt": MISSING_LIST_CAP + 2}
    assert m["data_quality"]["run_files"] == [{
        "file": "manifest.json", "status": "available",
        "reason": f"planned attempts missing from results.jsonl: {10 ** 9 + 10 ** 18 - 3}; "
                  f"data_quality.missing_attempts lists the first {MISSING_LIST_CAP} in plan order",
    }]
    total = 10 ** 9 + 10 ** 18 - 3
    summary = written["summary.md"].read_text()
    assert f"Planned attempts missing from results.jsonl (they escape coverage): {total}: `a` attempt 2," in summary
    assert f"… and {total - 25} more" in summary  # the reports name 25, then count the rest
    html = written["report.html"].read_text()
    assert f"planned attempts with no result row: {total}." in html
    assert f"<li>… and {total - 25} more</li>" in html


# --- R43: NUL bytes in identity ---------------------------------------------------------

def test_nul_byte_in_task_id_is_a_row(tmp_path):
    p = run_stages(make_run(tmp_path, [row("t\x00x", metrics={"tool_calls": 3})])).processed
    assert p.metrics["data_quality"]["bad_rows"] == []
    a = _attempt(p, "t\x00x")
    assert a["tool_calls"] == 3
    assert a["provenance"]["tool_calls"] == "recorded"


# --- R27: lines split on "\n" only --------------------------------------------------------

@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085", "\x1c", "\x1e"])
def test_unicode_line_separators_inside_a_row_do_not_split_it(tmp_path, separator):
    run = make_run(tmp_path, [row("x")])
    line = json.dumps(row("a", category=f"nav{separator}x"), ensure_ascii=False)
    (run / "results.jsonl").write_bytes((line + "\n" + json.dumps(row("b")) + "\n").encode("utf-8"))
    p = run_stages(run).processed
    assert p.metrics["data_quality"]["bad_rows"] == []
    assert _attempt(p, "a")["category"] == f"nav{separator}x"
    assert _attempt(p, "b")["line"] == 2


def test_lone_carriage_return_is_not_a_line_break(tmp_path):
    run = make_run(tmp_path, [row("x")])
    (run / "results.jsonl").write_bytes(
        json.dumps(row("a")).encode() + b"\r" + json.dumps(row("b")).encode() + b"\n" + json.dumps(row("c")).encode() + b"\n"
    )
    p = run_stages(run).processed
    assert _bad_lines(p.metrics) == [1]
    assert [a["task_id"] for a in p.attempts] == ["c"]
    assert _attempt(p, "c")["line"] == 2


def test_deeply_nested_line_is_not_fatal(tmp_path):
    deep = '{"task_id": "d", "attempt": 1, "status": "passed", "x": ' + "[" * 100000 + "]" * 100000 + "}"
    p = run_stages(make_run(tmp_path, [row("a"), deep, row("b")])).processed
    assert {"a", "b"} <= {a["task_id"] for a in p.attempts}
    assert p.metrics["coverage"]["attempts"] + len(p.metrics["data_quality"]["bad_rows"]) == 3


@pytest.mark.parametrize("content", ['[{"metrics_k": 2}]', '"completed"', "null", "42"])
def test_manifest_that_is_not_an_object(tmp_path, content):
    run = make_run(tmp_path, [row("a", 1), row("a", 2)])
    (run / "manifest.json").write_text(content, encoding="utf-8")
    m = run_stages(run).processed.metrics
    assert m["coverage"]["metrics_k"] == 2
    assert m["coverage"]["planned_attempts"] is None


def test_suite_with_odd_task_entries(tmp_path):
    suite = {"name": "s", "tasks": [5, None, {"category": "no-id"}, {"id": "t", "category": "c"}]}
    p = run_stages(make_run(tmp_path, [row("t", category=None)], suite=suite)).processed
    assert _attempt(p, "t")["category"] == "c"


# --- very large attempt numbers and k (R26, R27 have no upper bound) -----------------------

def test_very_large_attempt_numbers_and_k_count_and_are_reported_compactly(tmp_path):
    """R26/R27: any integer >= 1 is an attempt number and any positive metrics_k counts. The
    reports then name a few missing attempts per task and count the rest, instead of
    enumerating a million of them."""
    from bench_pipeline.pipeline import run_stages

    manifest = {"status": "completed", "metrics_k": 10 ** 6}
    run = make_run(tmp_path, [row("t"), row("t", attempt=10 ** 9, status="failed")], manifest=manifest)
    result = run_stages(run, tmp_path / "out")
    processed, written = result.processed, result.written
    assert [r.attempt for r in processed.raw.rows] == [1, 10 ** 9] and processed.raw.bad_rows == []
    assert processed.raw.metrics_k == 10 ** 6
    assert f"{10 ** 6 - 1 - 25:,} more attempts missing" in written["summary.md"].read_text()
    assert written["report.html"].stat().st_size < 1_000_000


def test_the_reports_name_the_rejudged_copy_where_its_lines_and_missing_attempts_are_meant(tmp_path):
    """run-directory.md: "the outputs name the file they read". A bad line and a missing
    attempt of a re-judged run are the re-judged copy's, and both reports say so."""
    from bench_pipeline.outputs import write_run_outputs

    manifest = {"status": "completed", "planned": [{"task_id": "t", "attempts": 2}, {"task_id": "u", "attempts": 1}]}
    run = make_run(tmp_path / "r", [row("t"), row("u")], manifest=manifest)
    lines = [json.dumps(row("t")), json.dumps(row("u", status="failed", success=False)), "{not json"]
    (run / "results.rejudged.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    processed = run_stages(run).processed
    assert processed.metrics["data_quality"]["bad_rows"][0]["line"] == 3
    written = write_run_outputs(tmp_path / "out", processed)
    summary, html = written["summary.md"].read_text(), written["report.html"].read_text()
    assert "bad rows (unreadable results.rejudged.jsonl lines): 1; planned attempts with no result row: 1" in summary
    assert "Planned attempts missing from results.rejudged.jsonl (they escape coverage): 1" in summary
    assert "bad rows (unreadable results.rejudged.jsonl lines): 1" in html
    assert "unreadable results.jsonl" not in summary + html


def test_results_linked_out_of_the_run_folder_are_refused_and_a_refused_rejudged_copy_named(tmp_path):
    """results.jsonl resolving outside the run folder: refused, naming it (R5's rule). A
    results.rejudged.jsonl that is not the results (a symlink out of the folder, a folder):
    results.jsonl is read and run_files says why the copy was not."""
    from bench_pipeline.run_folders import fingerprint

    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text(json.dumps(row("evil")) + "\n")
    run = make_run(tmp_path / "a", [row("t")])
    (run / "results.jsonl").unlink()
    (run / "results.jsonl").symlink_to(outside)
    with pytest.raises(NotARunFolderError, match="results.jsonl: refused, symlink resolves outside the run folder"):
        read_run(run)

    run = make_run(tmp_path / "b", [row("t"), row("u")])
    before = fingerprint(str(run))
    (run / "results.rejudged.jsonl").symlink_to(outside)
    assert fingerprint(str(run)) == before  # not part of the run
    m = run_stages(run).processed.metrics
    assert m["results_file"] == "results.jsonl" and m["coverage"]["attempts"] == 2
    assert m["data_quality"]["run_files"] == [{
        "file": "results.rejudged.jsonl", "status": "unreadable",
        "reason": "symlink resolves outside the run folder; results.jsonl read instead"}]
    (run / "results.rejudged.jsonl").unlink()
    (run / "results.rejudged.jsonl").mkdir()
    m = run_stages(run).processed.metrics
    assert m["data_quality"]["run_files"][0]["reason"] == "not a regular file; results.jsonl read instead"
    # an empty re-judged copy is the results (run-directory.md): every attempt missing, and said why
    (run / "results.rejudged.jsonl").rmdir()
    (run / "results.rejudged.jsonl").write_text("")
    m = run_stages(run).processed.metrics
    assert m["results_file"] == "results.rejudged.jsonl" and m["coverage"]["attempts"] == 0
    assert m["data_quality"]["run_files"] == [{
        "file": "results.rejudged.jsonl", "status": "available",
        "reason": "no result line, while results.jsonl beside it has 2: a re-judged copy is the run's results "
                  "(run-directory.md), so every attempt is missing; re-run the re-judge, or remove the copy to read "
                  "results.jsonl"}]


def test_an_integer_too_long_for_python_loses_its_value_not_its_line_or_file(tmp_path):
    """An integer of more than LONGEST_INTEGER digits (Python reads none beyond 4,300) is
    beyond the float range, so unavailable (R42); its line, its history.json and its
    manifest.json are read as the rest of them says. Planned attempts of 4,000 digits each
    add up to a count still written out exactly."""
    from bench_pipeline.artifacts import LONGEST_INTEGER, loads_exact

    huge = "9" * 4301
    assert loads_exact(f'{{"a": {huge}, "b": -{huge}, "c": {"9" * LONGEST_INTEGER}}}'.encode()) == {
        "a": float("inf"), "b": float("-inf"), "c": int("9" * LONGEST_INTEGER)}
    line = ('{"task_id": "n", "attempt": 1, "status": "passed", "x_note": ' + huge + ','
            ' "metrics": {"success": true, "agent_eligible": true, "llm_calls": ' + huge + ','
            ' "artifact_dir": "tasks/n/1"}}')
    history = ('[{"type": "assistant", "content": "ok", "usage": {"input_tokens": ' + huge
               + ', "output_tokens": 5}, "duration_ms": 10}]').encode()
    longest = int("9" * LONGEST_INTEGER)
    manifest = {"status": "aborted", "planned": [{"task_id": "n", "attempts": longest},
                                                 {"task_id": "m", "attempts": longest}]}
    run = make_run(tmp_path, [line, row("m")], manifest=manifest, artifacts={"tasks/n/1": {"history.json": history}})
    p = run_stages(run).processed
    m = p.metrics
    assert m["data_quality"]["bad_rows"] == [] and m["coverage"]["attempts"] == 2
    a = _attempt(p, "n")
    assert a["success"] is True and m["data_quality"]["invalid_artifacts"] == []
    # history.json read: one model call, its input tokens unavailable, its output tokens counted
    assert (a["llm_calls"], a["input_tokens"], a["output_tokens"]) == (1, None, 5)
    assert a["provenance"]["input_tokens"] == "derived"
    assert p.raw.planned.size == 2 * longest
    assert m["coverage"]["missing_attempts"] == 2 * longest - 2  # 4,001 digits, written exactly
    assert json.loads(json.dumps(m["coverage"]))["missing_attempts"] == 2 * longest - 2
    # an attempts count too long to read is not a planned count: that entry is not in the plan
    too_long = {"status": "aborted", "planned": [{"task_id": "n", "attempts": 2}, {"task_id": "m", "attempts": 3}]}
    text = json.dumps(too_long).replace('"attempts": 3', f'"attempts": {huge}')
    run = make_run(tmp_path / "t", [row("n"), row("m")])
    (run / "manifest.json").write_text(text, encoding="utf-8")
    m = run_stages(run).processed.metrics
    assert m["coverage"]["planned_attempts"] == 2 and m["coverage"]["missing_attempts"] == 1


def test_integers_beyond_64_bits_stay_exact_in_the_plan_and_bound_attempt_numbers(tmp_path):
    """orjson reads 10**20 as a float; the manifest's planned attempts (R26: no upper bound)
    keep the integer, so the plan counts exactly. An attempt number beyond 2**63 - 1, read
    exactly too, is a bad row saying why (the Dagster frames hold attempts as Int64)."""
    from bench_pipeline.frames import raw_results_frame

    manifest = {"status": "aborted", "planned": [{"task_id": "a", "attempts": 10 ** 20}]}
    rows = [row("a", 1), row("a", 10 ** 20), row("a", 2 ** 63), row("a", 2 ** 63 - 1)]
    processed = run_stages(make_run(tmp_path, rows, manifest=manifest)).processed
    m = processed.metrics
    assert processed.raw.planned.size == 10 ** 20
    assert [r.attempt for r in processed.raw.rows] == [1, 2 ** 63 - 1]
    reason = "is beyond 2**63 - 1, the largest attempt number the pipeline keeps"
    assert m["data_quality"]["bad_rows"] == [{"line": 2, "reason": f"attempt {10 ** 20} {reason}"},
                                             {"line": 3, "reason": f"attempt {2 ** 63} {reason}"}]
    assert m["coverage"]["planned_attempts"] == 10 ** 20
    assert m["coverage"]["missing_attempts"] == 10 ** 20 - 2
    assert m["coverage"]["metrics_k"] == 10 ** 20
    assert raw_results_frame(processed.raw)["attempt"].tolist()[3] == 2 ** 63 - 1  # the Dagster frame holds it
    # a float literal is still not an attempt number (R27)
    bad = run_stages(make_run(tmp_path / "f", ['{"task_id": "x", "attempt": 1e20}', row("y")])).processed
    assert bad.metrics["data_quality"]["bad_rows"] == [{"line": 1, "reason": "attempt is not an integer >= 1: 1e+20"}]
