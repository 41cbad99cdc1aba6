"""One cluster context per KafkaCluster: admin client, Batcher, engine, ownership, deletion gate.

Created on the KafkaCluster's create/resume/update, closed on its deletion. Resource handlers look
their context up by clusterRef and submit through its engine, so every handler's single item
joins the same batches.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkaops.kafka import AdminClient, Batcher, ClientSettings
from kafkaops.kafka.apis import Api
from kafkaops.kafka.errors import AuthenticationFailed, KafkaOpsError
from kafkaops.k8s.secrets import CREDENTIALS_INVALID, CredentialsError, SecretReader, TlsFiles, security_for
from kafkaops.reconcile import Engine, Problem
from kafkaops.reconcile.actions import problem_from_exception
from kafkaops.reconcile.ownership import MemoryOwnershipStore
from kafkaops.reconcile.reassign import ReassignmentRun
from kafkaops.resources.models import ClusterRef, KafkaCluster

ClusterKey = tuple[str | None, str]  # (namespace, name)

CLUSTER_UNREACHABLE = "ClusterUnreachable"
CLUSTER_NOT_FOUND = "ClusterNotFound"


@dataclass(frozen=True, slots=True)
class OperatorSettings:
    """The operator's knobs; client overrides go to every cluster's ClientSettings."""

    client_overrides: Mapping[str, Any] = field(default_factory=dict)
    retry_delay: float = 15.0  # seconds before a retriable failure is retried
    deletion_window: float = 300.0  # the cap counts topic deletions within this many seconds
    confirm_annotation_ttl: float = 600.0  # how long a mass-deletion confirmation stays valid
    metrics_port: int | None = 9090


class DeletionGate:
    """The cluster's topic-deletion cap across resources: at most `cap` deletions within `window`
    seconds unless a person confirmed (KafkaCluster annotation kafkaops.io/confirm-deletions)."""

    def __init__(self, cap: int, window: float) -> None:
        self.cap = cap
        self.window = window
        self._recent: deque[float] = deque()
        self.confirmed_until = 0.0
        self.waiting: set[str] = set()

    def _trim(self, now: float) -> None:
        while self._recent and now - self._recent[0] > self.window:
            self._recent.popleft()

    def admit(self, who: str, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        self._trim(now)
        if len(self._recent) < self.cap or now < self.confirmed_until:
            self._recent.append(now)
            self.waiting.discard(who)
            return True
        self.waiting.add(who)
        return False

    def confirm(self, ttl: float, now: float | None = None) -> None:
        self.confirmed_until = (time.monotonic() if now is None else now) + ttl


@dataclass
class ActiveRun:
    """A reassignment started for one KafkaTopic: the run and the target it moves to."""

    run: ReassignmentRun
    targets: Mapping[Any, tuple[int, ...]]


@dataclass
class ClusterContext:
    key: ClusterKey
    model: KafkaCluster
    store: MemoryOwnershipStore = field(default_factory=MemoryOwnershipStore)
    admin: AdminClient | None = None
    engine: Engine | None = None
    problem: Problem | None = None
    description: Mapping[str, Any] = field(default_factory=dict)
    gate: DeletionGate | None = None
    files: TlsFiles = field(default_factory=TlsFiles)
    # partition reassignments running in the background, by topic (a handler must not wait hours)
    runs: dict[str, ActiveRun] = field(default_factory=dict)
    last_leader_election: float = 0.0  # monotonic time of the last periodic preferred-leader election

    @property
    def ready(self) -> bool:
        return self.engine is not None and self.problem is None

    async def close(self) -> None:
        for active in self.runs.values():  # moves go on in Kafka; the throttle record stays in status
            active.run.task.cancel()
        self.runs.clear()
        if self.admin is not None:
            await self.admin.close()
        self.admin = self.engine = None
        self.files.remove()


def key_of(cluster: KafkaCluster) -> ClusterKey:
    return (cluster.namespace, cluster.name)


class Clusters:
    """The registry of cluster contexts."""

    def __init__(self, reader: SecretReader | None, settings: OperatorSettings = OperatorSettings()) -> None:
        self.reader = reader
        self.settings = settings
        self._contexts: dict[ClusterKey, ClusterContext] = {}
        self._lock = asyncio.Lock()

    def get(self, ref: ClusterRef) -> ClusterContext | None:
        if ref.namespace is not None:
            return self._contexts.get((ref.namespace, ref.name))
        return next((c for (ns, name), c in self._contexts.items() if name == ref.name), None)

    def contexts(self) -> list[ClusterContext]:
        return list(self._contexts.values())

    async def open(self, cluster: KafkaCluster) -> ClusterContext:
        """(Re)connect the context of `cluster`; on failure the context records why (problem)."""
        async with self._lock:
            old = self._contexts.pop(key_of(cluster), None)
            if old is not None:
                await old.close()
            context = ClusterContext(key_of(cluster), cluster, store=old.store if old else MemoryOwnershipStore())
            cap = cluster.spec.topic_deletion.max_deletions_per_reconcile
            context.gate = old.gate if old and old.gate and old.gate.cap == cap else DeletionGate(cap, self.settings.deletion_window)
            self._contexts[context.key] = context
        try:
            security = await security_for(cluster, self.reader, context.files) if self.reader else None
            settings = ClientSettings.create(cluster.spec.bootstrap_servers, security=security,
                                             **dict(self.settings.client_overrides))
            admin = await AdminClient.connect(cluster.spec.bootstrap_servers, settings=settings)
        except CredentialsError as exc:
            context.problem = Problem(CREDENTIALS_INVALID, str(exc))
            return context
        except AuthenticationFailed as exc:
            context.problem = Problem("AuthenticationFailed", f"the cluster refused the credentials: {exc}")
            return context
        except (KafkaOpsError, OSError, ValueError) as exc:
            context.problem = Problem(CLUSTER_UNREACHABLE, f"cannot connect to {','.join(cluster.spec.bootstrap_servers)}: "
                                                           f"{exc}", retriable=True)
            return context
        context.admin = admin
        context.engine = Engine(Batcher(admin), ownership=context.store, cluster=cluster.name)
        try:
            context.description = await describe(admin)
        except KafkaOpsError as exc:
            context.problem = problem_from_exception(exc, "describing the cluster")
        return context

    async def close(self, key: ClusterKey) -> None:
        async with self._lock:
            context = self._contexts.pop(key, None)
        if context is not None:
            await context.close()

    async def close_all(self) -> None:
        for key in list(self._contexts):
            await self.close(key)


async def describe(admin: AdminClient) -> dict[str, Any]:
    """Status fields of a KafkaCluster: id, controller, brokers and the admin features it supports."""
    description = await admin.describe_cluster()
    versions = await admin.api_versions()
    # the admin APIs kafkaops uses that this cluster offers, with the versions it advertises
    features = {"adminApis": {api.title: f"{versions[api.value][0]}-{versions[api.value][1]}"
                              for api in Api if api.value in versions}}
    return {
        "clusterId": description.cluster_id,
        "controllerId": description.controller_id,
        "brokers": [{"id": b.node_id, "host": b.host, "port": b.port, **({"rack": b.rack} if b.rack else {})}
                    for b in sorted(description.brokers.values(), key=lambda b: b.node_id)],
        "features": features,
    }
