"""A fleet report's data without Spark: rows as the datasets hold them, shaped by findings.py, with
real manifest files and snapshot headers on disk so that the report's links can be followed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fleet_helpers import topic, write_yaml

from kafkaops.fleet import findings
from kafkaops.fleet.report import ReportData

CLUSTERS = ("prod", "dev", "edge")


def build(root: Path) -> ReportData:
    """root/repo/clusters/<c>/topics.yaml (12 topics each), root/snaps/<c>/header.json, report dir root/out."""
    files: dict[str, Path] = {}
    for c in CLUSTERS:
        docs = [topic(f"{c}.orders.{i}", cluster=c, partitions=3 + i, rf=3,
                      config={"retention.ms": 86_400_000 * (i + 1)}) for i in range(12)]
        files[c] = write_yaml(root / "repo" / "clusters" / c / "topics.yaml", *docs)
        (root / "snaps" / c).mkdir(parents=True, exist_ok=True)
        (root / "snaps" / c / "header.json").write_text("{}")
    (root / "out").mkdir(exist_ok=True)

    def where(c: str, i: int, field: str | None) -> dict[str, Any]:
        # each document is 12 lines long in write_yaml's output; its metadata.name is on its 3rd line
        return {"file": str(files[c]), "index": i, "line": findings.line_of(
            {"line": 1 + 13 * i, "field_lines": {"resource": 3 + 13 * i, "partitions": 8 + 13 * i,
                                                  "config.retention.ms": 11 + 13 * i}}, field)}

    plan, drift, policy, orphans = [], [], [], []
    for n, c in enumerate(CLUSTERS):
        for i in range(8):
            refused = i == 7 and c == "edge"
            plan.append(findings.plan_row({
                "cluster": c, "kind": "KafkaTopic", "name": f"{c}.orders.{i}", "action": "none" if refused else
                "update", "changes": [{"field": "config.retention.ms", "old": str(3_600_000 * (i + 1)),
                                       "new": str(86_400_000 * (i + 1))}],
                "problem_reason": "PartitionDecrease" if refused else None,
                "problem_message": "partitions cannot decrease from 12 to 10" if refused else None,
                **where(c, i, "resource")}))
            drift.append(findings.drift_row({
                "cluster": c, "kind": "KafkaTopic", "name": f"{c}.orders.{i}", "field": "partitions",
                "desired": str(3 + i), "observed": str(2 + i + n), "observed_source": None, **where(c, i, "partitions")}))
        policy.append(findings.policy_row({
            "cluster": c, "kind": "KafkaTopic", "name": f"{c}.orders.11", "rule": "RetentionAboveMaximum",
            "severity": "warning", "message": "retention.ms 1036800000 is above the maximum 604800000",
            "states": ["desired", "observed"], **where(c, 11, "config.retention.ms")}))
        policy.append(findings.policy_row({
            "cluster": c, "kind": "KafkaTopic", "name": f"{c}.orders.0", "rule": "ReplicationFactorBelowMinimum",
            "severity": "error", "message": "replication factor 1 is below the minimum 3", "states": ["observed"],
            **where(c, 0, "replicationFactor")}))
        orphans.append(findings.orphan_row({"cluster": c, "kind": "KafkaTopic", "name": f"{c}.scratch",
                                            "detail": "partitions=1, replicationFactor=1"}))
    principals = [findings.principal_row({
        "cluster": c, "principal": f"User:{c}-app", "declared_mechanism": "SCRAM-SHA-512 (4096 iterations)",
        "password_source": "generated", "credentials": ["SCRAM-SHA-256 (4096 iterations)"] if c == "dev" else [],
        "quotas": ["producer_byte_rate=1048576"], "declared_quotas": ["producer_byte_rate=2097152"],
        "acl_count": 12, "acls": [f"Allow User:{c}-app Read on Topic:{c}.orders.{i} (Literal) from *" for i in range(12)],
        **where(c, 0, "credential")}) for c in CLUSTERS]
    clusters = [{"cluster": c, "status": "ok", "snapshot": f"2026-01-0{n + 1}T00:00:00Z", "brokers": 3 + n,
                 "desired_topics": 12, "observed_topics": 12 + n, "plan": {"update": 8 - (c == "edge")},
                 "problems": int(c == "edge"), "drift": 8, "orphan_topics": 1, "orphan_acls": 0, "policy_errors": 1, "policy_warnings": 1}
                for n, c in enumerate(CLUSTERS)]
    clusters.append({"cluster": "<script>alert(1)</script>", "status": "no snapshot", "plan": {}})
    return ReportData(
        generated_at="2026-01-01 00:00:00 UTC",
        inputs={"desired": str(root / "repo"), "observed": str(root / "snaps")},
        stages=[("desired", 1.5, "10 documents"), ("plan", 2.25, "24 changes")],
        clusters=clusters,
        problems=[{"stage": "observed", "cluster": "old", "file": str(root / "snaps" / "prod" / "header.json"),
                   "rule": "SnapshotUnknownFormat", "message": "snapshot format version 2 is not supported"}],
        issues={"errors": 1, "warnings": 0, "invalid_documents": 1},
        brokers=[{"cluster": "prod", "broker": b, "replicas": 10 * (b + 1), "leaders": 5} for b in range(3)],
        principals=[{"principal": "User:etl", "read": 120, "write": 4, "clusters": ["prod"]}],
        tables={"plan": plan, "drift": drift, "orphans": orphans,
                "policy": sorted(policy, key=findings.policy_sort_key), "principals": principals,
                "issues": [findings.issue_row({"severity": "error", "file": str(files["dev"]), "index": 2,
                                               "line": 33, "kind": "KafkaTopic", "name": "dev.orders.2",
                                               "path": "spec.partitions", "rule": "SchemaViolation",
                                               "message": "0 is less than the minimum of 1"})]},
        totals={"plan": len(plan), "drift": len(drift), "orphans": len(orphans), "policy": len(policy),
                "principals": len(principals)},
        report_dir=str(root / "out"), cwd=str(root),
        snapshots={c: str(root / "snaps" / c / "header.json") for c in CLUSTERS},
    )
