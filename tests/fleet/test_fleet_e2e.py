"""End to end: real backends, snapshots, `kafkaops fleet plan`, and the plan-equivalence proof.

One fleet of three clusters - noida-db (a real Kafka-protocol server) and two fake clusters
(`kafkaops dev-cluster`, with ACLs, several brokers and racks) - is generated, applied with
`kafkaops apply` (version 1 of the manifests), snapshotted, and then planned against version 2
(changed configs, more partitions, a new replication factor, new and removed topics, changed
ACLs and broker configs, a refused partition decrease; KafkaUsers with a new mechanism, new
iterations, changed quotas and inline ACLs, a new user, changed and new KafkaClientQuotas) by both
`kafkaops fleet plan` and `kafkaops plan --output json` per cluster (given the passwords of exactly
the users whose credential must be written: the fleet sees no password, so it plans those and
keeps the rest), with each cluster's planning split into tasks of three declared topics (as a
cluster with more than `--plan-task-topics` topics to plan is). The users' passwords must appear
nowhere: not in the snapshots, the datasets, the report, the summary or the output. The fleet run
also gets bad input: an unparseable manifest, an invalid one, and a snapshot of an unknown format
version; it must name them and still plan everything else.

The pipeline runs once (module fixture); each test checks one aspect of its outputs.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fleet_helpers import acl, client_quota, entry, kcluster, take_snapshot, topic, user, write_snapshot, write_yaml

from kafkaops.cli.main import cli
from kafkaops.testing.servers import start_noida
from kafkaops.testing.stack import start_dev_cluster

pytestmark = pytest.mark.noida

CLUSTERS = ("east", "noida", "west")


def _topics(cluster: str, version: int, brokers: int) -> list[dict[str, Any]]:
    """Version 1 is applied; version 2 is the desired state under test."""
    docs = []
    for i in range(8):
        config: dict[str, Any] = {"retention.ms": 86400000 + i, "min.insync.replicas": 1}
        partitions, rf = 2, min(2, brokers)
        if version == 2:
            if i == 0:
                config["retention.ms"] = 172800000  # update
            elif i == 1:
                partitions = 4  # partition increase
            elif i == 2:
                config["cleanup.policy"] = "delete"  # newly declared, held only as Kafka's default
            elif i == 3:
                partitions = 1  # refused: a partition decrease
            elif i == 4:
                config["compression.type"] = "zstd"
                del config["min.insync.replicas"]  # dropped: never reset without ownership (--no-state)
            elif i == 5 and brokers > 1:
                rf = 1  # a replica change
        docs.append(topic(f"{cluster}.orders.{i}", cluster=cluster, partitions=partitions, rf=rf, config=config))
    if version == 1:
        docs += [topic(f"{cluster}.legacy.{i}", cluster=cluster, partitions=1, rf=1) for i in range(2)]
    else:
        docs += [topic(f"{cluster}.new.{i}", cluster=cluster, partitions=3, rf=min(2, brokers),
                       config={"retention.ms": 3600000}) for i in range(2)]
    return docs


def _acls(cluster: str, version: int) -> list[dict[str, Any]]:
    read = [entry("Topic", f"{cluster}.orders.", ["Read", "Describe"], pattern="Prefixed"),
            entry("Group", "orders-", ["Read"], pattern="Prefixed")]
    write = [entry("Topic", f"{cluster}.orders.0", ["Write"])]
    if version == 2:
        write.append(entry("Topic", f"{cluster}.new.0", ["Write"]))  # added binding
        read = read[:1]  # removed binding
    docs = [acl("consumer", "User:consumer", read, cluster=cluster), acl("producer", "User:producer", write,
                                                                       cluster=cluster)]
    if version == 1:
        docs.append(acl("retired", "User:retired", [entry("Topic", "*", ["Read"])], cluster=cluster))
    return docs


# the password of every user (KAFKAOPS_SECRET_<SECRET>_PASSWORD: the Secret is named after the user)
PASSWORDS = {name: f"Fl33t-{name}-pa55word-xyzzy" for name in ("svc-a", "svc-b", "svc-c", "svc-d", "svc-e")}


def _env(*users: str) -> dict[str, str]:
    return {f"KAFKAOPS_SECRET_{u.upper().replace('-', '_')}_PASSWORD": PASSWORDS[u] for u in users}


def _users(cluster: str, version: int) -> list[dict[str, Any]]:
    def ref(name: str, **more: Any) -> dict[str, Any]:
        return {"passwordSecretRef": {"name": name}, **more}

    v2 = version == 2
    reads = [entry("Topic", f"{cluster}.orders.1", ["Read"])] + ([entry("Topic", f"{cluster}.new.1", ["Write"])]
                                                                 if v2 else [])
    docs = [
        user("svc-a", cluster=cluster, authentication=ref("svc-a"), acls=reads,
             quotas={"producer_byte_rate": 2097152 if v2 else 1048576}),  # quota and inline ACLs changed
        user("svc-b", cluster=cluster, mechanism="scram-sha-512" if v2 else "scram-sha-256",
             authentication=ref("svc-b")),  # another mechanism
        user("svc-c", cluster=cluster, authentication=ref("svc-c", **({"iterations": 8192} if v2 else {}))),
        user("svc-d", cluster=cluster, authentication=ref("svc-d")),  # as applied: kept
        client_quota("app", {"clientId": "app"}, {"request_percentage": 50 if v2 else 25}, cluster=cluster),
    ]
    if v2:
        docs += [user("svc-e", cluster=cluster, authentication=ref("svc-e")),  # new
                 client_quota("edge", {"ip": "10.0.0.1"}, {"connection_creation_rate": 10}, cluster=cluster)]
    return docs


def _fleet(root: Path, version: int, servers: dict[str, tuple[str, int, bool]]) -> Path:
    base = root / f"v{version}"
    for cluster, (bootstrap, brokers, acls) in servers.items():
        folder = base / "clusters" / cluster
        policy = {"topicDeletion": {"policy": "Delete", "maxDeletionsPerReconcile": 5}} if cluster == "east" else {}
        write_yaml(folder / "cluster.yaml", kcluster(cluster, bootstrap, **policy))
        write_yaml(folder / "topics.yaml", *_topics(cluster, version, brokers))
        if acls:
            write_yaml(folder / "acls.yaml", *_acls(cluster, version))
            write_yaml(folder / "users.yaml", *_users(cluster, version))
            broker_config = {"log.cleaner.threads": 2 if version == 2 else 1}
            write_yaml(folder / "brokers.yaml", {"apiVersion": "kafkaops.io/v1alpha1", "kind": "KafkaBrokerConfig",
                                                 "metadata": {"name": f"{cluster}-defaults"},
                                                 "spec": {"clusterRef": {"name": cluster}, "config": broker_config}})
    return base


@pytest.fixture(scope="module")
def fleet_run(tmp_path_factory: pytest.TempPathFactory, spark, monkeypatch_module) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("fleet")
    monkeypatch_module.setenv("KAFKAOPS_CONFIG_DIR", str(root / "config"))
    noida = start_noida()
    east = start_dev_cluster("--brokers", "3", "--racks", "a,b,c")
    west = start_dev_cluster("--brokers", "2")
    try:
        servers = {"noida": (noida.bootstrap, 1, False), "east": (east.url, 3, True), "west": (west.url, 2, True)}
        v1 = _fleet(root, 1, servers)
        runner = CliRunner()
        applied = runner.invoke(cli, ["apply", "-f", str(v1), "--yes", "--no-state"], catch_exceptions=False,
                                env=_env("svc-a", "svc-b", "svc-c", "svc-d"))
        assert applied.exit_code == 0, applied.output
        v2 = _fleet(root, 2, servers)
        snapshots = root / "snapshots"
        for name, (bootstrap, _, _) in servers.items():
            asyncio.run(take_snapshot(bootstrap, name, snapshots))
        # the passwords of the users whose credential is missing or of another mechanism/iterations
        cli_plan = runner.invoke(cli, ["plan", "-f", str(v2), "--no-state", "--prune", "--output", "json"],
                                 catch_exceptions=False, env=_env("svc-b", "svc-c", "svc-e"))
        # bad input, after the CLI saw the clean tree: the fleet must name it and go on
        (v2 / "clusters" / "west" / "broken.yaml").write_text("apiVersion: kafkaops.io/v1alpha1\nkind: [KafkaTopic\n")
        write_yaml(v2 / "clusters" / "west" / "invalid.yaml",
                   topic("west.invalid", cluster="west", partitions=0, config={"retention.ms": "soon"}))
        write_snapshot(snapshots, "legacy", header={"version": 2})
        policy = root / "policy.yaml"
        policy.write_text("version: 1\ntopics:\n  minInsyncReplicas: 2\n  naming:\n    - pattern: '[a-z]+\\.[a-z]+\\.[0-9]+'\n"
                          "acls:\n  forbidWildcardResource: true\n")
        out = root / "out"
        policy.write_text(policy.read_text() + "users:\n  forbidUsersWithoutQuotas: true\n")
        result = runner.invoke(cli, ["fleet", "plan", "-f", str(v2), "--observed", str(snapshots),
                                     "--output-dir", str(out), "--prune", "--policy", str(policy),
                                     # tasks of 3 declared topics: each cluster's ~8 to plan are split by topic
                                     "--plan-task-topics", "3"], catch_exceptions=False,
                               env=_env(*PASSWORDS))  # in the environment, as a CI job may have them: never read
        return {"root": root, "out": out, "result": result, "cli": json.loads(cli_plan.stdout), "v2": v2,
                "snapshots": snapshots, "spark": spark}
    finally:
        east.stop()
        west.stop()
        noida.stop()


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def _rows(spark, path: Path) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in spark.read.parquet(str(path)).collect()]


def test_fleet_plan_writes_every_output_and_names_bad_input(fleet_run):
    result, out = fleet_run["result"], fleet_run["out"]
    assert result.exit_code == 1, result.output  # invalid manifests, a skipped snapshot, policy errors
    for name in ("plan", "drift", "orphans", "policy", "access", "issues"):
        assert (out / name / "_SUCCESS").exists(), name
    assert (out / "report.html").exists() and (out / "summary.md").exists()
    stderr = result.stderr
    assert re.search(r"\[2/9\] desired: .* - \d+\.\d s", stderr)
    assert re.search(r"\[4/9\] plan: .* - \d+\.\d s", stderr)
    # every cluster was split (and test_fleet_plan_equals_kafkaops_plan_per_cluster checks the rows)
    assert re.search(r"\[4/9\] plan: .*; 3 large cluster\(s\) planned in \d+ tasks \(--plan-task-topics 3\)", stderr)
    issues = _rows(fleet_run["spark"], out / "issues")
    broken = [i for i in issues if i["file"].endswith("broken.yaml")]
    assert broken and broken[0]["rule"] == "YamlSyntaxError" and broken[0]["line"] is not None
    invalid = {i["rule"] for i in issues if i["file"].endswith("invalid.yaml")}
    assert invalid  # partitions 0 and a non-numeric retention.ms
    legacy = [i for i in issues if i["cluster"] == "legacy"]
    assert legacy and legacy[0]["file"].endswith("legacy/header.json") and legacy[0]["rule"] == "SnapshotUnknownFormat"
    assert "legacy/header.json" in stderr and "version 2 is not supported" in stderr
    plan = _rows(fleet_run["spark"], out / "plan")
    assert {r["cluster"] for r in plan} == set(CLUSTERS)  # the rest of the fleet was planned
    assert not any(r["name"] == "west.invalid" for r in plan)


def test_fleet_plan_equals_kafkaops_plan_per_cluster(fleet_run):
    """The fleet's plan is `kafkaops plan --output json --no-state --prune`, resource for resource."""
    expected: dict[tuple[str, str, str], tuple] = {}
    for cluster in fleet_run["cli"]["clusters"]:
        assert cluster["error"] is None, cluster["error"]
        for r in cluster["resources"]:
            if r["action"] == "none" and r["problem"] is None:
                continue
            expected[(cluster["name"], r["kind"], r["name"])] = (
                r["action"], [(c["field"], c["old"], c["new"]) for c in r["changes"]],
                r["problem"]["reason"] if r["problem"] else None)
    got = {(r["cluster"], r["kind"], r["name"]): (r["action"], [(c["field"], c["old"], c["new"]) for c in r["changes"]],
                                                 r["problem_reason"])
           for r in _rows(fleet_run["spark"], fleet_run["out"] / "plan")}
    assert set(got) == set(expected)
    for key in sorted(expected):
        assert got[key] == expected[key], key
    # the generated fleet exercises every action and a refused change
    actions = {value[0] for value in got.values()}
    assert {"create", "update", "partition-increase", "replica-change", "delete"} <= actions
    assert any(value[2] == "PartitionDecrease" for value in got.values())
    # and users and quotas: a new user, a new mechanism, new iterations, a quota and inline ACLs,
    # a changed and a new client quota; the user as applied is kept (its rotation is invisible)
    for cluster in ("east", "west"):
        assert got[(cluster, "KafkaUser", "User:svc-e")][0] == "create"
        assert got[(cluster, "KafkaUser", "User:svc-b")][:2] == (
            "update", [("credential.SCRAM-SHA-512", None, "4096 iterations")])
        assert got[(cluster, "KafkaUser", "User:svc-c")][1] == [("credential.SCRAM-SHA-512.iterations", "4096", "8192")]
        assert {f for f, _, _ in got[(cluster, "KafkaUser", "User:svc-a")][1]} == {"quota.producer_byte_rate", "acl"}
        assert got[(cluster, "KafkaClientQuota", "client-id=app")][0] == "update"
        assert got[(cluster, "KafkaClientQuota", "ip=10.0.0.1")][0] == "create"
        assert (cluster, "KafkaUser", "User:svc-d") not in got


