"""Clusters changing hands between replicas (sharded mode), a part of the Reconciler (a mixin,
like drift.py): what a replica does when it gains a KafkaCluster's Lease, and when it loses it.

Gaining: put our finalizer on every resource of the cluster that lacks it (`Guard`: the replica
that made them Ready may have lost the cluster before its kopf added it; without it a deletion
would release the resource and leave its topic in Kafka); connect the cluster; park every
resource of it that is not settled in the waiting room (reconciled together once connected;
their statuses are written then); the first bulk resync of the new context compares the settled
ones. The KafkaCluster and the resources being deleted are
touched (`Toucher`: an annotation under kopf's own prefix, which kopf leaves out of its diff) so
that kopf, which skipped them while another replica owned them, now runs their daemon and their
deletion handlers here.

Losing: stop at once, before another replica may take the Lease: the waiting room of the cluster
is emptied and its context closed (admin client closed, background replica moves cancelled); the
writes of handlers still running are discarded (`publish` checks ownership, `kopf_sharding.py`
drops kopf's patch).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from kafkaops.k8s.context import ClusterKey
from kafkaops.k8s.kinds import FINALIZER, PLURALS, cluster_of, generation_of, uid_of
from kafkaops.k8s.status import is_settled
from kafkaops.resources.models import KafkaCluster
from kafkaops.resources.validation import check_custom_resource

log = logging.getLogger("kafkaops.operator")

# plural, namespace, name: mark the object so that kopf sees an event for it
Toucher = Callable[[str, str, str], Awaitable[None]]
# plural, namespace, name: put our finalizer on the object when it lacks it
Guard = Callable[[str, str, str], Awaitable[None]]


class Ownership(Protocol):
    def owns(self, key: ClusterKey | None) -> bool:
        """Whether this replica works on KafkaCluster `key` now."""


class OwnsEverything:
    """The default, single-active mode: one replica owns every cluster."""

    def owns(self, key: ClusterKey | None) -> bool:
        return True


class Handover:
    owner: Ownership
    toucher: Toucher | None
    guard: Guard | None

    def cluster_key(self, body: Mapping[str, Any], plural: str | None = None) -> ClusterKey | None:
        if plural == "kafkaclusters" or body.get("kind") == "KafkaCluster":
            metadata = body.get("metadata") or {}
            return metadata.get("namespace"), metadata.get("name")
        return cluster_of(body)

    async def pick_up(self, key: ClusterKey) -> None:
        """This replica now owns cluster `key` (see the module's docstring)."""
        body = self.catalog.cluster(key)
        if body is None:
            return
        deleting, unguarded, parked = [], [], 0
        for resource in self.catalog.resources(key):
            metadata = resource.get("metadata") or {}
            if metadata.get("deletionTimestamp"):
                deleting.append(resource)
                continue
            if FINALIZER not in (metadata.get("finalizers") or ()):
                unguarded.append(resource)
            if not is_settled(resource.get("status"), generation_of(resource)):
                self.waiting.add(key, uid_of(resource), resource)
                parked += 1
        if unguarded:
            await asyncio.gather(*(self._guard(resource) for resource in unguarded))
        for touched in (body, *deleting):
            await self._touch(touched)
        log.info("KafkaCluster %s/%s picked up: %d resource(s) to reconcile, %d being deleted, %d finalizer(s) added",
                 *key, parked, len(deleting), len(unguarded))
        model = check_custom_resource(body).resource
        if isinstance(model, KafkaCluster):
            context = await self.clusters.ensure(model)
            if context.ready:  # already connected: no state change will run the waiting room
                await self.run_waiting(key)

    async def _touch(self, body: Mapping[str, Any]) -> None:
        if self.toucher is None:
            return
        metadata = body.get("metadata") or {}
        plural = PLURALS.get(str(body.get("kind")), "kafkaclusters")
        try:
            await self.toucher(plural, metadata.get("namespace"), metadata.get("name"))
        except Exception:  # the cluster's resync and later events still reach it
            log.warning("touching %s %s/%s failed", body.get("kind"), metadata.get("namespace"), metadata.get("name"),
                        exc_info=True)

    async def _guard(self, body: Mapping[str, Any]) -> None:
        if self.guard is None:
            return
        metadata = body.get("metadata") or {}
        try:
            await self.guard(PLURALS.get(str(body.get("kind")), ""), metadata.get("namespace"), metadata.get("name"))
        except Exception:  # noqa: BLE001 - kopf adds it at the object's next event in this replica
            log.warning("adding the finalizer to %s %s/%s failed", body.get("kind"), metadata.get("namespace"),
                        metadata.get("name"), exc_info=True)

    async def drop(self, key: ClusterKey) -> None:
        """This replica no longer owns cluster `key`: stop everything of it now."""
        self.waiting.take(key)
        await self.clusters.close(key)
