"""Langfuse publication of a processed benchmark run (docs/langfuse.md).

``publish_run`` maps a run to one Dataset per suite, one Dataset Item per task attempt, one
Experiment (dataset run) per benchmark run with one experiment item per attempt, and
``benchmark.*`` / run-level scores; delivery is confirmed and idempotent, and a record of
what was confirmed (``publication.json``) lets a retry send only what is missing. Without
Langfuse keys the exact payloads go to ``langfuse_outbox.jsonl`` instead.

The modules are imported by name (``publication.publisher.publish_run``,
``publication.settings.LangfuseSettings``, ...): importing the package itself loads nothing,
so that what only names the settings (the Dagster resource, the per-run step's set-up, every
new run process) does not load the Langfuse SDK and httpx, which only a publication needs.
"""
