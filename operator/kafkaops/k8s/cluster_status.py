"""The KafkaCluster's side of the Reconciler (a mixin, like drift.py): its status follows its
connection; an outage parks its settled resources once; its deletion waits for the resources
that reference it; topic deletions are recorded in its status before they are sent (the cap
holds across processes); a person's confirmation lets deletions over the cap through.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

from kafkaops.k8s.context import CLUSTER_NOT_READY, ClusterContext, ClusterKey, Clusters, Connection
from kafkaops.k8s.kinds import CLUSTER_PLURAL, generation_of, is_paused, is_unmanaged, uid_of
from kafkaops.k8s.principals import referenced_secret
from kafkaops.k8s.secrets import secret_names
from kafkaops.k8s.status import Phase, Result, Verdict, is_settled
from kafkaops.reconcile import Problem
from kafkaops.resources.models import KafkaCluster
from kafkaops.resources.validation import check_custom_resource

log = logging.getLogger("kafkaops.operator")


class ClusterStatus:
    clusters: Clusters
    status_writer: Any
    catalog: Any
    waiting: Any
    owner: Any
    retry_delay: float
    _result: Callable[..., Result]
    _wait: Callable[..., Result]
    _later: Callable[[float, Callable[[], Awaitable[None]]], None]
    publish: Callable[..., Awaitable[None]]
    run_waiting: Callable[[ClusterKey], Awaitable[None]]

    async def cluster_changed(self, body: Mapping[str, Any]) -> Result:
        """A KafkaCluster was created, resumed or its spec changed: (re)connect its context.

        The status follows the connection: written by `cluster_state_changed` on every change of
        state; a resume that finds the connection as it was writes nothing."""
        checked = check_custom_resource(body)
        if checked.resource is None or not isinstance(checked.resource, KafkaCluster):
            errors = [i for i in checked.issues if i.is_error]
            return self._result(body, Verdict(Phase.STALLED, errors[0].rule if errors else "Invalid",
                                              "; ".join(f"{i.path}: {i.reason}" for i in errors)))
        context = await self.clusters.ensure(checked.resource)
        await self.clusters.wait_settled(context)
        return self._cluster_report(body, context)

    def _cluster_report(self, body: Mapping[str, Any], context: ClusterContext) -> Result:
        """The KafkaCluster's result for its context's state, once per state: the handler and the
        listener both report, and whichever comes second finds nothing new to write or post."""
        fingerprint = (context.state, context.problem, json.dumps(context.description, sort_keys=True, default=str))
        if context.reported == fingerprint:
            return Result()
        context.reported = fingerprint
        return self._cluster_result(body, context)

    def _cluster_result(self, body: Mapping[str, Any], context: ClusterContext) -> Result:
        if context.state is Connection.READY:
            description = dict(context.description)
            message = (f"connected: {len(description.get('brokers', []))} broker(s), controller "
                       f"{description.get('controllerId')}")
            return replace(self._result(body, Verdict(Phase.READY, "Connected", message), description), retry_after=None)
        problem = context.problem or Problem("Connecting", "connecting", True)
        phase = Phase.RECONCILING if problem.retriable else Phase.STALLED
        # no kopf retry: the context keeps trying and reports every change itself
        return replace(self._result(body, Verdict(phase, problem.reason, problem.message)), retry_after=None)

    async def cluster_state_changed(self, context: ClusterContext) -> None:
        """The listener of every context: the KafkaCluster's status and Event follow the connection;
        the waiting resources run when it connects; Ready ones are told once when it goes down."""
        if not self.owner.owns(context.key):
            return
        await self._report(context)
        if context.state is Connection.READY:
            await self.run_waiting(context.key)
        elif context.state is Connection.DOWN:
            await self._mark_waiting(context)

    async def _report(self, context: ClusterContext) -> None:
        """The KafkaCluster's status for its connection's state; refused after its retries, it is
        written again later (not never: the state it reports may not change again for hours)."""
        body = self.catalog.cluster(context.key)
        if body is None or self.status_writer is None or self.clusters.get(context.key) is not context:
            return
        try:
            await self.publish(body, self._cluster_report(body, context), CLUSTER_PLURAL)
        except Exception as exc:  # noqa: BLE001 - logged; retried below
            context.reported = None
            log.warning("KafkaCluster %s/%s: writing its status failed (%s: %s); trying again in %gs",
                        *context.key, type(exc).__name__, exc, self.retry_delay)
            self._later(self.retry_delay, lambda: self._report(context))

    async def _mark_waiting(self, context: ClusterContext) -> None:
        """An outage: every settled resource of the cluster goes Reconciling (ClusterNotReady) once,
        without an Event each, and waits for the cluster to come back."""
        problem = context.problem or Problem(CLUSTER_NOT_READY, "not connected", True)
        message = f"KafkaCluster {context.key[0]}/{context.key[1]}: {problem.reason}: {problem.message}"
        for body in self.catalog.resources(context.key):
            if is_paused(body) or is_unmanaged(body) or (body.get("metadata") or {}).get("deletionTimestamp"):
                continue
            if not is_settled(body.get("status"), generation_of(body)) or uid_of(body) in self.waiting:
                continue
            result = self._wait(body, context.key, CLUSTER_NOT_READY, message)
            self.waiting.add(context.key, uid_of(body), {**body, "status": result.status or body.get("status")})
            await self.publish(body, result)

    async def cluster_deleted(self, body: Mapping[str, Any]) -> Result:
        """A KafkaCluster is being deleted. Its finalizer stays while resources still reference it, so
        deleting a namespace (cluster and topics at once) applies every topic's deletion policy instead
        of releasing them all as "cluster gone". kafkaops.io/managed=false on the KafkaCluster lets it
        go at once (its resources are then released without touching Kafka)."""
        metadata = body.get("metadata") or {}
        key = (metadata.get("namespace"), metadata.get("name"))
        waiting = [b for b in self.catalog.resources(key) if uid_of(b) != uid_of(body)]
        if waiting and not is_unmanaged(body):
            names = ", ".join(f"{b.get('kind')} {(b.get('metadata') or {}).get('namespace')}/"
                              f"{(b.get('metadata') or {}).get('name')}" for b in waiting[:5])
            more = f" and {len(waiting) - 5} more" if len(waiting) > 5 else ""
            message = (f"waiting for the {len(waiting)} resource(s) that reference it to be deleted first ({names}{more}); "
                       "annotate kafkaops.io/managed=false to let it go now (they are then released without "
                       "touching Kafka)")
            return replace(self._result(body, Verdict(Phase.RECONCILING, "ResourcesRemain", message)), retry_after=2.0)
        checked = check_custom_resource(body)
        names = secret_names(checked.resource) if isinstance(checked.resource, KafkaCluster) else set()
        await self.clusters.close(key)
        # a KafkaUser's password Secret may be the one the cluster logged in with: it stays protected
        users = {secret for c in self.clusters.contexts() if c.key[0] == key[0]
                 for b in self.catalog.resources(c.key)
                 if (b.get("metadata") or {}).get("namespace") == key[0] and (secret := referenced_secret(b)) is not None}
        await self.clusters.release_secrets(key[0], names, keep=users)  # the namespace's deletion may now finish
        return Result(release=True)

    async def _record_deletions(self, context: ClusterContext) -> bool:
        """Write the deletion gate's record (finished within the window, in flight) to the KafkaCluster's
        status, before a deletion is sent and after it ends: a restarted or another replica merges it
        (the cap holds across processes; k8s/deletion_gate.py)."""
        if self.status_writer is None or context.gate is None:
            return True
        try:
            await self.status_writer(CLUSTER_PLURAL, context.key[0], context.key[1], context.gate.record().status())
        except Exception:  # noqa: BLE001 - the API refused after retries: no deletion without a record
            log.warning("KafkaCluster %s/%s: recording the topic deletions failed (none is sent without a record)", *context.key,
                        exc_info=True)
            return False
        return True

    def confirm_deletions(self, body: Mapping[str, Any]) -> bool:
        metadata = body.get("metadata") or {}
        for context in self.clusters.contexts():
            if context.key == (metadata.get("namespace"), metadata.get("name")) and context.gate is not None:
                context.gate.confirm(self.clusters.settings.confirm_annotation_ttl)
                return True
        return False
