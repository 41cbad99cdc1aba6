"""read_cluster: one bulk read of a cluster, the only one: observe (the planner, the operator's
reconciles and resyncs), the snapshot and the export all read through it.

One Metadata request for the topics in scope (every topic when pruning, exporting or taking a
snapshot), one batched DescribeConfigs for their configs, asking only for the keys the plan
compares (declared or owned; the Batcher splits by record budget and broker), one DescribeAcls
for every binding, one DescribeConfigs per broker-scoped config resource, and one
ListPartitionReassignments; when asked, one DescribeUserScramCredentials and one DescribeClientQuotas
(every user, every entity). Reads go through the cluster's Batcher, so that concurrent
reconciles (the operator's handlers) share requests.

A read that fails is recorded next to what it concerns (ObservedState's `*_error` fields): only
the resources that needed it fail. ACL bindings manifests cannot express (resource type USER,
pattern MATCH...) are kept apart (`ClusterRead.unmapped_acls`): the planner cannot act on them,
the snapshot counts them and the export names them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import field

from kafkaops import kafka
from kafkaops.frozen import frozen
from kafkaops.kafka import (
    Batcher,
    ConfigResource,
    KafkaError,
    QuotaEntity,
    ScramCredentialInfo,
    TopicInfo,
    UnsupportedFeature,
)
from kafkaops.kafka.errors import KafkaRequestError
from kafkaops.kafka.errors import ErrorCode
from kafkaops.reconcile.acls import split_acls
from kafkaops.reconcile.desired import DesiredState
from kafkaops.reconcile.observed import ObservedConfig, ObservedState, ObservedTopic, broker_key
from kafkaops.reconcile.ownership import Ownership, topic_owner
from kafkaops.resources.acl import AclBinding
from kafkaops.resources.models import KafkaTopic

_UNKNOWN_TOPIC = ErrorCode.unknown_topic_or_partition


@frozen
class ObserveScope:
    """What to read. `topics` None: every topic in the cluster (prune, export)."""

    topics: frozenset[str] | None = frozenset()
    # Whose configs to read, and which keys: topic -> keys (None: every key). Topics missing here
    # or given no keys are not described at all. None: every key of every topic read (export).
    topic_configs: Mapping[str, frozenset[str] | None] | None = field(default_factory=dict)
    acls: bool = False
    broker_keys: frozenset[str] = frozenset()
    reassignments: bool = True
    scram: bool = False  # every user's SCRAM credentials: one DescribeUserScramCredentials
    quotas: bool = False  # every client quota: one DescribeClientQuotas

    @classmethod
    def for_desired(cls, desired: DesiredState, *, all_topics: bool = False,
                    ownership: Ownership | None = None) -> ObserveScope:
        """What planning `desired` needs: its topics' declared keys and the keys kafkaops owns on them."""
        owners = (ownership or Ownership()).owners
        return cls(
            topics=None if all_topics else desired.topic_names,
            topic_configs={t.topic_name: _config_keys(t, owners) for t in desired.topics},
            acls=desired.needs_acls,
            broker_keys=frozenset(broker_key(b.broker_id) for b in desired.broker_configs),
            reassignments=bool(desired.topics),
            scram=desired.needs_scram,
            quotas=desired.needs_quotas,
        )


def _config_keys(topic: KafkaTopic, owners: Mapping[str, Mapping[str, str | None]]) -> frozenset[str]:
    """The config keys to read of `topic`: those declared, and those kafkaops owns on it (a first apply: none)."""
    owned = owners.get(topic_owner(topic.topic_name))
    return frozenset(topic.config).union(owned) if owned else frozenset(topic.config)


@frozen
class ClusterRead:
    """What one read_cluster saw: the observed state, and the ACL bindings manifests cannot
    express (read when the scope asks for ACLs; observe() leaves them out)."""

    observed: ObservedState
    unmapped_acls: tuple[kafka.AclBinding, ...] = ()


async def read_cluster(batcher: Batcher, scope: ObserveScope) -> ClusterRead:
    """Read what `scope` asks for, in bulk, concurrently: see the module's docstring."""
    admin = batcher.admin
    topics_task = asyncio.ensure_future(_read_topics(batcher, scope))
    acls_task = asyncio.ensure_future(_read_acls(batcher) if scope.acls else _nothing((None, (), None)))
    brokers_task = asyncio.ensure_future(_read_broker_configs(batcher, scope.broker_keys))
    scram_task = asyncio.ensure_future(_read_scram(batcher) if scope.scram else _nothing((None, None)))
    quotas_task = asyncio.ensure_future(_read_quotas(batcher) if scope.quotas else _nothing((None, None)))
    infos, all_names, topic_errors = await topics_task
    if scope.topic_configs is None:
        wanted: dict[str, frozenset[str] | None] = dict.fromkeys(infos)
    else:
        wanted = {name: keys for name, keys in scope.topic_configs.items() if name in infos}
    configs_task = asyncio.ensure_future(_read_topic_configs(batcher, wanted))
    reassign_task = asyncio.ensure_future(_read_reassignments(batcher) if scope.reassignments and infos else _nothing(None))
    (acls, unmapped_acls, acls_error), (broker_configs, broker_errors), configs, reassignments = await asyncio.gather(
        acls_task, brokers_task, configs_task, reassign_task
    )
    (scram, scram_error), (quotas, quotas_error) = await asyncio.gather(scram_task, quotas_task)
    # a concurrent request that lost its connection meanwhile drops the cache (soak: an
    # AssertionError escaped the handlers here); the cluster id and controller are read again
    meta = admin.cached_metadata or await admin.refresh_metadata()
    topics = {
        name: ObservedTopic(
            name,
            tuple([p.replicas for p in info.partitions]),  # in partition order (TopicInfo)
            str(info.topic_id) if info.topic_id else None,
            info.internal,
            info.all_led,
            *configs.get(name, (None, None)),
        )
        for name, info in infos.items()
    }
    observed = ObservedState(
        cluster_id=meta.cluster_id,
        controller_id=meta.controller_id,
        brokers=dict(meta.brokers),
        topics=topics,
        all_topic_names=all_names,
        acls=acls,
        acls_error=acls_error,
        broker_configs=broker_configs,
        broker_config_errors=broker_errors,
        reassignments=reassignments,
        topic_errors=topic_errors,
        scram=scram,
        scram_error=scram_error,
        quotas=quotas,
        quotas_error=quotas_error,
    )
    return ClusterRead(observed, unmapped_acls)


