"""The desired state of one cluster, and the split of a validated set into clusters."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import field
from types import MappingProxyType

from kafkaops.frozen import frozen
from kafkaops.kafka.security import Secret

from kafkaops.resources.models import (
    ClusterRef,
    DeletionPolicy,
    KafkaAcl,
    KafkaBrokerConfig,
    KafkaCluster,
    KafkaTopic,
    Resource,
    TopicDeletion,
)
from kafkaops.resources.users import KafkaClientQuota, KafkaUser


@frozen
class DesiredState:
    """Everything declared for one cluster. `cluster` is its KafkaCluster when one was given:
    it supplies the deletion policy and cap (else Retain and the default cap).

    `passwords`: the current password of each KafkaUser's credential, by SCRAM user name
    (`KafkaUser.user_name`), as the front end resolved it (the CLI from files or environment
    variables, the operator from the Secret); a user missing here keeps its credential as it is
    in Kafka, and one without a credential gets the problem PasswordUnavailable. Secrets print as ***."""

    topics: tuple[KafkaTopic, ...] = ()
    acls: tuple[KafkaAcl, ...] = ()
    broker_configs: tuple[KafkaBrokerConfig, ...] = ()
    cluster: KafkaCluster | None = None
    users: tuple[KafkaUser, ...] = ()
    client_quotas: tuple[KafkaClientQuota, ...] = ()
    passwords: Mapping[str, Secret] = field(default_factory=lambda: MappingProxyType({}), repr=False, compare=False)

    @classmethod
    def of(cls, resources: Iterable[Resource], cluster: KafkaCluster | None = None,
           passwords: Mapping[str, Secret] | None = None) -> DesiredState:
        items = list(resources)
        return cls(
            tuple(r for r in items if isinstance(r, KafkaTopic)),
            tuple(r for r in items if isinstance(r, KafkaAcl)),
            tuple(r for r in items if isinstance(r, KafkaBrokerConfig)),
            cluster,
            tuple(r for r in items if isinstance(r, KafkaUser)),
            tuple(r for r in items if isinstance(r, KafkaClientQuota)),
            MappingProxyType(dict(passwords or {})),
        )

    @property
    def topic_deletion(self) -> TopicDeletion:
        return self.cluster.spec.topic_deletion if self.cluster is not None else TopicDeletion()

    @property
    def deletion_policy(self) -> DeletionPolicy:
        return self.topic_deletion.policy

    @property
    def topic_names(self) -> frozenset[str]:
        return frozenset(t.topic_name for t in self.topics)

    def __len__(self) -> int:
        return len(self.topics) + len(self.acls) + len(self.broker_configs) + len(self.users) + len(self.client_quotas)

    @property
    def needs_scram(self) -> bool:
        return any(u.authentication is not None for u in self.users)

    @property
    def needs_quotas(self) -> bool:
        return bool(self.client_quotas) or any(u.principal.startswith("User:") for u in self.users)

    @property
    def needs_acls(self) -> bool:
        return bool(self.acls) or any(u.manages_acls for u in self.users)


@frozen
class ClusterGroups:
    """Resources grouped by the KafkaCluster their clusterRef names.

    `unresolved` holds resources whose cluster is not among the given KafkaClusters.
    """

    groups: tuple[tuple[KafkaCluster, DesiredState], ...]
    unresolved: tuple[Resource, ...] = ()


def _matches(ref: ClusterRef, cluster: KafkaCluster) -> bool:
    if ref.name != cluster.name:
        return False
    return ref.namespace is None or cluster.namespace is None or ref.namespace == cluster.namespace


def group_by_cluster(resources: Iterable[Resource]) -> ClusterGroups:
    """Split resources by clusterRef over the KafkaClusters among them."""
    items = list(resources)
    clusters = [r for r in items if isinstance(r, KafkaCluster)]
    members: dict[int, list[Resource]] = defaultdict(list)
    unresolved: list[Resource] = []
    for resource in items:
        if isinstance(resource, KafkaCluster):
            continue
        owner = next((i for i, c in enumerate(clusters) if _matches(resource.cluster_ref, c)), None)
        if owner is None:
            unresolved.append(resource)
        else:
            members[owner].append(resource)
    return ClusterGroups(
        tuple((cluster, DesiredState.of(members[i], cluster)) for i, cluster in enumerate(clusters)),
        tuple(unresolved),
    )
