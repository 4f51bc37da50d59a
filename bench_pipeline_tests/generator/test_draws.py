"""Tests of the draws before any attempt (bench_pipeline/generator/draws.py): the suite and
each run's RunDraw, deterministic per seed."""

from __future__ import annotations

import random
import re
from datetime import datetime, timezone

from bench_pipeline.generator.draws import build_suite, draw_run
from bench_pipeline.generator.world import MODELS, SKILLS

STARTED = datetime(2026, 11, 28, 10, 0, 0, tzinfo=timezone.utc)
NO_OFFSETS = {"metrics_k_absent": 1, "non_json_line": 1, "blank_line": 1, "manifest_extra_keys": 1,
              "running": 1, "aborted": 1}


def test_suite_takes_the_templates_in_order_and_suffixes_the_second_round() -> None:
    suite = build_suite(random.Random(1), 18)
    assert [t.id for t in suite[:2]] == ["open_wifi_settings", "toggle_bluetooth"]
    assert [t.id for t in suite[16:]] == ["open_wifi_settings_2", "toggle_bluetooth_2"]
    assert suite[2].rubric_spec == [
        {"id": "r1", "requirement": "Message goes to Ana"},
        {"id": "r2", "requirement": "Text matches exactly"},
        {"id": "r3", "requirement": "Message was sent, not drafted"},
    ]
    assert all(t.timeout_s in (120, 180, 300, 600) for t in suite)
    assert all(0.35 <= t.pass_probability <= 0.95 for t in suite)


def test_suite_is_deterministic_per_seed() -> None:
    assert build_suite(random.Random(4), 12) == build_suite(random.Random(4), 12)
    assert build_suite(random.Random(4), 12) != build_suite(random.Random(5), 12)


def test_a_run_draw_is_deterministic_per_seed() -> None:
    one = draw_run(random.Random(9), 0, 20, STARTED, NO_OFFSETS, True)
    two = draw_run(random.Random(9), 0, 20, STARTED, NO_OFFSETS, True)
    other = draw_run(random.Random(10), 0, 20, STARTED, NO_OFFSETS, True)
    assert one == two
    assert one.run_id != other.run_id and one.seed != other.seed


def test_a_run_draw_names_and_configures_the_run() -> None:
    draw = draw_run(random.Random(9), 3, 20, STARTED, NO_OFFSETS, True, id_prefix="ci-")
    assert re.fullmatch(r"ci-2026-11-28T10-00-00Z-[0-9a-f]{6}", draw.run_id)
    assert draw.index == 3 and draw.started == STARTED
    assert draw.model in MODELS
    assert draw.active_skills == sorted(draw.active_skills) and set(draw.active_skills) <= set(SKILLS)
    assert len(draw.active_skills) >= 2
    assert draw.judge_model == "judge-model"
    assert draw.edges == frozenset() and draw.status == "completed"
    assert draw.git_sha is None


def test_the_run_status_follows_its_edge_cases() -> None:
    running = draw_run(random.Random(9), 0, 20, STARTED, {**NO_OFFSETS, "running": 0}, True)
    aborted = draw_run(random.Random(9), 0, 50, STARTED, {**NO_OFFSETS, "aborted": 0}, True)
    assert running.status == "running" and running.edges == {"running"}
    assert aborted.status == "aborted" and aborted.edges == {"aborted"}
