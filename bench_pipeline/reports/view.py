"""The view model both reports render: ``build_view`` and the counts it is made of.

Every number is taken from metrics.json or counted over the attempt records; nothing here
recomputes a capability metric. Values are formatted already; strings from the run stay raw,
to be escaped where they are rendered. ``attempt_facts`` and ``task_facts`` are the parts a
run computes beside its metrics (``pipeline._run_level``); ``build_view`` joins them with
metrics.json and the manifest.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any
from urllib.parse import quote

from ..data_quality import data_quality_findings, missing_attempts_count
from ..repeats import within_run_stability
from ..stats import is_number
from ..task_groups import deduplicate
from ..vocabulary import (
    COST_FIELDS,
    EFFICIENCY_FIELDS,
    FAILURE_CLASSES,
    FAILURE_ERROR_FIELDS,
    FAILURE_STAGES,
    RELIABILITY_FIELDS,
    STATUSES,
)
from .charts import svg_interval_bar
from .format import (
    FIELD_LABELS,
    NA,
    _as_list,
    _compact_json,
    attempt_no,
    dig,
    fmt_bool,
    fmt_ci,
    fmt_int,
    fmt_mean,
    fmt_pct,
    fmt_quality,
    fmt_text,
    formatter_for,
    line_no,
    num,
    one_line,
    status_kind,
)

TOP_N = 10  # slowest / most expensive tasks listed
LIST_CAP = 25  # items of one kind a report lists before it counts the rest
STRIP_CAP = 50  # attempt cells per task in the task table's strip

#: The efficiency table's rows: metrics.json's efficiency fields in FIELD_LABELS' order.
EFFICIENCY_ROWS = tuple(f for f in FIELD_LABELS if f in EFFICIENCY_FIELDS)

HEADLINE: tuple[tuple[str, str, str], ...] = (
    ("pass_at_1", "pass@1", "tasks"),
    ("pass_at_k", "pass@k", "tasks"),
    ("pass_pow_k", "pass^k", "tasks"),
    ("attempt_success_rate", "Attempt success", "attempts"),
)

HEADLINE_HELP = {
    "pass_at_1": "Tasks whose actual attempt 1 succeeded, among tasks with an eligible attempt 1.",
    "pass_at_k": "Tasks with at least one success in attempts 1..k, among tasks whose attempts 1..k all exist and are eligible.",
    "pass_pow_k": "Tasks whose attempts 1..k all succeeded (consistency), on the same complete-task denominator.",
    "attempt_success_rate": "Successful eligible attempts / eligible attempts, including attempts beyond k.",
}


def _ordered_keys(counts: Mapping[str, Any], vocabulary: Sequence[str]) -> list[str]:
    """The vocabulary in order, then any unlisted keys (R35), sorted."""
    extra = sorted(str(k) for k in counts if k not in vocabulary)
    return [*vocabulary, *extra]


def _manifest_facts(manifest: Mapping[str, Any], metrics: Mapping[str, Any], run_id: str) -> list[tuple[str, str]]:
    """(label, text) pairs describing what was evaluated."""

    def named(value: Any, *keys: str) -> str | None:
        if isinstance(value, str):
            return value
        if isinstance(value, dict):
            bits = [str(value[k]) for k in keys if value.get(k) not in (None, "")]
            return " / ".join(bits) if bits else None
        return None

    suite = manifest.get("suite")
    suite_name = metrics.get("suite") or named(suite, "name")
    suite_version = dig(suite, "version")
    suite_text = fmt_text(suite_name)
    if suite_version is not None:
        suite_text += f" (version {suite_version})"

    judge = manifest.get("judge")
    if isinstance(judge, dict):
        enabled = judge.get("enabled")
        model = judge.get("model")
        if enabled is False:
            judge_text = "disabled (--no-judge: passing attempts get quality 1 without semantic rubric evaluation)"
        else:
            judge_text = f"{fmt_text(model)}" + (" (enabled)" if enabled is True else "")
    else:
        judge_text = fmt_text(judge)

    code = manifest.get("code")
    if isinstance(code, dict):
        code_text = fmt_text(code.get("git_sha"))
        if code.get("dirty") is True:
            code_text += " (dirty working tree)"
        elif code.get("dirty") is False:
            code_text += " (clean)"
    else:
        code_text = fmt_text(code)

    platform = manifest.get("platform")
    if isinstance(platform, dict) and platform:
        platform_text = ", ".join(f"{k} {fmt_text(v)}" for k, v in platform.items())
    else:
        platform_text = fmt_text(platform)

    skills = manifest.get("active_skills")
    skills_text = ", ".join(str(s) for s in skills) if isinstance(skills, list) and skills else (
        "none" if isinstance(skills, list) else NA)

    planned = manifest.get("planned")
    plan_bits = [f"repeats {fmt_text(manifest.get('repeats'))}",
                 f"metrics_k {fmt_text(manifest.get('metrics_k'))}"]
    if isinstance(planned, list):
        plan_bits.append(f"{len(planned):,} planned tasks")
    status = fmt_text(manifest.get("status"))
    times = f"{fmt_text(manifest.get('started_at'))} to {fmt_text(manifest.get('finished_at'))}"
    return [
        ("Run id", run_id),
        ("Run status", f"{status}, {times}"),
        ("Suite", suite_text),
        ("Model", fmt_text(named(manifest.get("model"), "provider", "name"))),
        ("Judge", judge_text),
        ("Code", code_text),
        ("Platform", platform_text),
        ("Active skills", skills_text),
        ("Repeat plan", " · ".join(plan_bits)),
        ("Metrics", f"schema {fmt_text(metrics.get('schema_version'))} · formula "
                    f"{fmt_text(metrics.get('formula_version'))} · generated {fmt_text(metrics.get('generated_at'))}"),
    ]


def _headline(metrics: Mapping[str, Any], k: Any) -> list[dict[str, Any]]:
    """The four headline capability metrics, formatted."""
    rows = []
    for key, label, unit in HEADLINE:
        m = dig(metrics, "capability", key) or {}
        lower, upper = dig(m, "ci95", "lower"), dig(m, "ci95", "upper")
        if unit == "tasks":
            eligible, total = m.get("eligible_tasks"), m.get("total_tasks")
            coverage = dig(metrics, "coverage", key)
        else:
            eligible, total = m.get("eligible_attempts"), m.get("total_attempts")
            coverage = m.get("coverage")
        shown = label if key in ("pass_at_1", "attempt_success_rate") else f"{label} (k={fmt_text(k)})"
        grouped = None
        if key == "attempt_success_rate":  # comparison.md: beside the reference's Wilson interval
            u = dig(metrics, "uncertainty", "attempt_success_rate") or {}
            grouped = fmt_ci(dig(u, "ci95", "lower"), dig(u, "ci95", "upper"))
        rows.append({
            "key": key,
            "label": shown,
            "help": HEADLINE_HELP[key],
            "value": m.get("value"),
            "value_text": fmt_pct(m.get("value")),
            "ci_text": fmt_ci(lower, upper),
            "successes": fmt_int(m.get("successes")),
            "eligible": fmt_int(eligible),
            "total": fmt_int(total),
            "unit": unit,
            "coverage_text": fmt_pct(coverage),
            "svg": svg_interval_bar(m.get("value"), lower, upper, label=shown),
            "grouped_ci_text": grouped,
        })
    return rows


def _uncertainty(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """uncertainty.attempt_success_rate, formatted: the interval with repeats of a task
    grouped (comparison.md), shown beside the reference's Wilson interval."""
    u = dig(metrics, "uncertainty", "attempt_success_rate")
    u = u if isinstance(u, dict) else {}
    wilson = dig(metrics, "capability", "attempt_success_rate", "ci95") or {}

    def se(value: Any) -> str:
        return f"{value * 100:.2f} pp" if is_number(value) else NA

    effect = u.get("design_effect")
    return {
        "value_text": fmt_pct(u.get("value")),
        "ci_text": fmt_ci(dig(u, "ci95", "lower"), dig(u, "ci95", "upper")),
        "wilson_ci_text": fmt_ci(dig(wilson, "lower"), dig(wilson, "upper")),
        "se_simple": se(u.get("se_simple")),
        "se_clustered": se(u.get("se_clustered")),
        "design_effect": f"{effect:.2f}" if is_number(effect) else NA,
        "tasks": fmt_int(u.get("tasks")),
        "attempts": fmt_int(u.get("attempts")),
    }


