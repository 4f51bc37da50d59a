"""The report's header and "Run facts": what was evaluated (the manifest) and with which k."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...layouts import REJUDGED_RESULTS
from ...run_reader import is_positive_int, valid_planned_entries
from ..format import NA, dig, fmt_text

#: Where the reports' k came from (``k_source``): a short phrase for the header, and the
#: sentence the "Run facts" table gives. metrics.json's coverage.metrics_k is resolved when the
#: run is read (run_reader.resolve_metrics_k): the manifest's metrics_k, else the fewest planned
#: attempts of a task, else the fewest attempts any observed task reached.
K_SOURCES = {
    "manifest": ("from the manifest's metrics_k", "from the manifest's metrics_k"),
    "plan": ("from the plan", "from the plan: the manifest gives no metrics_k, so k is the fewest attempts the "
                              "plan gives a task"),
    "observed": ("from the attempts observed", "from the attempts observed: the manifest gives neither metrics_k nor "
                                               "a plan, so k is the fewest attempts any observed task reached"),
    "metrics": ("from metrics.json", "from metrics.json's coverage.metrics_k (neither the manifest's metrics_k nor "
                                     "its plan gives it)"),
    None: ("no metrics_k, plan or attempt gives it",
           "unknown: the manifest gives no metrics_k and no plan, and no attempt was observed"),
}


@dataclass(frozen=True)
class RunHeader:
    """The page's title line and its "Run facts" table (``facts``: (label, text) pairs)."""

    run_id: str
    suite: str | None
    model: str | None
    k: Any
    k_text: str
    k_source: str
    k_source_text: str
    generated_at: Any
    formula_version: Any
    facts: list[tuple[str, str]]


def view_k(metrics: Mapping[str, Any], manifest: Mapping[str, Any]) -> Any:
    """The k the reports use: coverage.metrics_k, else the manifest's."""
    metrics = metrics if isinstance(metrics, dict) else {}
    manifest = manifest if isinstance(manifest, dict) else {}
    coverage = metrics.get("coverage") if isinstance(metrics.get("coverage"), dict) else {}
    return coverage.get("metrics_k", manifest.get("metrics_k"))


def k_source(metrics: Mapping[str, Any], manifest: Mapping[str, Any]) -> str | None:
    """Where ``view_k`` found k: ``manifest`` (its metrics_k), ``plan`` (the fewest planned
    attempts of a task), ``observed`` (the fewest attempts an observed task reached),
    ``metrics`` (metrics.json's value, which none of those gives), or None when k is unknown."""
    metrics = metrics if isinstance(metrics, dict) else {}
    manifest = manifest if isinstance(manifest, dict) else {}
    coverage = metrics.get("coverage") if isinstance(metrics.get("coverage"), dict) else {}
    if "metrics_k" not in coverage:
        return "manifest" if manifest.get("metrics_k") is not None else None
    k = coverage["metrics_k"]
    if k is None:
        return None
    if is_positive_int(manifest.get("metrics_k")):
        return "manifest" if manifest["metrics_k"] == k else "metrics"
    entries = valid_planned_entries(manifest)
    if entries:
        return "plan" if min(e["attempts"] for e in entries) == k else "metrics"
    return "observed"


def manifest_facts(manifest: Mapping[str, Any], metrics: Mapping[str, Any], run_id: str) -> list[tuple[str, str]]:
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

    def given(key: str) -> str:
        return f"{key} {fmt_text(manifest[key])}" if manifest.get(key) is not None else f"{key} not given"

    plan_bits = [given("repeats"), given("metrics_k")]
    if isinstance(planned, list):
        plan_bits.append(f"{len(planned):,} planned task{'' if len(planned) == 1 else 's'}")
    k = view_k(metrics, manifest)
    k_text = f"{fmt_text(k)}, {K_SOURCES[k_source(metrics, manifest)][1]}" if k is not None else K_SOURCES[None][1]
    # the runner's manifest has no status (run-directory.md): say so rather than "n/a"
    status = fmt_text(manifest["status"]) if "status" in manifest else "no status recorded"
    times = f"{fmt_text(manifest.get('started_at'))} to {fmt_text(manifest.get('finished_at'))}"
    results_file = metrics.get("results_file")
    results_text = fmt_text(results_file) + (" (re-judged results, read instead of results.jsonl)"
                                             if results_file == REJUDGED_RESULTS else "")
    return [
        ("Run id", run_id),
        ("Run status", f"{status}, {times}"),
        ("Results read", results_text),
        ("Suite", suite_text),
        ("Model", fmt_text(named(manifest.get("model"), "provider", "name"))),
        ("Judge", judge_text),
        ("Code", code_text),
        ("Platform", platform_text),
        ("Active skills", skills_text),
        ("Repeat plan", " · ".join(plan_bits)),
        ("k", k_text),
        ("Metrics", f"schema {fmt_text(metrics.get('schema_version'))} · formula "
                    f"{fmt_text(metrics.get('formula_version'))} · generated {fmt_text(metrics.get('generated_at'))}"),
    ]


def run_header(metrics: Mapping[str, Any], manifest: Mapping[str, Any], run_id: str, k: Any) -> RunHeader:
    """The header: run id, suite and model names (metrics.json first, then the manifest), k."""
    suite = metrics.get("suite") or dig(manifest, "suite", "name") or (
        manifest.get("suite") if isinstance(manifest.get("suite"), str) else None)
    model = dig(manifest, "model", "name") or (manifest.get("model") if isinstance(manifest.get("model"), str) else None)
    short, text = K_SOURCES[k_source(metrics, manifest) if k is not None else None]
    return RunHeader(run_id=run_id, suite=suite, model=model, k=k, k_text=fmt_text(k),
                     k_source=short, k_source_text=text,
                     generated_at=metrics.get("generated_at"), formula_version=metrics.get("formula_version"),
                     facts=manifest_facts(manifest, metrics, run_id))
