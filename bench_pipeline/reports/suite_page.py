"""One self-contained page per suite (``<output root>/_suites/<slug>/index.html``): the runs in
start order, the systems side by side, cost against capability, and the flaky tasks.

Inputs (what the ``suite_pages`` asset passes):

- ``runs``: one dict per run of the suite, as the run catalog has it (``run_id``, ``model``,
  ``git_sha``, ``started_at``, ``pass_at_1``, ``pass_at_1_lower``, ``pass_at_1_upper``,
  ``attempts``, ...) plus ``gate`` ("pass", "fail" or None: the run's release gate against
  its baseline), ``baseline`` (its baseline's run id or None) and ``report`` (the absolute
  path of its report.html, or None);
- ``systems``: one ``SystemEntry`` per system of the suite (repeats.json's dict, its runs as
  ``repeats.RepeatRun`` with their run folders for evidence links, and its repeats.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..repeats import RepeatRun


@dataclass(frozen=True)
class SystemEntry:
    """A system of the suite: its folder name, repeats.json, its runs and its repeats.md."""

    slug: str
    doc: dict
    runs: list[RepeatRun]
    repeats_md: Path | None = None


def write_suite_page(out_dir: Path, suite: str | None, runs: list[dict], systems: list[SystemEntry]) -> Path:
    """``out_dir/index.html`` (written atomically); returns its path."""
    raise NotImplementedError("the suite page renderer is being written")