def _estimators(metrics: Mapping[str, Any]) -> list[dict[str, Any]]:
    """metrics.json's estimators, formatted, each beside the observed fixed-k value it is not."""
    rows = []
    for key, label, observed in (("pass_at_k_unbiased", "pass@k", "pass_at_k"),
                                 ("pass_pow_k_unbiased", "pass^k", "pass_pow_k")):
        e = dig(metrics, "estimators", key)
        e = e if isinstance(e, dict) else {}
        rows.append({
            "key": key,
            "label": f"{label} estimate (k={fmt_text(e.get('k'))})",
            "value_text": fmt_pct(e.get("value")),
            "tasks": fmt_int(e.get("tasks")),
            "observed_label": label,
            "observed_text": fmt_pct(dig(metrics, "capability", observed, "value")),
        })
    return rows


#: Why within-run stability is not run-to-run stability, in one sentence both reports show.
WITHIN_RUN_NOTE = ("These are attempts of one run, not independent runs: they share the run's day, device and "
                   "build, so the flakiness seen here is a lower bound on how much separate runs of this system "
                   "disagree.")


def _has_repeats(k: Any) -> bool:
    """metrics_k of at least 2: each task was planned more than one attempt."""
    return isinstance(k, int) and not isinstance(k, bool) and k >= 2


