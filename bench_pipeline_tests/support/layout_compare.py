"""Outputs of the same generated run in the two layouts, made comparable: what differs by
construction (the raw ``artifact_dir`` text, the runner's ``attempt_<n>`` folder names, when
the file was written and which results file was read) is normalized; every number stays."""

from __future__ import annotations

import re
from typing import Any

#: A runner attempt folder in a path relative to the run folder (attempts.jsonl evidence,
#: data_quality file paths, report links).
_RUNNER_FOLDER = re.compile(r"(tasks/[^/\"]+)/attempt_(\d+)")
#: Keys whose values differ by construction between the layouts.
#: (a data version is the run folder's fingerprint: its files differ between the layouts)
DIFFERENT_BY_CONSTRUCTION = frozenset(("generated_at", "results_file", "artifact_dir", "data_version"))


def flat_path(text: str) -> str:
    """Runner attempt folders named as the flat layout names them: ``tasks/t/attempt_1`` ->
    ``tasks/t``, ``tasks/t/attempt_<n>`` -> ``tasks/t/attempt-<n>``."""
    return _RUNNER_FOLDER.sub(lambda m: m.group(1) if m.group(2) == "1" else f"{m.group(1)}/attempt-{m.group(2)}",
                              text)


def comparable(value: Any) -> Any:
    """``value`` (a parsed output document) without DIFFERENT_BY_CONSTRUCTION keys and with
    every string's runner folders named as flat ones."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in DIFFERENT_BY_CONSTRUCTION}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    if isinstance(value, str):
        return flat_path(value)
    return value
