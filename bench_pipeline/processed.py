"""A run through stages 1-4, as ``pipeline.run_stages`` returns it and the later stages
(comparison, reports, publication, the Dagster step's stored frames) read it."""

from __future__ import annotations

from dataclasses import dataclass

from .run_reader import RawRun


@dataclass
class ProcessedRun:
    """Every stage's output for one run (stages 1-4)."""

    raw: RawRun
    attempts: list[dict]
    tasks: list[dict]
    metrics: dict
