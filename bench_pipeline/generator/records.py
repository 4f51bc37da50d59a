"""The generator's records: a task, a run's draw, and what one attempt is built from (history
calls and steps, episode facts, evaluation) and produces."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class Task:
    """One suite task plus the hidden pass probability the generator uses."""

    id: str
    category: str
    prompt: str
    rubric_spec: list[dict]
    expected_answer: str | None
    expected_memory_ids: list[str]
    env_checks: list[str]
    skill: str | None
    timeout_s: int
    pass_probability: float

    def suite_entry(self) -> dict:
        """The task as suite.json lists it (the pass probability stays hidden)."""
        return {"id": self.id, "category": self.category, "prompt": self.prompt,
                "rubric_spec": self.rubric_spec, "expected_answer": self.expected_answer,
                "expected_memory_ids": self.expected_memory_ids, "timeout_s": self.timeout_s}


@dataclass
class RunDraw:
    """Run-level choices, all drawn from the master generator."""

    index: int
    run_id: str
    seed: int
    started: datetime
    status: str
    model: str
    device: tuple[str, str]
    active_skills: list[str]
    judge_enabled: bool
    judge_model: str
    with_cost: bool
    edges: frozenset[str]
    git_sha: str | None = None  # None: drawn from the run's seed (every run its own build)


@dataclass
class ModelCall:
    """A usage-bearing history message, with its per-message token values."""

    input_tokens: int
    output_tokens: int
    total_tokens: int
    cached_tokens: int | None
    reasoning_tokens: int | None
    duration_ms: int | None
    visual: bool = False


@dataclass
class ToolStep:
    """A history tool call and what its result looked like."""

    name: str
    tool_input: dict
    device: bool
    duration_ms: float
    result_index: int | None = None
    error: bool = False
    screenshot: bool = False


@dataclass
class History:
    """An attempt's history.json messages and the calls, steps and their order they hold."""

    messages: list[dict]
    model_calls: list[ModelCall]
    steps: list[ToolStep]
    timeline: list[ModelCall | ToolStep]
    final_response: str | None


@dataclass
class EpisodeFacts:
    """What the pipeline derives from an episode.json we wrote."""

    has_events: bool = False
    device_ms: float = 0
    device_complete: bool = True
    error_count: int = 0
    first_error: tuple[int, str] | None = None
    replan_count: int = 0
    replan_seen: bool = False
    extra: dict = field(default_factory=dict)


@dataclass
class Evaluation:
    """Assertion, judge and environment-state results of one attempt."""

    quality: float | None
    pass_count: int | None
    total: int | None
    rubric: list[dict] = field(default_factory=list)
    hard_assertions: dict = field(default_factory=dict)
    hard_failures: list[dict] = field(default_factory=list)
    answer_match: bool | None = None
    memory_match: bool | None = None
    memory_source: str | None = None
    env_assertions: list[dict] = field(default_factory=list)
    env_file: dict | None = None
    judge_file: dict | None = None
    errors: dict = field(default_factory=dict)
    stage_label: str | None = None
    answer_correct: bool = True
    recall_complete: bool = True


@dataclass
class AttemptOutput:
    """One attempt: its results.jsonl row, its folder, the folder's files and its end time."""

    row: dict
    folder: str
    files: dict[str, bytes]
    finished: datetime
