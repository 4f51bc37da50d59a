"""Deterministic synthetic benchmark runs in the `run-directory.md` layout.

`generate_runs` writes run folders whose rows, history, episode and trace files agree with one
another: every recorded metric in a row is what `metrics-reference.txt` derives from the
attempt's artifacts (so derived == recorded for a clean attempt). With `edge_cases=True` a
known mix of legacy and broken inputs is added (see `ROW_EDGE_RATES` and `RUN_EDGE_PERIODS`).

Everything is drawn from `random.Random(seed)`; nothing reads the clock or the global random
state, so the same arguments always give the same bytes.
"""

from __future__ import annotations

import base64
import itertools
import random
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

import orjson

from .attempt_metrics import DEVICE_ACTION_TOOLS, READ_ONLY_BRIDGE_ACTIONS, TOKEN_SOURCES
from .vocabulary import ROW_METRICS_KEYS

BASE_TIME = datetime(2026, 11, 28, 10, 0, 0, tzinfo=timezone.utc)
SUITE_NAME = "android-core"
SUITE_VERSION = "7"

# Reference 3.4: the device-action allowlist and the read-only bridge actions it excludes.
DEVICE_TOOLS = DEVICE_ACTION_TOOLS
READ_ONLY_ACTIONS = READ_ONLY_BRIDGE_ACTIONS

# A valid 1x1 PNG: written as pre.png/post.png and used as screenshot tool data.
PNG_B64 = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
PNG_BYTES = base64.b64decode(PNG_B64)

SCRIPT_TAG = "<script>alert(1)</script>"

# Outcome kinds, after the reference's outcome table:
# kind -> (status, failure_class, raw success, agent_eligible, recorded stage label)
OUTCOMES: dict[str, tuple[str, str | None, bool | None, bool, str | None]] = {
    "passed": ("passed", None, True, True, None),
    "agent_failure": ("failed", "agent", False, True, None),
    "timeout_evidence": ("timeout", "agent", False, True, "unknown"),
    "chat_error_evidence": ("failed", "unknown", False, True, "unknown"),
    "timeout_no_evidence": ("timeout", "unknown", None, False, "unknown"),
    "chat_error_no_evidence": ("failed", "unknown", None, False, "unknown"),
    "skipped": ("skipped", "skipped", None, False, "setup"),
    "environment": ("failed", "environment", False, False, "setup"),
    "judge_error": ("judge_error", "evaluation", None, False, "evaluation"),
}
# How much of the Agent ran: full history, a history cut short, the prompt only, nothing.
EXECUTION = {
    "passed": "full", "agent_failure": "full", "judge_error": "full",
    "timeout_evidence": "cut", "chat_error_evidence": "cut",
    "timeout_no_evidence": "prompt", "chat_error_no_evidence": "prompt",
    "skipped": "none", "environment": "none",
}
# Percent of attempts hit by an incident regardless of the task; the rest pass with the
# task's pass probability or fail as the Agent's own failure.
INCIDENT_PERCENT = {
    "timeout_no_evidence": 2.0, "chat_error_no_evidence": 1.5, "skipped": 3.0,
    "environment": 2.5, "judge_error": 4.0,
}
AGENT_FAILURE_WEIGHTS = {"agent_failure": 84, "timeout_evidence": 10, "chat_error_evidence": 6}

# Per-attempt rates of the row/artifact edge cases (edge_cases=True only).
ROW_EDGE_RATES = {
    "legacy_row": 0.04,            # attempt-1 passed/agent-failed rows only
    "missing_task_id": 0.01,       # an extra copy of the row without task_id
    "duplicate_row": 0.01,         # an extra, later copy of the row (re-judged)
    "missing_row": 0.01,           # the planned attempt has no line in results.jsonl
    "unsafe_artifact_dir": 0.01,   # absolute or escaping artifact_dir
    "null_artifact_dir": 0.02,     # null artifact_dir: the conventional folder applies
    "broken_history": 0.015,       # truncated or wrong-shape history.json
    "history_object": 0.03,        # history.json as {"messages": [...]}
    "missing_episode": 0.02,
    "episode_not_object": 0.01,
    "extra_keys": 0.05,            # unknown keys in the row and its metrics
    "bool_number": 0.015,          # true/false in a numeric metrics field
    "null_category": 0.03,
    "missing_trace": 0.015,
    "invalid_trace": 0.015,
    "script_response": 0.01,       # final response containing <script>alert(1)</script>
}
# Run-level edge cases: run i is hit when i % period == a seed-drawn offset, so every case
# appears at least once in any `period` consecutive runs.
RUN_EDGE_PERIODS = {
    "metrics_k_absent": 6, "non_json_line": 7, "blank_line": 5, "manifest_extra_keys": 9,
    "running": 25, "aborted": 50,
}

MODELS = ["agent-model-large", "agent-model-small", "agent-model-large-2026-10"]
DEVICES = [("emulator-pixel", "android-15"), ("pixel-8-lab-2", "android-15"), ("emulator-pixel", "android-14")]
SKILLS = ["calendar", "contacts", "messaging", "memory", "media", "web"]

# Task templates: id, category, prompt, rubric requirements, expected answer,
# expected memory ids, environment-state check ids, skill.
TASK_TEMPLATES: list[tuple[str, str, str, list[str], str | None, list[str], list[str], str | None]] = [
    ("open_wifi_settings", "navigation", "Open the Wi-Fi settings.",
     ["Wi-Fi settings page is visible"], None, [], ["wifi_settings_open"], None),
    ("toggle_bluetooth", "settings", "Turn Bluetooth on.",
     ["Bluetooth toggle is on", "No other setting was changed"], None, [], ["bluetooth_on"], None),
    ("send_sms_ana", "messaging", "Send 'Running 10 minutes late' to Ana by SMS.",
     ["Message goes to Ana", "Text matches exactly", "Message was sent, not drafted"], None, [],
     ["sms_sent"], "messaging"),
    ("add_contact_bruno", "contacts", "Add Bruno Silva, +351 912 345 678, to the contacts.",
     ["Contact name is Bruno Silva", "Phone number is correct"], None, [], ["contact_exists"], "contacts"),
    ("create_dentist_event", "calendar", "Create a calendar event 'Dentist' next Tuesday at 10:00.",
     ["Event title is Dentist", "Date is next Tuesday", "Time is 10:00"], None, [], ["event_exists"], "calendar"),
    ("battery_page_quiz", "qa",
     "Which Settings page lists battery usage per app? Answer A, B, C or D. A) Display B) Battery C) Storage D) Apps",
     [], "B", [], [], None),
    ("recall_parking_spot", "memory", "Where did I say I parked yesterday?",
     ["Answer names level 3, spot 42"], None, ["m1", "m4"], [], "memory"),
    ("open_news_site", "web", "Open example.com/news in the browser.",
     ["Browser shows the news page"], None, [], [], "web"),
    ("play_focus_playlist", "media", "Play the 'Focus' playlist.",
     ["The Focus playlist is playing"], None, [], ["media_playing"], "media"),
    ("set_alarm_7am", "clock", "Set an alarm for 7:00 tomorrow.",
     ["Alarm exists for 7:00", "Alarm is enabled"], None, [], ["alarm_set"], None),
    ("dark_mode_on", "settings", "Switch the phone to dark mode.",
     ["Dark theme is enabled"], None, [], ["dark_theme"], None),
    ("lookup_ana_phone", "contacts", "What is Ana's mobile number?",
     ["Answer gives Ana's mobile number", "No contact was modified"], None, [], [], "contacts"),
    ("recall_gift_idea", "memory", "What gift did I want to buy for my sister?",
     ["Answer names the blue scarf"], None, ["m7"], [], "memory"),
    ("notification_quiz", "qa",
     "Which app sent the latest notification? Answer A, B, C or D. A) Mail B) Clock C) Messages D) Photos",
     [], "C", [], [], None),
    ("search_pharmacy", "web", "Find the nearest open pharmacy and open its page.",
     ["A pharmacy page is open", "The pharmacy is open now"], None, [], [], "web"),
    ("share_last_photo", "messaging", "Share the last photo with Bruno.",
     ["The latest photo was shared", "Recipient is Bruno"], None, [], ["photo_shared"], "messaging"),
]

