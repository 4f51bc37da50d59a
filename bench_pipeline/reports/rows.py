"""The reports' table rows, rendered in plain loops: a large run has thousands of them.

report.html's attempt table, each row with its expandable details (JSON that report.js
renders on demand), made in chunks where the attempts are derived or in forked workers; the
task table; both reports' failed-task tables. Run text is escaped here, row by row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from markupsafe import Markup, escape

from ..attempt_metrics import json_key
from ..bulk import fork_map
from ..jsonio import EncodedJSON
from ..task_groups import is_eligible
from .format import (
    ARGS_CAP,
    NA,
    _as_list,
    _compact_json,
    attempt_no,
    clip,
    fmt_bool,
    fmt_int,
    fmt_ms,
    fmt_pct,
    fmt_quality,
    fmt_round,
    fmt_text,
    line_no,
    md_code,
    num,
    script_json,
    status_pill,
)
from .view.evidence import evidence_dir
from .view.exclusions import exclusion_reading
from .view.failed_tasks import FailedTask
from .view.failures import shown_stage
from .view.run_view import RunView

TEXT_CAP = 8_000  # characters of a text section (an error, a final response, a reason)
TOOL_CALLS_CAP = 100  # tool calls listed per attempt

FACT_LABELS: tuple[str, ...] = (
    "Evidence folder", "Trace artifact", "Results line", "Success (raw / used)",
    "Eligible (raw / used)", "First failure stage", "Failure event ref", "Quality score",
    "Rubric passed", "Expected answer match", "Recalled memory match (source)",
    "Timeout recovery (attempted / succeeded)", "Episode id", "Execution trace id",
    "Started / finished", "Model time / tokens in, out", "Device actions / device time",
    "Tool errors / replans", "Setup time", "Recorded (not derived) fields",
)

#: Above this many bytes of JSON an attempt's tool calls are formatted (and clipped) here.
INLINE_CALLS_BYTES = 64_000


def _inline_calls(calls: Any) -> EncodedJSON | None:
    """The first TOOL_CALLS_CAP calls as [[name, arguments], ...] for report.js to render,
    when well formed and at most INLINE_CALLS_BYTES of JSON (encoded once, here)."""
    if not isinstance(calls, list) or not calls:
        return None
    head = calls[:TOOL_CALLS_CAP]
    if not all(type(c) is dict for c in head):
        return None
    pairs = [[c.get("name"), c.get("arguments")] for c in head]
    try:
        encoded = orjson.dumps(pairs)
    except TypeError:
        return None
    return EncodedJSON(pairs, encoded) if len(encoded) <= INLINE_CALLS_BYTES else None


def _state_value(value: Any) -> str:
    """An expected or actual value of a check as compact JSON; null (nothing recorded: the
    state dump failed, the assertion was not evaluated) as n/a, as every unavailable value."""
    return NA if value is None else _compact_json(value)


def _args_json(value: Any, limit: int = ARGS_CAP) -> str:
    """Tool-call arguments as compact JSON text (the hot path of large reports: orjson)."""
    if isinstance(value, str):
        return clip(value, limit)
    try:
        return clip(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode(), limit)
    except TypeError:
        return _compact_json(value, limit)


def _details_payload(rec: Mapping[str, Any], notes: list[str], folder_text: str) -> list[Any]:
    """An attempt's expandable details: [fact values (in FACT_LABELS order), sections].

    A section is [title, kind, content]; kinds: "pre" -> text, "note" -> text,
    "table" -> [columns, rows], "kv" -> [[label, text]].
    """
    ev = rec.get("evidence") if isinstance(rec.get("evidence"), dict) else {}
    trace = ev.get("trace_artifact") if isinstance(ev.get("trace_artifact"), dict) else {}
    prov = rec.get("provenance") if isinstance(rec.get("provenance"), dict) else {}
    recorded = sorted(f for f, v in prov.items() if v == "recorded")
    facts = [
        folder_text,
        fmt_text(trace.get("status")) + (f" ({trace['path']})" if trace.get("path") else ""),
        fmt_text(rec.get("line")),
        f"{fmt_bool(rec.get('success_raw'))} / {fmt_bool(rec.get('success'))}",
        f"{fmt_bool(rec.get('agent_eligible_raw'))} / {fmt_bool(rec.get('agent_eligible'))}",
        fmt_text(shown_stage(rec)),
        fmt_text(rec.get("failure_event_ref")),
        fmt_quality(rec.get("quality_score")),
        f"{fmt_int(rec.get('rubric_pass_count'))} / {fmt_int(rec.get('rubric_total'))}",
        fmt_bool(ev.get("expected_answer_match")),
        f"{fmt_bool(ev.get('expected_recalled_memory_match'))} ({fmt_text(ev.get('memory_recall_evidence_source'))})",
        f"{fmt_bool(rec.get('recovery_attempted'))} / {fmt_bool(rec.get('recovery_succeeded'))}",
        fmt_text(ev.get("episode_id")),
        fmt_text(ev.get("trace_id")),
        f"{fmt_text(ev.get('started_at'))} / {fmt_text(ev.get('finished_at'))}",
        f"{fmt_ms(rec.get('llm_time_ms'))} / {fmt_int(rec.get('input_tokens'))}, {fmt_int(rec.get('output_tokens'))}",
        f"{fmt_int(rec.get('device_actions'))} / {fmt_ms(rec.get('device_execution_ms'))}",
        f"{fmt_int(rec.get('tool_errors'))} / {fmt_int(rec.get('replan_count'))}",
        fmt_ms(rec.get("setup_ms")),
        ", ".join(recorded) if recorded else "none",
    ]
    sections: list[list[Any]] = [["Note", "note", note] for note in notes]

    errors = ev.get("errors") if isinstance(ev.get("errors"), dict) else {}
    err_rows = [[str(k), clip(str(v), TEXT_CAP)] for k, v in errors.items() if v not in (None, "")]
    if err_rows:
        sections.append(["Errors", "table", [["source", "text"], err_rows]])

    final = ev.get("final_response")
    if final is None and trace.get("status") == "available":  # reference 1: null is unavailable evidence
        sections.append(["Final response", "note", "n/a: evidence unavailable (trace.json records final_response null)."])
    elif final is None:
        sections.append(["Final response", "note", "n/a: evidence unavailable (trace.json missing or unreadable)."])
    elif final == "":
        sections.append(["Final response", "note", "(empty: the recorded response is an empty string)"])
    else:
        sections.append(["Final response", "pre", clip(str(final), TEXT_CAP)])

    calls = ev.get("tool_calls")
    inline = _inline_calls(calls)
    if inline is not None:
        # Rendered by report.js on expand (names and arguments as text, arguments clipped
        # to ARGS_CAP characters): formatting 10,000 attempts' calls here costs seconds.
        sections.append([f"Tool calls ({len(calls):,})", "calls", [inline, len(calls) - len(inline.value), ARGS_CAP]])
    elif isinstance(calls, list):
        rows = []
        for i, call in enumerate(calls[:TOOL_CALLS_CAP], start=1):
            call = call if isinstance(call, dict) else {"name": None, "arguments": call}
            rows.append([str(i), fmt_text(call.get("name")), _args_json(call.get("arguments"))])
        if len(calls) > TOOL_CALLS_CAP:
            rows.append(["…", f"{len(calls) - TOOL_CALLS_CAP:,} more", ""])
        title = f"Tool calls ({len(calls):,})"
        sections.append([title, "table", [["#", "tool", "arguments"], rows]] if rows else [title, "note", "none recorded"])
    else:
        sections.append(["Tool calls", "note", "n/a: evidence unavailable."])

    hard = ev.get("hard_assertions")
    if isinstance(hard, dict) and hard:
        rows = [[str(k), "passed" if v is True else "failed" if v is False else NA] for k, v in hard.items()]
        sections.append(["Hard assertions", "table", [["check", "result"], rows]])
    hard_fail = ev.get("hard_assertion_failures")
    if isinstance(hard_fail, list) and hard_fail:
        rows = [[fmt_text(f.get("id")), fmt_text(f.get("requirement")), _state_value(f.get("actual"))]
                for f in hard_fail if isinstance(f, dict)]
        sections.append(["Hard-assertion failures", "table", [["id", "requirement", "actual"], rows]])

    # {id as a key (ids may be any JSON, R14's rule): (id, requirement)}
    spec = {json_key(s.get("id")): (s.get("id"), s.get("requirement"))
            for s in _as_list(ev.get("rubric_spec")) if isinstance(s, dict)}
    # the verdicts are the row's rubric (judge.json, in the attempt's folder, is not read: the
    # runner writes the same verdicts into the row, and the judge's error is its judge_error)
    verdicts = ev.get("rubric")
    if isinstance(verdicts, list) and verdicts:
        rows = [[fmt_text(v.get("id")), fmt_text(spec.get(json_key(v.get("id")), (None, None))[1]), fmt_text(v.get("verdict")),
                 clip(fmt_text(v.get("reason")), TEXT_CAP)] for v in verdicts if isinstance(v, dict)]
        sections.append(["Rubric verdicts", "table", [["id", "requirement", "verdict", "reason"], rows]])
    elif spec:
        rows = [[fmt_text(i), fmt_text(r), NA, "not evaluated"] for i, r in spec.values()]
        sections.append(["Rubric (no verdicts: the judge may not have run)", "table",
                         [["id", "requirement", "verdict", "reason"], rows]])

    env = ev.get("environment_state_assertions")
    if isinstance(env, list) and env:
        rows = [[fmt_text(e.get("id")), "passed" if e.get("passed") is True else "failed" if e.get("passed") is False else NA,
                 _state_value(e.get("expected")), _state_value(e.get("actual"))] for e in env if isinstance(e, dict)]
        sections.append(["Environment-state checks", "table", [["id", "result", "expected", "actual"], rows]])
    obs = ev.get("trace_observations")
    if isinstance(obs, list) and obs:
        rows = [[fmt_text(o.get("id")), "passed" if o.get("passed") is True else "failed" if o.get("passed") is False else NA]
                for o in obs if isinstance(o, dict)]
        sections.append(["Trace observations (behavior; not a pass/fail gate)", "table",
                         [["id", "result"], rows]])
    return [facts, sections]


def attempt_row(rec: Mapping[str, Any], dup_info: Mapping[tuple[Any, int], list[int]],
                unsafe_lines: set[int]) -> tuple[list[str], list[Any], list[Any]]:
    """One attempt's table cells, sort/filter keys and expandable details."""
    task_id, n = rec.get("task_id"), attempt_no(rec)
    _, folder_text = evidence_dir(rec, unsafe_lines)
    notes = []
    lines = dup_info.get((task_id, n))
    dup = bool(lines) and len(lines) > 1
    if dup:
        used = max(lines)
        notes.append(f"Duplicate task/attempt on lines {', '.join(map(str, lines))}: line {used} is used for "
                     "task-level metrics; every row counts in attempt-level populations.")
    if line_no(rec) in unsafe_lines:
        notes.append("The row's artifact_dir was refused as unsafe: its artifacts were not read.")
    if not is_eligible(rec):
        derived_false = rec.get("success") is False and rec.get("success_raw") is None
        notes.append(exclusion_reading(rec.get("status"), rec.get("failure_class"), rec.get("agent_eligible"),
                                        derived_false))
    elif rec.get("success") is None:
        notes.append("Eligible with unknown success: in every denominator, not a success.")
    status, cls, stage = rec.get("status"), rec.get("failure_class"), shown_stage(rec)
    cells = [
        fmt_text(task_id), f"{n}{' (dup)' if dup else ''}", fmt_text(status),
        "—" if cls is None else str(cls), fmt_bool(rec.get("agent_eligible")),
        fmt_bool(rec.get("success")) if rec.get("success") is not None else "unknown",
        "—" if stage is None else str(stage), fmt_quality(rec.get("quality_score")),
        fmt_ms(rec.get("task_wall_ms")), fmt_int(rec.get("total_tokens")), fmt_int(rec.get("tool_calls")),
    ]
    keys = [task_id, n, status, cls, rec.get("agent_eligible"), rec.get("success"), stage,
            num(rec.get("quality_score")), num(rec.get("task_wall_ms")),
            num(rec.get("total_tokens")), num(rec.get("tool_calls")), rec.get("category")]
    return cells, keys, _details_payload(rec, notes, folder_text)


