"""What the commands of `bench-pipeline` share (cli.py, cli_sets.py): progress and messages on
stderr, the checks of run folders given as input, the gate's exit code and its one line."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from .run_reader import NotARunFolderError, check_local


#: What a finished command leaves for the process's end (see ``entry``).
LEFT_FOR_EXIT: list[object] = []


def refused_input(exc: Exception) -> str:
    """A refused input's one line (exit 2): an OSError's file and reason (an output folder
    that cannot be made, a run file that cannot be read), else the message."""
    if isinstance(exc, OSError):
        return f"error: {exc.filename or ''}: {exc.strerror or exc}".replace("error: : ", "error: ")
    return f"error: {exc}"


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Progress:
    """A progress line on stderr for large runs: at most one a second, and the last."""

    def __init__(self, what: str, min_total: int = 2000, every_seconds: float = 1.0) -> None:
        self.what, self.min_total, self.every = what, min_total, every_seconds
        self.last = time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if total >= self.min_total and (done == total or now - self.last >= self.every):
            self.last = now
            say(f"  {self.what}: {done}/{total}")


def gate_exit_code(gate: dict) -> int:
    """The exit code of ``compare`` (both forms) for its gate (comparison.md): 0 pass, 1 fail,
    3 inconclusive (2 is bad input, returned before there is a gate)."""
    from .comparison import GATE_EXIT_CODES

    return GATE_EXIT_CODES[gate["result"]]


def gate_extras(gate: dict, result: dict, started: float) -> str:
    """`` (reasons: ...; warnings: ...; 0.12s)`` for the gate's one line."""
    parts = [f"reasons: {', '.join(gate['reasons'])}"] if gate["reasons"] else []
    parts += [f"warnings: {', '.join(result['warnings'])}"] if result["warnings"] else []
    return f" ({'; '.join([*parts, f'{time.monotonic() - started:.2f}s'])})"


class BadInputError(ValueError):
    """Input the command refuses with exit 2 (the same run twice, a mix of forms)."""


def check_run_folders(folders: list[Path], distinct: bool = True) -> None:
    """NotARunFolderError for a folder without results.jsonl; with ``distinct``,
    BadInputError for a folder given twice (by any path) or for two folders whose results
    files are byte-identical (a copy of a run: one measurement, not two; repeated-runs.md
    "Systems", system_members.first_identical)."""
    from .system_members import first_identical

    seen: dict[Path, Path] = {}
    for folder in folders:
        check_local(folder)
        if not (folder / "results.jsonl").is_file():
            raise NotARunFolderError(f"{folder}: no results.jsonl, so not a benchmark run folder")
        real = folder.resolve()
        if distinct and real in seen:
            raise BadInputError(f"{folder}: the same run folder twice (also given as {seen[real]})")
        seen[real] = folder
    copy = first_identical(folders) if distinct else None
    if copy is not None:
        raise BadInputError(f"{copy[1]} and {copy[0]}: byte-identical {copy[2]}, the same run twice (one "
                            "measurement, not two); give only one of them")
