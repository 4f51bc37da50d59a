"""``bench-pipeline process --publish``: publish a processed run and print a summary."""

from __future__ import annotations

import sys
from pathlib import Path

from .result import PublicationError
from .settings import LangfuseSettings


#: What the progress says of the attempts done: sent to Langfuse, or, without Langfuse settings,
#: written to the outbox (the per-run Dagster step says the same: assets/partition_work.py).
PUBLISHED, WRITTEN_TO_OUTBOX = "published", "written to the outbox (Langfuse not configured)"


class ProgressPrinter:
    """Prints each tenth of the way once, and which server the publication talks to (stderr).
    ``configured=False``: the attempts are written to the outbox, and it says so."""

    def __init__(self, stream=None, configured: bool = True):
        self.stream = stream or sys.stderr
        self.shown: set[int] = set()
        self.done_word = PUBLISHED if configured else WRITTEN_TO_OUTBOX

    def __call__(self, done: int, total: int) -> None:
        tenth = done * 10 // total if total else 10
        if tenth not in self.shown:
            self.shown.add(tenth)
            print(f"  langfuse: {done}/{total} attempts {self.done_word}", file=self.stream, flush=True)

    def announce(self, text: str) -> None:
        print(f"  {text}", file=self.stream, flush=True)


def publish_processed(processed, out_dir: Path) -> int:
    """Publish ``processed`` (a ``bench_pipeline.pipeline.ProcessedRun``); 0 on success, 1 on failure.

    Settings come from the environment (LANGFUSE_BASE_URL / LANGFUSE_HOST, LANGFUSE_PUBLIC_KEY,
    LANGFUSE_SECRET_KEY); without keys the payloads go to the outbox and 0 is returned.
    """
    from bench_pipeline.pipeline import publish

    raw = processed.raw
    settings = LangfuseSettings.from_env()
    try:
        result = publish(processed, Path(out_dir), settings, ProgressPrinter(configured=settings.configured))
    except PublicationError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 1
    if result.status == "not_configured":
        print(
            f"langfuse: not configured (set LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY); "
            f"{result.items} item(s), {result.spans} span(s), {result.scores} score(s) written to {result.outbox_path}"
        )
        return 0
    server = {"v4": "a v4 server (events mode)", "v3": "a v3 server (legacy mode: dataset runs)"}.get(
        result.server or "", "Langfuse")
    version = f" {result.server_version}" if result.server_version else ""
    run_items = f", {result.run_items} dataset run item(s)" if result.server == "v3" else ""
    print(
        f"langfuse: published run {raw.run_id} to dataset {result.dataset!r} (experiment {result.experiment_id}) "
        f"on {server}{version}: "
        f"{result.items} item(s) written, {result.spans} span(s){run_items}, {result.scores} score(s) sent, "
        f"{result.skipped_existing} attempt(s) already published; {result.http_requests} HTTP request(s); "
        f"record {result.record_path}"
    )
    return 0