def _stability(k: Any, tasks: Mapping[str, Mapping[int, Mapping[str, Any]]], unsafe_lines: set[int],
               evidence_base: str | None) -> dict[str, Any] | None:
    """repeated-runs.md "stability" over this run's attempts alone (``repeats.within_run_stability``),
    formatted, with each listed flaky task's eligible attempts linked to their evidence
    folders as the failed-task table links them; None unless metrics_k >= 2. ``tasks``: the
    run's task groups (task_facts), so the run is read once, whatever the number of rows."""
    if not _has_repeats(k):
        return None
    s = within_run_stability(rec for by_attempt in tasks.values() for rec in by_attempt.values())
    flaky_rows = []
    for t in s["flaky_tasks"][:LIST_CAP]:
        by_attempt = tasks.get(t["task_id"], {})
        counted = [by_attempt[n] for n in sorted(by_attempt) if by_attempt[n].get("agent_eligible") is True]
        links = []
        for rec in counted[:LIST_CAP]:
            folder, folder_text = _evidence_dir(rec, unsafe_lines)
            outcome = rec.get("success")
            links.append({"attempt": attempt_no(rec),
                          "outcome": "success" if outcome is True else "failure" if outcome is False else "unknown",
                          "folder": folder, "folder_text": folder_text,
                          "href": evidence_href(evidence_base, folder)})
        flaky_rows.append({"task_id": t["task_id"], "attempts": fmt_int(t["attempts"]),
                           "successes": fmt_int(t["successes"]), "flip": t["flip"], "flip_text": fmt_pct(t["flip"]),
                           "links": links, "links_more": max(0, len(counted) - LIST_CAP)})
    classified = s["tasks_classified"]
    return {
        "k_text": fmt_text(k),
        "observed": fmt_int(len(tasks)),
        "classified": fmt_int(classified),
        "any_classified": classified > 0,
        "unclassified": fmt_int(len(tasks) - classified),
        "stable_pass": fmt_int(s["stable_pass"]),
        "stable_fail": fmt_int(s["stable_fail"]),
        "flaky": fmt_int(s["flaky"]),
        "flip_rate": fmt_pct(s["flip_rate"]),
        "flaky_tasks": flaky_rows,
        "flaky_more": max(0, s["flaky"] - LIST_CAP),
        "note": WITHIN_RUN_NOTE,
    }


def _cautions(k: Any, judge_disabled: bool, missing: Any) -> list[str]:
    """Interpretation cautions from the reference for the headline."""
    notes = []
    if k == 1:
        notes.append("k = 1: pass@1, pass@k and pass^k coincide on the same eligible task set; "
                     "a single attempt cannot demonstrate repeatability.")
    elif is_number(k):
        notes.append("A higher pass@k describes observed success with more opportunities, not better "
                     "first-attempt reliability; pass^k is the consistency measure. These are observed "
                     "fixed-k outcomes, not estimates from arbitrary combinations of attempts.")
    else:
        notes.append("k (manifest metrics_k) is unknown, so the fixed-k metrics cannot be interpreted.")
    notes.append("The Wilson interval of attempt success ignores within-task correlation: repeats of the "
                 "same task are correlated. The interval grouped by task (metrics.json uncertainty) accounts "
                 "for that; for release decisions, compare paired tasks against a baseline run.")
    notes.append("Do not infer significance from a small percentage change or from overlapping or "
                 "separate confidence intervals.")
    notes.append("Coverage = eligible / observed. Attempts entirely missing from results.jsonl escape these "
                 f"denominators (missing planned attempts: {fmt_int(missing)}).")
    notes.append("Unknown is not failure: attempts with an unknown outcome are excluded by eligibility, "
                 "never counted as 0.")
    if judge_disabled:
        notes.append("The judge was disabled: passing attempts get quality 1 without semantic rubric evaluation.")
    return notes


def _exclusion_reading(status: Any, cls: Any, eligible: Any, derived_false: bool = False) -> str:
    """What a status x class x eligibility combination means for the denominators.

    ``derived_false``: the rows' success is false only because the legacy rule derived it
    from status (raw success unknown, reference 2), so the reading names it instead of
    contradicting the outcome beside it.
    """
    if eligible is True:
        if status == "passed":
            return "Counted; success."
        if cls == "agent":
            if status == "timeout":
                return "Counted as a failure: timeout with execution evidence."
            return "Counted as an Agent failure (audit the evaluator before blaming the model)."
        if cls == "unknown":
            return "Counted as a failure with insufficient classification evidence (e.g. a chat error after execution started)."
        return "Counted in capability denominators."
    if eligible is False:
        if cls == "environment":
            return "Excluded: setup assertion or initialization failure; not an Agent failure."
        if cls == "evaluation":
            return "Excluded: judge or required evidence unavailable; outcome unknown."
        if cls == "skipped":
            return ("Excluded: skipped or could not run normally (agent not ready, missing input screenshot, "
                    "setup error, outer exception); inspect the error.")
        if cls == "unknown" and status == "timeout":
            reading = "Excluded from every capability denominator: timeout without evidence that execution started"
            return reading + ("; success derived false from status, raw unknown." if derived_false else ".")
        if cls == "unknown":
            return "Excluded: insufficient classification evidence (e.g. chat error without execution evidence)."
        return "Excluded by the runner's explicit eligibility flag; inspect the error."
    return "Eligibility unknown."


