"""Builds run folders on disk (or in a bucket) from Python values, for tests (run-directory.md layout)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


#: A manifest.json as the benchmark runner writes it: no status (run-directory.md).
RUNNER_MANIFEST = {"run_id": "r", "agent_model": "agent-model-large", "git_sha": "4f2c9e1", "judge_config": None}


def write_json(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def make_run(
    root: Path,
    rows: list[dict | str],
    *,
    run_id: str = "run-1",
    manifest: dict | None = None,
    suite: dict | None = None,
    artifacts: dict[str, dict[str, Any]] | None = None,
) -> Path:
    """A run folder: ``rows`` become results.jsonl lines (a str is written verbatim);
    ``artifacts`` maps a folder relative to the run to {file name: JSON value or raw bytes}."""
    run = root / run_id
    run.mkdir(parents=True)
    write_json(run / "manifest.json", manifest if manifest is not None else {"status": "completed"})
    write_json(run / "suite.json", suite if suite is not None else {"name": "suite-x", "tasks": []})
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    (run / "results.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for folder, files in (artifacts or {}).items():
        for name, value in files.items():
            target = run / folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(value, bytes):
                target.write_bytes(value)
            else:
                target.write_text(json.dumps(value), encoding="utf-8")
    return run


def row(task_id: str, attempt: int = 1, status: str = "passed", **fields: Any) -> dict:
    """A current-format results row with explicit outcome fields (override with **fields)."""
    defaults = {
        "passed": (True, True, None),
        "failed": (False, True, "agent"),
        "timeout": (False, True, "agent"),
        "judge_error": (None, False, "evaluation"),
        "skipped": (None, False, "skipped"),
    }[status]
    base = {
        "task_id": task_id,
        "attempt": attempt,
        "status": status,
        "success": defaults[0],
        "agent_eligible": defaults[1],
        "failure_class": defaults[2],
        "metrics": {},
    }
    base.update(fields)
    return base


def put_run(bucket, run_id: str, rows: list[dict], manifest: dict | None = None, suite: dict | None = None,
            root: str = "runs") -> None:
    """A run folder in a bucket (``standins.s3.Bucket``): manifest, suite, results and one
    history.json for the first row's task."""
    bucket.put(f"{root}/{run_id}/manifest.json", json.dumps({"status": "completed"} if manifest is None else manifest))
    bucket.put(f"{root}/{run_id}/suite.json", json.dumps(suite or {"name": "suite-x", "tasks": []}))
    bucket.put(f"{root}/{run_id}/results.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    bucket.put(f"{root}/{run_id}/tasks/{rows[0]['task_id']}/history.json", "[]")
