"""scripts/instance.sh keeps $DAGSTER_HOME/dagster.yaml the project's settings
(bench_pipeline/local_instance.py): it replaces the project's own unedited copies, never a
file the user edited or wrote, and says which."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import yaml

from bench_pipeline import local_instance as li

ROOT = Path(__file__).resolve().parents[1]
SOURCE = (ROOT / "deploy" / "dagster.local.yaml").read_text()
OLD = "telemetry:\n  enabled: false\nrun_coordinator:\n  class: QueuedRunCoordinator\n"


def test_a_missing_file_is_the_stamped_source_and_still_the_same_yaml():
    decision = li.decide(SOURCE, None)
    assert decision.action == "create" and decision.message is None
    assert decision.text.splitlines()[0] == li.stamp_line(SOURCE)
    assert yaml.safe_load(decision.text) == yaml.safe_load(SOURCE)


def test_an_untouched_copy_of_the_current_source_is_kept_quietly():
    assert li.decide(SOURCE, li.stamped(SOURCE)) == li.Decision("keep")


def test_an_untouched_copy_of_an_earlier_source_is_updated_and_said_so():
    decision = li.decide(SOURCE, li.stamped(OLD), "home/dagster.yaml")
    assert decision.action == "update" and decision.text == li.stamped(SOURCE)
    assert "updated home/dagster.yaml" in decision.message and "unedited copy" in decision.message


def test_an_edited_copy_is_never_replaced():
    edited = li.stamped(OLD).replace("enabled: false", "enabled: true")
    decision = li.decide(SOURCE, edited, "home/dagster.yaml")
    assert decision.action == "leave" and decision.text is None
    assert "was edited" in decision.message and "left as it is" in decision.message
    assert "diff -u home/dagster.yaml deploy/dagster.local.yaml" in decision.message
    # The note tells how to silence it: the current stamp as first line keeps the file, quietly.
    assert li.stamp_line(SOURCE) in decision.message
    silenced = li.stamp_line(SOURCE) + "\n" + edited.partition("\n")[2]
    assert li.decide(SOURCE, silenced) == li.Decision("keep")


def test_an_edit_of_the_current_copy_is_kept_quietly():
    edited = li.stamped(SOURCE) + "# my own note\n"
    assert li.decide(SOURCE, edited) == li.Decision("keep")


def test_the_unstamped_copies_of_earlier_versions_are_recognised():
    """Every version of deploy/dagster.local.yaml that an older instance.sh copied without a
    stamp is in EARLIER_COPIES (checked against git when the history is there)."""
    known = set(li.EARLIER_COPIES)
    log = subprocess.run(["git", "log", "--format=%H", "--", "deploy/dagster.local.yaml"], cwd=ROOT,
                         capture_output=True, text=True)
    stamped_since = "bench_pipeline.local_instance"
    for commit in log.stdout.split():
        script = subprocess.run(["git", "show", f"{commit}:scripts/instance.sh"], cwd=ROOT, capture_output=True,
                                text=True)
        if stamped_since in script.stdout:
            continue  # copied with a stamp by then: recognised by the stamp, not by its hash
        old = subprocess.run(["git", "show", f"{commit}:deploy/dagster.local.yaml"], cwd=ROOT, capture_output=True)
        assert hashlib.sha256(old.stdout).hexdigest() in known, commit
    # The first local settings (commit 8017f62), as an older scripts/instance.sh copied them.
    first = ("# The embedded default instance: SQLite storage under $DAGSTER_HOME.\n"
             "# scripts/run.sh and scripts/ui.sh copy this file to $DAGSTER_HOME/dagster.yaml when it is missing.\n"
             "telemetry:\n  enabled: false\nrun_coordinator:\n  module: dagster.core.run_coordinator\n"
             "  class: QueuedRunCoordinator\n  config:\n    max_concurrent_runs: 2\n    tag_concurrency_limits:\n"
             "      - key: \"bench/kind\"\n        value: \"cross_run\"\n        limit: 1\n")
    decision = li.decide(SOURCE, first, "home/dagster.yaml")
    assert decision.action == "update" and decision.text == li.stamped(SOURCE)
    assert "8017f62" in decision.message


def test_a_users_own_file_is_left_with_a_note_and_an_unstamped_current_copy_is_stamped():
    own = "run_storage:\n  module: dagster_postgres.run_storage\n"
    decision = li.decide(SOURCE, own, "home/dagster.yaml")
    assert decision.action == "leave" and "is not a copy scripts/instance.sh wrote" in decision.message
    assert li.decide(SOURCE, SOURCE) == li.Decision("update", li.stamped(SOURCE))


def test_the_command_writes_updates_and_leaves_files_as_instance_sh_runs_it(tmp_path):
    target = tmp_path / "home" / "dagster.yaml"

    def run() -> str:
        done = subprocess.run([sys.executable, "-m", "bench_pipeline.local_instance",
                               "deploy/dagster.local.yaml", str(target)], cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stderr

    assert run() == "" and target.read_text() == li.stamped(SOURCE)
    assert run() == ""
    target.write_text(li.stamped(OLD))
    assert "updated" in run() and target.read_text() == li.stamped(SOURCE)
    mine = li.stamped(OLD) + "# mine\n"
    target.write_text(mine)
    assert "was edited" in run() and target.read_text() == mine
    assert not list(target.parent.glob("*.tmp"))


OPENER = """
import sys, time
from pathlib import Path
import dagster
from bench_pipeline.dagster_internals import INSTANCE_STORAGE_MODULES
import importlib
for name in INSTANCE_STORAGE_MODULES:
    importlib.import_module(name)
