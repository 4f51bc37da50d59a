"""What a run measured: its suite and suite version, its model and its code version, and
what it measured with (its measurement setup, setup.py: comparison.md "The measurement setup").

A comparison names what it compares (two models, or two builds of one agent, are different
questions), and repeated runs are grouped by system (repeated-runs.md "Systems": suite name,
``manifest.model.name``, ``manifest.code.git_sha``). Both read these facts here, from a
run's manifest.json and suite.json (run-directory.md). A value that is missing or not of
its type is unknown (None), never a default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .artifacts import read_json_file
from .layouts import manifest_view
from .run_reader import suite_name
from .setup import Setup, run_setup


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _field(parent: Any, key: str) -> Any:
    return parent.get(key) if isinstance(parent, Mapping) else None


@dataclass(frozen=True)
class RunIdentity:
    """A run's suite (R2), suite version, model, code version and start, as recorded, and
    its measurement setup (``setup``: judge, platform, active skills and the manifest's suite
    version, the one the comparison warnings compare)."""

    suite: str | None = None
    suite_version: str | None = None
    model_name: str | None = None
    model_provider: str | None = None
    git_sha: str | None = None
    dirty: bool | None = None
    started_at: str | None = None
    setup: Setup = field(default_factory=Setup)

    @property
    def model_text(self) -> str:
        """``name (provider)``, or what of it is known."""
        if self.model_name is None:
            return "unknown" if self.model_provider is None else f"unknown ({self.model_provider})"
        return self.model_name if self.model_provider is None else f"{self.model_name} ({self.model_provider})"

    @property
    def code_text(self) -> str:
        """``git sha``, with ``, uncommitted changes`` when dirty; ``unknown`` without a sha."""
        if self.git_sha is None:
            return "unknown"
        return self.git_sha + {True: " (dirty: uncommitted changes)", False: " (clean)", None: ""}[self.dirty]

    @property
    def suite_text(self) -> str:
        name = self.suite if self.suite is not None else "unknown"
        return name if self.suite_version is None else f"{name} version {self.suite_version}"


def _version(value: Any) -> str | None:
    """A suite version as written: a string, or an integer written as one."""
    if isinstance(value, str):
        return value
    if type(value) is int:
        return str(value)
    return None


def run_identity(manifest: Mapping[str, Any] | None, suite_def: Mapping[str, Any] | None = None) -> RunIdentity:
    """The identity a run's manifest.json and suite.json record (run-directory.md): suite by
    R2, suite version from suite.json else manifest ``suite.version``, ``model.name`` /
    ``model.provider``, ``code.git_sha`` / ``code.dirty``, ``started_at`` and the measurement
    setup (setup.run_setup); a runner's manifest through its flat equivalents
    (layouts.manifest_view)."""
    manifest = manifest_view(manifest) if isinstance(manifest, Mapping) else {}
    suite_def = suite_def if isinstance(suite_def, Mapping) else {}
    version = _version(suite_def.get("version"))
    if version is None:
        version = _version(_field(manifest.get("suite"), "version"))
    dirty = _field(manifest.get("code"), "dirty")
    return RunIdentity(
        suite=suite_name(dict(suite_def), dict(manifest)),
        suite_version=version,
        model_name=_text(_field(manifest.get("model"), "name")),
        model_provider=_text(_field(manifest.get("model"), "provider")),
        git_sha=_text(_field(manifest.get("code"), "git_sha")),
        dirty=dirty if isinstance(dirty, bool) else None,
        started_at=_text(manifest.get("started_at")),
        setup=run_setup(manifest),
    )


#: What two runs may differ in, and the attribute that holds it.
ASPECTS = (("model", "model_name"), ("code", "git_sha"), ("suite version", "suite_version"))


def differences(baseline: RunIdentity, candidate: RunIdentity) -> list[str]:
    """The aspects (``model``, ``code``, ``suite version``) whose values are known in both
    runs and differ; a model differs by name, or by provider when both names are equal."""
    found = []
    for aspect, attr in ASPECTS:
        b, c = getattr(baseline, attr), getattr(candidate, attr)
        if b is not None and c is not None and b != c:
            found.append(aspect)
        elif (aspect == "model" and b is not None and b == c and baseline.model_provider is not None
              and candidate.model_provider is not None and baseline.model_provider != candidate.model_provider):
            found.append(aspect)
    return found


def read_json_object(path: Path) -> dict:
    """A JSON file's object; {} when the file is missing, unreadable (a FIFO or a device is
    never waited on), not JSON or not an object (``artifacts.read_json_file``, the run
    reader's own; the folder resolved only when the file is not a plain one)."""
    file = read_json_file(path.parent, None, path.name)
    return file.value if file.available and isinstance(file.value, dict) else {}


def read_identity(run_dir: Path | str | None) -> RunIdentity:
    """``run_identity`` of a run folder's manifest.json and suite.json; every value unknown
    when the folder or a file is missing or unreadable (the run itself reports those)."""
    if run_dir is None:
        return RunIdentity()
    run_dir = Path(run_dir)
    return run_identity(read_json_object(run_dir / "manifest.json"), read_json_object(run_dir / "suite.json"))
