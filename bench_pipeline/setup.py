"""What a run measured with: its measurement setup (comparison.md "The measurement setup").

The same agent judged by another judge, on another device or with other skills active is
measured differently: a comparison across such runs mixes that change with the agent's, and
repeated runs of a system are pooled only when measured the same way (repeated-runs.md
"Systems"). The setup's parts come from a run's manifest.json (run-directory.md; in the
runner's layout through ``layouts.manifest_view``: ``judge_config``, ``target_platform`` as
the os, ``suite_sha256`` as the suite version). A part is **known** when it has the type the
spec gives, else unknown (None), never a default:

| part          | manifest                        | known when                                   |
| ------------- | ------------------------------- | -------------------------------------------- |
| suite version | ``suite.version``               | a string or a number, compared as text       |
| judge         | ``judge.enabled``/``.model``    | a Boolean / a string, each on its own        |
| platform      | ``platform.device``/``.os``     | strings, each on its own                     |
| skills        | ``active_skills``               | a list of strings, compared as a set         |

``<part>_differs`` holds when some field of that part is known in both runs and unequal. The
**setup key** is (judge.enabled, judge.model, platform.device, platform.os), unknown fields
as null: runs with equal keys were measured the same way (the default baseline and the
systems compare keys). Every function here is pure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .layouts import manifest_view

#: The setup key: (judge enabled, judge model, platform device, platform os).
SetupKey = tuple[Any, Any, Any, Any]
UNKNOWN_KEY: SetupKey = (None, None, None, None)

#: The setup's warning codes in comparison.md's order (each placed among the other codes by
#: comparison.py and repeats.py), with the fields each one reads.
PART_FIELDS = {
    "suite_version_differs": ("suite_version",),
    "judge_differs": ("judge_enabled", "judge_model"),
    "platform_differs": ("platform_device", "platform_os"),
    "skills_differs": ("skills",),
}
SETUP_WARNINGS = tuple(PART_FIELDS)


@dataclass(frozen=True)
class Setup:
    """A run's measurement setup as its manifest records it (None: unknown)."""

    suite_version: str | None = None
    judge_enabled: bool | None = None
    judge_model: str | None = None
    platform_device: str | None = None
    platform_os: str | None = None
    skills: frozenset[str] | None = None

    @property
    def key(self) -> SetupKey:
        """(judge.enabled, judge.model, platform.device, platform.os), unknown as None."""
        return (self.judge_enabled, self.judge_model, self.platform_device, self.platform_os)

    @property
    def judge_text(self) -> str:
        return judge_text(self.judge_enabled, self.judge_model)

    @property
    def platform_text(self) -> str:
        return platform_text(self.platform_device, self.platform_os)

    @property
    def skills_text(self) -> str:
        """The active skills, sorted and comma-separated; ``none`` for an empty list."""
        if self.skills is None:
            return "unknown"
        return ", ".join(sorted(self.skills)) if self.skills else "none"

    @property
    def suite_version_text(self) -> str:
        return self.suite_version if self.suite_version is not None else "unknown"


def judge_text(enabled: Any, model: Any) -> str:
    """``judge <model>``, ``no judge`` (disabled), or what of it is known."""
    if enabled is False:
        return "no judge" if model is None else f"no judge (model {model} recorded)"
    if model is None:
        return "judge on, model unknown" if enabled is True else "judge unknown"
    return f"judge {model}" if enabled is True else f"judge {model} (enabled unknown)"


def platform_text(device: Any, os: Any) -> str:
    """``device / os``, an unknown part named so; ``platform unknown`` when neither is known."""
    if device is None and os is None:
        return "platform unknown"
    return f"{device if device is not None else 'device unknown'} / {os if os is not None else 'os unknown'}"


def key_text(key: SetupKey) -> str:
    """A setup key in a few words (systems' labels, baseline reasons): ``judge j, device / os``."""
    return f"{judge_text(key[0], key[1])}, {platform_text(key[2], key[3])}"


def _field(parent: Any, key: str) -> Any:
    return parent.get(key) if isinstance(parent, Mapping) else None


def version_text(value: Any) -> str | None:
    """A suite version compared as text: a string as it is, a number (not a Boolean) as
    Python writes it (``7`` and ``"7"`` are equal); else unknown."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def _of(value: Any, kind: type) -> Any:
    return value if isinstance(value, kind) else None


def run_setup(manifest: Mapping[str, Any] | None) -> Setup:
    """The setup a run's manifest.json records (the runner's keys through manifest_view)."""
    view = manifest_view(manifest) if isinstance(manifest, Mapping) else {}
    judge, platform = view.get("judge"), view.get("platform")
    skills = view.get("active_skills")
    known_skills = (frozenset(skills) if isinstance(skills, list) and all(isinstance(s, str) for s in skills)
                    else None)
    return Setup(
        suite_version=version_text(_field(view.get("suite"), "version")),
        judge_enabled=_of(_field(judge, "enabled"), bool),
        judge_model=_of(_field(judge, "model"), str),
        platform_device=_of(_field(platform, "device"), str),
        platform_os=_of(_field(platform, "os"), str),
        skills=known_skills,
    )


def differs_among(setups: Iterable[Setup]) -> list[str]:
    """The setup warnings (SETUP_WARNINGS order) that hold for some two of ``setups``: a
    field of the part known in both and unequal. For two runs, comparison.md's tests."""
    setups = list(setups)
    found = []
    for code, fields in PART_FIELDS.items():
        if any(len({getattr(s, f) for s in setups if getattr(s, f) is not None}) > 1 for f in fields):
            found.append(code)
    return found


# --- the run catalog's setup columns ---------------------------------------------------------

#: The run catalog's columns of the setup (catalog.py): ``active_skills`` as the JSON text of
#: the sorted list, null when unknown.
CATALOG_SETUP_COLUMNS = ("suite_version", "judge_enabled", "judge_model", "platform_device", "platform_os",
                         "active_skills")


def setup_columns(setup: Setup) -> dict[str, Any]:
    """A setup as the run catalog's CATALOG_SETUP_COLUMNS."""
    skills = json.dumps(sorted(setup.skills)) if setup.skills is not None else None
    return {"suite_version": setup.suite_version, "judge_enabled": setup.judge_enabled,
            "judge_model": setup.judge_model, "platform_device": setup.platform_device,
            "platform_os": setup.platform_os, "active_skills": skills}


def setup_from_columns(record: Mapping[str, Any]) -> Setup:
    """The setup a catalog record's CATALOG_SETUP_COLUMNS hold (a column that is absent, as
    in a row made before they existed, or not of its type is unknown)."""
    try:
        skills = json.loads(record["active_skills"]) if isinstance(record.get("active_skills"), str) else None
    except ValueError:
        skills = None
    return Setup(
        suite_version=_of(record.get("suite_version"), str),
        judge_enabled=_of(record.get("judge_enabled"), bool),
        judge_model=_of(record.get("judge_model"), str),
        platform_device=_of(record.get("platform_device"), str),
        platform_os=_of(record.get("platform_os"), str),
        skills=frozenset(skills) if isinstance(skills, list) and all(isinstance(s, str) for s in skills) else None,
    )