THOUGHTS = [
    "I need to look at the current screen first.",
    "The target control should be near the top of the page.",
    "That did not work; I will try another way.",
    "The app is open. Next I will find the right menu.",
    "Scrolling to find the setting.",
]
SCREENS = ["Settings", "Home", "Messages", "Contacts", "Calendar", "Browser", "Music"]
OK_CONTENT = '{"ok": true}'
SCREENSHOT_JSON = orjson.dumps({"data": PNG_B64, "width": 1080, "height": 2400}).decode()
# (message is_error flag, content): every variant counts as a history tool error.
ERROR_RESULTS = [
    (True, '{"ok": false, "error": "element not found"}'),
    (True, '{"ok": false, "error": "element not found"}'),
    (False, '{"ok": false, "error": "timeout waiting for device"}'),
    (True, "Error: device disconnected"),
    (False, '{"is_error": true, "message": "input rejected"}'),
]


def _xy(rng: random.Random) -> dict:
    return {"x": rng.randrange(1080), "y": rng.randrange(2400)}


def _swipe(rng: random.Random) -> dict:
    return {"x1": 540, "y1": 1800, "x2": 540, "y2": 600 - rng.randrange(400), "duration_ms": 300}


def _quick_action(rng: random.Random) -> dict:
    return {"list": True} if rng.random() < 0.35 else {"action": "toggle_wifi", "list": False}


def _bridge_contacts(rng: random.Random) -> dict:
    if rng.random() < 0.5:
        return {"action": rng.choice(["query", "Query"]), "name": "Ana"}
    return {"action": "add", "name": "Bruno Silva", "phone": "+351912345678"}


def _bridge_calendar(rng: random.Random) -> dict:
    if rng.random() < 0.4:
        return {"action": "list", "day": "2026-12-01"}
    return {"action": "create", "title": "Dentist", "start": "2026-12-01T10:00"}


# tool name -> (weight, input factory)
TOOLS: dict[str, tuple[int, Callable[[random.Random], dict]]] = {
    "tap": (30, _xy),
    "screenshot": (12, lambda rng: {}),
    "swipe": (8, _swipe),
    "enter_text": (8, lambda rng: {"text": rng.choice(["Running 10 minutes late", "Dentist", "wifi"])}),
    "open_app": (6, lambda rng: {"package": rng.choice(["com.android.settings", "com.android.contacts"])}),
    "press_key": (5, lambda rng: {"key": rng.choice(["BACK", "HOME", "ENTER"])}),
    "long_press": (2, _xy),
    "launch_app": (2, lambda rng: {"name": rng.choice(["Calendar", "Clock", "Music"])}),
    "open_url": (2, lambda rng: {"url": "https://example.com/news"}),
    "keyboard_text": (2, lambda rng: {"text": "Bruno"}),
    "keyboard_tap": (1, lambda rng: {"key": "ENTER"}),
    "mouse_scroll": (1, lambda rng: {"dy": -400}),
    "mouse_move": (1, _xy),
    "touch_gesture": (1, lambda rng: {"points": [[100, 200], [900, 200]]}),
    "drag": (1, lambda rng: {"from": [100, 900], "to": [100, 300]}),
    "quick_action": (3, _quick_action),
    "bridge_contacts": (3, _bridge_contacts),
    "bridge_calendar": (2, _bridge_calendar),
    "bridge_notification": (1, lambda rng: {"action": "dismiss", "id": 3}),
    "bridge_media": (1, lambda rng: {"action": "play", "playlist": "Focus"}),
    "bridge_clipboard": (1, lambda rng: {"action": "set", "text": "42"}),
    "search_launch_app": (1, lambda rng: {"query": "clock"}),
    "search": (3, lambda rng: {"query": rng.choice(["pharmacy near me", "dark mode android"])}),
    "recall_memory": (1, lambda rng: {"query": "notes"}),
}
TOOL_NAMES = list(TOOLS)
TOOL_CUM_WEIGHTS = list(itertools.accumulate(weight for weight, _ in TOOLS.values()))

LEGACY_KEYS = ["setup_ms", "llm_calls", "tool_calls", "input_tokens", "output_tokens", "total_tokens",
               "tool_errors", "error"]
# Episode extra key -> attempt metric it overrides (reference 3.5).
TOKEN_OVERRIDES = {extra_key: metric for metric, (_, extra_key) in TOKEN_SOURCES.items()}


# ----------------------------------------------------------------------------- data records

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
        return {"id": self.id, "category": self.category, "prompt": self.prompt,
                "rubric_spec": self.rubric_spec, "expected_answer": self.expected_answer,
                "expected_memory_ids": self.expected_memory_ids, "timeout_s": self.timeout_s}


@dataclass
class RunPlan:
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
    row: dict
    folder: str
    files: dict[str, bytes]
    finished: datetime


# ----------------------------------------------------------------------------- public API

