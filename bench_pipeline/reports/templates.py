"""The templates (bench_pipeline/templates, package data) and the jinja2 environments that
render them, with the formatters as filters.

Compiled templates are kept on disk between commands (TemplateCache), in a folder of this
user's that no one else can write.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from jinja2 import Environment, FileSystemBytecodeCache, PackageLoader, StrictUndefined
from jinja2.bccache import Bucket

from .format import FILTERS


def _asset(name: str) -> str:
    """A static file from the templates folder (CSS/JS inlined into report.html)."""
    return resources.files("bench_pipeline").joinpath("templates", name).read_text(encoding="utf-8")


class TemplateCache(FileSystemBytecodeCache):
    """Compiled templates kept on disk between commands, and never a reason to fail.

    Compiling report.html.j2 and summary.md.j2 takes about 0.06 s of every
    `bench-pipeline process` command; loading them compiled takes about 1 ms. Jinja keys
    each entry by the template's source checksum and the Python version, so an edited
    template or another interpreter never loads a stale entry. A cache that cannot be
    read or written (a read-only home, a damaged file) only means compiling again.
    """

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:  # noqa: BLE001 - a damaged entry is a cache miss
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass


def template_cache_dir() -> Path:
    """Where compiled templates are kept: $BENCH_TEMPLATE_CACHE, else the user's cache folder."""
    configured = os.environ.get("BENCH_TEMPLATE_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "bench_pipeline" / "templates"


def _template_cache() -> TemplateCache | None:
    """The cache, or None when its folder cannot be made or is not safe to load code from:
    compiled templates are code, so the folder must be this user's and writable by no one
    else (as Jinja requires of its own default folder)."""
    directory = template_cache_dir()
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = directory.stat()
    except OSError:
        return None
    if hasattr(os, "getuid") and (st.st_uid != os.getuid() or st.st_mode & 0o022):
        return None
    return TemplateCache(str(directory))


def _environment(html: bool) -> Environment:
    """A jinja2 environment; autoescaping on for HTML."""
    env = Environment(
        loader=PackageLoader("bench_pipeline", "templates"),
        bytecode_cache=_template_cache(),
        autoescape=html,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(FILTERS)
    return env


_ENVS: dict[bool, Environment] = {}


def _env(html: bool) -> Environment:
    if html not in _ENVS:
        _ENVS[html] = _environment(html)
    return _ENVS[html]
