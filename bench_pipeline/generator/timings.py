"""The runner's timers of one attempt (reference 3.2): setup, the task's wall time, the
screenshot captures and the judge, and so the attempt's end time."""

from __future__ import annotations

import random
from typing import Any

from .outcomes import EXECUTION
from .records import Evaluation, History, Task


def attempt_timing(rng: random.Random, task: Task, kind: str, history: History,
                   ev: Evaluation) -> dict[str, Any]:
    """Runner timers (reference 3.2) and the attempt's end time."""
    execution = EXECUTION[kind]
    setup_ms = 400 + rng.randrange(5600) + (3000 if kind == "environment" else 0)
    if execution == "none":
        wall = None
    elif kind.startswith("timeout"):
        wall = task.timeout_s * 1000 + rng.randrange(5, 400)
    elif execution == "prompt":
        wall = 1500 + rng.randrange(28000)
    else:
        model_ms = sum(c.duration_ms or 0 for c in history.model_calls)
        tool_ms = sum(s.duration_ms for s in history.steps)
        wall = int(model_ms + tool_ms) + 200 + rng.randrange(2800)
    missing_input = ev.errors.get("error") == "input screenshot missing"
    pre_tried = kind != "environment"  # setup failed before the runner's pre screenshot
    pre_ok = pre_tried and not missing_input and rng.random() < 0.98
    post_ok = execution != "none" and rng.random() < 0.97
    pre_ms = 250 + rng.randrange(650) if pre_ok else None
    post_ms = 250 + rng.randrange(650) if post_ok else None
    judge_ms = 1000 + rng.randrange(5000) if ev.judge_file is not None else 0
    elapsed = setup_ms + (wall or 0) + (pre_ms or 0) + (post_ms or 0) + judge_ms
    captured = [ms for ms in (pre_ms, post_ms) if ms is not None]
    return {
        "setup_ms": setup_ms, "task_wall_ms": wall, "pre_ok": pre_ok, "post_ok": post_ok,
        "screenshot_capture_ms": sum(captured) if captured else None,
        "pre_error": None if pre_ok or not pre_tried else "screencap returned an empty image",
        "post_error": None if post_ok or execution == "none" else "adb screencap failed",
        "elapsed_ms": elapsed,
    }
