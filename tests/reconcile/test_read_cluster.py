"""read_cluster is the one bulk read (observe, snapshot, export, the operator's resync through the
engine): what it reads, in how many requests, and that nothing else reads ACLs."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

from kafkaops import kafka
from kafkaops.kafka import AdminClient, AlterConfigOp, Batcher, ConfigResource, NewTopic
from kafkaops.reconcile.observe import observe
from kafkaops.reconcile.read import ObserveScope, read_cluster
from kafkaops.resources.acl import AclOperation, ResourceType
from kafkaops.testing.fake_cluster import FakeClusterDouble

W = kafka


def _binding(resource_type: kafka.ResourceType, name: str, principal: str) -> kafka.AclBinding:
    return W.AclBinding(resource_type, name, W.PatternType.LITERAL, principal, "*", W.AclOperation.READ,
                        W.AclPermission.ALLOW)


async def test_one_read_of_everything_with_the_inexpressible_acls_apart() -> None:
    async with FakeClusterDouble(brokers=3, acls_enabled=True, tick_interval=None) as double:
        async with AdminClient.connect(double.bootstrap, linger=0.01) as admin:
            assert (await admin.create_topics([NewTopic("orders", 2, 2, {"retention.ms": "3600000"})])).all_ok
            user = _binding(W.ResourceType.USER, "bob", "User:admin")
            assert (await admin.create_acls([_binding(W.ResourceType.TOPIC, "orders", "User:app"), user])).all_ok
            assert (await admin.incremental_alter_configs(
                {ConfigResource.broker(None): [AlterConfigOp("log.retention.ms", "604800000")]})).all_ok
            admin.requests_by_api.clear()
            scope = ObserveScope(topics=None, topic_configs=None, acls=True, broker_keys=frozenset({""}),
                                 reassignments=False)
            read = await read_cluster(Batcher(admin, linger=0.0), scope)
            sent = dict(admin.requests_by_api)
            admin.requests_by_api.clear()
            observed = await observe(Batcher(admin, linger=0.0), scope)
    assert sent == {"Metadata": 1, "DescribeConfigs": sent["DescribeConfigs"], "DescribeAcls": 1}, sent
    assert sent["DescribeConfigs"] <= 3  # batched: the topic's configs and the cluster default, by broker
    state = read.observed
    assert state.topics["orders"].assignment and state.topics["orders"].overrides()["retention.ms"].value == "3600000"
    assert state.broker_configs[""]["log.retention.ms"].value == "604800000"
    [app] = state.acls["User:app"]
    assert (app.resource_type, app.operation) == (ResourceType.TOPIC, AclOperation.READ)
    assert "User:admin" not in state.acls and read.unmapped_acls == (user,)
    assert set(state.brokers) == {1, 2, 3} and isinstance(state.brokers[1], kafka.BrokerInfo)
    # observe() is read_cluster's observed state (the double reports a random controller, as KRaft does)
    assert replace(observed, controller_id=state.controller_id) == state


def _calls(tree: ast.AST, names: set[str]) -> list[int]:
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in names]


def test_only_read_cluster_reads_acls_outside_the_admin_client() -> None:
    """observe, snapshot and export used to read ACLs three ways; now reconcile/read.py alone does
    (apply's DeleteAcls/CreateAcls are writes; the admin client and the test doubles are below)."""
    root = Path(__import__("kafkaops").__file__).parent
    readers = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(("kafka/", "testing/")):
            continue
        found = _calls(ast.parse(path.read_text("utf-8")), {"describe_all_acls", "describe_acls"})
        if found:
            readers[rel] = found
    assert list(readers) == ["reconcile/read.py"], readers


class BatcherDroppingMetadataDouble(Batcher):
    """A Batcher whose topic read is followed by another request losing its connection, which
    drops the admin client's metadata cache (what the soak met under dropped connections)."""

    async def describe_topics(self, names):  # type: ignore[override]
        results = await super().describe_topics(names)
        self.admin._metadata = None  # noqa: SLF001 - what AdminClient._execute does on a lost connection
        return results


async def test_a_metadata_cache_dropped_mid_read_is_read_again() -> None:
    """Soak: read_cluster asserted the metadata cache was still there after its concurrent reads;
    a request that lost its connection meanwhile had dropped it, and an AssertionError escaped the
    operator's handlers. The engine's ownership key (the cluster id) stays the same throughout."""
    from kafkaops.reconcile import Engine

    async with FakeClusterDouble(brokers=3, tick_interval=None) as double:
        async with AdminClient.connect(double.bootstrap, linger=0.01) as admin:
            assert (await admin.create_topics([NewTopic("orders", 1, 1)])).all_ok
            batcher = BatcherDroppingMetadataDouble(admin, linger=0.0)
            engine = Engine(batcher, cluster="named")
            key = engine.state_key()
            scope = ObserveScope(topics=frozenset({"orders"}), topic_configs=None, acls=False,
                                 broker_keys=frozenset(), reassignments=False)
            read = await read_cluster(batcher, scope)
            assert admin.cached_metadata is not None and read.observed.cluster_id == double.cluster_id
            admin._metadata = None  # noqa: SLF001
            assert engine.state_key() == key == double.cluster_id, "not the name: ownership stays where it is"
