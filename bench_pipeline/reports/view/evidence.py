"""Evidence folders as the reports show and link them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from ..format import line_no

#: A base that is a URL (a run folder in another bucket than the report's): ``s3://bucket/key``.
_URL_BASE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")


def evidence_dir(rec: Mapping[str, Any], unsafe_lines: set[int]) -> tuple[str | None, str]:
    """(folder or None, display text) for an attempt's evidence folder."""
    ev = rec.get("evidence")
    folder = ev.get("dir") if isinstance(ev, dict) else None
    if isinstance(folder, str):
        return folder, folder or "."
    if line_no(rec) in unsafe_lines:
        return None, "n/a (artifact_dir refused as unsafe)"
    return None, "n/a (unavailable)"


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
