"""What a generation draws before any attempt: the suite's tasks and each run's `RunDraw`
(id, seed, configuration, run-level edge cases), in the master generator's order."""

from __future__ import annotations

import random
from datetime import datetime

from .edge_cases import run_edges
from .records import RunDraw, Task
from .world import DEVICES, LAB_DEVICE, MODELS, SKILLS, TASK_TEMPLATES


def build_suite(rng: random.Random, count: int) -> list[Task]:
    """The suite's tasks: templates in order, suffixed `_2`, `_3`... when count exceeds them."""
    tasks = []
    for i in range(count):
        tid, category, prompt, rubric, answer, memory_ids, checks, skill = TASK_TEMPLATES[i % len(TASK_TEMPLATES)]
        round_no = i // len(TASK_TEMPLATES)
        tasks.append(Task(
            id=tid if round_no == 0 else f"{tid}_{round_no + 1}",
            category=category, prompt=prompt,
            rubric_spec=[{"id": f"r{n + 1}", "requirement": text} for n, text in enumerate(rubric)],
            expected_answer=answer, expected_memory_ids=list(memory_ids), env_checks=list(checks),
            skill=skill, timeout_s=rng.choice([120, 180, 300, 600]),
            pass_probability=round(rng.uniform(0.35, 0.95), 2)))
    return tasks


def draw_run(master: random.Random, index: int, runs: int, started: datetime,
             offsets: dict[str, int], edge_cases: bool, id_prefix: str = "") -> RunDraw:
    """Draw one run's id (``id_prefix`` first), configuration and run-level edge cases."""
    run_id = id_prefix + started.strftime("%Y-%m-%dT%H-%M-%SZ") + f"-{master.getrandbits(24):06x}"
    seed = master.getrandbits(64)
    model = master.choice(MODELS)
    master.choice(DEVICES)  # drawn as it always was, so that every later draw stays the same
    skills = sorted(master.sample(SKILLS, 2 + master.randrange(len(SKILLS) - 1)))
    master.random()  # the same: a judge on or off was drawn here
    # every run is measured in one lab (LAB_DEVICE, the judge on): one setup key, so that each run's
    # default baseline is an earlier generated run (comparison.md "The default baseline")
    device, judge_enabled = LAB_DEVICE, True
    with_cost = master.random() < 0.3
    edges = run_edges(index, runs, offsets, edge_cases)
    status = "running" if "running" in edges else "aborted" if "aborted" in edges else "completed"
    return RunDraw(index=index, run_id=run_id, seed=seed, started=started, status=status, model=model,
                   device=device, active_skills=skills, judge_enabled=judge_enabled,
                   judge_model="judge-model", with_cost=with_cost, edges=edges)
