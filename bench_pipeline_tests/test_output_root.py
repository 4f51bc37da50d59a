"""The output root as the cross-run assets read and write it: a local folder, or a bucket
(moto's server) read through copies and written through staging."""

from __future__ import annotations

from bench_pipeline import object_store
from bench_pipeline.output_root import OutputRoot


def test_a_local_output_root_is_read_and_written_in_place(tmp_path):
    (tmp_path / "r1").mkdir()
    (tmp_path / "r1" / "report.html").write_text("<html>")
    root = OutputRoot(str(tmp_path))
    assert (root.remote, root.local, root.url("r1", "metrics.json")) == (False, tmp_path, f"{tmp_path}/r1/metrics.json")
    assert root.has("r1", "report.html") and not root.has("r1", "summary.md") and not root.has("r2", "report.html")
    assert root.fetch(["r1"], ("metrics.json",)) == tmp_path
    assert root.fetch(["sys-1"], ("repeats.json",), "_systems") == tmp_path / "_systems"
    assert root.staged() == tmp_path and root.read_side(tmp_path / "x") == tmp_path / "x"
    assert root.publish() == []


def test_the_output_root_in_a_bucket_reads_through_copies_and_writes_through_staging(bucket):
    bucket.put("reports/r1/metrics.json", "{}")
    bucket.put("reports/r1/report.html", "<html>")
    bucket.put("reports/_systems/sys-1/repeats.json", "{}")
    root = OutputRoot(bucket.url("reports"))
    assert root.has("r1", "report.html") and not root.has("r2", "report.html")
    local = root.fetch(["r1", "r2"], ("metrics.json", "comparison.json"))
    assert (local / "r1" / "metrics.json").read_text() == "{}" and not (local / "r1" / "comparison.json").exists()
    assert not (local / "r1" / "report.html").exists()  # its existence came from the listing alone
    assert (root.fetch(["sys-1"], ("repeats.json",), "_systems") / "sys-1" / "repeats.json").is_file()
    page = root.staged() / "_suites" / "s" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text("<p>")
    assert object_store.location_text(root.read_side(page)) == bucket.url("reports/_suites/s/index.html")
    staged = root.staged()
    assert root.publish() == [bucket.url("reports/_suites/s/index.html")]
    assert bucket.get("reports/_suites/s/index.html") == b"<p>" and not staged.exists()
    local_root = OutputRoot("/tmp/not-used")
    assert local_root.staged() == local_root.local and local_root.publish() == []


def test_remove_takes_the_files_and_the_folder_they_leave_empty(tmp_path):
    for name in ("repeats.json", "repeats.md"):
        (tmp_path / "_systems" / "gone").mkdir(parents=True, exist_ok=True)
        (tmp_path / "_systems" / "gone" / name).write_text("{}")
    (tmp_path / "_systems" / "shared").mkdir()
    (tmp_path / "_systems" / "shared" / "repeats.json").write_text("{}")
    (tmp_path / "_systems" / "shared" / "notes.txt").write_text("someone else's")
    root = OutputRoot(str(tmp_path))
    root.remove("_systems", "gone", ("repeats.json", "repeats.md"))
    root.remove("_systems", "shared", ("repeats.json", "repeats.md"))  # one of them already missing
    root.remove("_systems", "never-there", ("repeats.json",))
    assert not (tmp_path / "_systems" / "gone").exists()
    assert sorted(p.name for p in (tmp_path / "_systems" / "shared").iterdir()) == ["notes.txt"]


def test_remove_in_a_bucket_deletes_the_objects_and_their_local_copies(bucket):
    bucket.put("reports/_suites/s/index.html", "<p>")
    bucket.put("reports/_suites/t/index.html", "<p>")
    root = OutputRoot(bucket.url("reports"))
    local = root.fetch(["s"], ("index.html",), "_suites")
    assert (local / "s" / "index.html").is_file()
    root.remove("_suites", "s", ("index.html",))
    assert bucket.keys("reports/_suites/") == ["reports/_suites/t/index.html"]
    assert not (local / "s").exists()
