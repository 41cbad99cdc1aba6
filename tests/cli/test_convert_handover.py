"""The hand-over of docs/strimzi-migration.md: a cluster holding what Strimzi's operators made from Strimzi's
own example KafkaTopic and KafkaUser, and the converted manifests, which `kafkaops plan` must find already
true (nothing to create, change or delete), so that kafkaops adopts them without touching Kafka.

The cluster is the in-process fake cluster double (ACLs; noida-db has no authorizer). The topic and the
ACL bindings are created with the admin client the way Strimzi's Topic and User Operators create them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kafkaops.cli.main import cli
from kafkaops.kafka import AdminClient
from kafkaops.kafka.models import AclBinding, AclOperation, AclPermission, NewTopic, PatternType, ResourceType
from kafkaops.testing.fake_cluster import FakeClusterDouble

from clirun import served_double

STRIMZI = Path(__file__).resolve().parents[1] / "resources" / "strimzi"
PRINCIPAL = "User:CN=my-user"  # examples/user/kafka-user.yaml authenticates with tls


@pytest.fixture
def cluster() -> Iterator[FakeClusterDouble]:
    with served_double() as double:
        yield double


def _binding(resource_type: ResourceType, name: str, operation: AclOperation) -> AclBinding:
    return AclBinding(resource_type, name, PatternType.LITERAL, PRINCIPAL, "*", operation, AclPermission.ALLOW)


async def _as_strimzi_made_it(bootstrap: str, extra_binding: bool) -> None:
    bindings = [_binding(ResourceType.TOPIC, "my-topic", op)
                for op in (AclOperation.DESCRIBE, AclOperation.READ, AclOperation.CREATE, AclOperation.WRITE)]
    bindings.append(_binding(ResourceType.GROUP, "my-group", AclOperation.READ))
    if extra_binding:  # made by hand, outside Strimzi: kafkaops would remove it
        bindings.append(_binding(ResourceType.TOPIC, "audit", AclOperation.READ))
    async with AdminClient.connect(bootstrap) as admin:
        created = await admin.create_topics([NewTopic("my-topic", 1, 1, {"retention.ms": "7200000",
                                                                         "segment.bytes": "1073741824"})])
        assert all(result.ok for result in created.values()), created
        acls = await admin.create_acls(bindings)
        assert all(result.ok for result in acls.values()), acls


def _converted(tmp_path: Path, bootstrap: str) -> Path:
    out = tmp_path / "kafkaops"
    result = CliRunner().invoke(cli, ["convert", "--from", "strimzi", "-f", str(STRIMZI / "topic-kafka-topic.yaml"),
                                      "-f", str(STRIMZI / "user-kafka-user.yaml"), "--cluster", "prod",
                                      "--output-dir", str(out)])
    assert result.exit_code == 0, result.output
    (out / "cluster.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kafkaops.io/v1alpha1", "kind": "KafkaCluster", "metadata": {"name": "prod"},
        "spec": {"bootstrapServers": [bootstrap]}}))
    return out


def _plan(out: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    monkeypatch.setenv("KAFKAOPS_STATE", str(tmp_path / "state.json"))
    monkeypatch.setenv("KAFKAOPS_CONFIG_DIR", str(tmp_path / "config"))
    result = CliRunner().invoke(cli, ["plan", "-f", str(out)])
    return result.exit_code, result.output


def test_converted_examples_adopt_strimzis_topic_and_acls_without_a_change(
        cluster: FakeClusterDouble, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asyncio.run(_as_strimzi_made_it(cluster.bootstrap, extra_binding=False))
    code, output = _plan(_converted(tmp_path, cluster.bootstrap), tmp_path, monkeypatch)
    assert code == 0, output  # 0: nothing to change
    assert "no changes" in output and "2 resources up to date" in output, output


def test_a_binding_strimzi_did_not_declare_shows_up_as_a_deletion(
        cluster: FakeClusterDouble, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Why the guide says to run `kafkaops plan` before applying: KafkaAcl owns all the principal's bindings.
    asyncio.run(_as_strimzi_made_it(cluster.bootstrap, extra_binding=True))
    code, output = _plan(_converted(tmp_path, cluster.bootstrap), tmp_path, monkeypatch)
    assert code == 2, output  # changes pending
    assert "acl: - Allow User:CN=my-user Read on Topic:audit (Literal) from *" in output, output
    assert "0 to create, 1 to update, 0 to delete, 0 problems; 1 unchanged" in output, output