def shown_stage(rec: Mapping[str, Any]) -> Any:
    """The first failure stage the reports show: an eligible failure without a stage label
    is ``unknown``, the word failures.stage counts it under (docs/metric-choices.md), so the
    stage table and the attempt lists say the same; any other row shows its own value."""
    stage = rec.get("first_failure_stage")
    if stage in (None, "") and rec.get("agent_eligible") is True and rec.get("success") is False:
        return "unknown"
    return stage


def _sort_key_status(status: Any) -> tuple[int, str]:
    return (STATUSES.index(status) if status in STATUSES else len(STATUSES), str(status))


def _sort_key_class(cls: Any) -> tuple[int, str]:
    if cls is None:
        return (-1, "")
    return (FAILURE_CLASSES.index(cls) if cls in FAILURE_CLASSES else len(FAILURE_CLASSES), str(cls))


#: Outcome labels of the exclusion table; "from status" marks a success value the legacy
#: rule derived from status because the row recorded none (reference 2).
OUTCOME_WORDS = (
    ("true", "success"), ("true_from_status", "success (from status; raw unknown)"),
    ("false", "failure"), ("false_from_status", "failure (from status; raw unknown)"),
    ("unknown", "unknown"),
)


def _exclusion_rows(groups: Mapping[tuple[Any, Any, Any], Counter]) -> list[dict[str, Any]]:
    """The exclusion table: {(status, failure class, eligibility): outcome label counts}
    as rows, eligible first."""
    rows = []
    for (status, cls, eligible), counts in groups.items():
        outcome = ", ".join(f"{counts[o]:,} {word}" for o, word in OUTCOME_WORDS if counts[o])
        rows.append({
            "status": status, "cls": cls, "eligible": eligible,
            "eligible_text": fmt_bool(eligible), "count": sum(counts.values()),
            "outcome": outcome,
            "counted": "yes" if eligible is True else "no" if eligible is False else NA,
            "reading": _exclusion_reading(status, cls, eligible,
                                          derived_false=counts["false_from_status"] == sum(counts.values())),
        })
    rows.sort(key=lambda r: (0 if r["eligible"] is True else 1 if r["eligible"] is False else 2,
                             _sort_key_status(r["status"]), _sort_key_class(r["cls"])))
    return rows


def _task_exclusions(tasks: Mapping[str, Mapping[int, Mapping[str, Any]]], k: Any) -> dict[str, list[tuple[str, str]]]:
    """Which tasks fall outside the pass@1 and fixed-k denominators, and why."""

    def why(rec: Mapping[str, Any] | None, n: int) -> str | None:
        if rec is None:
            return f"attempt {n} missing"
        if rec.get("agent_eligible") is not True:
            return (f"attempt {n} ineligible ({fmt_text(rec.get('status'))}"
                    f"/{fmt_text(rec.get('failure_class'))})")
        return None

    at1, atk = [], []
    for task_id in sorted(tasks):
        by_attempt = tasks[task_id]
        reason = why(by_attempt.get(1), 1)
        if reason:
            at1.append((task_id, reason))
        if isinstance(k, int) and k >= 1:
            # In attempt order; at most LIST_CAP missing attempts by number (k may be large).
            missing = [n for n in range(1, min(k, LIST_CAP + len(by_attempt)) + 1) if n not in by_attempt]
            numbered = sorted([a for a in by_attempt if isinstance(a, int) and a <= k] + missing[:LIST_CAP])
            reasons = [r for n in numbered if (r := why(by_attempt.get(n), n))]
            n_missing = k - sum(1 for a in by_attempt if isinstance(a, int) and a <= k)
            if n_missing > LIST_CAP:
                reasons.append(f"{n_missing - LIST_CAP:,} more attempts missing")
            if reasons:
                atk.append((task_id, "; ".join(reasons)))
    return {"pass_at_1": at1, "fixed_k": atk}


def _attempt_note(rec: Mapping[str, Any]) -> str:
    """The most telling evidence line for an attempt that did not pass.

    Order: execution/evaluation errors, hard-assertion failures, failed environment-state
    checks, answer/memory mismatches, rubric "no" verdicts, judge error, artifact-acquisition
    errors (which may not fail a task), then the failure event reference.
    """
    ev = rec.get("evidence") if isinstance(rec.get("evidence"), dict) else {}
    errors = ev.get("errors") if isinstance(ev.get("errors"), dict) else {}
    for key in FAILURE_ERROR_FIELDS:
        if errors.get(key):
            return one_line(f"{key}: {errors[key]}")
    for item in _as_list(ev.get("hard_assertion_failures")):
        if isinstance(item, dict):
            return one_line(f"hard assertion {item.get('id')}: {item.get('requirement')} "
                            f"(actual: {_compact_json(item.get('actual'))})")
    for item in _as_list(ev.get("environment_state_assertions")):
        if isinstance(item, dict) and item.get("passed") is False:
            return one_line(f"state check {item.get('id')} failed (expected {_compact_json(item.get('expected'))}, "
                            f"actual {_compact_json(item.get('actual'))})")
    if ev.get("expected_answer_match") is False:
        return "expected answer did not match"
    if ev.get("expected_recalled_memory_match") is False:
        return one_line(f"expected memory not recalled (source: {fmt_text(ev.get('memory_recall_evidence_source'))})")
    for item in _as_list(ev.get("rubric")):
        if isinstance(item, dict) and item.get("verdict") == "no":
            return one_line(f"rubric {item.get('id')}: no ({item.get('reason')})")
    judge = ev.get("judge")
    if isinstance(judge, dict) and judge.get("error"):
        return one_line(f"judge: {judge['error']}")
    for key, text in errors.items():
        if text:
            return one_line(f"{key}: {text}")
    if rec.get("failure_event_ref"):
        return f"failure event at {rec['failure_event_ref']}"
    return ""


