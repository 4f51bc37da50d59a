"""summary.md and report.html: rendered from the view, and written.

report.html is rendered around two markers that the attempt rows and their details (the bulk
of a large page, encoded already) replace, so they are never copied into one big string.
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from markupsafe import Markup

from ..bulk import gc_paused
from ..comparison import Comparison
from ..jsonio import write_atomic
from .charts import svg_hbar_chart, svg_stacked_bar
from .histogram import histograms
from .compared import comparison_view, run_folder_base
from .format import num, script_json, status_kind
from .rows import FACT_LABELS, AttemptRows, _attempt_rows, failed_task_html_rows, failed_task_md_rows, task_table_rows
from .templates import _asset, _env
from .view.exclusions import class_sort_key, status_sort_key
from .view.run_view import RunView, build_view

HTML_FAILED_TASKS_CAP = 300  # failed tasks report.html lists (summary.md lists every one)


def _csp(script: str) -> str:
    """Content-Security-Policy allowing only our inline script (by hash) and inline styles."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return ("default-src 'none'; img-src 'none'; style-src 'unsafe-inline'; "
            f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'")


def render_summary_md(metrics: dict, attempts: list[dict], manifest: dict, run_id: str,
                      evidence_base: str | None = None, comparison: Comparison | None = None) -> str:
    """summary.md: where a reviewer starts (see outputs.md "summary.md and report.html");
    with ``comparison``, its "Compared with <baseline>" section (evidence not linked)."""
    return _summary_md(build_view(metrics, attempts, manifest, run_id, evidence_base,
                                  comparison=comparison_view(comparison)))


def _summary_md(view: RunView) -> str:
    return _env(False).get_template("summary.md.j2").render(v=view, failed_rows=failed_task_md_rows(view.failed_tasks))


def render_report_html(metrics: dict, attempts: list[dict], manifest: dict, run_id: str,
                       evidence_base: str | None = None, workers: int = 1,
                       comparison: Comparison | None = None) -> str:
    """report.html: one self-contained, escaped, interactive page.

    ``workers`` > 1 builds the attempt rows of large runs in that many forked processes;
    ``comparison`` as for render_summary_md.
    """
    view = build_view(metrics, attempts, manifest, run_id, evidence_base, comparison=comparison_view(comparison))
    return _report_html(view, metrics, attempts, workers)


def _report_html(view: RunView, metrics: dict, attempts: list[dict], workers: int,
                 rows: AttemptRows | None = None) -> str:
    return b"".join(_report_html_parts(view, metrics, attempts, workers, rows)).decode()


def _report_html_parts(view: RunView, metrics: dict, attempts: list[dict], workers: int,
                       rows: AttemptRows | None = None, charts: list[dict[str, Any]] | None = None) -> list[bytes]:
    """report.html as consecutive UTF-8 pieces: the page is rendered around two markers that
    the attempt rows and their details (the bulk of a large page, already encoded) replace,
    so they are never copied into one big string. ``charts``: ``histograms``, when made already."""
    records = [a for a in attempts if isinstance(a, dict)]
    if rows is None:
        rows = _attempt_rows(records, view, workers)
    keys = rows.keys
    task_keys = [[t["task_id"], t["category"], t["attempts"], t["eligible"], t["passed"], t["failed"],
                  num(t["pass_rate"]), num(t["best_quality"]), num(t["avg_quality"]),
                  num(t["avg_wall_ms"]), t["mean_tokens"], t["has_nonpass"]]
                 for t in view.tasks.rows]
    script = _asset("report.js")
    payload = {"tasks": {"keys": task_keys}, "attempts": {"keys": keys}}
    statuses = sorted({k[2] for k in keys if isinstance(k[2], str)}, key=status_sort_key)
    classes = sorted({k[3] for k in keys if isinstance(k[3], str)}, key=class_sort_key)
    marker = f"\x00{uuid.uuid4().hex}"
    rows_marker, details_marker = f"{marker}:rows\x00", f"{marker}:details\x00"
    page = _env(True).get_template("report.html.j2").render(
        v=view,
        histograms=charts if charts is not None else histograms(metrics if isinstance(metrics, dict) else {}, records),
        class_svg=svg_hbar_chart(view.failures.class_items, css="bar cls"),
        stage_svg=svg_hbar_chart(view.failures.stage_items, css="bar stg", label_width=150),
        status_svg=svg_stacked_bar([(s, c, f"st-{status_kind(s)}")
                                    for s, c in view.capability.status_items]),
        attempt_rows=Markup(rows_marker),
        task_rows=task_table_rows(view.tasks.rows),
        failed_rows=failed_task_html_rows(view.failed_tasks[:HTML_FAILED_TASKS_CAP]),
        n_attempts=len(keys),
        statuses=statuses,
        classes=classes,
        payload=script_json(payload),
        details=Markup(f'{{"labels":{script_json(FACT_LABELS)},"details":[{details_marker}]}}'),
        failed_cap=HTML_FAILED_TASKS_CAP,
        style=Markup(_asset("report.css")),
        script=Markup(script),
        csp=_csp(script),
    )
    if page.count(rows_marker) != 1 or page.count(details_marker) != 1:
        raise RuntimeError("report.html: the attempt-table markers did not come out exactly once")
    head, rest = page.split(rows_marker)
    middle, tail = rest.split(details_marker)
    return [head.encode(), rows.html, middle.encode(), rows.details, tail.encode()]


