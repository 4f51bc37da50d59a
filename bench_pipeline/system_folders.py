"""The folders of the cross-run outputs: a suite's page under ``<output root>/_suites/`` and a
system's repeats.json and repeats.md under ``<output root>/_systems/`` (repeats.py's systems),
named readably and told apart by a hash of the exact values."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from .repeats import System

#: What names a system for ``system_slugs``: a ``repeats.System``, or a text the caller keeps for it.
K = TypeVar("K")


#: The folders of the cross-run outputs under the output root, beside the runs' own folders
#: (named by run id): no run id may be one of them (``resources.settings.safe_partition_key``).
SUITES_FOLDER = "_suites"
SYSTEMS_FOLDER = "_systems"
RESERVED_NAMES = (SUITES_FOLDER, SYSTEMS_FOLDER)
#: The files of a system's folder and of a suite's.
REPEATS_FILES = ("repeats.json", "repeats.md")
SUITE_PAGE = "index.html"

#: A run of characters a slug does not keep (anything but ASCII letters, digits, ``.`` and
#: ``_``), with the ``-`` among them.
_UNSAFE = re.compile(r"[^A-Za-z0-9._]+")


def _slug_part(value: str | None, unknown: str = "unknown") -> str:
    """A readable, filesystem-safe piece: letters, digits, ``.``, ``_`` and ``-`` kept, every
    other run of characters one ``-`` (a run of ``-`` too), at most 40 characters."""
    text = _UNSAFE.sub("-", value or unknown).strip(".-") or unknown
    return text[:40]


def _digest(*values: str | None) -> str:
    return hashlib.sha256("\x00".join(v if v is not None else "\x01" for v in values).encode()).hexdigest()[:8]


def suite_slug(suite: str | None) -> str:
    """The folder of a suite's page under ``<output root>/_suites/``: the suite name made
    filesystem-safe, then ``-`` and 8 hex digits of a hash of the exact name (two names that
    read alike never share a folder)."""
    return f"{_slug_part(suite)}-{_digest(suite)}"


def system_slug(system: System, with_setup: bool = False) -> str:
    """The folder of a system under ``<output root>/_systems/``: ``<suite>--<model>--<git sha>``
    made filesystem-safe (``unknown`` for an unknown part, the run id beside it for a run that
    is a system of its own; then, ``with_setup``, the judge model (``no-judge`` when it was off)
    and the platform), then ``-`` and 8 hex digits of a hash of the exact values (the setup
    key's among them ``with_setup``). ``system_slugs`` adds the setup only where it tells two
    systems apart."""
    parts = [_slug_part(system.suite), _slug_part(system.model), _slug_part(system.git_sha)]
    if system.alone is not None:
        parts.append(_slug_part(system.alone))
    values = [system.suite, system.model, system.git_sha, system.alone]
    if with_setup:
        enabled, judge, device, os_name = system.setup
        parts.append(_slug_part("no-judge" if enabled is False else judge) + "--"
                     + _slug_part(".".join(p for p in (device, os_name) if p is not None) or None))
        values += ["setup", *(repr(v) for v in system.setup)]
    return "--".join(parts) + "-" + _digest(*values)


def system_slugs(bases: Mapping[K, str], with_setup: Callable[[K], str] | None = None) -> dict[K, str]:
    """Each system's folder (``bases``: {system: its ``system_slug`` without setup}): that base
    when no other system of the same suite, model and git sha is listed (most agents are
    measured one way: their folder is the one they had before setups were part of systems, and
    the same whichever layout recorded them), else its folder with its setup (``with_setup``,
    by default ``system_slug(system, with_setup=True)``: the same agent judged by another judge
    or on another device gets a folder of its own), made only for those. A system may be named
    by any key (the catalog refresh keeps each system as text: assets/systems.py)."""
    full = with_setup if with_setup is not None else (lambda system: system_slug(system, with_setup=True))
    counts = Counter(bases.values())
    return {system: base if counts[base] == 1 else full(system) for system, base in bases.items()}
