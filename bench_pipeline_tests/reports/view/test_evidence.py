"""Evidence folders and their links (bench_pipeline/reports/view/evidence.py)."""

from bench_pipeline.reports.view.evidence import evidence_dir, evidence_href, link_href


def test_evidence_dir_text():
    assert evidence_dir({"evidence": {"dir": "tasks/a"}}, set()) == ("tasks/a", "tasks/a")
    assert evidence_dir({"evidence": {"dir": ""}}, set()) == ("", ".")
    assert evidence_dir({"line": 3, "evidence": {"dir": None}}, {3}) == (None, "n/a (artifact_dir refused as unsafe)")
    assert evidence_dir({"line": 4, "evidence": None}, {3}) == (None, "n/a (unavailable)")


def test_evidence_href_joins_and_percent_encodes():
    assert evidence_href("../runs/r1", "tasks/a b") == "../runs/r1/tasks/a%20b/"
    assert evidence_href("/abs/run/", "\\tasks\\x\\") == "abs/run/tasks/x/"
    assert evidence_href("s3://bucket/runs/r1/", "tasks/a") == "s3://bucket/runs/r1/tasks/a/"
    assert evidence_href("", "") == "./"
    assert evidence_href(None, "tasks/a") is None and evidence_href("base", None) is None


def test_link_href_keeps_a_scheme():
    assert link_href("s3://bucket/a b.md") == "s3://bucket/a%20b.md"
    assert link_href("../x/#y.md") == "../x/%23y.md"
