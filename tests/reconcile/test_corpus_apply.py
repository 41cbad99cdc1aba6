"""The bad-input corpus pushed through apply in ONE batch with its valid neighbours: the invalid
manifests change nothing in Kafka, the valid ones are applied (against the fake cluster double,
which has the ACLs and brokers the corpus uses)."""

from __future__ import annotations

from pathlib import Path

import yaml

from kafkaops.kafka import AclBindingFilter, AdminClient, Batcher, ConfigResource, ConfigSource
from kafkaops.reconcile import DesiredState, Engine, State
from kafkaops.reconcile.settings import EngineSettings
from kafkaops.resources import load_and_validate
from kafkaops.testing.fake_cluster import FakeClusterDouble

CORPUS = Path(__file__).parent.parent / "resources" / "corpus"
INVALID = sorted((CORPUS / "invalid").glob("*.yaml"))
VALID = sorted((CORPUS / "valid").glob("*.yaml"))


def raw_documents(path: Path) -> list[dict]:
    try:
        return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    except yaml.YAMLError:
        return []


def declared_names(paths: list[Path]) -> tuple[set[str], set[str], set[str]]:
    """Topic names, principals and broker config keys the files mention, read leniently."""
    topics: set[str] = set()
    principals: set[str] = set()
    broker_keys: set[str] = set()
    for path in paths:
        for doc in raw_documents(path):
            spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
            name = (doc.get("metadata") or {}).get("name")
            if doc.get("kind") == "KafkaTopic":
                topics.add(str(spec.get("topicName") or name))
            elif doc.get("kind") == "KafkaAcl" and isinstance(spec.get("principal"), str):
                principals.add(spec["principal"])
            elif doc.get("kind") == "KafkaBrokerConfig" and isinstance(spec.get("config"), dict):
                broker_keys.update(spec["config"])
    return topics, principals, broker_keys


async def test_invalid_manifests_change_nothing_and_valid_neighbours_apply() -> None:
    validated = load_and_validate([CORPUS])
    assert len(validated.invalid) >= 40
    assert {e.file for e in validated.errors} == {str(p) for p in INVALID}  # each bad file, and only those
    invalid_topics, invalid_principals, invalid_broker_keys = declared_names(INVALID)
    valid_topics, valid_principals, valid_broker_keys = declared_names(VALID)

    async with FakeClusterDouble(brokers=3, first_broker_id=0, racks=["a", "b", "c"], acls_enabled=True) as cluster:
        async with AdminClient.connect(cluster.bootstrap, linger=0.02) as admin:
            want = DesiredState.of(validated.valid, validated.clusters()[0])
            report = await Engine(Batcher(admin), cluster="corpus", settings=EngineSettings(wait_poll_min=0.01)).reconcile(want)
            states = {(o.kind, o.name): (o.state, o.problem) for o in report.outcomes}
            assert all(state in (State.APPLIED, State.UNCHANGED) for state, _ in states.values()), "\n".join(f"{k} {v}" for k, v in states.items())
            assert len(report.outcomes) == len(validated.valid) - len(validated.clusters())  # all but KafkaClusters
            assert report.requests["CreateTopics"] == 1

            existing = set((await admin.metadata(None)).topics)
            assert valid_topics <= existing
            assert not (invalid_topics - valid_topics) & existing
            bindings = await admin.describe_acls(AclBindingFilter())
            principals = {b.principal for b in bindings}
            assert not (invalid_principals - valid_principals) & principals
            configs = await admin.describe_configs([ConfigResource.broker(None)] +
                                                   [ConfigResource.broker(b) for b in cluster.brokers])
            dynamic = {key for result in configs.values() for key, entry in (result.value or {}).items()
                       if entry.source in (ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)}
            assert dynamic <= valid_broker_keys
            assert not (invalid_broker_keys - valid_broker_keys) & dynamic
