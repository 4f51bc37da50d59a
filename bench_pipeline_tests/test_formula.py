"""The formula version and its bump rule (formula.py)."""

from __future__ import annotations

import importlib
import re

from bench_pipeline import formula


def test_the_version_is_a_dated_string():
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}\.\w+", formula.FORMULA_VERSION)


def test_the_bump_rule_names_modules_that_exist():
    """The rule names the modules whose change needs a new version; a module that moves
    without the rule following it fails here."""
    named = re.findall(r"``(\w+)``", formula.__doc__.split("Bump rule:")[1])
    assert {"attempt_metrics", "task_groups", "capability", "stats", "measured_fields", "vocabulary"} <= set(named)
    for name in named:
        importlib.import_module(f"bench_pipeline.{name}")