def _evidence_dir(rec: Mapping[str, Any], unsafe_lines: set[int]) -> tuple[str | None, str]:
    """(folder or None, display text) for an attempt's evidence folder."""
    ev = rec.get("evidence")
    folder = ev.get("dir") if isinstance(ev, dict) else None
    if isinstance(folder, str):
        return folder, folder or "."
    if line_no(rec) in unsafe_lines:
        return None, "n/a (artifact_dir refused as unsafe)"
    return None, "n/a (unavailable)"


#: A base that is a URL (a run folder in another bucket than the report's): ``s3://bucket/key``.
_URL_BASE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")


def link_href(link: str) -> str:
    """A link percent-encoded for an href: a relative path, or a URL whose scheme is kept."""
    scheme = _URL_BASE.match(link)
    prefix = scheme.group(0) if scheme else ""
    return prefix + quote(link[len(prefix):], safe="/._-~")


def evidence_href(base: str | None, folder: str | None) -> str | None:
    """Percent-encoded link to an evidence folder, or None without a base or a folder. A base
    that is a URL (``s3://...``, ``file://...``) keeps its scheme and host as they are."""
    if base is None or folder is None:
        return None
    scheme = _URL_BASE.match(base)
    prefix = scheme.group(0) if scheme else ""
    rest = base[len(prefix):]
    joined = "/".join(p for p in (rest.strip("/") if not prefix else rest.rstrip("/"),
                                  folder.replace("\\", "/").strip("/")) if p)
    return prefix + quote((joined or ".") + "/", safe="/._-~")


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _task_rows(tasks: Mapping[str, Mapping[int, Mapping[str, Any]]], per_task: Mapping[str, Any],
               k: Any) -> list[dict[str, Any]]:
    """One row per observed task (deduplicated attempts) joined with aggregate.per_task."""
    rows = []
    for task_id in sorted(tasks):
        by_attempt = tasks[task_id]
        recs = [by_attempt[n] for n in sorted(by_attempt)]
        agg = per_task.get(task_id) if isinstance(per_task, dict) else None
        agg = agg if isinstance(agg, dict) else {}
        walls, tokens, costs = [], [], []
        category, n_passed = None, 0
        for r in recs:  # one pass over the task's attempts
            # The max beside per_task.avg_wall_ms is over the same eligible attempts (R30).
            if r.get("agent_eligible") is True and (v := num(r.get("task_wall_ms"))) is not None:
                walls.append(v)
            if (v := num(r.get("total_tokens"))) is not None:
                tokens.append(v)
            if (v := num(r.get("cost_usd"))) is not None:
                costs.append(v)
            if category is None:
                category = r.get("category")
            if r.get("status") == "passed":
                n_passed += 1
        max_attempt = max(by_attempt) if by_attempt else 0
        span = max(max_attempt, k if isinstance(k, int) else 0)
        strip = []
        for n in range(1, min(span, STRIP_CAP) + 1):
            r = by_attempt.get(n)
            if r is None:
                strip.append(("missing", f"#{n} missing"))
            else:
                status = str(r.get("status"))
                elig = "" if r.get("agent_eligible") is True else ", ineligible"
                strip.append((status_kind(status), f"#{n} {status}{elig}"))
        if span > STRIP_CAP:
            strip.append(("other", f"#{STRIP_CAP + 1}-#{span}: see the attempt table"))
        rows.append({
            "task_id": task_id,
            "category": category,
            "records": recs,
            "strip": strip,
            "attempts": agg.get("attempts", len(recs)),
            "eligible": agg.get("eligible_attempts"),
            "passed": agg.get("passed"),
            "failed": agg.get("failed"),
            "pass_rate": agg.get("pass_rate"),
            "best_quality": agg.get("best_quality"),
            "avg_quality": agg.get("avg_quality"),
            "avg_wall_ms": agg.get("avg_wall_ms"),
            "max_wall_ms": max(walls) if walls else None,
            "mean_tokens": _mean(tokens),
            "sum_tokens": sum(tokens) if tokens else None,
            "n_tokens": len(tokens),
            "sum_cost": sum(costs) if costs else None,
            "has_nonpass": n_passed < len(recs),
            "n_passed_status": n_passed,
        })
    return rows


