"""report.html and summary.md render from plain data (no Spark); findings.py shapes their rows."""

from __future__ import annotations

import re

from report_data import build

from kafkaops.fleet import findings, units
from kafkaops.fleet.charts import hbar_chart
from kafkaops.fleet.report import render_html, sections
from kafkaops.fleet.summary import render_markdown


def test_report_html_is_one_self_contained_page(tmp_path):
    page = render_html(build(tmp_path))
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("<svg") == 4  # changes, drift, one cluster's brokers, principals
    assert page.count("<script>") == 1 and "&lt;script&gt;alert(1)" in page  # names are escaped
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # nothing fetched, no absolute link
    assert "SnapshotUnknownFormat" in page and "User:etl" in page and "skew" in page


def test_table_of_contents_counts_every_section(tmp_path):
    data = build(tmp_path)
    page = render_html(data)
    toc = re.search(r'<nav class="toc".*?</nav>', page).group(0)
    assert re.findall(r'<a href="#([a-z]+)">[^<]+</a>(?: <span class="meta">\((\d+)\)</span>)?', toc) == [
        ("problems", "1"), ("clusters", "4"), ("plan", "24"), ("drift", "24"), ("orphans", "3"), ("policy", "6"),
        ("principals", "3"), ("issues", "1"), ("charts", ""), ("run", "2")]
    assert [key for key, _ in sections(data)] == re.findall(r'<h2 id="([a-z]+)">', page)
    for table in ("problems", "clusters", "plan", "drift", "orphans", "policy", "principals", "issues"):
        assert f'<table class="data" id="t-{table}">' in page and f'data-filter="t-{table}"' in page


def test_every_finding_links_to_its_manifest_line_and_cluster(tmp_path):
    page = render_html(build(tmp_path))
    # relative links from out/report.html, the line shown
    assert '<a class="manifest" href="../repo/clusters/dev/topics.yaml" title="' in page
    assert ">repo/clusters/dev/topics.yaml:8</a>" in page  # dev.orders.0's partitions
    assert ">repo/clusters/prod/topics.yaml:154</a>" in page  # prod.orders.11's retention.ms
    assert '<a href="#cluster-edge">edge</a>' in page and '<tr id="cluster-edge">' in page
    assert '<a class="snapshot" href="../snaps/edge/header.json"' in page


def test_every_problem_has_a_reason(tmp_path):
    data = build(tmp_path)
    for name in ("drift", "orphans", "policy", "issues"):
        assert all(row["reason"] for row in data.tables[name]), name
    refused = [r for r in data.tables["plan"] if r["action"] == "refused"]
    assert refused and all(r["reason"] == "PartitionDecrease: partitions cannot decrease from 12 to 10" for r in refused)
    page = render_html(data)
    assert "declared in the manifests, but no snapshot of it was given: not planned" in page


def test_policy_findings_sorted_by_severity_one_row_per_finding(tmp_path):
    rows = build(tmp_path).tables["policy"]
    assert [r["severity"] for r in rows] == ["error"] * 3 + ["warning"] * 3
    assert rows[3]["state"] == "desired + observed"
    assert rows[3]["reason"] == "retention.ms 1036800000 (12 days) is above the maximum 604800000 (7 days)"


def test_human_units():
    assert units.with_unit("config.retention.ms", "604800000") == "604800000 (7 days)"
    assert units.with_unit("config.segment.bytes", "1073741824") == "1073741824 (1 GiB)"
    assert units.with_unit("config.max.message.bytes", "1572864") == "1572864 (1.5 MiB)"
    assert units.with_unit("config.retention.ms", "-1") == "-1 (forever)"
    assert units.with_unit("config.retention.bytes", "-1") == "-1 (unlimited)"
    assert units.with_unit("partitions", "1000000") == "1000000"
    assert units.with_unit("config.cleanup.policy", "delete") == "delete"
    assert units.duration(5_400_000) == "1.5 hours" and units.duration(31_536_000_000) == "1 year"
    assert units.duration(34_560_000_000) == "400 days" and units.duration(250) == "250 ms"
    assert findings.change_text([{"field": "config.retention.ms", "old": "86400000", "new": "604800000"},
                                 {"field": "partitions", "old": None, "new": "3"}]) == \
        "config.retention.ms: 86400000 (1 day) -> 604800000 (7 days); partitions: + 3"