def generate_runs(out_root: Path, runs: int, seed: int, tasks: int = 12, repeats: int = 3,
                  history_messages: int = 30, edge_cases: bool = True,
                  progress: Callable[[str], None] | None = None, id_prefix: str = "",
                  systems: int | None = None) -> list[Path]:
    """Write `runs` synthetic run folders under `out_root`; return them in order.

    With ``systems`` = N, run i is a repeat of system i % N: one model and one clean git
    sha per system (repeated-runs.md "Systems"), drawn from a generator of their own, so the
    rest of every run is what it would be without. The same arguments always produce
    byte-identical folders. A run folder that already exists is an error
    (FileExistsError), never overwritten.
    """
    if runs < 0 or tasks < 1 or repeats < 1 or history_messages < 4 or (systems is not None and systems < 1):
        raise ValueError("need runs >= 0, tasks >= 1, repeats >= 1, history_messages >= 4, systems >= 1")
    drawn = random.Random(f"systems-{seed}")
    builds = [(MODELS[i % len(MODELS)], f"{drawn.getrandbits(28):07x}") for i in range(systems or 0)]
    out_root = Path(out_root)
    master = random.Random(seed)
    offsets = {name: master.randrange(period) for name, period in RUN_EDGE_PERIODS.items()}
    suite = build_suite(master, tasks)
    started = BASE_TIME
    created = []
    for index in range(runs):
        plan = plan_run(master, index, runs, started, offsets, edge_cases, id_prefix)
        if builds:
            model, sha = builds[index % len(builds)]
            plan = replace(plan, model=model, git_sha=sha)
        run_dir = out_root / plan.run_id
        write_run(run_dir, plan, suite, repeats, history_messages, edge_cases, progress)
        created.append(run_dir)
        started += timedelta(minutes=90 + master.randrange(180))
    return created


# ----------------------------------------------------------------------------- suite and run plan

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


def plan_run(master: random.Random, index: int, runs: int, started: datetime,
             offsets: dict[str, int], edge_cases: bool, id_prefix: str = "") -> RunPlan:
    """Draw one run's id (``id_prefix`` first), configuration and run-level edge cases."""
    run_id = id_prefix + started.strftime("%Y-%m-%dT%H-%M-%SZ") + f"-{master.getrandbits(24):06x}"
    seed = master.getrandbits(64)
    model = master.choice(MODELS)
    device = master.choice(DEVICES)
    skills = sorted(master.sample(SKILLS, 2 + master.randrange(len(SKILLS) - 1)))
    judge_enabled = master.random() < 0.9
    with_cost = master.random() < 0.3
    edges = set()
    if edge_cases:
        edges = {name for name, period in RUN_EDGE_PERIODS.items() if index % period == offsets[name]}
    # Keep >= 90% of runs completed: "running" needs >= 10 runs, "aborted" >= 50.
    if runs < 10:
        edges.discard("running")
    if runs < 50 or "running" in edges:
        edges.discard("aborted")
    status = "running" if "running" in edges else "aborted" if "aborted" in edges else "completed"
    return RunPlan(index=index, run_id=run_id, seed=seed, started=started, status=status, model=model,
                   device=device, active_skills=skills, judge_enabled=judge_enabled,
                   judge_model="judge-model", with_cost=with_cost, edges=frozenset(edges))


# ----------------------------------------------------------------------------- one run