#: Above this many attempts, report.html's attempt rows are built in forked workers.
PARALLEL_MIN_ATTEMPTS = 500
_CHUNK_ATTEMPTS = 250


@dataclass
class AttemptRows:
    """report.html's attempt table for consecutive attempts (in results.jsonl line order)."""

    html: bytes  # the rows' markup, UTF-8
    keys: list[list[Any]]  # sort/filter keys, one list per row
    details: bytes  # the rows' details as JSON array items, without the brackets, UTF-8


def duplicate_lines(duplicate_rows: Sequence[Any]) -> dict[tuple[Any, int], list[int]]:
    """{(task_id, attempt): results.jsonl lines} of every duplicated task/attempt."""
    dup_info: dict[tuple[Any, int], list[int]] = {}
    for d in duplicate_rows:
        if not isinstance(d, dict):
            continue
        lines = [v for v in _as_list(d.get("lines")) if isinstance(v, int)]
        dup_info[(d.get("task_id"), d.get("attempt") if isinstance(d.get("attempt"), int) else 1)] = lines
    return dup_info


def _attempt_row_html(index: int, cells: Sequence[str]) -> str:
    """One attempt-table row: a ``<details>`` whose summary holds the cells (status as a
    pill); ``data-i`` is the row's index in the whole table, matching its keys and details."""
    c = [escape(cell) for cell in cells]
    return (f'<details class="a" data-i="{index}"><summary><span>{c[0]}</span><span>{c[1]}</span>'
            f'{status_pill(cells[2])}<span>{c[3]}</span><span>{c[4]}</span><span>{c[5]}</span>'
            f'<span>{c[6]}</span><span>{c[7]}</span><span>{c[8]}</span><span>{c[9]}</span>'
            f'<span>{c[10]}</span></summary></details>\n')