def report_view(out_dir: Path, metrics: dict, attempts: list[dict], manifest: dict, run_id: str,
                run_dir: Path | None = None, facts: Mapping[str, Any] | None = None,
                per_task_facts: Mapping[str, Any] | None = None,
                comparison: Comparison | None = None, not_compared: str | None = None) -> RunView:
    """The view both reports render; with ``run_dir``, evidence links are relative to out_dir.
    ``facts`` and ``per_task_facts`` as for build_view; ``comparison``: the run compared
    with its baseline, shown as "Compared with <baseline>" (None: no such section);
    ``not_compared``: without a comparison, why the run has no baseline (a "Not compared" section)."""
    base = run_folder_base(run_dir, out_dir)
    return build_view(metrics, attempts, manifest, run_id, base, facts, per_task_facts,
                      comparison_view(comparison, out_dir), not_compared if comparison is None else None)


def render_comparison_md(comparison: Comparison, out_dir: Path | None = None) -> str:
    """comparison.md: the comparison for a reviewer, verdicts first (evidence links relative
    to ``out_dir``, where the file goes)."""
    return _env(False).get_template("comparison.md.j2").render(c=comparison_view(comparison, out_dir))


def write_comparison_md(out_dir: Path, comparison: Comparison) -> dict[str, Path]:
    """comparison.md into out_dir; returns {"comparison.md": path}."""
    path = Path(out_dir) / "comparison.md"
    write_atomic(path, render_comparison_md(comparison, out_dir).encode())
    return {"comparison.md": path}


def write_summary_md(out_dir: Path, view: RunView) -> dict[str, Path]:
    """summary.md from a report_view; returns {"summary.md": path}."""
    path = Path(out_dir) / "summary.md"
    write_atomic(path, _summary_md(view).encode())
    return {"summary.md": path}


def write_report_html(out_dir: Path, view: RunView, metrics: dict, attempts: list[dict],
                      workers: int = 1, rows: AttemptRows | None = None,
                      charts: list[dict[str, Any]] | None = None) -> dict[str, Path]:
    """report.html from a report_view; returns {"report.html": path}.

    ``rows``: the attempt table already rendered (render_attempt_rows over every attempt
    in line order, for instance where the attempts were derived); else it is built here.
    ``charts``: ``histograms(metrics, attempts)``, when made already.
    """
    path = Path(out_dir) / "report.html"
    write_atomic(path, _report_html_parts(view, metrics, attempts, workers, rows, charts))
    return {"report.html": path}


@gc_paused()
def write_reports(out_dir: Path, metrics: dict, attempts: list[dict], manifest: dict, run_id: str,
                  run_dir: Path | None = None, workers: int = 1,
                  comparison: Comparison | None = None) -> dict[str, Path]:
    """Write summary.md and report.html into out_dir; returns {"summary.md": path, "report.html": path}.

    With ``run_dir`` (the run folder), evidence folders become links relative to out_dir;
    ``workers`` as for render_report_html; ``comparison``: the run compared with a baseline.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    view = report_view(out_dir, metrics, attempts, manifest, run_id, run_dir,
                       comparison=comparison)  # shared by both reports
    return {**write_summary_md(out_dir, view), **write_report_html(out_dir, view, metrics, attempts, workers)}