def test_drift_orphans_policy_access(fleet_run):
    spark, out = fleet_run["spark"], fleet_run["out"]
    drift = _rows(spark, out / "drift")
    retention = [d for d in drift if d["name"] == "east.orders.0" and d["field"] == "config.retention.ms"]
    assert retention == [{"cluster": "east", "kind": "KafkaTopic", "name": "east.orders.0", "field": "config.retention.ms",
                          "desired": "172800000", "observed": "86400000", "observed_source": "DYNAMIC_TOPIC_CONFIG",
                          "file": retention[0]["file"], "index": 0}]
    assert any(d["name"] == "User:producer" and d["desired"] and "east.new.0" in d["desired"] for d in drift
               if d["cluster"] == "east")
    assert any(d["kind"] == "KafkaBrokerConfig" and d["field"] == "config.log.cleaner.threads" for d in drift)
    orphans = {(o["cluster"], o["kind"], o["name"]) for o in _rows(spark, out / "orphans")}
    assert ("east", "KafkaTopic", "east.legacy.0") in orphans and ("noida", "KafkaTopic", "noida.legacy.1") in orphans
    assert ("west", "KafkaAcl", "User:retired") in orphans
    assert not any(name.startswith("__") for _, _, name in orphans)
    policy = _rows(spark, out / "policy")
    assert any(p["rule"] == "MinInsyncReplicasBelowMinimum" and p["name"] == "east.orders.0" for p in policy)
    access = _rows(spark, out / "access")
    consumer = {(a["cluster"], a["topic"]) for a in access if a["principal"] == "User:consumer" and a["access"] == "read"}
    assert ("east", "east.orders.3") in consumer and ("east", "east.new.0") not in consumer
    retired = {(a["cluster"], a["topic"]) for a in access if a["principal"] == "User:retired"}
    assert ("west", "west.legacy.0") in retired  # Literal '*': every topic of the cluster


