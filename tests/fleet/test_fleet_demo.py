"""`make fleet-demo` (kafkaops.fleet.demo): what the README shows must be what the run finds.

The demo applies last week's examples/ to two fake clusters, changes them behind kafkaops' back,
snapshots them and runs the fleet pipeline on examples/clusters with examples/policy.yaml. Each
of its edits and out-of-band changes must come out in the right dataset, and nothing else may:
examples/ as applied is otherwise exactly what the clusters hold.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from kafkaops.fleet.demo import run_demo


@pytest.fixture(scope="module")
def demo(spark, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("fleet-demo")
    lines: list[str] = []
    result = run_demo(out, echo=lines.append, spark=spark)
    report = out / "report"

    def rows(name: str) -> list[dict[str, Any]]:
        return [r.asDict(recursive=True) for r in spark.read.parquet(str(report / name)).collect()]

    return {"result": result, "lines": lines, "out": out, "rows": rows}


def test_every_change_is_planned_and_nothing_else(demo):
    plan = {(r["cluster"], r["name"]): (r["action"], [(c["field"], c["old"], c["new"]) for c in r["changes"]],
                                        r["problem_reason"]) for r in demo["rows"]("plan")}
    assert plan[("dev", "orders.dlq")][0] == "create"
    assert plan[("prod", "payments.fraud-scores")] == ("partition-increase", [("partitions", "6", "12")], None)
    assert plan[("prod", "analytics.sessions.v1")][0] == "replica-change"
    assert plan[("prod", "analytics.sessions.v1")][1][0] == ("replicationFactor", "2", "3")
    assert plan[("prod", "payments.transactions.v1")] == (
        "update", [("config.retention.ms", "604800000", "2592000000")], None)
    assert plan[("dev", "orders.events.v1")] == ("update", [("config.retention.ms", "86400000", "604800000")], None)
    assert plan[("dev", "brokers/default")] == ("update", [("config.log.retention.ms", "3600000", "86400000")], None)
    assert len(plan) == 6, sorted(plan)  # the rest of examples/ is what the clusters hold
    assert demo["result"].changes == 6 and demo["result"].refused == 0


def test_drift_orphans_policy_and_access(demo):
    drift = {(d["cluster"], d["name"], d["field"]): (d["desired"], d["observed"]) for d in demo["rows"]("drift")}
    assert drift[("prod", "payments.transactions.v1", "config.retention.ms")] == ("2592000000", "604800000")
    assert drift[("dev", "brokers/default", "config.log.retention.ms")] == ("86400000", "3600000")
    assert drift[("prod", "analytics.sessions.v1", "replicationFactor")] == ("3", "2")
    assert drift[("prod", "payments.fraud-scores", "partitions")] == ("12", "6")
    assert len(drift) == 5, sorted(drift)
    orphans = {(o["cluster"], o["kind"], o["name"]) for o in demo["rows"]("orphans")}
    assert orphans == {("prod", "KafkaTopic", "payments.backfill-2026-10"), ("dev", "KafkaTopic", "scratch.load-test"),
                       ("prod", "KafkaAcl", "User:legacy-reporting")}
    policy = {(p["cluster"], p["name"], p["rule"], p["severity"]) for p in demo["rows"]("policy")}
    assert ("prod", "User:legacy-reporting", "WildcardResource", "error") in policy
    assert ("dev", "scratch.load-test", "TopicNamePattern", "error") in policy
    assert ("prod", "payments.backfill-2026-10", "ReplicationFactorBelowMinimum", "error") in policy
    assert ("prod", "payments.ledger.v1", "RetentionAboveMaximum", "warning") in policy
    # dev's replication factor 1 is allowed there by the override
    assert not any(c == "dev" and rule == "ReplicationFactorBelowMinimum" and name != "scratch.load-test"
                   for c, name, rule, _ in policy)
    access = {(a["cluster"], a["principal"], a["topic"], a["access"]) for a in demo["rows"]("access")}
    assert ("prod", "User:legacy-reporting", "payments.ledger.v1", "read") in access  # '*' reads everything


def test_report_and_what_the_demo_says(demo):
    report: Path = demo["out"] / "report"
    assert (report / "summary.md").exists()
    page = (report / "report.html").read_text()
    # plan samples read like `kafkaops plan`: FieldChange's own text
    assert "<td>partitions: 6 -&gt; 12</td>" in page and "topic: + orders.dlq; partitions: + 1" in page
    # every manifest link of the changes and drift names the line that declares the resource or field
    for table, check in (("plan", lambda cells: cells[2] if cells[1] == "KafkaTopic" else "name:"),
                         ("drift", lambda cells: cells[3].removeprefix("config."))):
        body = page.split(f'id="t-{table}"')[1].split("<tbody>")[1].split("</tbody>")[0]
        rows = re.findall(r"<tr>(.*?)</tr>", body)
        assert rows, table
        for row in rows:
            cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
            file, line = re.search(r'class="manifest" href="[^"]+" title="([^"]+)">[^<]*:(\d+)</a>', row).groups()
            text = Path(file).read_text().splitlines()[int(line) - 1]
            assert check(cells) in text, (table, cells, text)
    said = "\n".join(demo["lines"])
    assert "$ kafkaops snapshot --bootstrap-server" in said and "$ kafkaops fleet plan -f" in said
    assert "[9/9] report" in said
    assert demo["result"].summary().startswith("2 cluster(s): 6 change(s), 0 refused")