def test_line_of_a_field_falls_back_to_the_resource():
    where = {"line": 10, "field_lines": {"resource": 12, "partitions": 15, "config": 17, "config.retention.ms": 18}}
    assert findings.line_of(where, "partitions") == 15
    assert findings.line_of(where, "config.retention.ms") == 18
    assert findings.line_of(where, "config.min.insync.replicas") == 17  # not declared: the config block
    assert findings.line_of(where, "replicationFactor") == 12
    assert findings.line_of({"line": 10, "field_lines": {}}, "acl") == 10
    assert findings.line_of(None, "acl") is None


def test_summary_markdown_lists_top_findings_per_cluster(tmp_path):
    text = render_markdown(build(tmp_path))
    assert "**23 change(s)**, 1 refused" in text
    assert "| prod | ok | 0 | 8 | 0 | 0 | 0 | 0 | 8 | 1 | 0 | 1 |" in text
    edge = text.split("### edge\n\n")[1].split("\n\n")[0].splitlines()
    assert edge[0] == ("- **refused** KafkaTopic `edge.orders.7` (`repo/clusters/edge/topics.yaml:94`): "
                       "PartitionDecrease: partitions cannot decrease from 12 to 10")
    assert edge[1].startswith("- **policy error** ReplicationFactorBelowMinimum on KafkaTopic `edge.orders.0` (observed)")
    assert edge[2] == ("- update KafkaTopic `edge.orders.0` (`repo/clusters/edge/topics.yaml:3`): "
                       "config.retention.ms: 3600000 (1 hour) -> 86400000 (1 day)")
    assert len(edge) == 11 and edge[-1] == "- … and 9 more (report.html)"
    assert "### <script>alert(1)</script>\n\n- status: no snapshot\n- nothing to do" in text
    assert "- plan: 2.2 s (24 changes)" in text or "- plan: 2.3 s (24 changes)" in text


def test_chart_scales_and_labels():
    svg = hbar_chart([("a", {"x": 3}), ("b", {"x": 1, "y": 1})], {"x": "#000", "y": "#111"}, "t")
    assert svg.count("<rect") == 2 + 3  # legend + segments
    assert ">a<" in svg.replace("<title>a</title>", "") and "t</title>" in svg


def test_chart_axis_ticks_are_whole_counts():
    for biggest, ticks in ((3, ["0", "1", "2", "3", "4"]), (5, ["0", "2", "4", "6", "8"]),
                           (250, ["0", "80", "160", "240", "320"]), (20000, ["0", "5k", "10k", "15k", "20k"])):
        svg = hbar_chart([("a", {"x": biggest})], {"x": "#000"}, "t")
        assert re.findall(r'class="axis" text-anchor="middle">([^<]+)<', svg) == ticks, biggest


def test_counts_in_tables_are_exact(tmp_path):
    data = build(tmp_path)
    data.clusters[0]["desired_topics"] = 1_234_567
    page = render_html(data)
    assert '<td class="n" data-sort="1234567">1,234,567</td>' in page  # exact, sorted as a number


def test_principals_section_lists_credentials_quotas_and_acls(tmp_path):
    from kafkaops.fleet.report import render_html, sections

    data = build(tmp_path)
    assert ("principals", 3) in sections(data)
    page = render_html(data)
    table = page.split('id="t-principals"')[1].split("</table>")[0]
    dev = next(r for r in table.split("<tr") if ">User:dev-app<" in r)
    assert "SCRAM-SHA-256 (4096 iterations)" in dev and "SCRAM-SHA-512 (4096 iterations), password generated" in dev
    assert "producer_byte_rate=1048576" in dev and "producer_byte_rate=2097152" in dev
    assert ">12<" in dev and "Topic:dev.orders.9 " in dev and "Topic:dev.orders.10 " not in dev
    assert "… and 2 more (principals/)" in dev
    assert 'class="manifest"' in dev and "topics.yaml:3<" in dev  # no credential line: the resource's
