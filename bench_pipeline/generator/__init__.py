"""Deterministic synthetic benchmark runs in the `run-directory.md` layout: the flat layout,
or (``layout="runner"``) the benchmark runner's own, carrying the same data.

`generate_runs` writes run folders whose rows, history, episode and trace files agree with one
another: every recorded metric in a row is what `metrics-reference.txt` derives from the
attempt's artifacts (so derived == recorded for a clean attempt). With `edge_cases=True` a
known mix of legacy and broken inputs is added (`edge_cases.ROW_EDGE_RATES` and
`edge_cases.RUN_EDGE_PERIODS`).

Everything is drawn from `random.Random(seed)`; nothing reads the clock or the global random
state, so the same arguments always give the same bytes. The first run starts at
`BASE_TIME` unless ``start`` says otherwise; the `generate` command starts it at
`seeded_start(seed)`, a day after the sample runs' or later, by seed.

Modules: `world` (suite, models, devices, task templates, tools), `records` (the dataclasses),
`draws` (the suite and each run's `RunDraw`), `edge_cases`, `outcomes` (outcome kinds and their
evaluation), `history`, `episodes`, `timings` (the runner's timers), `attempts` (one attempt's
row), `files` (an attempt folder's files, manifest.json), `runs` (`generate_runs`, `write_run`),
and the runner's layout: `runner_rows` (its rows, artifact paths, the earlier judgement of a
re-judged run), `runner_files` (its attempt files' shapes), `runner_run` (its suite source,
manifest and end-of-run files).
"""

from __future__ import annotations

from .runs import generate_runs, seeded_start, write_run

__all__ = ["generate_runs", "seeded_start", "write_run"]
