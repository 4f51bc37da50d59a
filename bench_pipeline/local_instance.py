"""`python -m bench_pipeline.local_instance SOURCE TARGET`: keep $DAGSTER_HOME/dagster.yaml the
project's local instance settings (deploy/dagster.local.yaml) without overwriting a user's edits.

scripts/instance.sh (sourced by run.sh, ui.sh and backfill.sh) calls it on every start. The copy
it writes starts with a stamp line naming the hash of what it copied, so a later start can tell
an untouched copy (its content still has that hash) from an edited one:

- no file: the source is copied, stamped;
- an untouched stamped copy of an earlier source: replaced by the current one (and said so);
- an untouched copy of the current source: left as it is, quietly;
- an edited stamped copy: left as it is; when the source has changed since it was copied, a
  note says so on every start, until the file's first line is the current stamp (which the note
  prints) or the file is deleted;
- a file without a stamp: replaced when it is byte for byte one of the project's earlier,
  unstamped copies (EARLIER_COPIES, from before the stamp existed) or the current source;
  otherwise it is the user's own file and is left as it is, with the same note.

Only the standard library is imported: it runs before every start of the scripts.

``open_instance`` is how the project's commands open that instance (the main command, its
``--prepare-ui``, the refresh process and the backfill command): the opening is taken in turns
under a lock in $DAGSTER_HOME, so that two commands started at once on a new instance (run.sh
beside ui.sh on a fresh checkout) do not both create its SQLite databases. Dagster's first
opening creates their tables and stamps their schema version without a lock of its own; two
processes doing it at once fail ("table ... already exists") or leave the instance refusing to
open ("Version table 'alembic_version' has more than one head present": dagster-io/dagster#27390).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .file_lock import exclusive

if TYPE_CHECKING:
    import dagster as dg

STAMP = ("# Copied by scripts/instance.sh from deploy/dagster.local.yaml (sha256 {digest}); "
         "an edited copy is never replaced.")
STAMP_PATTERN = re.compile(r"# Copied by scripts/instance\.sh from deploy/dagster\.local\.yaml \(sha256 ([0-9a-f]{16})\)")

#: sha256 of every version of deploy/dagster.local.yaml that scripts/instance.sh copied without a
#: stamp (git log -- deploy/dagster.local.yaml), with the commit that introduced it.
EARLIER_COPIES = {
    "8c45e174692686aa939cf5721f0ffa755b757d7484b5bce2480a0f835d1d0a2e": "8017f62",
}


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def stamp_line(source: str) -> str:
    return STAMP.format(digest=digest(source))


def stamped(source: str) -> str:
    """What the copy of ``source`` holds: the stamp line, then the source as it is."""
    return stamp_line(source) + "\n" + source


@dataclass(frozen=True)
class Decision:
    """``action``: create, update, keep or leave (an edited or foreign file kept as it is);
    ``text``: the file's new content (create, update); ``message``: what to tell the user."""

    action: str
    text: str | None = None
    message: str | None = None


def decide(source: str, current: str | None, path: str = "$DAGSTER_HOME/dagster.yaml") -> Decision:
    """What to do with the instance file ``path`` holding ``current`` (None: missing), given the
    project's settings ``source``."""
    if current is None:
        return Decision("create", stamped(source))
    first, _, body = current.partition("\n")
    match = STAMP_PATTERN.match(first)
    if match is not None:
        copied = match.group(1)
        if digest(body) == copied:  # untouched since it was copied
            if copied == digest(source):
                return Decision("keep")
            return Decision("update", stamped(source),
                            f"updated {path} to the current deploy/dagster.local.yaml "
                            f"(it was the project's unedited copy of an earlier version)")
        if copied == digest(source):  # edited, and the project's settings are still the ones it was copied from
            return Decision("keep")
        return Decision("leave", message=_note(path, source, "was edited after scripts/instance.sh copied it"))
    whole = hashlib.sha256(current.encode("utf-8")).hexdigest()
    if whole in EARLIER_COPIES:
        return Decision("update", stamped(source),
                        f"updated {path} to the current deploy/dagster.local.yaml "
                        f"(it was the project's copy of the version of {EARLIER_COPIES[whole]})")
    if current == source:
        return Decision("update", stamped(source))
    return Decision("leave", message=_note(path, source, "is not a copy scripts/instance.sh wrote"))


def _note(path: str, source: str, why: str) -> str:
    return (f"{path} {why}: left as it is, but deploy/dagster.local.yaml has other settings (the run "
            f"queue's and sensor daemon's intervals, docs/operations.md). Compare them "
            f"(diff -u {path} deploy/dagster.local.yaml) and take what you want; to keep your file and "
            f"stop this note, make its first line:\n  {stamp_line(source)}\n"
            f"(or delete the file to start from the project's).")


def sync(source_path: Path, target_path: Path) -> Decision:
    """Apply ``decide`` to the files: write the new content atomically, return the decision."""
    source = source_path.read_text(encoding="utf-8")
    try:
        current = target_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        current = None
    decision = decide(source, current, str(target_path))
    if decision.text is not None:
        target_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = target_path.with_name(target_path.name + ".tmp")
        tmp.write_text(decision.text, encoding="utf-8")
        os.replace(tmp, target_path)
    return decision


#: The lock file in $DAGSTER_HOME under which ``open_instance`` opens the instance.
OPEN_LOCK = ".instance-open.lock"


@contextlib.contextmanager
def open_instance() -> Iterator[dg.DagsterInstance]:
    """``DagsterInstance.get()`` (the instance of $DAGSTER_HOME), opened under an exclusive lock
    on ``$DAGSTER_HOME/.instance-open.lock`` so that one process at a time opens it: the first
    creates its databases, the next finds them made. The lock is held only while the instance
    is made (an opened instance is not locked: the commands use it side by side). Without
    DAGSTER_HOME, or where no lock file can be made there (a read-only home, as an image may
    have: its storage is then a server's, which the race does not concern), Dagster's own
    ``get()`` as it is."""
    import dagster as dg

    home = os.environ.get("DAGSTER_HOME")
    with contextlib.ExitStack() as locked:
        if home:
            try:
                Path(home).mkdir(parents=True, exist_ok=True)
                locked.enter_context(exclusive(Path(home) / OPEN_LOCK))
            except OSError:
                pass
        instance = dg.DagsterInstance.get()
    with instance:
        yield instance


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m bench_pipeline.local_instance SOURCE TARGET", file=sys.stderr)
        return 2
    decision = sync(Path(args[0]), Path(args[1]))
    if decision.message:
        print(f"scripts/instance.sh: {decision.message}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
