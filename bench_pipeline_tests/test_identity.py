"""What a run measured (identity.py): read from manifest.json and suite.json, unknown when
missing or of the wrong type, never a default."""

from __future__ import annotations

import json
import os

from bench_pipeline.identity import RunIdentity, differences, read_identity, run_identity
from bench_pipeline.setup import Setup

MANIFEST = {"started_at": "2026-11-28T10:00:00Z", "code": {"git_sha": "4f2c9e1", "dirty": False},
            "suite": {"name": "android-core", "version": "7"},
            "model": {"provider": "example", "name": "agent-model-large"},
            "judge": {"enabled": True, "model": "judge-model"},
            "platform": {"device": "emulator-pixel", "os": "android-15"},
            "active_skills": ["calendar", "contacts"]}


def test_the_manifest_example_of_run_directory_md():
    ident = run_identity(MANIFEST, {})
    setup = Setup(suite_version="7", judge_enabled=True, judge_model="judge-model", platform_device="emulator-pixel",
                  platform_os="android-15", skills=frozenset({"calendar", "contacts"}))
    assert ident == RunIdentity(suite="android-core", suite_version="7", model_name="agent-model-large",
                                model_provider="example", git_sha="4f2c9e1", dirty=False,
                                started_at="2026-11-28T10:00:00Z", setup=setup)
    assert setup.key == (True, "judge-model", "emulator-pixel", "android-15")
    assert (setup.judge_text, setup.platform_text, setup.skills_text) == (
        "judge judge-model", "emulator-pixel / android-15", "calendar, contacts")
    assert (ident.model_text, ident.code_text, ident.suite_text) == (
        "agent-model-large (example)", "4f2c9e1 (clean)", "android-core version 7")


def test_suite_json_wins_and_wrong_types_are_unknown():
    ident = run_identity({"model": {"name": 3}, "code": {"git_sha": None, "dirty": "yes"}, "suite": "m",
                          "started_at": 5}, {"name": "from-suite", "version": 8})
    assert ident == RunIdentity(suite="from-suite", suite_version="8")
    assert (ident.model_text, ident.code_text) == ("unknown", "unknown")
    assert run_identity(None, None) == RunIdentity()
    assert RunIdentity(git_sha="abc", dirty=True).code_text == "abc (dirty: uncommitted changes)"
    assert RunIdentity(git_sha="abc").code_text == "abc"


def test_differences_need_both_values_known():
    a = run_identity(MANIFEST)
    assert differences(a, a) == []
    assert differences(a, RunIdentity()) == []
    other = run_identity({**MANIFEST, "model": {"provider": "other", "name": "agent-model-large"},
                          "code": {"git_sha": "0000000"}, "suite": {"name": "android-core", "version": "8"}})
    assert differences(a, other) == ["model", "code", "suite version"]  # same name, other provider


def test_read_identity_of_a_folder(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps(MANIFEST))
    (tmp_path / "suite.json").write_text("{ truncated")
    assert read_identity(tmp_path) == run_identity(MANIFEST)
    assert read_identity(tmp_path / "missing") == RunIdentity()
    assert read_identity(None) == RunIdentity()


def test_read_identity_never_waits_on_a_fifo_and_refuses_what_is_not_text(tmp_path):
    """A FIFO in place of manifest.json is unreadable, not a read that never ends; a string
    with a lone surrogate escape is not text: the file is unusable (artifacts.loads_exact)."""
    os.mkfifo(tmp_path / "manifest.json")
    (tmp_path / "suite.json").write_text('{"name": "\\ud800"}')
    assert read_identity(tmp_path) == RunIdentity()