from bench_pipeline.local_instance import open_instance
ready, go = Path(sys.argv[1]), Path(sys.argv[2])
ready.touch()
while not go.exists():
    time.sleep(0.001)
with open_instance() as instance:
    print(len(instance.get_runs(limit=1)))
"""


def test_commands_started_together_on_a_new_instance_open_it_in_turns(tmp_path):
    """Three processes open one new instance at the same moment (each waits, its imports done,
    for a shared signal), as run.sh and ui.sh started together on a fresh checkout do. Opened
    with plain ``DagsterInstance.get()`` this failed in 3 of 4 trials on this machine (``table
    alembic_version already exists``, ``UNIQUE constraint failed: alembic_version``): each
    created the new databases. Under ``open_instance`` each opens it, and every database has
    its schema version stamped once."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text(SOURCE)
    env = {**os.environ, "DAGSTER_HOME": str(home), "PYTHONPATH": str(ROOT)}
    go = tmp_path / "go"
    openers = [subprocess.Popen([sys.executable, "-c", OPENER, str(tmp_path / f"ready{n}"), str(go)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in range(3)]
    try:
        for n in range(3):
            for _ in range(6000):
                if (tmp_path / f"ready{n}").exists() or openers[n].poll() is not None:
                    break
                time.sleep(0.01)
        go.touch()
        results = [opener.communicate(timeout=120) for opener in openers]
    finally:
        for opener in openers:
            opener.kill()
    assert [(opener.returncode, out.strip()) for opener, (out, _) in zip(openers, results)] == [(0, "0")] * 3, \
        [err[-600:] for _, err in results]
    for database in (home / "history" / "runs.db", home / "history" / "runs" / "index.db",
                     home / "schedules" / "schedules.db"):
        with sqlite3.connect(database) as connection:
            assert len(connection.execute("select version_num from alembic_version").fetchall()) == 1, database


def test_a_home_where_no_lock_can_be_made_is_opened_without_one(tmp_path, monkeypatch):
    """Where the lock file cannot be made (a read-only DAGSTER_HOME, as an image may have),
    the instance is opened all the same, as ``DagsterInstance.get()`` gives it."""
    import dagster as dg

    home = tmp_path / "home"
    home.mkdir()
    dg.DagsterInstance.from_config(str(home)).dispose()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    tried = []

    def refused(path):
        tried.append(path)
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(li, "exclusive", refused)
    with li.open_instance() as instance:
        assert instance.get_runs(limit=1) == [] and instance.root_directory == str(home)
    assert tried == [home / li.OPEN_LOCK]