async def _nothing(value: object) -> object:
    return value


async def _read_topics(
    batcher: Batcher, scope: ObserveScope
) -> tuple[dict[str, TopicInfo], frozenset[str] | None, dict[str, KafkaError]]:
    if scope.topics is None:
        meta = await batcher.admin.metadata(None)
        return dict(meta.topics), frozenset(meta.topics), dict(meta.topic_errors)
    names = sorted(scope.topics)
    if not names:
        if batcher.admin.cached_metadata is None:
            await batcher.admin.refresh_metadata()
        return {}, None, {}
    results = await batcher.describe_topics(names)
    infos: dict[str, TopicInfo] = {}
    errors: dict[str, KafkaError] = {}
    for name, result in zip(names, results):
        if result.value is not None:
            infos[name] = result.value
        elif result.error is not None and result.error.code != _UNKNOWN_TOPIC:
            errors[name] = result.error
    return infos, None, errors


async def _read_topic_configs(
    batcher: Batcher, wanted: Mapping[str, frozenset[str] | None]
) -> dict[str, tuple[dict[str, ObservedConfig] | None, KafkaError | None]]:
    out: dict[str, tuple[dict[str, ObservedConfig] | None, KafkaError | None]] = {
        name: ({}, None) for name, keys in wanted.items() if keys is not None and not keys  # nothing to compare
    }
    names = [name for name in wanted if name not in out]
    results = await batcher.describe_configs_of((ConfigResource.topic(n), wanted[n]) for n in names)
    for name, result in zip(names, results):
        if result.value is not None:
            out[name] = ({k: ObservedConfig.of(e) for k, e in result.value.items()}, None)
        else:
            out[name] = (None, result.error)
    return out


async def _read_broker_configs(
    batcher: Batcher, keys: frozenset[str]
) -> tuple[dict[str, dict[str, ObservedConfig]], dict[str, KafkaError]]:
    ordered = sorted(keys)
    results = await asyncio.gather(*(batcher.describe_configs(ConfigResource.broker(int(k) if k else None))
                                     for k in ordered))
    configs: dict[str, dict[str, ObservedConfig]] = {}
    errors: dict[str, KafkaError] = {}
    for key, result in zip(ordered, results):
        if result.value is not None:
            configs[key] = {k: ObservedConfig.of(e) for k, e in result.value.items()}
        elif result.error is not None:
            errors[key] = result.error
    return configs, errors


async def _read_acls(
    batcher: Batcher,
) -> tuple[dict[str, frozenset[AclBinding]] | None, tuple[kafka.AclBinding, ...], KafkaError | None]:
    """Every binding, by one DescribeAcls (shared through the Batcher): by principal in the
    manifests' vocabulary, and apart those manifests cannot express."""
    try:
        result = await batcher.describe_all_acls()
    except UnsupportedFeature as exc:
        return None, (), exc.as_kafka_error()
    if result.value is None:
        return None, (), result.error
    by_principal, unmapped = split_acls(result.value)
    return by_principal, unmapped, None


async def _read_scram(batcher: Batcher) -> tuple[dict[str, tuple[ScramCredentialInfo, ...]] | None, KafkaError | None]:
    """Every user's credentials (mechanism + iterations), by one DescribeUserScramCredentials."""
    try:
        result = await batcher.describe_all_scram_credentials()
    except UnsupportedFeature as exc:
        return None, exc.as_kafka_error()
    except KafkaRequestError as exc:
        return None, exc.error
    return (None, result.error) if result.value is None else (dict(result.value), None)


async def _read_quotas(batcher: Batcher) -> tuple[dict[QuotaEntity, dict[str, float]] | None, KafkaError | None]:
    """Every entity's client quotas, by one DescribeClientQuotas."""
    try:
        result = await batcher.describe_all_client_quotas()
    except UnsupportedFeature as exc:
        return None, exc.as_kafka_error()
    except KafkaRequestError as exc:
        return None, exc.error
    return (None, result.error) if result.value is None else (dict(result.value), None)


async def _read_reassignments(batcher: Batcher) -> dict | None:
    try:
        result = await batcher.list_reassignments()
    except UnsupportedFeature:
        return None
    return None if result.value is None else dict(result.value)
