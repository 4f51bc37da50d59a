"""Tests of the generator's world (bench_pipeline/generator/world.py): the task templates and
the tool vocabulary, classified by the metric's own device-action rule (reference 3.4)."""

from __future__ import annotations

import random

from bench_pipeline.attempt_metrics import DEVICE_ACTION_TOOLS, is_device_action
from bench_pipeline.generator.world import (
    PNG_BYTES,
    TASK_TEMPLATES,
    TOOL_CUM_WEIGHTS,
    TOOL_NAMES,
    TOOLS,
    screen_point,
)


def test_task_template_ids_are_unique() -> None:
    ids = [template[0] for template in TASK_TEMPLATES]
    assert len(ids) == 16
    assert len(set(ids)) == len(ids)


def test_the_non_device_tools_are_screenshot_search_and_recall() -> None:
    assert set(TOOLS) - DEVICE_ACTION_TOOLS == {"screenshot", "search", "recall_memory"}


def test_cumulative_weights_follow_the_tool_order() -> None:
    assert TOOL_NAMES[:3] == ["tap", "screenshot", "swipe"]
    assert TOOL_CUM_WEIGHTS[:3] == [30, 42, 50]
    assert TOOL_CUM_WEIGHTS[-1] == sum(weight for weight, _ in TOOLS.values()) == 98


def test_tool_inputs_are_objects_drawn_from_the_seed() -> None:
    first = [factory(random.Random(7)) for _, factory in TOOLS.values()]
    second = [factory(random.Random(7)) for _, factory in TOOLS.values()]
    assert first == second
    assert all(isinstance(tool_input, dict) for tool_input in first)


def test_screen_points_lie_on_the_screen() -> None:
    rng = random.Random(3)
    points = [screen_point(rng) for _ in range(200)]
    assert all(0 <= p["x"] < 1080 and 0 <= p["y"] < 2400 for p in points)


def test_every_drawn_tool_input_is_classified_as_the_reference_says() -> None:
    """Reference 3.4 on every input the factories draw: the read-only quick_action list and
    bridge queries are not device actions, the other allowlisted calls are."""
    rng = random.Random(11)
    seen: dict[str, set[bool]] = {}
    for name, (_, factory) in TOOLS.items():
        for _ in range(200):
            seen.setdefault(name, set()).add(is_device_action(name, factory(rng)))
    assert {name for name, flags in seen.items() if flags == {False}} == {"screenshot", "search", "recall_memory"}
    assert {name for name, flags in seen.items() if flags == {True, False}} == {
        "quick_action", "bridge_contacts", "bridge_calendar"}
    assert is_device_action("quick_action", {"list": True}) is False
    assert is_device_action("quick_action", {"action": "toggle_wifi", "list": False}) is True
    assert is_device_action("bridge_contacts", {"action": "Query", "name": "Ana"}) is False
    assert is_device_action("bridge_calendar", {"action": "list", "day": "2026-12-01"}) is False
    assert is_device_action("bridge_calendar", {"action": "create", "title": "Dentist"}) is True
    assert is_device_action("bridge_notification", {"action": "dismiss", "id": 3}) is True


def test_the_png_is_a_png() -> None:
    assert PNG_BYTES.startswith(b"\x89PNG\r\n\x1a\n")
