"""Render summary.md and report.html from metrics.json, attempt records and the manifest.

Pure rendering: every number comes from ``metrics`` (the outputs.md metrics.json dict) or is a
direct count/listing of ``attempts`` (the attempt records of docs/design.md). Nothing here
recomputes a capability metric. Unavailable values render as ``n/a``, never 0.

report.html is one self-contained file: inline CSS, inline JS (allowed by a CSP hash, so no
other script can run), inline SVG charts computed here, no network access. Every string from
the run is escaped by jinja2 autoescaping; per-attempt details are embedded as JSON (with
``<``, ``>`` and ``&`` escaped) and rendered lazily with ``textContent``.

The modules, in the order they build on one another:

- ``format``: formatters of values and field labels, markdown and JSON escaping;
- ``charts``: the inline SVG charts; ``histogram``: report.html's histograms;
- ``view``: the view model both reports render, a package with one module per report
  section; ``view.run_view.build_view`` assembles them into a ``RunView``
  (``view.facts``: ``attempt_facts``, ``task_facts``);
- ``change_format`` and ``gate_words``: a comparison's numbers and its gate in words;
- ``planning_text`` and ``planning_chart``: planning in words and the suite page's chart of
  the detectable change against runs per side (planning.md "Where a reader sees it");
- ``compared``: the view of a comparison with a baseline (``comparison_view``): the
  reports' "Compared with <baseline>" section and comparison.md;
- ``rows``: the table rows rendered in plain loops (the attempt table with its details,
  the task table, the failed-task tables);
- ``templates``: the jinja2 environments over bench_pipeline/templates and their on-disk cache;
- ``write``: both pages (and comparison.md) rendered and written.

This package re-exports what the rest of the product uses (``_env`` for the Dagster worker
preload); a test that replaces a module-level value (``monkeypatch``) must do so in the
module that reads it, never here.
"""

from .charts import svg_delta_intervals, svg_hbar_chart, svg_interval_bar
from .histogram import histograms, svg_histogram
from .histogram_bins import histogram_bins
from .format import (
    fmt_bool,
    fmt_ci,
    fmt_compact,
    fmt_int,
    fmt_ms,
    fmt_pct,
    fmt_quality,
    fmt_round,
    fmt_usd,
    md_code,
    md_text,
    script_json,
)
from .rows import FACT_LABELS, AttemptRows, duplicate_lines, failed_task_html_rows, join_attempt_rows, render_attempt_rows
from .templates import TemplateCache, _env
from .view.facts import attempt_facts, task_facts
from .view.failed_tasks import FailedTask
from .view.limits import LIST_CAP, STRIP_CAP
from .view.run_facts import view_k
from .view.run_view import build_view
from .compared import comparison_view
from .write import (
    render_comparison_md,
    render_report_html,
    render_summary_md,
    report_view,
    write_comparison_md,
    write_report_html,
    write_reports,
    write_summary_md,
)

__all__ = [
    "FACT_LABELS", "LIST_CAP", "STRIP_CAP", "AttemptRows", "FailedTask", "TemplateCache",
    "attempt_facts", "build_view", "comparison_view", "duplicate_lines", "failed_task_html_rows", "fmt_bool", "fmt_ci",
    "fmt_compact", "fmt_int", "fmt_ms", "fmt_pct", "fmt_quality", "fmt_round", "fmt_usd", "histogram_bins",
    "histograms", "join_attempt_rows", "md_code", "md_text", "render_attempt_rows", "render_comparison_md",
    "render_report_html",
    "render_summary_md", "report_view", "script_json", "svg_delta_intervals", "svg_hbar_chart", "svg_histogram", "svg_interval_bar",
    "task_facts", "view_k", "write_comparison_md", "write_report_html", "write_reports", "write_summary_md",
]
