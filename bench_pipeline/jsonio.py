"""The one JSON writer of every output file: metrics.json, attempts.jsonl, the reports' data,
the frames' JSON columns, the Langfuse outbox and records.

UTF-8, keys in insertion order, NaN and infinities written as null; files are replaced
atomically so that a reader never sees half a file.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson


def json_bytes(value: object, indent: bool = False) -> bytes:
    """JSON bytes as every output file writes them (UTF-8, keys in insertion order).

    orjson, except for what it cannot encode: integers beyond 64 bits (valid numbers up
    to the float range, R42) go through the standard library, with the same layout and,
    as orjson does, NaN and infinities from the input written as null (``jsonable``).
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else None)
    except TypeError:
        text = json.dumps(jsonable(value), ensure_ascii=False, allow_nan=False,
                          indent=2 if indent else None, separators=(",", ": ") if indent else (",", ":"))
        return text.encode("utf-8")


def read_written(data: bytes) -> Any:
    """Parse JSON that ``json_bytes`` wrote for the package to read again (what the catalog
    refresh keeps between refreshes), with orjson as it is: such a file needs none of the
    input files' defences (artifacts.loads_json: a byte-order mark, nesting deeper than the
    writer writes, NaN, which is written as null). Raises ValueError when the data is not JSON."""
    return orjson.loads(data)


def dumps(value: object) -> bytes:
    """Indented JSON bytes (metrics.json)."""
    return json_bytes(value, indent=True)


def encode_records(records: list[dict]) -> bytes:
    """JSON lines: one compact object per record (attempts.jsonl)."""
    return b"".join(json_bytes(r) + b"\n" for r in records)


class EncodedJSON:
    """A value whose compact JSON is already made: ``reports`` writes ``encoded`` as is
    instead of encoding ``value`` a second time (report.html's details). (Not a dataclass:
    orjson would encode a dataclass's fields itself.)"""

    __slots__ = ("value", "encoded")

    def __init__(self, value: Any, encoded: bytes) -> None:
        self.value, self.encoded = value, encoded


def written_as_is(text: str) -> orjson.Fragment:
    """JSON text ``json_bytes`` wrote earlier, to be written again as it is inside a larger
    value (the catalog refresh's kept entries of system_repeats), not parsed and encoded again."""
    return orjson.Fragment(text)


def jsonable(value: Any) -> Any:
    """Make run values JSON-safe: NaN/Infinity become null, unknown types become strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, EncodedJSON):
        return jsonable(value.value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return str(value)


def short_name(name: str) -> str:
    """A file name to build a side file's name on (a temporary file, an index, a lock): as it
    is, or, when adding a prefix and a suffix could pass a file system's 255 bytes, its first
    100 characters and a hash of it."""
    if len(name.encode("utf-8", "surrogateescape")) <= 200:
        return name
    return f"{name[:100]}-{hashlib.sha256(name.encode('utf-8', 'surrogateescape')).hexdigest()[:12]}"


def write_atomic(path: Path, data: bytes | Iterable[bytes]) -> None:
    """Write ``data`` (bytes, or byte pieces in order, which may be made as they are written)
    to a temporary file and rename it, so that a reader never sees half a file; when making
    or writing the data fails, the file is left as it was."""
    tmp = path.with_name(f".{short_name(path.name)}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            if isinstance(data, bytes):
                fh.write(data)
            else:
                fh.writelines(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # the file itself is as it was
        raise