def render_attempt_rows(start: int, records: Sequence[Mapping[str, Any]],
                        dup_info: Mapping[tuple[Any, int], list[int]], unsafe_lines: set[int]) -> AttemptRows:
    """The table rows of ``records`` (already in line order), the first being row ``start``."""
    rows = [attempt_row(rec, dup_info, unsafe_lines) for rec in records]
    html = "".join(_attempt_row_html(start + i, row[0]) for i, row in enumerate(rows))
    details = str(script_json([r[2] for r in rows]))[1:-1]  # the items, without [ ]
    # Encoded here, where the chunk is made: the page is written from these bytes as they are.
    return AttemptRows(html.encode(), [r[1] for r in rows], details.encode())


def join_attempt_rows(parts: Sequence[AttemptRows]) -> AttemptRows:
    """Consecutive chunks of rows as one table."""
    return AttemptRows(b"".join(p.html for p in parts), [k for p in parts for k in p.keys],
                       b",".join(p.details for p in parts if p.details))


def _attempt_rows(attempts: Sequence[Mapping[str, Any]], view: RunView, workers: int = 1) -> AttemptRows:
    """The attempt table in line order, in chunks (in forked workers for large runs)."""
    dup_info = duplicate_lines(view.data_quality.duplicate_rows)
    unsafe_lines = view.tasks.unsafe_lines
    ordered = sorted(attempts, key=line_no)
    parts = fork_map(lambda start, chunk: render_attempt_rows(start, chunk, dup_info, unsafe_lines), ordered,
                     workers=workers if len(ordered) >= PARALLEL_MIN_ATTEMPTS else 1, chunk_size=_CHUNK_ATTEMPTS)
    return join_attempt_rows(parts)


