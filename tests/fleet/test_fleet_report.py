"""report.html and summary.md render from plain data (no Spark)."""

from __future__ import annotations

import re

from kafkaops.fleet.report import ReportData, hbar_chart, render_html, render_markdown


def _data() -> ReportData:
    return ReportData(
        generated_at="2026-01-01 00:00:00 UTC",
        inputs={"desired": "repo/", "observed": "snaps/"},
        stages=[("desired", 1.5, "10 documents"), ("plan", 2.25, "3 changes")],
        clusters=[{"cluster": "prod", "status": "ok", "plan": {"create": 2, "update": 1}, "problems": 1, "drift": 4,
                   "orphan_topics": 2, "orphan_acls": 1, "policy_errors": 3, "brokers": 3},
                  {"cluster": "<script>alert(1)</script>", "status": "no snapshot", "plan": {}}],
        problems=[{"stage": "observed", "cluster": "old", "file": "snaps/old/header.json",
                   "rule": "SnapshotUnknownFormat", "message": "snapshot format version 2 is not supported"}],
        issues={"errors": 1, "warnings": 0, "invalid_documents": 1},
        issue_samples=[{"severity": "error", "file": "repo/a.yaml", "index": 0, "kind": "KafkaTopic", "name": "a",
                        "path": "spec.partitions", "rule": "SchemaViolation", "message": "0 is less than 1"}],
        brokers=[{"cluster": "prod", "broker": b, "replicas": 10 * (b + 1), "leaders": 5} for b in range(3)],
        principals=[{"principal": "User:etl", "read": 120, "write": 4, "clusters": ["prod"]}],
        samples={"plan": [{"cluster": "prod", "kind": "KafkaTopic", "name": "a", "action": "create",
                           "changed_fields": ["topic"], "problem_reason": None}]},
        totals={"plan": 4},
    )


def test_report_html_is_self_contained_with_inline_svg_charts():
    page = render_html(_data())
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("<svg") == 4  # changes, drift, one cluster's brokers, principals
    assert "<script" not in page and "&lt;script&gt;" in page  # names are escaped
    assert not re.search(r"""(src|href)=["']?https?://""", page)
    assert "snaps/old/header.json" in page and "SnapshotUnknownFormat" in page
    assert "User:etl" in page and "skew" in page


def test_summary_markdown_for_ci_logs():
    text = render_markdown(_data())
    assert "**3 change(s)**" in text and "1 refused" in text
    assert "| prod | ok | 2 | 1 | 0 | 0 | 0 | 1 | 4 | 2 | 1 | 3 |" in text
    assert "- `snaps/old/header.json`: snapshot format version 2 is not supported (SnapshotUnknownFormat)" in text
    assert "- plan: 2.2 s (3 changes)" in text or "- plan: 2.3 s (3 changes)" in text


def test_chart_scales_and_labels():
    svg = hbar_chart([("a", {"x": 3}), ("b", {"x": 1, "y": 1})], {"x": "#000", "y": "#111"}, "t")
    assert svg.count("<rect") == 2 + 3  # legend + segments
    assert ">a<" in svg.replace("<title>a</title>", "") and "t</title>" in svg


def test_chart_axis_ticks_are_whole_counts():
    for biggest, ticks in ((3, ["0", "1", "2", "3", "4"]), (5, ["0", "2", "4", "6", "8"]),
                           (250, ["0", "80", "160", "240", "320"]), (20000, ["0", "5k", "10k", "15k", "20k"])):
        svg = hbar_chart([("a", {"x": biggest})], {"x": "#000"}, "t")
        assert re.findall(r'class="axis" text-anchor="middle">([^<]+)<', svg) == ticks, biggest