def write_run(run_dir: Path, plan: RunPlan, suite: list[Task], repeats: int, history_messages: int,
              edge_cases: bool, progress: Callable[[str], None] | None) -> None:
    """Write one run folder; manifest.json goes last so a watcher never sees a half-written run."""
    run_dir.mkdir(parents=True, exist_ok=False)
    rng = random.Random(plan.seed)
    planned = [(task, attempt) for task in suite for attempt in range(1, repeats + 1)]
    limit = len(planned)
    if plan.status != "completed":
        limit = int(len(planned) * rng.uniform(0.3, 0.8))
    lines: list[bytes] = []
    later: list[bytes] = []
    clock = plan.started
    made_dirs: set[str] = set()
    for number, (task, attempt) in enumerate(planned[:limit], start=1):
        edges = draw_row_edges(rng) if edge_cases else frozenset()
        out = build_attempt(rng, plan, task, attempt, clock, history_messages, edges)
        clock = out.finished
        write_files(run_dir, out.folder, out.files, made_dirs)
        add_row_lines(out.row, edges, lines, later)
        if progress is not None and number % 1000 == 0:
            progress(f"{plan.run_id}: {number}/{len(planned)} attempts")
    lines.extend(later)
    add_line_edges(rng, plan.edges, lines)
    (run_dir / "results.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    suite_doc = {"name": SUITE_NAME, "version": SUITE_VERSION, "tasks": [t.suite_entry() for t in suite]}
    (run_dir / "suite.json").write_bytes(orjson.dumps(suite_doc, option=orjson.OPT_INDENT_2))
    manifest = build_manifest(plan, suite, repeats, clock)
    tmp = run_dir / "manifest.json.tmp"
    tmp.write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    tmp.replace(run_dir / "manifest.json")
    if progress is not None:
        progress(f"{plan.run_id}: {plan.status}, {limit}/{len(planned)} attempts")


def build_manifest(plan: RunPlan, suite: list[Task], repeats: int, finished: datetime) -> dict:
    """manifest.json content for a run."""
    manifest: dict[str, Any] = {
        "schema_version": 1,
        "run_id": plan.run_id,
        "status": plan.status,
        "started_at": iso(plan.started),
        "finished_at": None if plan.status == "running" else iso(finished),
        "code": ({"git_sha": f"{plan.seed % (16 ** 7):07x}", "dirty": plan.index % 11 == 3} if plan.git_sha is None
                 else {"git_sha": plan.git_sha, "dirty": False}),
        "suite": {"name": SUITE_NAME, "version": SUITE_VERSION},
        "model": {"provider": "example", "name": plan.model},
        "judge": {"enabled": plan.judge_enabled, "model": plan.judge_model if plan.judge_enabled else None},
        "platform": {"device": plan.device[0], "os": plan.device[1]},
        "active_skills": plan.active_skills,
        "repeats": repeats,
        "metrics_k": repeats,
        "planned": [{"task_id": task.id, "attempts": repeats} for task in suite],
    }
    if "metrics_k_absent" in plan.edges:
        del manifest["metrics_k"]
    if "manifest_extra_keys" in plan.edges:
        manifest["runner"] = {"host": "bench-03", "version": "2.4.1"}
    if plan.status == "aborted":
        manifest["abort_reason"] = "device went offline"
    return manifest


def draw_row_edges(rng: random.Random) -> frozenset[str]:
    """The row/artifact edge cases that hit one attempt."""
    return frozenset(name for name, rate in ROW_EDGE_RATES.items() if rng.random() < rate)


def add_row_lines(row: dict, edges: frozenset[str], lines: list[bytes], later: list[bytes]) -> None:
    """Append the row's line(s): dropped, copied without task_id, or duplicated at the end."""
    if "missing_row" in edges:
        return
    line = orjson.dumps(row)
    lines.append(line)
    if "missing_task_id" in edges:
        lines.append(orjson.dumps({k: v for k, v in row.items() if k != "task_id"}))
    if "duplicate_row" in edges:
        later.append(orjson.dumps({**row, "rejudged_at": row.get("finished_at")}))


def add_line_edges(rng: random.Random, run_edges: frozenset[str], lines: list[bytes]) -> None:
    """Insert the run's non-JSON and blank lines at seed-drawn positions."""
    if "non_json_line" in run_edges:
        bad = rng.choice([b'{"task_id": "open_wifi_settings", "attempt": 2, "status": "pas',
                          b"Traceback (most recent call last):", b"[1, 2, 3]"])
        lines.insert(rng.randrange(len(lines) + 1), bad)
    if "blank_line" in run_edges:
        lines.insert(rng.randrange(len(lines) + 1), rng.choice([b"", b"   "]))


def write_files(run_dir: Path, folder: str, files: dict[str, bytes], made_dirs: set[str]) -> None:
    """Write an attempt's artifact files into its folder."""
    if folder not in made_dirs:
        (run_dir / folder).mkdir(parents=True, exist_ok=True)
        made_dirs.add(folder)
    base = run_dir / folder
    for name, content in files.items():
        (base / name).write_bytes(content)


# ----------------------------------------------------------------------------- one attempt

def build_attempt(rng: random.Random, plan: RunPlan, task: Task, attempt: int, started: datetime,
                  history_messages: int, edges: frozenset[str]) -> AttemptOutput:
    """Build one attempt's results row and artifact files."""
    kind = choose_outcome(rng, task, plan)
    if "legacy_row" in edges and not (attempt == 1 and kind in ("passed", "agent_failure")):
        edges = edges - {"legacy_row"}
    status, failure_class, success, eligible, stage_label = OUTCOMES[kind]
    evaluation = evaluate(rng, task, kind, plan)
    final = final_response(task, kind, evaluation, "script_response" in edges)
    history = build_history(rng, task, kind, history_messages, final, evaluation.recall_complete)
    measured = history_measurements(history)
    episode_doc: dict | None = None
    episode_id: str | None = None
    facts: EpisodeFacts | None = None
    if EXECUTION[kind] in ("full", "cut"):
        episode_id = f"ep-{rng.getrandbits(40):010x}"
        episode_doc, facts = build_episode(rng, history, measured, episode_id, task, evaluation, kind)
    if facts is not None and not edges & {"missing_episode", "episode_not_object"}:
        apply_episode(measured, facts)
    else:
        clear_episode_fields(measured)
    stage, ref = failure_labels(success, stage_label or evaluation.stage_label, measured)
    timing = attempt_timing(rng, task, kind, history, evaluation)
    finished = started + timedelta(milliseconds=timing["elapsed_ms"])
    metrics = build_metrics(rng, plan, measured, timing, evaluation, ref, edges, episode_id)
    folder = f"tasks/{task.id}" if attempt == 1 else f"tasks/{task.id}/attempt-{attempt}"
    row = {
        "task_id": task.id,
        "attempt": attempt,
        "category": None if "null_category" in edges else task.category,
        "artifact_dir": artifact_dir_value(rng, folder, task, edges),
        "episode_id": episode_id if rng.random() < 0.9 else None,
        "active_skills": [task.skill] if task.skill in plan.active_skills else [],
        "status": status,
        "success": success,
        "agent_eligible": eligible,
        "failure_class": failure_class,
        "first_failure_stage": stage,
        "quality_score": evaluation.quality,
        "rubric_pass_count": evaluation.pass_count,
        "rubric_total": evaluation.total,
        "rubric_spec": task.rubric_spec,
        "rubric": evaluation.rubric,
        "hard_assertions": evaluation.hard_assertions,
        "hard_assertion_failures": evaluation.hard_failures,
        "expected_answer_match": evaluation.answer_match,
        "expected_recalled_memory_match": evaluation.memory_match,
        "memory_recall_evidence_source": evaluation.memory_source,
        "environment_state_assertions": evaluation.env_assertions,
        "trace_observations": trace_observations(rng, kind),
        "recovery_attempted": kind.startswith("timeout"),
        "recovery_succeeded": (rng.random() < 0.7) if kind.startswith("timeout") else None,
        "pre_screenshot_file": timing["pre_ok"],
        "post_screenshot_file": timing["post_ok"],
        "started_at": iso(started),
        "finished_at": iso(finished),
        "metrics": metrics,
    }
    if "extra_keys" in edges:
        row["runner_host"] = "bench-03"
        row["x_debug"] = {"queue_ms": rng.randrange(500), "retries": [1, 2]}
    if "legacy_row" in edges:
        row = legacy_row(row)
    files = attempt_files(history, episode_doc, evaluation, timing, edges)
    return AttemptOutput(row=row, folder=folder, files=files, finished=finished)


def choose_outcome(rng: random.Random, task: Task, plan: RunPlan) -> str:
    """Pick an outcome kind: an incident, a pass, or an Agent failure."""
    roll = rng.random() * 100
    for kind, percent in INCIDENT_PERCENT.items():
        if roll < percent:
            if kind == "judge_error" and not judge_error_reasons(task, plan):
                break
            return kind
        roll -= percent
    bonus = 0.05 if plan.model.startswith("agent-model-large") else -0.05
    if rng.random() < task.pass_probability + bonus:
        return "passed"
    kinds = list(AGENT_FAILURE_WEIGHTS)
    return rng.choices(kinds, weights=list(AGENT_FAILURE_WEIGHTS.values()))[0]


def judge_error_reasons(task: Task, plan: RunPlan) -> list[str]:
    """Why evaluation could not complete for this task in this run."""
    reasons = []
    if plan.judge_enabled and task.rubric_spec:
        reasons.append("judge")
    if task.env_checks:
        reasons.append("environment_state")
    if task.expected_memory_ids:
        reasons.append("memory_evidence")
    return reasons


def artifact_dir_value(rng: random.Random, folder: str, task: Task, edges: frozenset[str]) -> str | None:
    """The row's artifact_dir: the real folder, null, or an unsafe path (edge cases)."""
    if "unsafe_artifact_dir" in edges:
        return rng.choice([f"/var/tmp/bench/{task.id}", f"../other-run/{folder}",
                           f"tasks/../../{task.id}", f"C:\\bench\\{task.id}"])
    if "null_artifact_dir" in edges:
        return None
    return folder


def legacy_row(row: dict) -> dict:
    """Rewrite a row the way an old runner wrote it: no attempt, eligibility or metrics object."""
    metrics = row["metrics"]
    legacy = {key: row[key] for key in ("task_id", "category", "status", "failure_class", "quality_score",
                                        "rubric_pass_count", "rubric_total", "started_at", "finished_at")}
    legacy["success"] = None
    legacy["wall_ms"] = metrics["task_wall_ms"]
    for key in LEGACY_KEYS:
        legacy[key] = metrics[key]
    return legacy


def trace_observations(rng: random.Random, kind: str) -> list[dict]:
    """Behavioural observations; an id can repeat within a row."""
    if EXECUTION[kind] in ("none", "prompt"):
        return []
    observations = [{"id": "screenshot_before_action", "passed": rng.random() < 0.9}]
    if rng.random() < 0.5:
        observations.append({"id": "no_redundant_app_launch", "passed": rng.random() < 0.8})
    if rng.random() < 0.1:
        observations.append({"id": "screenshot_before_action", "passed": rng.random() < 0.5})
    return observations


# ----------------------------------------------------------------------------- evaluation

def evaluate(rng: random.Random, task: Task, kind: str, plan: RunPlan) -> Evaluation:
    """Assertions, judge verdicts, state checks and error texts for an outcome (reference 3.6)."""
    if kind in ("skipped", "environment"):
        return setup_failure(rng, kind)
    if kind in ("timeout_no_evidence", "chat_error_no_evidence"):
        ev = Evaluation(quality=None, pass_count=None, total=None, stage_label="unknown",
                        hard_assertions={"timeout": kind != "timeout_no_evidence", "no_forbidden_action": None})
        if kind == "timeout_no_evidence":
            ev.errors["error"] = f"task timed out after {task.timeout_s} s before the agent responded"
            ev.hard_failures = [timeout_failure(task)]
        else:
            ev.errors["agent_error"] = "chat request failed: connection reset by peer"
        return ev
    ev = passing_evaluation(task, plan)
    if kind == "passed":
        return ev
    if kind == "judge_error":
        return judge_error(rng, task, plan, ev)
    ev.quality = 0.0
    if kind == "timeout_evidence":
        return gate_failure(ev, "timeout", timeout_failure(task),
                            f"task timed out after {task.timeout_s} s", "unknown")
    if kind == "chat_error_evidence":
        ev = gate_failure(ev, None, None, None, "unknown")
        ev.errors["agent_error"] = "chat request failed: upstream returned 502"
        return ev
    return agent_failure(rng, task, plan, ev)


def passing_evaluation(task: Task, plan: RunPlan) -> Evaluation:
    """Every enabled check passed; quality 1 (all yes verdicts, or the judge disabled)."""
    total = len(task.rubric_spec)
    ev = Evaluation(quality=1.0, pass_count=0, total=total,
                    hard_assertions={"timeout": True, "no_forbidden_action": True})
    if plan.judge_enabled:
        ev.rubric = [{"id": r["id"], "verdict": "yes", "reason": "Requirement met on the final screen."}
                     for r in task.rubric_spec]
        ev.pass_count = total
        ev.judge_file = {"model": plan.judge_model, "verdicts": ev.rubric, "error": None}
    if task.expected_answer is not None:
        ev.answer_match = True
    if task.expected_memory_ids:
        ev.memory_match = True
        ev.memory_source = "inline"
    if task.env_checks:
        ev.env_assertions = [{"id": c, "passed": True, "expected": True, "actual": True} for c in task.env_checks]
        ev.env_file = {"checks": ev.env_assertions}
    return ev


def gate_failure(ev: Evaluation, assertion: str | None, failure: dict | None, error: str | None,
                 stage: str) -> Evaluation:
    """A failure before the judge: quality 0, no verdicts, pass count 0 of the rubric total."""
    ev.quality = 0.0
    ev.rubric = []
    ev.pass_count = 0
    ev.judge_file = None
    ev.env_assertions = []  # state checks run after the gates; not reached
    ev.env_file = None
    ev.stage_label = stage
    if assertion is not None:
        ev.hard_assertions[assertion] = False
        ev.hard_failures = [failure]
    if error is not None:
        ev.errors["error"] = error
    return ev


def agent_failure(rng: random.Random, task: Task, plan: RunPlan, ev: Evaluation) -> Evaluation:
    """An eligible assertion, rubric, answer, recall or state failure."""
    reasons = ["hard_gate"]
    if plan.judge_enabled and task.rubric_spec:
        reasons.append("rubric")
    if task.expected_answer is not None:
        reasons.append("answer")
    if task.expected_memory_ids:
        reasons.append("memory")
    if task.env_checks:
        reasons.append("state")
    reason = rng.choice(reasons)
    if reason == "hard_gate":
        failure = {"id": "no_forbidden_action", "requirement": "No destructive action is taken",
                   "actual": "called bridge_contacts action=delete"}
        return gate_failure(ev, "no_forbidden_action", failure, "hard assertion failed: no_forbidden_action",
                            "action_selection")
    if reason == "answer":
        ev.answer_match = False
        ev.answer_correct = False
        return gate_failure(ev, None, None, None, "final_response")
    if reason == "memory":
        ev.memory_match = False
        ev.recall_complete = False
        return gate_failure(ev, None, None, None, "planning")
    if reason == "state":
        failed = rng.choice(task.env_checks)
        ev.env_assertions = [{"id": c, "passed": c != failed, "expected": True, "actual": c != failed}
                             for c in task.env_checks]
        ev.env_file = {"checks": ev.env_assertions}
        ev.quality = 0.0
        ev.stage_label = "state_verification"
        return ev
    yes = rng.randrange(len(task.rubric_spec))
    ev.rubric = [{"id": r["id"], "verdict": "yes" if n < yes else "no",
                  "reason": "Requirement met." if n < yes else "Not visible on the final screen."}
                 for n, r in enumerate(task.rubric_spec)]
    ev.pass_count = yes
    ev.quality = yes / len(task.rubric_spec)
    ev.judge_file = {"model": plan.judge_model, "verdicts": ev.rubric, "error": None}
    ev.stage_label = rng.choice(["final_response", "state_verification", "planning", "unknown"])
    return ev


def judge_error(rng: random.Random, task: Task, plan: RunPlan, ev: Evaluation) -> Evaluation:
    """Evaluation could not complete: judge failure, missing state or missing recall evidence."""
    reason = rng.choice(judge_error_reasons(task, plan))
    ev.quality = None
    ev.stage_label = "evaluation"
    if reason == "judge":
        ev.rubric = []
        ev.pass_count = None
        ev.errors["judge_error"] = "judge request timed out after 60 s"
        ev.judge_file = {"model": plan.judge_model, "verdicts": [], "error": ev.errors["judge_error"]}
    elif reason == "environment_state":
        ev.env_assertions = [{"id": c, "passed": None, "expected": True, "actual": None} for c in task.env_checks]
        ev.env_file = None
        ev.errors["environment_state_error"] = "state dump failed: adb shell timed out"
    else:
        ev.memory_match = None
        ev.memory_source = None
        ev.errors["error"] = "required recall evidence unavailable"
    return ev


def setup_failure(rng: random.Random, kind: str) -> Evaluation:
    """Skipped or environment failure: no Agent execution, quality unknown."""
    ev = Evaluation(quality=None, pass_count=None, total=None, stage_label="setup",
                    hard_assertions={"timeout": None, "no_forbidden_action": None})
    if kind == "skipped":
        ev.errors["error"] = rng.choice(["agent not ready: accessibility service not connected",
                                         "input screenshot missing",
                                         "setup error: failed to reset app data"])
        return ev
    setup = rng.choice([("seeded_contacts", "3 seeded contacts exist", "0 contacts"),
                        ("memory_consolidated", "memory store initialised", "consolidation failed"),
                        ("setup_memory_ids", "setup memory ids present", "missing m4")])
    ev.hard_assertions["setup"] = False
    ev.hard_failures = [{"id": setup[0], "requirement": setup[1], "actual": setup[2]}]
    ev.errors["error"] = f"setup assertion failed: {setup[0]} ({setup[2]})"
    return ev


def timeout_failure(task: Task) -> dict:
    return {"id": "timeout", "requirement": f"finish within {task.timeout_s} s",
            "actual": f"timed out after {task.timeout_s} s"}


def final_response(task: Task, kind: str, ev: Evaluation, with_script: bool) -> str | None:
    """The Agent's final answer; None when the Agent never finished."""
    if EXECUTION[kind] != "full":
        return None
    if task.expected_answer is not None:
        letter = task.expected_answer if ev.answer_correct else "D"
        text = f"The answer is {letter}."
    elif task.expected_memory_ids:
        text = "From your notes: level 3, spot 42." if ev.recall_complete else "I could not find that in your notes."
    else:
        text = f"Done: {task.prompt.rstrip('.')}."
    return f"{text} {SCRIPT_TAG}" if with_script else text


# ----------------------------------------------------------------------------- history

class HistoryBuilder:
    """Appends history messages while recording model calls and tool steps (reference 3.3-3.5)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.messages: list[dict] = []
        self.model_calls: list[ModelCall] = []
        self.steps: list[ToolStep] = []
        self.timeline: list[ModelCall | ToolStep] = []
        self.pending_image = False
        self.call_ids = rng.random() < 0.9
        self.cached = rng.random() < 0.6
        self.reasoning = rng.random() < 0.3
        self.error_rate = 0.08 if rng.random() < 0.3 else 0.02
        self.no_duration_at = rng.randrange(40) if rng.random() < 0.03 else None
        self.no_cached_at = rng.randrange(40) if rng.random() < 0.03 else None

    def add_plain(self, message: dict, image: bool = False) -> None:
        """A message that is not a model call; an image attachment flags the next model call."""
        if image:
            message["attachments"] = [{"type": "image", "path": "pre.png"}]
            self.pending_image = True
        self.messages.append(message)

    def add_model_message(self, message: dict) -> None:
        """A usage-bearing assistant/tool_call message."""
        rng = self.rng
        n = len(self.model_calls)
        inp = 2400 + 380 * n + rng.randrange(300)
        out = 20 + rng.randrange(380)
        if rng.random() < 0.3:
            usage: dict[str, int] = {"prompt_tokens": inp, "completion_tokens": out}
        else:
            usage = {"input_tokens": inp, "output_tokens": out}
        cached = None
        if self.cached and n != self.no_cached_at:
            cached = (inp // 1024) * 1024
            usage["cached_tokens" if rng.random() < 0.5 else "cached_input_tokens"] = cached
        reasoning = None
        if self.reasoning:
            reasoning = rng.randrange(200)
            usage["reasoning_tokens"] = reasoning
        total = inp + out
        if rng.random() < 0.25:
            total += reasoning or 0
            usage["total_tokens"] = total
        message["usage"] = usage
        duration = None if n == self.no_duration_at else 300 + rng.randrange(2200)
        if duration is not None:
            message["duration_ms"] = duration
        call = ModelCall(inp, out, total, cached, reasoning, duration, visual=self.pending_image)
        self.pending_image = False
        self.messages.append(message)
        self.model_calls.append(call)
        self.timeline.append(call)

    def add_tool_step(self, name: str, tool_input: dict, with_result: bool = True,
                      content: str | None = None) -> None:
        """A tool call (with its own usage, or after a usage-bearing thought) and its result."""
        rng = self.rng
        call_id = f"c{len(self.steps) + 1}"
        thought = rng.random() < 0.4
        if thought:
            note = {"type": "assistant", "content": rng.choice(THOUGHTS)}
            if rng.random() < 0.03:
                self.add_plain(note)  # no usage: not a model call
            else:
                self.add_model_message(note)
        encoded: dict | str = orjson.dumps(tool_input).decode() if rng.random() < 0.05 else tool_input
        call = {"type": "tool_call", "tool_name": name, "tool_input": encoded}
        if self.call_ids:
            call["tool_call_id"] = call_id
        if thought:
            self.add_plain(call)
        else:
            self.add_model_message(call)
        step = ToolStep(name, tool_input, is_device_action(name, tool_input),
                        duration_ms=(40 + rng.randrange(6000)) / 4)
        self.steps.append(step)
        self.timeline.append(step)
        if not with_result:
            return
        is_error, text, error, screenshot, visual = tool_result(rng, name, self.error_rate, content)
        result = {"type": "tool_result", "tool_name": name, "content": text, "is_error": is_error}
        if self.call_ids:
            result["tool_call_id"] = call_id
        step.result_index = len(self.messages)
        step.error = error
        step.screenshot = screenshot
        self.pending_image = self.pending_image or visual
        self.messages.append(result)

    def finish(self, final: str | None) -> History:
        if final is not None:
            self.add_model_message({"type": "assistant", "content": final})
        return History(self.messages, self.model_calls, self.steps, self.timeline, final)


def build_history(rng: random.Random, task: Task, kind: str, target: int, final: str | None,
                  recall_complete: bool) -> History:
    """history.json messages for an attempt of about `target` messages (reference 3.3-3.5)."""
    builder = HistoryBuilder(rng)
    execution = EXECUTION[kind]
    if execution == "none":
        return builder.finish(None)
    builder.add_plain({"type": "system", "content": "You are a careful Android device agent. Use the tools."})
    builder.add_plain({"type": "user", "content": task.prompt}, image=rng.random() < 0.7)
    if execution == "prompt":
        return builder.finish(None)
    length = max(4, int(target * rng.uniform(0.75, 1.25)))
    if execution == "cut":
        length = max(4, int(length * rng.uniform(0.3, 0.9)))
    if task.expected_memory_ids:
        ids = task.expected_memory_ids if recall_complete else task.expected_memory_ids[:-1]
        builder.add_tool_step("recall_memory", {"query": task.prompt},
                              content=orjson.dumps({"ids": ids, "memories": [{"id": i} for i in ids]}).decode())
    while len(builder.messages) < length - 1:
        if rng.random() < 0.03:
            builder.add_plain({"type": "user", "content": "Here is the current screen."}, image=True)
            continue
        name = rng.choices(TOOL_NAMES, cum_weights=TOOL_CUM_WEIGHTS)[0]
        builder.add_tool_step(name, TOOLS[name][1](rng))
    if kind == "timeout_evidence" and rng.random() < 0.5:
        builder.add_tool_step("tap", _xy(rng), with_result=False)  # the call the timeout interrupted
    return builder.finish(final)


def tool_result(rng: random.Random, name: str, error_rate: float,
                content: str | None) -> tuple[bool, str, bool, bool, bool]:
    """(is_error flag, content, counts as tool error, has_screenshot, screenshot-like)."""
    if content is None and rng.random() < error_rate:
        is_error, text = rng.choice(ERROR_RESULTS)
        return is_error, text, True, False, name == "screenshot"
    if content is not None:
        return False, content, False, False, False
    if name == "screenshot":
        if rng.random() < 0.6:
            return False, SCREENSHOT_JSON, False, True, True
        return False, f"screenshot observation: {rng.choice(SCREENS)} screen", False, True, True
    if name == "search":
        return False, '{"results": [{"title": "Farmacia Central", "url": "https://example.com/p"}]}', False, False, False
    if name == "recall_memory":
        return False, '{"ids": [], "memories": []}', False, False, False
    if name in DEVICE_TOOLS and rng.random() < 0.1:
        text = f"Done. screenshot observation: {rng.choice(SCREENS)} screen is showing"
        return False, text, False, True, True
    return False, OK_CONTENT, False, False, False


def is_device_action(name: str, tool_input: dict | None) -> bool:
    """Reference 3.4: allowlisted, minus quick_action list=true and read-only bridge actions."""
    if name not in DEVICE_TOOLS:
        return False
    if not isinstance(tool_input, dict):
        return True
    if name == "quick_action" and tool_input.get("list") is True:
        return False
    action = tool_input.get("action")
    if name.startswith("bridge_") and isinstance(action, str) and action.lower() in READ_ONLY_ACTIONS:
        return False
    return True


def history_measurements(history: History) -> dict[str, Any]:
    """The metrics the reference derives from history alone (3.3-3.5)."""
    calls = history.model_calls
    steps = history.steps
    m: dict[str, Any] = {
        "tool_calls": len(steps),
        "device_actions": sum(1 for s in steps if s.device),
        "screenshots_taken": sum(1 for s in steps if s.screenshot),
        "tool_errors": sum(1 for s in steps if s.error),
        "failure_event_ref": None,
        "evidence_stage": None,
    }
    first_error = next((s for s in steps if s.error), None)
    if first_error is not None:
        m["failure_event_ref"] = f"history:{first_error.result_index}"
        m["evidence_stage"] = "device_execution" if first_error.device else "unknown"
    if not calls:
        m.update(llm_calls=None, llm_time_ms=None, vision_llm_calls=None, vision_llm_time_ms=None,
                 input_tokens=None, output_tokens=None, total_tokens=None, cached_input_tokens=None,
                 reasoning_tokens=None)
        return m
    visual = [c for c in calls if c.visual]
    m["llm_calls"] = len(calls)
    m["llm_time_ms"] = sum_or_none([c.duration_ms for c in calls])
    m["vision_llm_calls"] = len(visual)
    m["vision_llm_time_ms"] = sum_or_none([c.duration_ms for c in visual]) if visual else None
    m["input_tokens"] = sum(c.input_tokens for c in calls)
    m["output_tokens"] = sum(c.output_tokens for c in calls)
    m["total_tokens"] = sum(c.total_tokens for c in calls)
    m["cached_input_tokens"] = sum_or_none([c.cached_tokens for c in calls])
    m["reasoning_tokens"] = sum_or_none([c.reasoning_tokens for c in calls])
    return m


def sum_or_none(values: list[int | None]) -> int | None:
    """Sum, or None when any value is missing."""
    if any(v is None for v in values):
        return None
    return sum(values)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- episode

def build_episode(rng: random.Random, history: History, measured: dict, episode_id: str, task: Task,
                  ev: Evaluation, kind: str) -> tuple[dict, EpisodeFacts]:
    """episode.json mirroring the history's tool calls, plus what the reference derives from it."""
    facts = EpisodeFacts()
    events: list[dict] = []
    replan_keys = rng.random() < 0.85
    steps = len(history.steps)
    no_duration_step = rng.randrange(steps) if steps and rng.random() < 0.03 else None
    step_number = -1
    for item in history.timeline:
        if isinstance(item, ModelCall):
            events.append({"type": "model_response", "output_tokens": item.output_tokens})
            continue
        step_number += 1
        events.append({"type": "tool_call", "tool_name": item.name, "tool_input": item.tool_input})
        if item.result_index is None:
            continue
        event: dict[str, Any] = {"type": "tool_result", "tool_name": item.name}
        if rng.random() < 0.9:
            event["tool_input"] = item.tool_input  # else the preceding tool_call's input applies
        event["is_error"] = item.error
        duration: float | None = item.duration_ms
        if rng.random() < 0.02:
            duration = -(1 + rng.randrange(40)) / 4  # clock skew on a fast call
        if step_number == no_duration_step:
            duration = None
        if duration is not None:
            event["duration_ms"] = duration
        if replan_keys:
            event["needs_replan"] = item.error and rng.random() < 0.6
        observe_result(facts, event, item, len(events))
        events.append(event)
    error = None
    if kind == "chat_error_evidence":
        error = ev.errors.get("agent_error")
        events.append({"type": "error", "message": error})
    facts.has_events = bool(events)
    facts.extra = episode_extra(rng, measured)
    doc = {
        "episode_id": episode_id,
        "trace_id": f"{rng.getrandbits(128):032x}",
        "events": events,
        "extra": facts.extra,
        "retrieved_memory_refs": [{"tool": "recall_memory", "ids": task.expected_memory_ids}]
        if task.expected_memory_ids else [],
        "error": error,
    }
    return doc, facts


def observe_result(facts: EpisodeFacts, event: dict, step: ToolStep, index: int) -> None:
    """Update episode facts with one tool_result event (reference 3.4-3.5)."""
    if step.device:
        duration = event.get("duration_ms")
        if duration is None:
            facts.device_complete = False
        else:
            facts.device_ms += max(0.0, duration)
    if event["is_error"]:
        facts.error_count += 1
        if facts.first_error is None:
            facts.first_error = (index, "device_execution" if step.device else "unknown")
    if "needs_replan" in event:
        facts.replan_seen = True
        facts.replan_count += 1 if event["needs_replan"] else 0


def episode_extra(rng: random.Random, measured: dict) -> dict:
    """episode.extra: first-token time and runtime token totals, sometimes 0 or absent."""
    extra: dict[str, int] = {}
    roll = rng.random()
    if roll < 0.85:
        extra["first_token_time_ms"] = 250 + rng.randrange(1500)
    elif roll < 0.9:
        extra["first_token_time_ms"] = 0
    if measured["input_tokens"] is not None and rng.random() < 0.7:
        extra["prompt_tokens"] = measured["input_tokens"]
        extra["completion_tokens"] = measured["output_tokens"]
        extra["total_tokens"] = measured["input_tokens"] + measured["output_tokens"]
    cached = measured["cached_input_tokens"]
    if cached is not None and rng.random() < 0.6:
        extra["cached_prompt_tokens"] = cached
    elif rng.random() < 0.2:
        extra["cached_prompt_tokens"] = 0
    reasoning = measured["reasoning_tokens"]
    if reasoning is not None and rng.random() < 0.5:
        extra["reasoning_tokens"] = reasoning
    elif rng.random() < 0.15:
        extra["reasoning_tokens"] = 0
    return extra


def apply_episode(measured: dict, facts: EpisodeFacts) -> None:
    """Episode values replace history-derived ones (reference 3.1 step 3, 3.5; R3, R16)."""
    if not facts.has_events:
        measured["device_execution_ms"] = None
    elif facts.device_complete:
        measured["device_execution_ms"] = facts.device_ms
    else:
        measured["device_execution_ms"] = None
    measured["replan_count"] = facts.replan_count if facts.replan_seen else None
    ttft = facts.extra.get("first_token_time_ms")
    measured["time_to_first_token_ms"] = ttft if ttft else None
    for extra_key, metric in TOKEN_OVERRIDES.items():
        if extra_key in facts.extra:
            measured[metric] = facts.extra[extra_key]
    if facts.has_events:
        measured["tool_errors"] = facts.error_count
    if facts.first_error is not None:
        measured["failure_event_ref"] = f"episode:{facts.first_error[0]}"
        measured["evidence_stage"] = facts.first_error[1]


def clear_episode_fields(measured: dict) -> None:
    """Episode-only fields are unavailable without an episode."""
    measured.update(device_execution_ms=None, replan_count=None, time_to_first_token_ms=None)


def failure_labels(success: bool | None, label: str | None, measured: dict) -> tuple[str | None, str | None]:
    """(first_failure_stage, failure_event_ref) as the runner records them (R17)."""
    if success is True:
        return None, None
    ref = measured["failure_event_ref"]
    if label in ("setup", "evaluation") or ref is None:
        return label, ref
    return measured["evidence_stage"], ref


# ----------------------------------------------------------------------------- timings, metrics, files

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


def build_metrics(rng: random.Random, plan: RunPlan, measured: dict, timing: dict, ev: Evaluation,
                  ref: str | None, edges: frozenset[str], episode_id: str | None) -> dict:
    """The row's `metrics` object: recorded timers, derived counters and error texts."""
    metrics: dict[str, Any] = dict.fromkeys(ROW_METRICS_KEYS)
    for key in ROW_METRICS_KEYS:
        if key in measured:
            metrics[key] = measured[key]
    metrics["task_wall_ms"] = timing["task_wall_ms"]
    metrics["wall_ms"] = timing["task_wall_ms"]
    metrics["setup_ms"] = timing["setup_ms"]
    metrics["screenshot_capture_ms"] = timing["screenshot_capture_ms"]
    metrics["screenshot_capture_source"] = "runner" if timing["screenshot_capture_ms"] is not None else None
    metrics["failure_event_ref"] = ref
    metrics["pre_screenshot_error"] = timing["pre_error"]
    metrics["post_screenshot_error"] = timing["post_error"]
    metrics.update(ev.errors)
    if plan.with_cost and metrics["input_tokens"] is not None and metrics["output_tokens"] is not None:
        metrics["cost_usd"] = round(metrics["input_tokens"] * 3e-6 + metrics["output_tokens"] * 15e-6, 6)
        metrics["cost_source"] = "price_table"
    if "missing_episode" in edges and episode_id is not None:
        metrics["episode_error"] = f"episode {episode_id} not found"
    if "episode_not_object" in edges and episode_id is not None:
        metrics["episode_error"] = "episode payload is not an object"
    if "extra_keys" in edges:
        metrics["gpu_temp_c"] = 61
    if "bool_number" in edges:
        metrics[rng.choice(["setup_ms", "screenshot_capture_ms", "task_wall_ms", "cost_usd"])] = True
    return metrics


def attempt_files(history: History, episode: dict | None, ev: Evaluation, timing: dict,
                  edges: frozenset[str]) -> dict[str, bytes]:
    """The attempt folder's files, with the artifact edge cases applied."""
    files: dict[str, bytes] = {}
    if "history_object" in edges:
        history_bytes = orjson.dumps({"messages": history.messages})
    else:
        history_bytes = orjson.dumps(history.messages)
    if "broken_history" in edges:
        history_bytes = history_bytes[: len(history_bytes) // 2] if len(history_bytes) > 8 else b'{"msgs": []}'
    files["history.json"] = history_bytes
    trace = {"final_response": history.final_response,
             "tool_calls": [{"name": s.name, "arguments": s.tool_input} for s in history.steps]}
    if "invalid_trace" in edges:
        files["trace.json"] = b'{"final_response": "Done' if len(history.steps) % 2 else b'["not", "an", "object"]'
    elif "missing_trace" not in edges:
        files["trace.json"] = orjson.dumps(trace)
    if episode is not None and "missing_episode" not in edges:
        if "episode_not_object" in edges:
            files["episode.json"] = b"[]" if len(history.steps) % 2 else b'"episode unavailable"'
        else:
            files["episode.json"] = orjson.dumps(episode)
    if ev.judge_file is not None:
        files["judge.json"] = orjson.dumps(ev.judge_file)
    if ev.env_file is not None:
        files["environment_state.json"] = orjson.dumps(ev.env_file)
    if timing["pre_ok"]:
        files["pre.png"] = PNG_BYTES
    if timing["post_ok"]:
        files["post.png"] = PNG_BYTES
    return files


def iso(moment: datetime) -> str:
    """ISO-8601 UTC timestamp with a Z suffix."""
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