def task_table_rows(task_rows: Sequence[Mapping[str, Any]]) -> Markup:
    """report.html's task table rows, escaped (a plain loop: thousands of tasks take a
    fraction of the time a template loop takes). Run text is escaped; the number
    formatters' output (digits, separators, units, "n/a") has no markup characters."""
    out = []
    strips: dict[tuple, str] = {}  # most tasks share one of a few attempt strips
    for i, t in enumerate(task_rows):
        task = escape(t["task_id"])
        key = tuple(t["strip"])
        strip = strips.get(key)
        if strip is None:
            strip = strips[key] = "".join(f'<i class="o st-{escape(s)}" title="{escape(title)}"></i>' for s, title in key)
        out.append(
            f'      <tr data-i="{i}"><td><button type="button" class="tlink" data-task="{task}" '
            f'title="Show this task\'s attempts">{task}</button></td><td>{escape(fmt_text(t["category"]))}</td>'
            f'<td><span class="strip">{strip}</span> {fmt_int(t["attempts"])}</td>'
            f'<td class="num">{fmt_int(t["eligible"])}</td><td class="num">{fmt_int(t["passed"])}</td>'
            f'<td class="num">{fmt_int(t["failed"])}</td><td class="num">{fmt_pct(t["pass_rate"])}</td>'
            f'<td class="num">{fmt_quality(t["best_quality"])}</td><td class="num">{fmt_quality(t["avg_quality"])}</td>'
            f'<td class="num">{fmt_ms(t["avg_wall_ms"])}</td><td class="num">{fmt_round(t["mean_tokens"])}</td></tr>\n'
        )
    return Markup("".join(out))


