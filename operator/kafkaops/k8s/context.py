"""One cluster context per KafkaCluster: admin client, Batcher, engine, ownership, deletion gate.

A context is ensured by whoever first needs it (the KafkaCluster's handler, or a resource handler
that finds its KafkaCluster in the operator's watch cache), so start-up order does not matter.
It connects in the background and keeps trying with backoff; its `settled` event is set once the
first attempt has an answer, and every change of `state` (connecting -> ready -> down -> ready)
is reported once to the listener (the Reconciler), which logs it, updates the KafkaCluster's
status and runs the resources that wait for the cluster. Resource handlers submit through the
context's engine, so every handler's single item joins the same batches.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kafkaops.frozen import frozen
from kafkaops.k8s.deletion_gate import DeletionGate
from kafkaops.kafka import AdminClient, Batcher, ClientSettings
from kafkaops.kafka.apis import Api
from kafkaops.kafka.errors import AuthenticationFailed, KafkaConnectionError, KafkaOpsError, RequestTimedOut
from kafkaops.k8s.secrets import (
    CREDENTIALS_INVALID,
    SECRET_FINALIZER,
    CredentialsError,
    SecretReader,
    TlsFiles,
    secret_names,
    security_for,
)
from kafkaops.reconcile import Engine, Problem
from kafkaops.reconcile.actions import problem_from_exception
from kafkaops.reconcile.ownership import MemoryOwnershipStore
from kafkaops.reconcile.reassign.manager import ReassignmentManager
from kafkaops.reconcile.settings import EngineSettings
from kafkaops.resources.models import ClusterRef, KafkaCluster

ClusterKey = tuple[str | None, str]  # (namespace, name)

CLUSTER_UNREACHABLE = "ClusterUnreachable"
CLUSTER_NOT_FOUND = "ClusterNotFound"
CLUSTER_NOT_READY = "ClusterNotReady"
# a request failed because the cluster could not be reached: the cluster is down, not the resource
AUTHENTICATION_FAILED = "AuthenticationFailed"
# outcome reasons that mean "the cluster is gone for now": the context probes it, resources wait
CONNECTION_LOST = frozenset({"KafkaConnectionError", "NETWORK_EXCEPTION", AUTHENTICATION_FAILED})

log = logging.getLogger("kafkaops.operator")


class Connection(StrEnum):
    CONNECTING = "connecting"
    READY = "ready"
    DOWN = "down"  # unreachable, or its credentials fail: `problem` says which


@frozen
class OperatorSettings:
    """The operator's knobs. `client_overrides`: settings by name for every cluster, the admin
    client's (ClientSettings) and the engine's (EngineSettings: wait_timeout, wait_poll_*) alike."""

    # a Batcher window stays open up to 2 s while items keep coming (a lone item still waits only
    # `linger`, 50 ms): 10,000 objects arriving over a minute took 125 CreateTopics with 0.5 s
    client_overrides: Mapping[str, Any] = field(default_factory=lambda: {"linger_max": 2.0})
    retry_delay: float = 15.0  # seconds before a retriable failure is retried
    deletion_window: float = 300.0  # the cap counts topic deletions within this many seconds
    confirm_annotation_ttl: float = 600.0  # how long a mass-deletion confirmation stays valid
    metrics_port: int | None = 9090
    cluster_wait: float = 30.0  # how long a handler waits for its cluster's first connection answer
    reconnect_min: float = 1.0  # backoff between connection attempts to a cluster that is down
    reconnect_max: float = 30.0
    peering_lifetime: float = 60.0  # seconds a replica's kopf peering record stays valid
    sharding: str | None = None  # "leases": KafkaClusters spread over the replicas (k8s/shards.py)
    lease_duration: float = 15.0  # sharded mode: a dead replica's clusters move after this long
    lease_namespace: str = "default"  # sharded mode: where the Leases live (the operator's namespace)
    # resources of one kind (per watched namespace) handled at once; None: as many as arrive. A storm's
    # memory is its objects in flight (docs/benchmarks.md, "Memory in a storm"): a limit bounds it
    worker_limit: int | None = None


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
    # the cluster's partition reassignments, run in the background and followed by topic (a handler
    # must not wait hours); the engine uses the same one
    reassignments: ReassignmentManager | None = None
    guarded: set[tuple[str, bool]] = field(default_factory=set)  # Secrets protected (True) or not protectable
    last_leader_election: float = 0.0  # monotonic time of the last periodic preferred-leader election
    state: Connection = Connection.CONNECTING
    settled: asyncio.Event = field(default_factory=asyncio.Event)  # the first connection attempt answered
    resynced: bool = False  # the first bulk resync after connecting ran
    reported: tuple[Any, ...] | None = None  # the state last reported in the KafkaCluster's status
    task: asyncio.Task[None] | None = None  # connecting, or probing a cluster that went down

    @property
    def ready(self) -> bool:
        return self.state is Connection.READY and self.engine is not None

    async def close(self) -> None:
        if self.task is not None and self.task is not asyncio.current_task():
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        if self.reassignments is not None:  # moves go on in Kafka; the throttle record stays in status
            self.reassignments.abandon()
        if self.admin is not None:
            await self.admin.close()
        self.admin = self.engine = self.reassignments = None
        self.files.remove()


def key_of(cluster: KafkaCluster) -> ClusterKey:
    return (cluster.namespace, cluster.name)


StateListener = Callable[["ClusterContext"], Awaitable[None]]


class Clusters:
    """The registry of cluster contexts and their connections."""

    def __init__(self, reader: SecretReader | None, settings: OperatorSettings = OperatorSettings()) -> None:
        self.reader = reader
        self.settings = settings
        self.listener: StateListener | None = None  # told once per state change of a context
        self._contexts: dict[ClusterKey, ClusterContext] = {}
        self._lock = asyncio.Lock()

    def get(self, ref: ClusterRef | ClusterKey) -> ClusterContext | None:
        if isinstance(ref, tuple):
            return self._contexts.get(ref)
        if ref.namespace is not None:
            return self._contexts.get((ref.namespace, ref.name))
        return next((c for (ns, name), c in self._contexts.items() if name == ref.name), None)

    def contexts(self) -> list[ClusterContext]:
        return list(self._contexts.values())

    async def ensure(self, cluster: KafkaCluster) -> ClusterContext:
        """The context of `cluster`, connecting in the background; a changed spec reconnects it."""
        async with self._lock:
            old = self._contexts.get(key_of(cluster))
            if old is not None and old.model.spec == cluster.spec:
                old.model = cluster  # metadata (annotations) may differ; the connection stays
                return old
            if old is not None:
                del self._contexts[old.key]
                await old.close()
            context = ClusterContext(key_of(cluster), cluster, store=old.store if old else MemoryOwnershipStore())
            cap = cluster.spec.topic_deletion.max_deletions_per_reconcile
            context.gate = old.gate if old and old.gate and old.gate.cap == cap else DeletionGate(cap, self.settings.deletion_window)
            self._contexts[context.key] = context
            context.task = asyncio.create_task(self._connect(context), name=f"connect {context.key}")
        if old is not None:  # a Secret the old spec read and the new one does not is no longer in use
            await self.release_secrets(context.key[0], secret_names(old.model) - secret_names(cluster))
        return context

    async def open(self, cluster: KafkaCluster) -> ClusterContext:
        """Ensure the context and wait for its first connection attempt (at most `cluster_wait`)."""
        context = await self.ensure(cluster)
        await self.wait_settled(context)
        return context

    async def wait_settled(self, context: ClusterContext, timeout: float | None = None) -> bool:
        """True once the context's first connection attempt has answered (either way)."""
        try:
            await asyncio.wait_for(context.settled.wait(), self.settings.cluster_wait if timeout is None else timeout)
        except TimeoutError:
            return False
        return True

    async def _change(self, context: ClusterContext, state: Connection, problem: Problem | None) -> None:
        changed = (context.state, context.problem) != (state, problem)
        context.state, context.problem = state, problem
        context.settled.set()
        if not changed or self._contexts.get(context.key) is not context:
            return
        namespace, name = context.key
        if state is Connection.READY:
            log.info("KafkaCluster %s/%s connected", namespace, name)
        else:
            log.warning("KafkaCluster %s/%s %s: %s", namespace, name, state.value, problem.message if problem else "")
        if self.listener is not None:
            try:
                await self.listener(context)
            except Exception:  # the listener's failure must not stop the connection loop
                log.exception("reporting the state of KafkaCluster %s/%s failed", namespace, name)

    def _backoff(self, attempt: int) -> float:
        return min(self.settings.reconnect_max, self.settings.reconnect_min * 2 ** min(attempt, 16))

    async def _connect(self, context: ClusterContext) -> None:
        """Connect, retrying with backoff until it works (a fixed Secret needs no spec change)."""
        attempt = 0
        while True:
            problem = await self._attempt(context)
            if problem is None:
                await self._change(context, Connection.READY, None)
                return
            await self._change(context, Connection.DOWN, problem)
            await asyncio.sleep(self._backoff(attempt))
            attempt += 1

    async def _attempt(self, context: ClusterContext, refresh: bool = False) -> Problem | None:
        """One connection attempt; `refresh`: re-read the credentials first (after an outage or a
        refused login, the Secret may hold a rotated password: new connections use it)."""
        cluster = context.model
        try:
            if context.admin is not None and refresh and self.reader is not None:
                try:
                    context.admin.use_security(await security_for(cluster, self.reader, context.files))
                    await self.protect_secrets(context)
                except CredentialsError as exc:  # e.g. its namespace is being deleted: keep what worked
                    log.warning("KafkaCluster %s/%s: %s; reconnecting with the credentials read before",
                                *context.key, exc)
            if context.admin is None:
                security = await security_for(cluster, self.reader, context.files) if self.reader else None
                await self.protect_secrets(context)
                engine_settings, overrides = EngineSettings.split(self.settings.client_overrides)
                settings = ClientSettings.create(cluster.spec.bootstrap_servers, security=security, **overrides)
                context.admin = await AdminClient.connect(cluster.spec.bootstrap_servers, settings=settings)
                context.reassignments = ReassignmentManager(context.admin, context.store,
                                                            engine_settings.reassignment_settings, cluster=cluster.name)
                context.engine = Engine(Batcher(context.admin), ownership=context.store, cluster=cluster.name,
                                        reassignments=context.reassignments, settings=engine_settings)
            context.description = await describe(context.admin)
        except CredentialsError as exc:
            return Problem(CREDENTIALS_INVALID, str(exc))
        except AuthenticationFailed as exc:
            return Problem(AUTHENTICATION_FAILED, f"the cluster refused the credentials: {exc}")
        except (KafkaConnectionError, RequestTimedOut, OSError, ValueError) as exc:
            return Problem(CLUSTER_UNREACHABLE, f"cannot reach {','.join(cluster.spec.bootstrap_servers)}: {exc}",
                           retriable=True)
        except KafkaOpsError as exc:  # it answered, but refused (authorization, unsupported)
            return problem_from_exception(exc, "describing the cluster")
        except Exception as exc:  # e.g. the API failed reading a Secret: keep trying, say why
            log.warning("KafkaCluster %s/%s: connecting failed: %s", *context.key, type(exc).__name__, exc_info=True)
            return Problem("ConnectFailed", f"connecting failed: {type(exc).__name__}", retriable=True)
        return None

    async def protect_secrets(self, context: ClusterContext) -> None:
        """SECRET_FINALIZER on the Secrets the cluster's connection reads (once they were read)."""
        if not hasattr(self.reader, "protect_secret"):
            return
        for name in sorted(secret_names(context.model)):
            if (name, True) in context.guarded:
                continue
            try:
                if await self.reader.protect_secret(context.key[0], name):  # type: ignore[union-attr]
                    context.guarded.add((name, True))
            except Exception as exc:  # noqa: BLE001 - e.g. 403: no patch on secrets; it still connects
                if (name, False) not in context.guarded:
                    context.guarded.add((name, False))
                    log.warning("KafkaCluster %s/%s: cannot protect Secret %s from deletion while in use (%s): "
                                "grant `patch` on secrets (manifests/secrets-access)", *context.key, name,
                                type(exc).__name__)

    def secrets_in_use(self, namespace: str) -> set[str]:
        """The Secrets of `namespace` that a KafkaCluster of this operator connects with."""
        return {n for c in self._contexts.values() if c.key[0] == namespace for n in secret_names(c.model)}

    async def release_secrets(self, namespace: str, names: set[str], keep: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        """Take SECRET_FINALIZER off Secrets no KafkaCluster of this operator connects with any more
        (and that are not in `keep`: e.g. a KafkaUser's password Secret)."""
        if not hasattr(self.reader, "release_secret"):
            return
        for name in sorted(names - self.secrets_in_use(namespace) - keep):
            try:
                await self.reader.release_secret(namespace, name)  # type: ignore[union-attr]
            except Exception:  # noqa: BLE001 - logged with its context; a person can remove it by hand
                log.warning("Secret %s/%s: removing the finalizer %s failed", namespace, name, SECRET_FINALIZER,
                            exc_info=True)

    def mark_down(self, context: ClusterContext, exc: BaseException, reason: str = CLUSTER_UNREACHABLE) -> None:
        """A request found the cluster unreachable (or refusing our credentials, `reason`
        AuthenticationFailed): report it once and probe until it answers, re-reading the
        credentials at each attempt."""
        if context.state is not Connection.READY or self._contexts.get(context.key) is not context:
            return
        if reason == AUTHENTICATION_FAILED:
            problem = Problem(AUTHENTICATION_FAILED, f"the cluster refused the credentials: {exc}", retriable=True)
        else:
            problem = Problem(CLUSTER_UNREACHABLE, f"lost the connection to "
                                                   f"{','.join(context.model.spec.bootstrap_servers)}: {exc}", retriable=True)
        context.state = Connection.CONNECTING  # no second probe while this one starts

        async def probe() -> None:
            await self._change(context, Connection.DOWN, problem)
            attempt = 0
            while True:
                await asyncio.sleep(self._backoff(attempt))
                attempt += 1
                if await self._attempt(context, refresh=True) is None:
                    await self._change(context, Connection.READY, None)
                    return

        context.task = asyncio.create_task(probe(), name=f"probe {context.key}")

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