def _distribution_rows(block: Any, fields: Sequence[str], stats: Sequence[str]) -> list[dict[str, Any]]:
    """Formatted rows of an efficiency/reliability/cost_to_first_success block."""
    rows = []
    for field in fields:
        entry = block.get(field) if isinstance(block, dict) else None
        entry = entry if isinstance(entry, dict) else {}
        fmt = formatter_for(field)
        cells = {"count": fmt_int(entry.get("count"))}
        for stat in stats:
            if stat != "count":
                cells[stat] = fmt(entry.get(stat))
        rows.append({"field": field, "label": FIELD_LABELS[field], **cells})
    return rows


def _data_quality(metrics: Mapping[str, Any], facts: Mapping[str, Any]) -> dict[str, Any]:
    """Data-quality findings (from metrics) plus evidence availability counts (attempt_facts)."""
    dq = metrics.get("data_quality") if isinstance(metrics.get("data_quality"), dict) else {}

    def listed(key: str) -> list[Mapping[str, Any]]:
        value = dq.get(key)
        return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []

    bad = listed("bad_rows")
    dups = listed("duplicate_rows")
    missing = listed("missing_attempts")
    unsafe = listed("unsafe_artifact_dirs")
    invalid = listed("invalid_artifacts")
    run_files = listed("run_files")
    return {
        "bad_rows": bad,
        "duplicate_rows": dups,
        "missing_attempts": missing,
        "missing_count": missing_attempts_count(metrics),  # the list names at most 100,000
        "unsafe_artifact_dirs": unsafe,
        "invalid_artifacts": invalid,
        "run_files": run_files,
        "findings": data_quality_findings(metrics),  # as the command's summary line counts them
        "present": bool(dq),
        "trace_status": facts["trace_status"],
        "recorded_attempts": facts["recorded_attempts"],
        "recorded_fields": facts["recorded_fields"],
        "cap": LIST_CAP,
    }