def failed_task_md_rows(failed_tasks: Sequence[FailedTask]) -> str:
    """summary.md's failed-task table rows, one per attempt (a plain loop: a large run has
    thousands of them)."""
    lines = []
    for f in failed_tasks:
        task = md_code(f.task_id)
        for a in f.attempts:
            status = "missing" if a["missing"] else md_code(a["status"])
            cls = md_code(a["cls"]) if a["cls"] is not None else "—"
            stage = md_code(a["stage"]) if a["stage"] is not None else "—"
            if a["href"]:
                folder = f'[{md_code(a["folder_text"])}](<{a["href"]}>)'
            elif a["folder"] is not None:
                folder = md_code(a["folder_text"])
            else:
                folder = a["folder_text"]
            note = md_code(a["note"]) if a["note"] else ""
            lines.append(f"| {task} | {a['attempt']} | {status} | {cls} | {a['eligible']} | {stage} | "
                         f"{a['quality']} | {folder} | {a['trace']} | {note} |")
    return "\n".join(lines)


def failed_task_html_rows(failed_tasks: Sequence[FailedTask]) -> Markup:
    """report.html's failed-task table bodies, one per task and one row per attempt, escaped
    (a plain loop, like the task table: hundreds of tasks with several attempts each)."""
    if not failed_tasks:
        return Markup('      <tbody><tr><td colspan="8" class="muted">No task has an attempt that did not pass.</td></tr></tbody>')
    out = []
    for f in failed_tasks:
        out.append("      <tbody>\n")
        for i, a in enumerate(f.attempts):
            head = (f'<th scope="rowgroup" rowspan="{len(f.attempts)}"><code>{escape(f.task_id)}</code>'
                    f'<div class="muted small">{escape(fmt_text(f.category))} · {f.passed}/{f.n} passed</div></th>'
                    if i == 0 else "")
            status = '<span class="pill st-missing">missing</span>' if a["missing"] else status_pill(a["status"])
            if a["href"]:
                folder = f'<a href="{escape(a["href"])}"><code>{escape(a["folder_text"])}</code></a>'
            elif a["folder"] is not None:
                folder = f'<code>{escape(a["folder_text"])}</code>'
            else:
                folder = f'<span class="muted">{escape(a["folder_text"])}</span>'
            out.append(
                f'        <tr>{head}<td class="num">{escape(a["attempt"])}</td><td>{status}</td>'
                f'<td>{escape(a["cls"] if a["cls"] is not None else "—")}</td><td>{escape(a["eligible"])}</td>'
                f'<td>{escape(a["stage"] if a["stage"] is not None else "—")}</td><td>{folder}</td>'
                f'<td class="note">{escape(a["note"])}</td></tr>\n'
            )
        out.append("      </tbody>\n")
    return Markup("".join(out).removesuffix("\n"))
