"""Input mistakes through the real entry point (a `kafkaops` subprocess): an empty directory, no
Kubernetes configuration, --prune over the deletion cap, and invalid manifests whose count must
agree with what is listed. Each checks the exit status, the line count, the message, and a
generous time bound where the issue asks for speed (the measured figure is printed)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import yaml
from clirun import run_kafkaops, served_double

from kafkaops.kafka import AdminClient, NewTopic

API = "kafkaops.io/v1alpha1"


def doc(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API, "kind": kind, "metadata": {"name": name}, "spec": spec}


def write(path: Path, *docs: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


# --- no manifests at all -------------------------------------------------------------------------------


def test_validate_and_apply_of_an_empty_directory_fail(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "README.md").write_text("not a manifest")
    (empty / "other.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")  # not kafkaops.io
    message = f"no kafkaops manifests under {empty}"
    for args in (["validate", str(empty)], ["validate", "-f", str(empty)],
                 ["apply", "-f", str(empty), "--bootstrap-server", "127.0.0.1:1", "--yes"],
                 ["plan", "-f", str(empty), "--bootstrap-server", "127.0.0.1:1"]):
        ran = run_kafkaops(*args, tmp=tmp_path)
        assert ran.code == 1, ran
        assert ran.stderr.splitlines() == [f"Error: {message} (kafkaops.io/v1alpha1 documents in *.yaml/*.yml); "
                                           "--allow-empty accepts that on purpose"], ran
        assert all(line.startswith("note: ") and "skipped" in line for line in ran.lines), ran  # why skipped


def test_allow_empty_accepts_it_on_purpose(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    ran = run_kafkaops("validate", str(empty), "--allow-empty", tmp=tmp_path)
    assert ran.code == 0 and "0 resources in 0 files" in ran.stdout, ran
    as_json = run_kafkaops("validate", str(empty), "-o", "json", tmp=tmp_path)
    assert as_json.code == 1 and json.loads(as_json.stdout)["error"].startswith("no kafkaops manifests"), as_json


def test_prune_of_everything_with_allow_empty(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with served_double() as cluster:
        asyncio.run(_create(cluster.bootstrap, ["old.a", "old.b"]))
        ran = run_kafkaops("plan", "-f", str(empty), "--allow-empty", "--bootstrap-server", cluster.bootstrap,
                           "--prune", tmp=tmp_path)
        # no KafkaCluster in PATH: the policy is Retain, so nothing would be deleted, and it says why
        assert ran.code == 0, ran
        assert "--prune: 2 undeclared topic(s) kept because the cluster's topicDeletion.policy is Retain" in ran.stdout


# --- kafkaops run without Kubernetes ----------------------------------------------------------------------


def test_run_without_kubernetes_configuration(tmp_path: Path) -> None:
    nowhere = tmp_path / "no-such-kubeconfig"
    ran = run_kafkaops("run", "-A", tmp=tmp_path,
                       env={"KUBECONFIG": str(nowhere), "HOME": str(tmp_path), "KUBERNETES_SERVICE_HOST": ""})
    assert ran.code == 1, ran
    assert ran.stderr.splitlines() == [f"Error: no Kubernetes configuration: set KUBECONFIG or run in a cluster "
                                       f"(no file at {nowhere})"], ran
    assert ran.seconds < 10, ran


# --- --prune over the deletion cap ------------------------------------------------------------------------


async def _create(bootstrap: str, names: list[str]) -> None:
    async with AdminClient.connect(bootstrap) as admin:
        results = await admin.create_topics([NewTopic(n, 1, 1) for n in names])
        assert all(r.error is None for r in results.values())


def test_prune_over_the_deletion_cap_is_one_line(tmp_path: Path) -> None:
    undeclared = [f"legacy.t{i:03}" for i in range(300)]
    with served_double() as cluster:
        asyncio.run(_create(cluster.bootstrap, undeclared))
        repo = write(tmp_path / "repo" / "cluster.yaml",
                     doc("KafkaCluster", "main", {"bootstrapServers": cluster.bootstrap.split(","),
                                                  "topicDeletion": {"policy": "Delete", "maxDeletionsPerReconcile": 5}}),
                     doc("KafkaTopic", "kept", {"clusterRef": {"name": "main"}, "partitions": 1,
                                                "replicationFactor": 1}))
        ran = run_kafkaops("plan", "-f", str(repo), "--prune", tmp=tmp_path)
        assert ran.code == 1, ran
        assert len(ran.lines) == 7, ran  # title, the created topic (3), the ONE capped line, summary, footer
        (capped,) = [line for line in ran.lines if "DeletionCapExceeded" in line]
        assert ("--prune would delete 300 topics, more than the cluster's topicDeletion.maxDeletionsPerReconcile "
                "(5): nothing was deleted") in capped
        assert f"first 20: {', '.join(undeclared[:20])} and 280 more (-o json lists all 300)" in capped

        full = run_kafkaops("plan", "-f", str(repo), "--prune", "-o", "json", tmp=tmp_path)
        (report,) = json.loads(full.stdout)["clusters"]
        deleted = [r["name"] for r in report["resources"] if r["action"] == "delete"]
        assert deleted == undeclared
        assert {r["problem"]["reason"] for r in report["resources"] if r["action"] == "delete"} == {
            "DeletionCapExceeded"}

        applied = run_kafkaops("apply", "-f", str(repo), "--prune", "--yes", tmp=tmp_path)
        assert applied.code == 1, applied
        assert sum("DeletionCapExceeded" in line for line in applied.lines) == 2, applied  # plan, then outcome
        assert len(applied.lines) <= 12, applied


# --- invalid manifests: counts agree with the lines ---------------------------------------------------------


def test_invalid_manifest_counts_agree_with_the_lines_listed(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.yaml",
                 doc("KafkaCluster", "main", {"bootstrapServers": ["127.0.0.1:1"]}),
                 doc("KafkaTopic", "two-errors", {"clusterRef": {"name": "main"}, "partitions": 0,
                                                  "replicationFactor": 0}),
                 doc("KafkaTopic", "one-error", {"clusterRef": {"name": "main"}, "partitions": 0,
                                                 "replicationFactor": 1}))
    ran = run_kafkaops("plan", "-f", str(path), "--retry-budget", "0", tmp=tmp_path)
    assert ran.code == 1, ran
    header = next(line for line in ran.lines if line.startswith("Invalid manifests"))
    listed = [line for line in ran.lines if line.startswith(f"  {path}:")]  # path:line:column: [index] ...
    documents = {line.split()[1] for line in listed}
    assert header.startswith(f"Invalid manifests: {len(documents)} documents with {len(listed)} errors"), ran
    assert (len(documents), len(listed)) == (2, 3), ran
    footer = ran.lines[-1]
    assert f"{len(documents)} invalid manifests skipped" in footer, ran

    validated = run_kafkaops("validate", str(path), tmp=tmp_path)
    assert validated.lines[-1].startswith(f"3 resources in 1 file: 1 valid, 2 invalid; {len(listed)} errors"), validated


def test_run_sharding_refuses_peering_on_the_command_line_and_a_short_lease(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    env = {"KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path), "KUBERNETES_SERVICE_HOST": ""}
    both = run_kafkaops("run", "-A", "--sharding", "leases", "--peering", "kafkaops", tmp=tmp_path, env=env)
    assert both.code == 1 and "--sharding and --peering exclude each other" in both.stderr, both
    short = run_kafkaops("run", "-A", "--lease-duration", "1", tmp=tmp_path, env={**env, "KAFKAOPS_SHARDING": "leases"})
    assert short.code == 1 and "--lease-duration 1: at least 3 seconds" in short.stderr, short


def test_run_refuses_a_negative_worker_limit(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    env = {"KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path), "KUBERNETES_SERVICE_HOST": "",
           "KAFKAOPS_WORKER_LIMIT": "-5"}
    ran = run_kafkaops("run", "-A", tmp=tmp_path, env=env)
    assert ran.code == 1 and "--worker-limit" in ran.stderr and "-5 is not in the range x>=0" in ran.stderr, ran
