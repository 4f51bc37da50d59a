"""Reading summary.md in tests: its sections and table cells."""

from __future__ import annotations

import re


def section(md: str, title: str) -> str:
    """The markdown between a '## title' heading and the next '## ' heading."""
    start = md.index(f"## {title}")
    end = md.find("\n## ", start + 3)
    return md[start:end if end != -1 else None]


def table_rows(md: str) -> list[list[str]]:
    """Cells of every markdown table row (header and separator rows included)."""
    return [[c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            for line in md.splitlines() if line.startswith("|")]
