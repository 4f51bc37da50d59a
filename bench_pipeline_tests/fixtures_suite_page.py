"""A suite of four systems for the suite page's tests (reports/test_suite_page.py and the
Chromium test): RepeatRuns built in memory, their catalog rows, hostile names."""

from __future__ import annotations

from pathlib import Path

from bench_pipeline.comparison_sides import make_side
from bench_pipeline.identity import RunIdentity
from bench_pipeline.repeats import RepeatRun, repeats
from bench_pipeline.reports.suite_page import SystemEntry

SUITE = "smoke & <suite>"
HOSTILE_MODEL = "<img src=x onerror=alert(1)>"
HOSTILE_RUN = 'b1"><script>window.__xss=1</script>'


def run(run_id, outcomes, *, model, sha, started, pass_at_1, run_dir, cost=None, tokens=None, suite=SUITE):
    """A RepeatRun from {task: [True / False / None (ineligible), ...]} by attempt number, every
    attempt with the given cost and tokens and its evidence folder evidence/<task>/<attempt>."""
    rows, line = [], 0
    for task, results in outcomes.items():
        for attempt, outcome in enumerate(results, start=1):
            line += 1
            rows.append({"task_id": task, "attempt": attempt, "line": line, "success": outcome is True,
                         "agent_eligible": outcome is not None, "quality_score": None, "task_wall_ms": None,
                         "total_tokens": tokens, "cost_usd": cost, "evidence": {"dir": f"evidence/{task}/{attempt}"}})
    identity = RunIdentity(suite=suite, model_name=model, git_sha=sha, started_at=started)
    side = make_side(rows, run_id=run_id, suite=suite, metrics_k=1, run_dir=run_dir, identity=identity)
    return RepeatRun(side, pass_at_1)


#: Why a1, the suite's first run, is not compared (a run's own text: escaped where shown).
NOT_COMPARED = "no earlier processed run of suite 'smoke' was measured with its setup (judge <j>, device / os)"


def catalog(r: RepeatRun, root: Path, *, gate=None, baseline=None, report=True, not_compared=None) -> dict:
    """The run's catalog row as the suite_pages asset passes it (Wilson bounds made up)."""
    p = r.pass_at_1
    return {"run_id": r.run_id, "suite": SUITE, "model": r.side.identity.model_name, "git_sha": r.side.identity.git_sha,
            "started_at": r.side.identity.started_at, "pass_at_1": p, "pass_at_1_lower": max(0.0, p - 0.2),
            "pass_at_1_upper": min(1.0, p + 0.2), "attempts": 4, "gate": gate, "baseline": baseline,
            "not_compared": not_compared, "report": (r.side.run_dir / "report.html") if report else None}


def suite(root: Path):
    """Four systems on one suite. Pooled first attempt per task (t1..t4):
    S1 alpha: a1 T T F T, a2 T F F T -> 1, .5, 0, 1 = 62.5%; cost $0.02, 1,000 tokens per attempt.
    S2 hostile model: b1 T F F F, b2 T F T F -> 1, 0, .5, 0 = 37.5%; cost $0.01.
    S3 gamma: c1 T T T F = 75%, one run, no cost (unknown, not 0).
    S4 delta: d1 T T F F = 50%, cost $0.03: beaten by S1 (higher and cheaper)."""
    a = [run("a1", {"t1": [True], "t2": [True], "t3": [False], "t4": [True]}, model="alpha", sha="sha-a",
             started="2026-11-01T00:00:00Z", pass_at_1=0.75, run_dir=root / "a1", cost=0.02, tokens=1000),
         run("a2", {"t1": [True], "t2": [False], "t3": [False], "t4": [True]}, model="alpha", sha="sha-a",
             started="2026-11-03T00:00:00Z", pass_at_1=0.5, run_dir=root / "a 2", cost=0.02, tokens=1000)]
    b = [run(HOSTILE_RUN, {"t1": [True], "t2": [False], "t3": [False], "t4": [False]}, model=HOSTILE_MODEL,
             sha="sha-b", started="2026-11-04T00:00:00Z", pass_at_1=0.25, run_dir=root / "b1", cost=0.01),
         run("b2", {"t1": [True], "t2": [False], "t3": [True], "t4": [False]}, model=HOSTILE_MODEL, sha="sha-b",
             started="2026-11-05T00:00:00Z", pass_at_1=0.5, run_dir=root / "b2", cost=0.01)]
    c = [run("c1", {"t1": [True], "t2": [True], "t3": [True], "t4": [False]}, model="gamma", sha="sha-c",
             started="2026-11-02T00:00:00Z", pass_at_1=0.75, run_dir=root / "c1")]
    d = [run("d1", {"t1": [True], "t2": [True], "t3": [False], "t4": [False]}, model="delta", sha="sha-d",
             started=None, pass_at_1=0.5, run_dir=root / "d1", cost=0.03)]
    systems = [SystemEntry(f"sys-{i}", repeats(rs), rs, root / "_systems" / f"sys-{i}" / "repeats.md")
               for i, rs in enumerate((a, b, c, d), start=1)]
    rows = [catalog(a[0], root, not_compared=NOT_COMPARED), catalog(a[1], root, gate="fail", baseline="a1"),
            catalog(b[0], root, gate="pass", baseline="a2"), catalog(b[1], root),
            catalog(c[0], root, report=False), catalog(d[0], root)]
    return rows[::-1], systems  # the page orders the runs itself