def test_report_is_self_contained(fleet_run):
    page = (fleet_run["out"] / "report.html").read_text()
    assert page.count("<svg") >= 4 and page.count("<script") == 1 and "<script src" not in page  # inline only
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    # the refused partition decrease comes first among the changes, with its reason and manifest line
    plan = page.split('id="t-plan"')[1].split("<tbody>")[1].split("</tr>")[0]
    assert ">refused<" in plan and "PartitionDecrease: " in plan and re.search(r'class="manifest"[^>]*>[^<]*:\d+</a>', plan)
    summary = (fleet_run["out"] / "summary.md").read_text()
    assert "| east |" in summary and "legacy/header.json" in summary


def test_users_and_quotas_in_drift_report_and_summary(fleet_run):
    spark, out = fleet_run["spark"], fleet_run["out"]
    drift = {(d["cluster"], d["kind"], d["name"], d["field"]): (d["desired"], d["observed"])
             for d in _rows(spark, out / "drift")}
    assert drift[("east", "KafkaUser", "User:svc-b", "credential")] == ("SCRAM-SHA-512 (4096 iterations)",
                                                                       "SCRAM-SHA-256 (4096 iterations)")
    assert drift[("west", "KafkaUser", "User:svc-a", "quota.producer_byte_rate")] == ("2097152", "1048576")
    assert drift[("west", "KafkaClientQuota", "client-id=app", "quota.request_percentage")] == ("50", "25")
    principals = {(p["cluster"], p["principal"]): p for p in _rows(spark, out / "principals")}
    svc_a = principals[("east", "User:svc-a")]
    assert svc_a["credentials"] == ["SCRAM-SHA-512 (4096 iterations)"] and svc_a["quotas"] == ["producer_byte_rate=1048576"]
    assert svc_a["acl_count"] == 1 and "Read on Topic:east.orders.1" in svc_a["acls"][0]
    assert principals[("east", "User:svc-e")]["credentials"] == []  # declared, not yet in the cluster
    assert principals[("west", "User:producer")]["file"].endswith("acls.yaml")  # a KafkaAcl's principal
    policy = {(p["cluster"], p["name"], p["rule"]) for p in _rows(spark, out / "policy")}
    assert ("east", "User:svc-b", "UserWithoutQuotas") in policy and ("east", "User:svc-a", "UserWithoutQuotas") not in policy
    page = (out / "report.html").read_text()
    section = page.split('id="t-principals"')[1].split("</table>")[0]
    row = next(r for r in section.split("<tr") if ">User:svc-a<" in r and ">east<" in r)
    assert "SCRAM-SHA-512 (4096 iterations)" in row and "producer_byte_rate=1048576" in row
    assert "producer_byte_rate=2097152" in row and "Allow User:svc-a Read on Topic:east.orders.1" in row
    assert re.search(r'class="manifest"[^>]*>[^<]*users\.yaml:\d+</a>', row)
    assert "(8 to KafkaUsers, 4 to KafkaClientQuotas)" in fleet_run["result"].stdout
    assert "(8 to KafkaUsers, 4 to KafkaClientQuotas)" in (out / "summary.md").read_text()


def test_no_password_anywhere(fleet_run):
    """The users' passwords (set by `kafkaops apply`, in the environment of the fleet run) are in no
    snapshot, dataset, report, summary or output: every file is searched, Parquet by its values."""
    import pyarrow.parquet as pq

    secrets = list(PASSWORDS.values())
    searched = 0
    for base in (fleet_run["snapshots"], fleet_run["out"]):
        for path in base.rglob("*"):
            if not path.is_file() or path.name.endswith(".crc"):
                continue
            if path.suffix == ".parquet":
                text = json.dumps(pq.read_table(path).to_pylist(), default=str)
            else:
                text = path.read_bytes().decode("utf-8", "replace")
            assert not any(s in text for s in secrets), path
            searched += 1
    assert searched > 20
    result = fleet_run["result"]
    assert not any(s in result.stdout + result.stderr for s in secrets)
    assert not any(s in json.dumps(fleet_run["cli"]) for s in secrets)
