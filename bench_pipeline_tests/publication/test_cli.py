"""``bench-pipeline process --publish``: the summary printed, the progress told, the exit code."""

from __future__ import annotations

import io

from bench_pipeline.publication.cli import ProgressPrinter, publish_processed

from .server_state import item_spans
from bench_pipeline_tests.support.publication_standin import SECRET


def test_cli_publish_processed(processed_run, standin, tmp_path, monkeypatch, capsys, mode):
    for name in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert publish_processed(processed_run, tmp_path / "a") == 0
    captured = capsys.readouterr()
    assert "not configured" in captured.out
    n = len(processed_run.attempts)  # the progress says where the attempts went: the outbox
    assert f"  langfuse: {n}/{n} attempts written to the outbox (Langfuse not configured)" in captured.err
    assert "published" not in captured.err
    assert (tmp_path / "a" / "langfuse_outbox.jsonl").exists()

    monkeypatch.setenv("LANGFUSE_BASE_URL", standin.base_url)
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", standin.public_key)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET)
    monkeypatch.setenv("LANGFUSE_TIMEOUT", "2")
    assert publish_processed(processed_run, tmp_path / "b") == 0
    captured = capsys.readouterr()
    assert "published run" in captured.out and SECRET not in captured.out + captured.err
    assert f"on a {mode} server" in captured.out and standin.server_version in captured.out
    assert f"langfuse: server Langfuse {standin.server_version}" in captured.err  # said while publishing
    assert len(item_spans(standin)) == len(processed_run.attempts)

    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk-lf-wrong")
    assert publish_processed(processed_run, tmp_path / "c") == 1
    captured = capsys.readouterr()
    assert "error: Langfuse publication" in captured.err and "sk-lf-wrong" not in captured.err


def test_progress_is_printed_once_per_tenth_and_announcements_as_they_come():
    stream = io.StringIO()
    printer = ProgressPrinter(stream)
    for done in (0, 1, 2, 10, 11, 20):
        printer(done, 20)
    printer.announce("langfuse: server Langfuse 4.16.0")
    assert stream.getvalue().splitlines() == [
        "  langfuse: 0/20 attempts published", "  langfuse: 2/20 attempts published",
        "  langfuse: 10/20 attempts published", "  langfuse: 20/20 attempts published",
        "  langfuse: server Langfuse 4.16.0"]
    empty = io.StringIO()
    ProgressPrinter(empty)(0, 0)
    assert empty.getvalue() == "  langfuse: 0/0 attempts published\n"
    outbox = io.StringIO()  # without Langfuse settings
    ProgressPrinter(outbox, configured=False)(35, 35)
    assert outbox.getvalue() == "  langfuse: 35/35 attempts written to the outbox (Langfuse not configured)\n"
