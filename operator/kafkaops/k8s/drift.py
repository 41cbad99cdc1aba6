"""Drift: the per-cluster bulk resync, a part of the Reconciler (a mixin: it uses the
Reconciler's catalog, clusters, metrics, waiting room and result building).

Every settled resource of a cluster (Ready at its generation, not parked, not paused) is planned
in one bulk pass; owned values changed outside kafkaops are restored, reported with a Drifted
condition and a DriftRestored Event; a later clean pass sets Drifted back to False. A connection
lost during the pass marks the cluster down (reported once, by the cluster's listener).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

from kafkaops.k8s.context import AUTHENTICATION_FAILED, CONNECTION_LOST, ClusterContext
from kafkaops.k8s.kinds import (
    FINALIZER,
    NUDGE,
    PLURALS,
    Claim,
    claim_key,
    claim_of,
    generation_of,
    is_paused,
    is_unmanaged,
    owner_of,
    uid_of,
    winner,
)
from kafkaops.k8s.status import EventNote, Result, Verdict, is_settled
from kafkaops.kafka.errors import AuthenticationFailed, KafkaConnectionError
from kafkaops.reconcile import DesiredState, RunOptions, State
from kafkaops.resources.validation import check_custom_resource

log = logging.getLogger("kafkaops.operator")


class Resync:
    """A mixin of the Reconciler (which also mixes in principals.Principals: seed_quota_keys,
    resync_passwords)."""

    _models: dict[str, tuple[int, Any]]
    _lagging: dict[str, str]  # uid -> resourceVersion of a resource not Ready at the last resync

    def _settled_model(self, body: Mapping[str, Any]) -> Any | None:
        """The model of a settled resource, validated once per generation: its spec changes only
        with its generation, and a resync at 10,000 resources spent half its time re-validating
        them all (profiled with cProfile)."""
        uid, generation = uid_of(body), generation_of(body)
        cached = self._models.get(uid)
        if cached is not None and generation is not None and cached[0] == generation:
            return cached[1]
        model = check_custom_resource(body).resource
        if model is not None and generation is not None:
            self._models[uid] = (generation, model)
        return model

    async def resync_cluster(self, context: ClusterContext) -> int:
        """One bulk resync of every resource of the cluster, as the catalog knows them; statuses and
        Events written for what changed. Returns how many resources changed."""
        first = not context.resynced
        bodies = self.catalog.resources(context.key)
        claims = {key: self.catalog.claims(b) for b in bodies if (key := claim_key(b)) is not None}
        changed = await self.resync(context, bodies, claims)
        for body, result in changed:
            await self.publish(body, result)
        await self._rerun_forgotten(bodies)
        if first or changed:
            log.info("KafkaCluster %s/%s: %d resource(s) compared with Kafka in one bulk read, %d changed",
                     *context.key, len(bodies), len(changed))
        return len(changed)

    async def _rerun_forgotten(self, bodies: Iterable[Mapping[str, Any]]) -> None:
        """A safety net for work kopf dropped. kopf handles an object only when an event comes; when
        its own patch after a handler fails (the soak injected 409s), the pending work waits for the
        object's next event, possibly for ever. A resource found unchanged (same resourceVersion) at
        two resyncs in a row, with nothing of ours working on it, while
        - its status lags its generation, or it is Reconciling (a retry or a reassignment being
          followed), is reconciled again here;
        - it is being deleted with our finalizer on it, is nudged (an annotation) so that kopf runs
          its deletion handler again: only kopf removes its finalizer."""
        seen: dict[str, str] = {}
        forgotten, deleting = [], []
        for body in bodies:
            uid, generation = uid_of(body), generation_of(body)
            metadata = body.get("metadata") or {}
            status = body.get("status") if isinstance(body.get("status"), Mapping) else {}
            if uid in self.waiting or (uid in self._locks and self._locks[uid].locked()):
                continue
            if metadata.get("deletionTimestamp"):
                if FINALIZER not in (metadata.get("finalizers") or ()):
                    continue
            elif (generation is None or is_paused(body) or is_unmanaged(body) or is_settled(status, generation)
                  or (status.get("observedGeneration") == generation and _stalled(status))):
                continue
            version = str(metadata.get("resourceVersion"))
            seen[uid] = version
            if self._lagging.get(uid) == version:
                (deleting if metadata.get("deletionTimestamp") else forgotten).append(body)
        self._lagging = seen
        if forgotten:
            log.warning("%d resource(s) not Ready with no event to handle them: reconciling them again", len(forgotten))
            await asyncio.gather(*(self._rerun(body) for body in forgotten))
        if deleting and self.annotator is not None:
            log.warning("%d resource(s) being deleted with no event to handle them: nudging kopf", len(deleting))
            for body in deleting:
                metadata = body.get("metadata") or {}
                try:
                    await self.annotator(PLURALS.get(str(body.get("kind")), ""), metadata.get("namespace"),
                                         metadata.get("name"), {NUDGE: self.now()})
                except Exception as exc:  # noqa: BLE001 - the next resync tries again
                    log.warning("%s %s/%s: nudging its deletion failed (%s: %s)", body.get("kind"),
                                metadata.get("namespace"), metadata.get("name"), type(exc).__name__, exc)

    async def resync(self, context: ClusterContext, bodies: Iterable[Mapping[str, Any]],
                     claims: Mapping[Any, Iterable[Claim]]) -> list[tuple[Mapping[str, Any], Result]]:
        """Read every managed resource of the cluster in bulk; restore what drifted; report it.

        Returns (body, result) for the resources whose status must change (drift restored, or a
        previous Drifted condition to clear)."""
        if not context.ready or context.engine is None:
            return []
        started = time.monotonic()
        chosen: dict[Any, tuple[Mapping[str, Any], Any]] = {}
        for body in bodies:
            if is_paused(body) or is_unmanaged(body) or (body.get("metadata") or {}).get("deletionTimestamp"):
                continue
            if not is_settled(body.get("status"), generation_of(body)) or uid_of(body) in self.waiting:
                continue  # its own handler (or the waiting room) is on it
            model = self._settled_model(body)
            key = claim_key(body)
            if model is None or key is None:
                continue
            mine = claim_of(body)
            if winner(mine, claims.get(key, ())).uid != mine.uid:
                continue
            chosen[model.source] = (body, model)
            self._seed_ownership(context, owner_of(model), body)
            self.seed_quota_keys(context, model, body)
        context.resynced = True
        # KafkaUsers: passwords read from their Secrets; a changed Secret (rotation) is reconciled apart
        passwords, apart = await self.resync_passwords(context, chosen)
        rotated = [chosen.pop(source)[0] for source in apart]
        if rotated:
            await asyncio.gather(*(self._rerun(body) for body in rotated))
        if not chosen:
            return []
        models = [model for _, model in chosen.values()]
        # replica changes found by a resync are left to the resource's own reconcile (they run for hours)
        try:
            report = await context.engine.reconcile(DesiredState.of(models, context.model, passwords),
                                                    RunOptions(all_topics=False, defer_replica_changes=True))
        except KafkaConnectionError as exc:
            self.clusters.mark_down(context, exc)
            return []  # the outage is reported once, by cluster_state_changed
        except AuthenticationFailed as exc:  # a rotated password: the probe re-reads the Secret
            self.clusters.mark_down(context, exc, AUTHENTICATION_FAILED)
            return []  # the outage is reported once, by cluster_state_changed
        self.metrics.resync.labels(context.model.name).observe(time.monotonic() - started)
        self.metrics.record_requests(context.model.name, context.engine.batcher.admin.requests_by_api)
        changed: list[tuple[Mapping[str, Any], Result]] = []
        if any(o.problem is not None and o.problem.reason in CONNECTION_LOST for o in report.outcomes):
            lost = next(o.problem for o in report.outcomes if o.problem is not None and o.problem.reason in CONNECTION_LOST)
            self.clusters.mark_down(context, ConnectionError(lost.message), lost.reason)
            return []  # the outage is reported once, by cluster_state_changed
        for outcome in report.outcomes:
            if outcome.source not in chosen:
                continue
            body = chosen[outcome.source][0]
            was_drifted = any(c.get("type") == "Drifted" and c.get("status") == "True"
                              for c in (body.get("status") or {}).get("conditions") or ())
            if outcome.state is State.APPLIED:
                drift = "changed outside kafkaops and restored: " + ", ".join(str(c) for c in outcome.changes[:10])
                self.metrics.drifted.labels(context.model.name, outcome.kind).inc()
                result = self._result(body, Verdict.of(outcome), {"lastSyncTime": self.now()}, drift=drift)
                changed.append((body, Result(result.status, EventNote("Warning", "DriftRestored", drift), None)))
            elif outcome.state is State.UNCHANGED and was_drifted:
                changed.append((body, self._result(body, Verdict.of(outcome), {"lastSyncTime": self.now()}, drift="")))
            elif not outcome.ok:
                changed.append((body, self._result(body, Verdict.of(outcome))))
        return changed


def _stalled(status: Mapping[str, Any]) -> bool:
    """Stalled: a person must act (invalid spec, conflict); running it again changes nothing."""
    return any(isinstance(c, Mapping) and c.get("type") == "Stalled" and c.get("status") == "True"
               for c in status.get("conditions") or ())
