"""Safe reading of a run's files: artifact folders, JSON files, statuses.

run-directory.md and readings R3, R4, R5, R43: an attempt's artifact folder comes from the
row's ``artifact_dir`` (the runner's own path mapped into the run folder,
layouts.map_artifact_dir) or the runner's convention (``attempt_<n>`` first); a folder that
is absolute or leaves the run folder, also through a symlink, is refused and never
followed; only regular files are read; every failure is an *availability status*, never an
exception.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .layouts import NOT_REGULAR_FILE, OUTSIDE_RUN_FOLDER, map_artifact_dir, runner_attempt_dir

AVAILABLE = "available"
MISSING = "missing"
INVALID = "invalid"
UNREADABLE = "unreadable"

_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True)
class ArtifactDir:
    """Where an attempt's artifacts are, or why there are none.

    ``relative`` is the normalized folder relative to the run folder ("." for the run
    folder itself); it is None when the folder was refused, with ``refused_reason`` set.
    """

    relative: str | None
    refused_reason: str | None = None

    @property
    def refused(self) -> bool:
        return self.relative is None


@dataclass(frozen=True)
class JsonFile:
    """The outcome of reading one JSON file: status, parsed value, and why not."""

    status: str
    value: Any = None
    reason: str | None = None
    path: str | None = None  # relative to the run folder

    @property
    def available(self) -> bool:
        return self.status == AVAILABLE


def conventional_dir(task_id: str, attempt: int) -> str:
    """The flat layout's folder convention (R4): tasks/<task>, tasks/<task>/attempt-<n> for
    n > 1 (the runner's ``attempt_<n>`` is looked for first, ``resolve_artifact_dir``)."""
    if attempt > 1:
        return f"tasks/{task_id}/attempt-{attempt}"
    return f"tasks/{task_id}"


def normalize_relative(path: str) -> ArtifactDir:
    """Normalize a recorded relative folder, refusing absolute or escaping paths (R5, R43)."""
    if "\x00" in path:
        return ArtifactDir(None, "contains a NUL byte")
    unified = path.replace("\\", "/")
    if unified.startswith("/") or _DRIVE.match(unified):
        return ArtifactDir(None, "absolute path")
    normalized = posixpath.normpath(unified) if unified else "."
    if normalized == ".." or normalized.startswith("../"):
        return ArtifactDir(None, "leaves the run folder")
    return ArtifactDir(normalized)


def resolve_artifact_dir(
    run_dir: Path, real_run_dir: str, recorded: object, task_id: str, attempt: int,
    checked: dict[str, bool] | None = None,
) -> ArtifactDir:
    """The attempt's artifact folder (R4, R5): recorded ``artifact_dir`` or the convention.

    A recorded folder is first mapped into the run folder (layouts.map_artifact_dir: the
    runner records its own absolute path); without one, the runner's
    ``tasks/<task>/attempt_<n>`` when that folder exists, else ``conventional_dir``.
    ``real_run_dir`` is ``os.path.realpath(run_dir)``, computed once per run; its last
    segment is the run folder's name. A folder whose real location (symlinks resolved) is
    outside the run folder is refused. ``checked`` (one dict per run) remembers folders
    already found to be plain folders, so that a run's thousands of attempts share the
    checks of their common parents. A task id holding a NUL byte gives the row no artifacts
    (R43), whatever folder it records.
    """
    if "\x00" in task_id:
        return ArtifactDir(None, "the task_id contains a NUL byte")
    if recorded is None:
        candidate = normalize_relative(runner_attempt_dir(task_id, attempt))
        if candidate.refused or not os.path.isdir(os.path.join(real_run_dir, candidate.relative)):
            candidate = normalize_relative(conventional_dir(task_id, attempt))
    elif isinstance(recorded, str):
        candidate = normalize_relative(map_artifact_dir(recorded, os.path.basename(real_run_dir)))
    else:
        return ArtifactDir(None, "artifact_dir is not a string")
    if candidate.refused:
        return candidate
    if not _stays_inside(real_run_dir, candidate.relative, checked if checked is not None else {}):
        return ArtifactDir(None, "resolves (through a symlink) outside the run folder")
    return candidate


def _stays_inside(real_run_dir: str, relative: str, checked: dict[str, bool]) -> bool:
    """Whether ``realpath(real_run_dir/relative)`` is the run folder or below it.

    Walks the normalized relative path one folder at a time: while no component is a
    symlink the real path is the path itself (inside); at the first symlink the whole path
    is resolved with ``os.path.realpath``; a component that does not exist ends the walk
    (nothing below it can be a symlink). Plain folders are remembered in ``checked``.
    """
    if relative == ".":
        return True
    path = real_run_dir
    for part in relative.split("/"):
        path = f"{path}{os.sep}{part}"
        if checked.get(path):
            continue
        try:
            mode = os.lstat(path).st_mode
        except (OSError, ValueError):
            return True  # does not exist (or cannot be looked at): its files will be missing
        if stat.S_ISLNK(mode):
            real = os.path.realpath(os.path.join(real_run_dir, relative))
            return real == real_run_dir or real.startswith(real_run_dir + os.sep)
        checked[path] = True
    return True


#: How deeply arrays and objects read may nest in one another: as deeply as the one JSON
#: writer writes (jsonio.json_bytes: orjson's limit), so that whatever is read can be written
#: again (a results row is stored with its unknown keys, run-directory.md). JSON nested deeper
#: is JSON the pipeline cannot read: a bad row, an invalid file (docs/metric-choices.md).
MAX_DEPTH = 254


class TooDeep(ValueError):
    """JSON nested deeper than MAX_DEPTH."""

    def __init__(self) -> None:
        super().__init__(f"JSON nested deeper than {MAX_DEPTH} levels (arrays and objects inside one another), "
                         "deeper than the pipeline writes JSON")


#: A UTF-8 byte order mark, which an editor may put at the start of a file: ignored where
#: JSON is read (RFC 8259 8.1 lets a parser ignore it), so that the first line of a
#: results.jsonl saved by such an editor is not a bad row.
BOM = b"\xef\xbb\xbf"


def _loads(data: bytes) -> Any:
    """Parse JSON bytes (a leading BOM ignored); orjson first, the standard library for what
    orjson refuses.

    The fallback accepts what the standard library accepts (NaN, Infinity, integers of
    any size, those beyond LONGEST_INTEGER digits read as infinities): such values become
    unavailable later (R42) instead of losing the whole file or line. Raises ValueError (or
    UnicodeDecodeError) when the data is not JSON, or nests deeper than MAX_DEPTH.
    """
    data = data.removeprefix(BOM)
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return loads_exact(data)  # not UTF-8 -> UnicodeDecodeError (a ValueError)
    if data.count(b"[") + data.count(b"{") > MAX_DEPTH:  # only then can it nest that deep
        try:
            orjson.dumps(value)  # what orjson read it writes, unless it nests too deeply
        except TypeError:
            raise TooDeep() from None
    return value


def loads_json(data: bytes) -> Any:
    """Public wrapper of the JSON parser used for every input file and line."""
    return _loads(data)


def loads_exact(data: bytes) -> Any:
    """Parse JSON bytes keeping every integer exact, whatever its size.

    orjson reads an integer beyond 64 bits as the nearest float; a count such as a
    planned ``attempts`` of 10**20 (R26 sets no upper bound) must stay an integer. The
    standard library keeps it, and otherwise reads what ``_loads`` reads (it is
    ``_loads``'s fallback).
    Used for the small run-level files and for a results line whose attempt came out as
    such a float. A string with a lone surrogate escape (``"\\ud800"``: no character of
    any text, which orjson refuses and the standard library reads) is not JSON text here
    either: ValueError, as for bytes that are not UTF-8, and for JSON nested deeper than
    MAX_DEPTH.
    """
    try:
        value = json.loads(data.removeprefix(BOM).decode("utf-8"), parse_int=_integer)
    except RecursionError:
        raise TooDeep() from None
    _refuse_unwritable(value)
    return value


#: The most digits an integer of an input file may have and still be read exactly. Python
#: reads and writes integers of at most 4,300 digits (``sys.int_info.default_max_str_digits``),
#: and the counts a run adds up from them (planned and missing attempts) must still be written
#: to metrics.json and the reports: 4,000 leaves room for the sum of any number of them.
LONGEST_INTEGER = 4000


def _integer(text: str) -> int | float:
    """A JSON integer, exact; beyond LONGEST_INTEGER digits (far beyond the float range, which
    ends at 309) an infinity of its sign, unavailable as every number beyond the float range is
    (R42), so that the value alone is lost, not its line or its file."""
    negative = text.startswith("-")
    if len(text) - negative <= LONGEST_INTEGER:
        return int(text)
    return float("-inf") if negative else float("inf")


def _refuse_unwritable(value: Any) -> None:
    """ValueError when the parsed ``value`` holds what nothing could write out again: a string
    (a key or a value) with a lone surrogate (not UTF-8 text), or arrays and objects nested
    deeper than MAX_DEPTH."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError("a string holds a lone surrogate escape (\\ud800-\\udfff), which is not text") from None
        elif isinstance(item, (dict, list)):
            if depth == MAX_DEPTH:
                raise TooDeep()
            children = [*item, *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)


#: Open without following a final symlink and without blocking on a FIFO.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def read_json_file(run_dir: Path, real_run_dir: str | None, relative: str, exact: bool = False) -> JsonFile:
    """Read one JSON file below the run folder without ever raising (R3, R5).

    missing: no such file; unreadable: not a regular file, a symlink leaving the run
    folder, or an OS error; invalid: empty, not UTF-8, not JSON or nested deeper than
    MAX_DEPTH. ``exact``: parse with
    ``loads_exact`` (integers beyond 64 bits stay integers). ``real_run_dir``: the run
    folder's resolved path, or None to resolve it only when the careful path needs it (a
    caller reading one or two files of a folder).

    The common case (a regular file, not a symlink) costs one open, one fstat and one
    read; anything else (missing, symlink, special file, error) takes the careful path.
    """
    full = os.path.join(real_run_dir if real_run_dir is not None else str(run_dir), relative)

    def carefully() -> JsonFile:
        real = real_run_dir if real_run_dir is not None else os.path.realpath(run_dir)
        return _read_json_file_carefully(os.path.join(real, relative), real, relative, exact)

    if not hasattr(os, "O_NOFOLLOW"):
        return carefully()
    try:
        fd = os.open(full, _OPEN_FLAGS)
    except (OSError, ValueError):
        return carefully()
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return carefully()
        data = _read_all(fd, st.st_size)
    except OSError as exc:
        return JsonFile(UNREADABLE, reason=f"cannot read: {exc.strerror or exc}", path=relative)
    finally:
        os.close(fd)
    return _parse_file(data, relative, exact)


def _read_all(fd: int, size: int) -> bytes:
    """Every byte of an open regular file whose size was ``size`` (it may have changed)."""
    data = os.read(fd, size + 1)
    if len(data) <= size:
        return data  # a short read of a regular file is its end
    chunks = [data]
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _read_json_file_carefully(full: str, real_run_dir: str, relative: str, exact: bool = False) -> JsonFile:
    """read_json_file for everything but a plain regular file: each status with its reason."""
    try:
        st = os.stat(full)  # follows symlinks
    except FileNotFoundError:
        if os.path.islink(full):
            return JsonFile(UNREADABLE, reason="dangling symlink", path=relative)
        return JsonFile(MISSING, reason="file not found", path=relative)
    except (OSError, ValueError) as exc:
        return JsonFile(UNREADABLE, reason=f"cannot stat: {exc}", path=relative)
    if not stat.S_ISREG(st.st_mode):
        return JsonFile(UNREADABLE, reason=NOT_REGULAR_FILE, path=relative)
    # The folder itself was checked by resolve_artifact_dir; a file that is a symlink
    # must not lead outside either.
    if os.path.islink(full):
        real = os.path.realpath(full)
        if not real.startswith(real_run_dir + os.sep):
            return JsonFile(UNREADABLE, reason=OUTSIDE_RUN_FOLDER, path=relative)
    try:
        with open(full, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return JsonFile(UNREADABLE, reason=f"cannot read: {exc.strerror or exc}", path=relative)
    return _parse_file(data, relative, exact)


def _parse_file(data: bytes, relative: str, exact: bool = False) -> JsonFile:
    """The status and value of a file's bytes: available, or invalid with the reason."""
    try:
        return JsonFile(AVAILABLE, loads_exact(data) if exact else _loads(data), path=relative)
    except UnicodeDecodeError:
        return JsonFile(INVALID, reason="not UTF-8", path=relative)
    except TooDeep as exc:
        return JsonFile(INVALID, reason=str(exc), path=relative)
    except ValueError as exc:
        if not data.strip():
            return JsonFile(INVALID, reason="empty file", path=relative)
        return JsonFile(INVALID, reason=f"not valid JSON ({_first_line(exc)})", path=relative)


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def artifact_file(artifact_dir: ArtifactDir, name: str) -> str | None:
    """Relative path of a file in an attempt's folder, None when the folder was refused."""
    if artifact_dir.refused:
        return None
    if artifact_dir.relative == ".":
        return name
    return f"{artifact_dir.relative}/{name}"
