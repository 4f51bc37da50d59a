"""metrics.json data_quality (outputs.md, R33): the section, and the one count of its findings
that the command line, the catalog, the Dagster metadata and both reports show."""

from __future__ import annotations

from .manifest_values import manifest_findings
from .run_reader import RawRun


def data_quality(raw: RawRun, attempts: list[dict]) -> dict:
    """metrics.json data_quality (outputs.md, R33), plus artifact and run-file findings.

    ``invalid_artifacts`` (a located entry per unreadable/invalid history, episode or trace
    file), ``invalid_values`` (a located entry per recorded value of the wrong type, read as
    unavailable: attempt_metrics/invalid_values.py), ``invalid_artifact_values`` (the same for
    the values of history.json and episode.json the formulas read: assemble.artifact_value_findings)
    and ``run_files`` (a broken manifest.json
    or suite.json, and the manifest's values of the wrong type: manifest_values.py) extend
    outputs.md's four lists; see docs/metric-choices.md.
    """
    findings = [a["evidence"]["findings"] for a in attempts]
    missing = raw.missing_attempts or []
    run_files = [*raw.run_files, *manifest_findings(raw.manifest)]
    if raw.missing_count is not None and raw.missing_count > len(missing):
        run_files.append({
            "file": "manifest.json", "status": "available",
            "reason": f"planned attempts missing from {raw.results_file}: {raw.missing_count}; "
                      f"data_quality.missing_attempts lists the first {len(missing)} in plan order",
        })
    return {
        "bad_rows": raw.bad_rows,
        "duplicate_rows": raw.duplicate_rows,
        "missing_attempts": missing,
        "unsafe_artifact_dirs": [f["unsafe_dir"] for f in findings if f["unsafe_dir"] is not None],
        "invalid_artifacts": [p for f in findings for p in f["artifacts"]],
        "invalid_values": [v for f in findings for v in f["values"]],
        "invalid_artifact_values": [v for f in findings for v in f["artifact_values"]],
        "run_files": run_files,
    }


def data_quality_findings(metrics: dict) -> int:
    """How many data-quality findings a metrics.json records: every entry of its lists, with
    every missing planned attempt counted. The one count the command line, the catalog, the
    Dagster metadata and both reports show."""
    quality = metrics.get("data_quality") if isinstance(metrics.get("data_quality"), dict) else {}
    listed = sum(len(v) for k, v in quality.items() if isinstance(v, list) and k != "missing_attempts")
    return listed + missing_attempts_count(metrics)


def findings_note(count: int | None) -> str:
    """What a run's one line (the per-run step's ``[i/n] <run>: ok (...)``) says of its
    data-quality findings (``data_quality_findings``) and where they are listed; empty when
    not known (a run that failed before its metrics)."""
    if count is None:
        return ""
    if count == 0:
        return ", no data-quality findings"
    return (f", {count} data-quality finding{'' if count == 1 else 's'}: "
            f"see \"Data quality\" in its summary.md or report.html")


def missing_attempts_count(metrics: dict) -> int:
    """Every missing planned attempt: coverage.missing_attempts, exact at any size (the
    data_quality list names at most MISSING_LIST_CAP), else the list's length."""
    quality = metrics.get("data_quality") if isinstance(metrics.get("data_quality"), dict) else {}
    listed = quality.get("missing_attempts")
    n_listed = len(listed) if isinstance(listed, list) else 0
    coverage = metrics.get("coverage") if isinstance(metrics.get("coverage"), dict) else {}
    counted = coverage.get("missing_attempts")
    return counted if type(counted) is int and counted >= n_listed else n_listed