def attempt_facts(attempts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """What the reports count over the attempt rows alone, needing neither the metrics nor
    the task groups: statuses, eligibility, the exclusion table (status x failure class x
    eligibility, with outcomes), evidence availability. One pass over the rows."""
    n = ineligible = eligible_unknown = recorded_attempts = 0
    status_counts: Counter = Counter()
    trace_status: Counter = Counter()
    recorded_fields: Counter = Counter()
    groups: dict[tuple[Any, Any, Any], Counter] = {}
    for rec in attempts:
        if not isinstance(rec, dict):
            continue
        n += 1
        status, eligible, outcome = rec.get("status"), rec.get("agent_eligible"), rec.get("success")
        if eligible is not True:
            ineligible += 1
        elif outcome is None:
            eligible_unknown += 1
        status_counts[str(status)] += 1
        label = "true" if outcome is True else "false" if outcome is False else "unknown"
        if outcome is not None and rec.get("success_raw") is None:
            label += "_from_status"  # the legacy derivation filled a missing raw success
        groups.setdefault((status, rec.get("failure_class"), eligible), Counter())[label] += 1
        trace_status[str(dig(rec, "evidence", "trace_artifact", "status") or "n/a")] += 1
        prov = rec.get("provenance")
        if isinstance(prov, dict) and "recorded" in prov.values():
            recorded_attempts += 1
            recorded_fields.update(f for f, v in prov.items() if v == "recorded")
    return {
        "n_attempts": n,
        "ineligible": ineligible,
        "eligible_unknown": eligible_unknown,
        "status_counts": status_counts,
        "exclusions": _exclusion_rows(groups),
        "trace_status": sorted(trace_status.items(), key=lambda kv: (-kv[1], kv[0])),
        "recorded_attempts": recorded_attempts,
        "recorded_fields": recorded_fields.most_common(6),
    }


def task_facts(attempts: Sequence[Mapping[str, Any]], per_task: Any, k: Any) -> dict[str, Any]:
    """The reports' per-task part: attempts grouped by task as task_groups groups them (the
    later line wins, R29), the task table rows joined with aggregate.per_task, and the tasks
    outside each denominator. ``attempts`` are attempt records, whose task id, attempt
    number and line run_reader has already checked (R27)."""
    tasks = deduplicate(a for a in attempts if isinstance(a, dict))
    per_task = per_task if isinstance(per_task, dict) else {}
    return {"tasks": tasks, "task_rows": _task_rows(tasks, per_task, k), "task_exclusions": _task_exclusions(tasks, k)}


def view_k(metrics: Mapping[str, Any], manifest: Mapping[str, Any]) -> Any:
    """The k the reports use: coverage.metrics_k, else the manifest's."""
    metrics = metrics if isinstance(metrics, dict) else {}
    manifest = manifest if isinstance(manifest, dict) else {}
    coverage = metrics.get("coverage") if isinstance(metrics.get("coverage"), dict) else {}
    return coverage.get("metrics_k", manifest.get("metrics_k"))


@dataclass
class FailedTask:
    """A task with an attempt that did not pass, as both reports list it.

    ``attempts`` (one row per attempt, plus placeholders for missing ones) is built when a
    report first reads it: summary.md lists every failed task, report.html the first
    HTML_FAILED_TASKS_CAP, so a large run's page does not wait for rows it never shows.
    """

    task_id: str
    category: Any
    passed: int  # attempts with status passed
    n: int  # attempts observed
    eligible_failed: int
    records: list[Mapping[str, Any]]
    k: Any
    unsafe_lines: set[int]
    evidence_base: str | None

    @cached_property
    def attempts(self) -> list[dict[str, Any]]:
        rows = []
        present = {attempt_no(rec) for rec in self.records}
        expected = max(present | {self.k if isinstance(self.k, int) else 0})
        for n in range(1, min(expected, LIST_CAP + len(present)) + 1):  # placeholders: at most LIST_CAP
            if n not in present:
                rows.append({"attempt": n, "status": None, "cls": None, "eligible": NA, "stage": None,
                             "quality": NA, "folder": None, "folder_text": "n/a (no result row)", "href": None,
                             "trace": NA, "note": "planned or expected attempt missing from results.jsonl",
                             "missing": True})
        for rec in self.records:
            folder, folder_text = _evidence_dir(rec, self.unsafe_lines)
            href = evidence_href(self.evidence_base, folder)
            rows.append({
                "attempt": attempt_no(rec), "status": rec.get("status"), "cls": rec.get("failure_class"),
                "eligible": fmt_bool(rec.get("agent_eligible")), "stage": shown_stage(rec),
                "quality": fmt_quality(rec.get("quality_score")), "folder": folder, "folder_text": folder_text,
                "href": href or None,
                "trace": fmt_text(dig(rec, "evidence", "trace_artifact", "status")),
                "note": _attempt_note(rec) if rec.get("status") != "passed" else "",
                "missing": False,
            })
        rows.sort(key=lambda r: r["attempt"])
        return rows


def build_view(metrics: Mapping[str, Any], attempts: Sequence[Mapping[str, Any]], manifest: Mapping[str, Any],
               run_id: str, evidence_base: str | None = None, facts: Mapping[str, Any] | None = None,
               per_task_facts: Mapping[str, Any] | None = None,
               comparison: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Everything both reports show, pre-formatted (strings from the run left raw for escaping).

    ``facts`` (attempt_facts) and ``per_task_facts`` (task_facts), when given, were computed
    already (for instance in parallel with the metrics); else they are computed here.
    ``comparison``: the comparison with a baseline (``compared.comparison_view``), or None.
    """
    metrics = metrics if isinstance(metrics, dict) else {}
    manifest = manifest if isinstance(manifest, dict) else {}
    coverage = metrics.get("coverage") if isinstance(metrics.get("coverage"), dict) else {}
    k = view_k(metrics, manifest)
    judge_disabled = dig(manifest, "judge", "enabled") is False
    if facts is None:
        facts = attempt_facts(attempts)
    if per_task_facts is None:
        per_task_facts = task_facts(attempts, dig(metrics, "aggregate", "per_task"), k)

    tasks, task_rows = per_task_facts["tasks"], per_task_facts["task_rows"]
    dq = _data_quality(metrics, facts)
    unsafe_lines = {u.get("line") for u in dq["unsafe_artifact_dirs"] if isinstance(u.get("line"), int)}

    cap = metrics.get("capability") if isinstance(metrics.get("capability"), dict) else {}
    oracle = cap.get("oracle_best_score_at_k") if isinstance(cap.get("oracle_best_score_at_k"), dict) else {}
    first = cap.get("first_success_attempt") if isinstance(cap.get("first_success_attempt"), dict) else {}

    # exclusions
    ineligible, n_attempts = facts["ineligible"], facts["n_attempts"]

    # failures
    class_counts = dig(metrics, "failures", "class") or {}
    stage_counts = dig(metrics, "failures", "stage") or {}
    class_items = [(c, int(class_counts.get(c) or 0)) for c in _ordered_keys(class_counts, FAILURE_CLASSES)]
    stage_items = [(s, int(stage_counts.get(s) or 0)) for s in _ordered_keys(stage_counts, FAILURE_STAGES)]
    class_counts_ok = isinstance(class_counts, dict) and bool(class_counts)
    stage_counts_ok = isinstance(stage_counts, dict) and bool(stage_counts)

    # status mix
    status_counts = facts["status_counts"]
    status_items = [(s, status_counts.get(s, 0)) for s in STATUSES] + [
        (s, c) for s, c in sorted(status_counts.items()) if s not in STATUSES]

    # slowest / most expensive
    with_wall = [t for t in task_rows if is_number(t["avg_wall_ms"])]
    slowest = sorted(with_wall, key=lambda t: (-t["avg_wall_ms"], t["task_id"]))[:TOP_N]
    any_cost = any(t["sum_cost"] is not None for t in task_rows)
    if any_cost:
        expensive = sorted([t for t in task_rows if t["sum_cost"] is not None],
                           key=lambda t: (-t["sum_cost"], t["task_id"]))[:TOP_N]
    else:
        expensive = sorted([t for t in task_rows if t["mean_tokens"] is not None],
                           key=lambda t: (-t["mean_tokens"], t["task_id"]))[:TOP_N]

    # failed tasks with evidence folders (each task's attempt rows are built when listed)
    failed_tasks = [
        FailedTask(t["task_id"], t["category"], t["n_passed_status"], len(t["records"]),
                   sum(1 for rec in t["records"] if rec.get("agent_eligible") is True and rec.get("success") is not True),
                   t["records"], k, unsafe_lines, evidence_base)
        for t in task_rows if t["has_nonpass"]
    ]
    failed_tasks.sort(key=lambda f: (f.passed / max(f.n, 1), -f.eligible_failed, f.task_id))

    categories = []
    for name, entry in sorted((metrics.get("category") or {}).items()):
        entry = entry if isinstance(entry, dict) else {}
        categories.append({"name": name, "pass_rate": fmt_pct(entry.get("pass_rate")),
                           "rubric_pass_rate": fmt_pct(entry.get("rubric_pass_rate")),
                           "attempts": fmt_int(entry.get("attempts"))})
    observations = []
    for name, entry in sorted((metrics.get("observations") or {}).items()):
        entry = entry if isinstance(entry, dict) else {}
        observations.append({"name": name, "pass_rate": fmt_pct(entry.get("pass_rate")),
                             "passed": fmt_int(entry.get("passed_tasks")),
                             "observed": fmt_int(entry.get("observed_tasks"))})

    efficiency = metrics.get("efficiency") or {}
    suite = metrics.get("suite") or dig(manifest, "suite", "name") or (
        manifest.get("suite") if isinstance(manifest.get("suite"), str) else None)
    model = dig(manifest, "model", "name") or (manifest.get("model") if isinstance(manifest.get("model"), str) else None)

    return {
        "run_id": run_id,
        "suite": suite,
        "model": model,
        "k": k,
        "k_text": fmt_text(k),
        "k_is_one": k == 1,
        "generated_at": metrics.get("generated_at"),
        "formula_version": metrics.get("formula_version"),
        "facts": _manifest_facts(manifest, metrics, run_id),
        "headline": _headline(metrics, k),
        "uncertainty": _uncertainty(metrics),
        "estimators": _estimators(metrics),
        "stability": _stability(k, tasks, unsafe_lines, evidence_base),
        "comparison": comparison,
        "oracle": {"value": fmt_quality(oracle.get("value")), "count": fmt_int(oracle.get("count")),
                   "eligible_tasks": fmt_int(oracle.get("eligible_tasks"))},
        "first_success": {"mean": fmt_mean(first.get("mean")), "p50": fmt_mean(first.get("p50")),
                          "count": fmt_int(first.get("count"))},
        "cautions": _cautions(k, judge_disabled, coverage.get("missing_attempts")),
        "coverage": [
            ("Observed unique tasks", fmt_int(coverage.get("unique_tasks"))),
            ("Observed attempt rows", fmt_int(coverage.get("attempts"))),
            ("Agent-eligible attempts", fmt_int(coverage.get("agent_eligible_attempts"))),
            ("Invalid (ineligible) attempts", fmt_int(coverage.get("invalid_attempts"))),
            ("Planned attempts", fmt_int(coverage.get("planned_attempts"))),
            ("Missing planned attempts", fmt_int(coverage.get("missing_attempts"))),
            ("k (metrics_k)", fmt_int(k)),
            ("Attempt rows, as aggregate.tasks (the name kept for older readers of metrics.json)",
             fmt_int(dig(metrics, "aggregate", "tasks"))),
        ],
        "status_items": status_items,
        "n_attempts": n_attempts,
        "ineligible": ineligible,
        "ineligible_pct": fmt_pct(ineligible / n_attempts) if n_attempts else NA,
        "eligible_unknown": facts["eligible_unknown"],
        "exclusions": facts["exclusions"],
        "task_exclusions": per_task_facts["task_exclusions"],
        "class_items": class_items,
        "stage_items": stage_items,
        "class_counts_ok": class_counts_ok,
        "stage_counts_ok": stage_counts_ok,
        "class_total": sum(c for _, c in class_items),
        "stage_total": sum(c for _, c in stage_items),
        "stage_coverage": fmt_pct(dig(metrics, "diagnostics", "failure_stage_coverage")),
        "efficiency": _distribution_rows(efficiency, EFFICIENCY_ROWS, ("count", "mean", "p50", "p90", "p95", "sum")),
        "reliability": _distribution_rows(metrics.get("reliability") or {}, RELIABILITY_FIELDS,
                                          ("count", "mean", "p50", "p90", "p95", "sum")),
        "cost_first": _distribution_rows(metrics.get("cost_to_first_success") or {}, COST_FIELDS,
                                         ("count", "mean", "p50")),
        "slowest": slowest,
        "expensive": expensive,
        "expensive_by_cost": any_cost,
        "failed_tasks": failed_tasks,
        "categories": categories,
        "observations": observations,
        "dq": dq,
        "task_rows": task_rows,
        "tasks": tasks,
        "unsafe_lines": unsafe_lines,
        "cap": LIST_CAP,
    }
