"""What the operator does for each event, independent of kopf (handlers.py only wires it).

Every method takes a resource body and returns a `Result`: the status to write (None when nothing
changed: a restart writes nothing), the Event to post on a real transition, and whether kopf
should retry later. What the API holds (does the KafkaCluster exist? who claims this topic?)
comes from the `Catalog`, the operator's watch cache. Kafka is only reached through the cluster
context's engine, whose Batcher joins the single items of all concurrent handlers into batched
requests.

Waiting for a cluster is not a retry on a timer: a resource whose KafkaCluster does not exist yet,
or is not connected, is parked in the waiting room of that cluster and run again the moment the
cluster connects (or reconnects after an outage); see `cluster_state_changed`.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kafkaops.k8s.catalog import Catalog
from kafkaops.k8s.cluster_status import ClusterStatus
from kafkaops.k8s.drift import Resync
from kafkaops.k8s.handover import Guard, Handover, Ownership, OwnsEverything, Toucher
from kafkaops.k8s.principals import Principals
from kafkaops.k8s.secrets import CREDENTIALS_INVALID
from kafkaops.k8s.context import (
    AUTHENTICATION_FAILED,
    CLUSTER_NOT_FOUND,
    CLUSTER_NOT_READY,
    CONNECTION_LOST,
    ClusterContext,
    ClusterKey,
    Clusters,
)
from kafkaops.k8s.deletion_gate import DeletionRecord
from kafkaops.k8s.kinds import (
    CLAIMED,
    PLURALS,
    Claim,
    claim_key,
    claim_of,
    cluster_of,
    generation_of,
    is_paused,
    is_unmanaged,
    owner_of,
    uid_of,
    winner,
)
from kafkaops.k8s.metrics import Metrics
from kafkaops.k8s.moves import THROTTLE_RECORD, moving_message, reassignment_status, seed_throttle, still_wanted
from kafkaops.k8s.status import (
    PAUSED,
    READY,
    RESOURCE_CONFLICT,
    UNMANAGED,
    UP_TO_DATE,
    EventNote,
    Result,
    Phase,
    Verdict,
    is_settled,
    status_patch,
    transition_event,
    unchanged,
)
from kafkaops.k8s.topic_status import topic_fields
from kafkaops.k8s.waiting import WaitingRoom
from kafkaops.kafka.errors import AuthenticationFailed, KafkaConnectionError
from kafkaops.kafka.models import AlterOp
from kafkaops.reconcile import DesiredState, Problem, RunOptions
from kafkaops.reconcile.actions import AlterConfigs, ChangeReplicas
from kafkaops.reconcile.engine import Planned
from kafkaops.reconcile.reassign import ReassignmentProgress
from kafkaops.resources.kinds import KAFKA_TOPIC
from kafkaops.reconcile.reassign.manager import ActiveRun
from kafkaops.resources.models import DeletionPolicy, KafkaAcl, KafkaCluster, KafkaTopic
from kafkaops.resources.validation import check_custom_resource

__all__ = ["THROTTLE_RECORD", "Reconciler", "Result", "reassignment_status"]

NAMESPACE_NOT_ALLOWED = "NamespaceNotAllowed"
RELEASED_UNAPPLIED = "ReleasedUnapplied"  # see _never_applied_and_cannot_be
DELETION_CAP_EXCEEDED = "DeletionCapExceeded"
# reasons of "waiting for the cluster": normal during start-up and outages, never an Event per resource
WAITING_REASONS = frozenset({CLUSTER_NOT_FOUND, CLUSTER_NOT_READY})

log = logging.getLogger("kafkaops.operator")


def utc_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ready_reason(status: Mapping[str, Any] | None) -> str | None:
    for c in (status or {}).get("conditions") or ():
        if isinstance(c, Mapping) and c.get("type") == READY:
            return c.get("reason")
    return None


def _never_applied_and_cannot_be(body: Mapping[str, Any], cluster_body: Mapping[str, Any],
                                 context: ClusterContext | None) -> str | None:
    """Why a resource being deleted may go without touching Kafka although its Delete policy asks
    for Kafka (None: it may not): no apply of it was ever recorded (its status never `claimed`),
    and its KafkaCluster, being deleted too, is not connected and will not be: it cannot log in
    (a credentials Secret missing, say), or it never connected at all (no `status.clusterId`: a
    mistyped bootstrap address, a Secret that never existed).

    The cases: a Namespace deleted to start over after such a mistake, or deleted with everything
    in it while no operator ran (a restart, a failover's lease) before its KafkaCluster first
    connected. A Secret the operator connects with carries the `credentials-in-use` finalizer from
    its first read, so a Secret gone means no connection was ever made with it, and a Namespace
    being deleted takes no new Secret: the resource and its cluster would wait for each other for
    ever (docs/reliability.md, finding 19)."""
    metadata = cluster_body.get("metadata") or {}
    status = body.get("status") if isinstance(body.get("status"), Mapping) else {}
    if context is None or context.problem is None or not metadata.get("deletionTimestamp") \
            or status.get(CLAIMED) is True:
        return None
    cluster_status = cluster_body.get("status") if isinstance(cluster_body.get("status"), Mapping) else {}
    if context.problem.reason == CREDENTIALS_INVALID:
        why = "cannot log in"
    elif not cluster_status.get("clusterId"):
        why = "has never connected"
    else:  # it did connect once: it may again, and then the deletion is done in Kafka
        return None
    return (f"released without touching Kafka: no apply of it was ever recorded, and its KafkaCluster "
            f"{metadata.get('namespace')}/{metadata.get('name')} is being deleted and {why} "
            f"({context.problem.reason}: {context.problem.message})")


StatusWriter = Callable[[str, str, str, Mapping[str, Any]], Awaitable[None]]  # plural, namespace, name, status
EventPoster = Callable[[Mapping[str, Any], EventNote], None]
Annotator = Callable[[str, Any, Any, Mapping[str, str]], Awaitable[None]]  # plural, namespace, name, annotations


@dataclass
class Reconciler(ClusterStatus, Resync, Handover, Principals):
    clusters: Clusters
    catalog: Catalog
    metrics: Metrics = field(default_factory=Metrics)
    now: Callable[[], str] = utc_now
    status_writer: StatusWriter | None = None  # writes outside a handler: waiting room, outages, throttle record
    event_poster: EventPoster | None = None
    annotator: Annotator | None = None  # the resync's nudge of a deletion kopf dropped (drift.py)
    waiting: WaitingRoom = field(default_factory=WaitingRoom)
    owner: Ownership = field(default_factory=OwnsEverything)  # sharded mode: the Sharder (handover.py)
    toucher: Toucher | None = None
    guard: Guard | None = None
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict, repr=False)
    _models: dict[str, tuple[int, Any]] = field(default_factory=dict, repr=False)  # drift.py's cache
    _lagging: dict[str, str] = field(default_factory=dict, repr=False)  # drift.py's safety net
    _tasks: set[asyncio.Task[None]] = field(default_factory=set, repr=False)

    def __post_init__(self) -> None:
        self.clusters.listener = self.cluster_state_changed

    @property
    def retry_delay(self) -> float:
        return self.clusters.settings.retry_delay

    # --- helpers -------------------------------------------------------------------------------------

    def _result(self, body: Mapping[str, Any], verdict: Verdict, fields: Mapping[str, Any] | None = None,
                drift: str | None = None, waits_for: ClusterKey | None = None) -> Result:
        previous = body.get("status") if isinstance(body.get("status"), Mapping) else {}
        status = status_patch(previous, verdict, now=self.now(), generation=generation_of(body), fields=fields, drift=drift)
        event = transition_event(previous, verdict)
        if verdict.reason in WAITING_REASONS or (verdict.reason == UP_TO_DATE and _ready_reason(previous) in WAITING_REASONS):
            event = None  # waiting for the cluster and back: the KafkaCluster's own Event tells it, once
        retry = self.retry_delay if verdict.phase is Phase.RECONCILING and waits_for is None else None
        return Result(None if unchanged(previous, status) else status, event, retry, message=verdict.message,
                      waits_for=waits_for)

    def _wait(self, body: Mapping[str, Any], key: ClusterKey, reason: str, message: str) -> Result:
        return self._result(body, Verdict(Phase.RECONCILING, reason, message), waits_for=key)

    async def _context_for(self, key: ClusterKey) -> tuple[ClusterContext | None, tuple[str, str] | None]:
        """The resource's cluster context, connected; or why the resource must wait: (reason, message)."""
        namespace, name = key
        if not self.owner.owns(key):  # handed over meanwhile: the new owner picks it up
            return None, (CLUSTER_NOT_READY, f"KafkaCluster {namespace}/{name} is worked on by another replica")
        cluster_body = self.catalog.cluster(key)
        if cluster_body is None:
            return None, (CLUSTER_NOT_FOUND, f"KafkaCluster {namespace}/{name} does not exist (yet)")
        context = self.clusters.get(key)
        if context is None:
            checked = check_custom_resource(cluster_body)
            if not isinstance(checked.resource, KafkaCluster):
                return None, (CLUSTER_NOT_READY, f"KafkaCluster {namespace}/{name} is invalid")
            context = await self.clusters.ensure(checked.resource)
        if not context.settled.is_set():
            await self.clusters.wait_settled(context)
        if not context.ready:
            problem = context.problem or Problem(CLUSTER_NOT_READY, "not connected yet", True)
            return context, (CLUSTER_NOT_READY, f"KafkaCluster {namespace}/{name}: {problem.reason}: {problem.message}")
        return context, None

    def _connection_lost(self, body: Mapping[str, Any], context: ClusterContext, exc: BaseException,
                         reason: str | None = None) -> Result:
        if reason is None:
            self.clusters.mark_down(context, exc)
        else:
            self.clusters.mark_down(context, exc, reason)
        return self._wait(body, context.key, CLUSTER_NOT_READY, f"KafkaCluster {context.key[0]}/{context.key[1]}: {exc}")

    async def _gate(self, body: Mapping[str, Any], claims: Iterable[Claim]) -> tuple[Any, ClusterContext | None, Result | None]:
        """Validation, annotations, cluster lookup, admission and conflicts: (model, context, early result)."""
        if is_paused(body):
            return None, None, self._result(body, Verdict(Phase.PAUSED, PAUSED,
                                                          "kafkaops.io/paused is true: not reconciling"))
        if is_unmanaged(body):
            return None, None, self._result(body, Verdict(Phase.PAUSED, UNMANAGED,
                                                          "kafkaops.io/managed is false: released, Kafka untouched"))
        checked = check_custom_resource(body)
        key = cluster_of(body)
        if checked.resource is None or key is None:
            errors = [i for i in checked.issues if i.is_error]
            reason = errors[0].rule if errors else "Invalid"
            message = "; ".join(f"{i.path}: {i.reason}" if i.path else i.reason for i in errors)
            return None, None, self._result(body, Verdict(Phase.STALLED, reason, message))
        model = checked.resource
        context, waiting = await self._context_for(key)
        if waiting is not None:
            return model, context, self._wait(body, key, *waiting)
        assert context is not None
        topic_name = model.topic_name if isinstance(model, KafkaTopic) else None
        if problem := context.model.admission_problem(model.namespace, topic_name):
            return model, context, self._result(body, Verdict(Phase.STALLED, NAMESPACE_NOT_ALLOWED, problem))
        mine = claim_of(body)
        first = winner(mine, claims)
        if first.uid != mine.uid:
            what = claim_key(body)
            return model, context, self._result(body, Verdict(
                Phase.STALLED, RESOURCE_CONFLICT,
                f"{what if what else 'it '} is already managed by "
                f"{model.kind} {first.namespace}/{first.name}"), {CLAIMED: None})
        return model, context, None

    def _seed_ownership(self, context: ClusterContext, owner: str | None, body: Mapping[str, Any]) -> None:
        """After a restart the status is where ownership survives: load it before planning."""
        if owner is None or context.engine is None:
            return
        key = context.engine.state_key()
        if owner in context.store.load(key).owners:
            return
        keys = ((body.get("status") or {}).get("managedConfigKeys")) or []
        if keys:
            context.store.update(key, {owner: {k: None for k in keys if isinstance(k, str)}})

    def _fields(self, context: ClusterContext, model: Any) -> dict[str, Any]:
        fields: dict[str, Any] = {"lastSyncTime": self.now(), CLAIMED: True}
        owner = owner_of(model)
        if owner is not None and context.engine is not None:
            keys = context.store.load(context.engine.state_key()).keys(owner)
            fields["managedConfigKeys"] = sorted(keys)
        if isinstance(model, KafkaTopic):  # as declared; replaced by what Metadata says when it is read
            fields["topicName"] = model.topic_name
            fields["partitions"] = model.desired_partitions
            fields["replicationFactor"] = model.desired_replication_factor
        if isinstance(model, KafkaAcl):
            fields["bindings"] = len(model.bindings)
        return {k: v for k, v in fields.items() if v is not None}

    # --- resources ---------------------------------------------------------------------------------------

    def _lock(self, body: Mapping[str, Any]) -> asyncio.Lock:
        return self._locks.setdefault(uid_of(body), asyncio.Lock())

    async def reconcile(self, body: Mapping[str, Any], claims: Iterable[Claim] | None = None,
                        resuming: bool = False) -> Result:
        """Reconcile one resource (one at a time per resource); park it when its cluster is not there."""
        uid = uid_of(body)
        async with self._lock(body):
            self.waiting.discard(uid)
            result = await self._reconcile(body, self.catalog.claims(body) if claims is None else claims, resuming)
            if result.waits_for is not None:
                # parked with the status about to be written, so the rerun compares against it
                parked = {**body, "status": result.status} if result.status is not None else body
                self.waiting.add(result.waits_for, uid, parked)
        return result

    async def _reconcile(self, body: Mapping[str, Any], claims: Iterable[Claim], resuming: bool) -> Result:
        started = time.monotonic()
        kind = str(body.get("kind"))
        status = body.get("status") if isinstance(body.get("status"), Mapping) else {}
        if (resuming and is_settled(status, generation_of(body)) and status.get(THROTTLE_RECORD) is None
                and not is_paused(body) and not is_unmanaged(body)):
            # a restart: its status says Ready at this generation. The cluster's first resync compares
            # all such resources with Kafka in one bulk read (and seeds their ownership); nothing here
            self.metrics.record(kind, "resumed", UP_TO_DATE, 0.0)
            return Result()
        model, context, early = await self._gate(body, claims)
        if early is not None:
            self.metrics.record(kind, "skipped", early.status["conditions"][0]["reason"] if early.status else "", 0.0)
            return early
        assert context is not None and context.engine is not None
        self._seed_ownership(context, owner_of(model), body)
        extra: dict[str, Any] = {}
        if isinstance(model, KafkaTopic):
            seed_throttle(context, model, body)
            active = context.reassignments.active(model.topic_name) if context.reassignments else None
            if active is not None:
                following = await self._follow_run(body, context, model, active)
                if following is not None:
                    return following
                extra = {"reassignment": reassignment_status(active.run.progress), THROTTLE_RECORD: None}
        inputs = await self.principal_inputs(context, model, body)  # KafkaUser, KafkaClientQuota: principals.py
        if (refused := inputs.verdict()) is not None:
            return self._result(body, refused, inputs.fields)
        options = RunOptions(all_topics=False, defer_replica_changes=True)
        engine = context.engine  # a context closed meanwhile (handed over, deleted) drops its engine
        try:
            planned = await engine.plan(DesiredState.of([model], context.model, inputs.passwords), options)
            if not await self._record_keys(body, planned):
                return replace(self._result(body, Verdict(
                    Phase.RECONCILING, "OwnershipNotRecorded", "the status did not take the config keys this change "
                    "sets (they must be known as ours across restarts): retrying")), retry_after=2.0)
            report = await engine.apply(planned, options)
        except KafkaConnectionError as exc:
            return self._connection_lost(body, context, exc)
        except AuthenticationFailed as exc:  # a rotated password: the probe re-reads the Secret
            return self._connection_lost(body, context, exc, AUTHENTICATION_FAILED)
        if context.engine is not engine:
            return self._wait(body, context.key, CLUSTER_NOT_READY,
                              f"KafkaCluster {context.key[0]}/{context.key[1]}: its connection was closed")
        outcome = next(o for o in report.outcomes if o.source == model.source)
        if outcome.problem is not None and outcome.problem.reason in CONNECTION_LOST:
            return self._connection_lost(body, context, ConnectionError(outcome.problem.message), outcome.problem.reason)
        if outcome.ok and report.deferred.get(model.source):
            return await self._start_run(body, context, model, report.deferred[model.source])
        fields = {**self._fields(context, model), **extra, **self.principal_fields(context, model, inputs, outcome.ok)}
        if isinstance(model, KafkaTopic) and outcome.ok:
            try:
                fields = await topic_fields(context, model, outcome, fields, planned.observed.topic(model.topic_name))
            except KafkaConnectionError as exc:  # closed meanwhile (handed over): a wait
                return self._connection_lost(body, context, exc)
        verdict = Verdict.of(outcome)
        self.metrics.record(kind, outcome.state.value, outcome.reason, time.monotonic() - started)
        self.metrics.record_requests(context.model.name, engine.batcher.admin.requests_by_api)
        self.metrics.record_batcher(context.model.name, engine.batcher.stats, engine.batcher.queue_depth)
        return self._result(body, verdict, fields)

    async def _record_keys(self, body: Mapping[str, Any], planned: Planned) -> bool:
        """Intent before act: config keys an edit is about to set on something already in Kafka
        are written to `status.managedConfigKeys` before the AlterConfigs. Otherwise a process
        killed (or a status patch refused) between the change and its status forgot that the
        key is ours, and a later edit dropping it from the spec left it set in Kafka (the soak's
        random seed 507317: an owned `retention.ms` left behind). A topic's creation is not
        recorded ahead (one write per new topic at scale): see docs/reliability.md, finding 17."""
        status = body.get("status") if isinstance(body.get("status"), Mapping) else {}
        recorded = {k for k in status.get("managedConfigKeys") or () if isinstance(k, str)}
        new = keys_set_ahead(planned) - recorded
        if not new or self.status_writer is None:
            return True
        metadata = body.get("metadata") or {}
        keys = sorted(recorded | new | {k for r in planned.plan.pending if r.owner for k in planned.ownership.keys(r.owner)})
        try:
            await self.status_writer(PLURALS[str(body.get("kind"))], metadata.get("namespace"), metadata.get("name"),
                                     {"managedConfigKeys": keys})
        except Exception:  # noqa: BLE001 - the API refused after retries: nothing is set without a record
            log.warning("%s %s/%s: recording its config keys failed; the change waits", body.get("kind"),
                        metadata.get("namespace"), metadata.get("name"), exc_info=True)
            return False
        return True

    # --- replica changes in the background (moves.py) ------------------------------------------------

    async def _start_run(self, body: Mapping[str, Any], context: ClusterContext, model: KafkaTopic,
                         steps: tuple[ChangeReplicas, ...]) -> Result:
        assert context.engine is not None and context.reassignments is not None
        plans, problems = await context.reassignments.plan([(model.source, step) for step in steps])
        if (problem := problems.get(model.source)) is not None:
            if problem.reason in CONNECTION_LOST:  # e.g. a rotated password: wait for the cluster, not Stalled
                return self._connection_lost(body, context, ConnectionError(problem.message), problem.reason)
            return self._result(body, Verdict(Phase.RECONCILING if problem.retriable else Phase.STALLED,
                                              problem.reason, problem.message))
        plan = plans.get(model.source)
        if plan is None:
            return self._result(body, Verdict(Phase.RECONCILING, "ReassignmentPending", "nothing to move yet"))
        metadata = body.get("metadata") or {}

        async def persist(record: Any) -> None:  # written ahead of any throttle config
            if self.status_writer is not None:
                await self.status_writer(PLURALS[KAFKA_TOPIC], metadata.get("namespace"), metadata.get("name"),
                                         {THROTTLE_RECORD: None if record is None else record.to_entry()})

        run = context.reassignments.start(context.engine.state_key(), plan, context.model.spec.replication_throttle,
                                          persist=persist, follow=model.topic_name)
        return self._moving(body, run.progress, f"reassignment of {len(plan)} partition(s) started")

    async def _follow_run(self, body: Mapping[str, Any], context: ClusterContext, model: KafkaTopic,
                          active: ActiveRun) -> Result | None:
        """A run in progress: report it, or revert it when the spec no longer asks for it. A finished
        run is dropped; None means: carry on with a normal reconcile."""
        assert context.reassignments is not None
        progress = active.run.progress
        if progress.finished:
            context.reassignments.forget(model.topic_name)
            problem = progress.problem_for(model.topic_name)
            if problem is not None and not (progress.cancelled and not progress.external and not progress.failed):
                # failed, or partitions moved by someone else: reported, never fought (retried later)
                return self._result(body, Verdict(Phase.RECONCILING if problem.retriable else Phase.STALLED,
                                                  problem.reason, problem.message),
                                    {"reassignment": reassignment_status(progress)})
            return None
        if not still_wanted(model, active):
            context.reassignments.revert(model.topic_name)
            return self._moving(body, progress, "the spec changed: cancelling the partitions still moving")
        return self._moving(body, progress)

    def _moving(self, body: Mapping[str, Any], progress: ReassignmentProgress, note: str | None = None) -> Result:
        return self._result(body, Verdict(Phase.RECONCILING, "Reassigning", moving_message(progress, note)),
                            {"reassignment": reassignment_status(progress), "lastSyncTime": self.now()})

    # --- deletion ---------------------------------------------------------------------------------------

    async def remove(self, body: Mapping[str, Any], claims: Iterable[Claim] | None = None) -> Result:
        """A resource is being deleted: apply its deletion policy, then let the finalizer go.

        Released without touching Kafka only when the user said so (unmanaged/paused), when the
        resource never managed anything (invalid, lost a conflict, or never applied while its
        KafkaCluster, being deleted too, cannot log in or has never connected:
        `_never_applied_and_cannot_be`), or when its KafkaCluster object is absent from the API.
        Otherwise a cluster that exists but is not connected is waited for."""
        uid = uid_of(body)
        self.waiting.discard(uid)
        if is_unmanaged(body) or is_paused(body):
            return Result(release=True, message="released without touching Kafka (unmanaged or paused)")
        checked = check_custom_resource(body)
        key = cluster_of(body)
        if checked.resource is None or key is None:
            return Result(release=True, message="invalid resource: nothing of it was applied")
        model = checked.resource
        cluster_body = self.catalog.cluster(key)
        if cluster_body is None:
            return Result(release=True, event=EventNote("Warning", CLUSTER_NOT_FOUND,
                          f"KafkaCluster {key[0]}/{key[1]} is gone: released without touching Kafka"))
        mine = claim_of(body)
        if winner(mine, self.catalog.claims(body) if claims is None else claims).uid != mine.uid:
            return Result(release=True, message="this resource never managed it (conflict): released")
        cluster = check_custom_resource(cluster_body).resource
        if isinstance(cluster, KafkaCluster):
            policy = model.effective_deletion_policy(cluster) if hasattr(model, "effective_deletion_policy") else \
                cluster.spec.topic_deletion.policy
            if policy is not DeletionPolicy.DELETE:
                return Result(release=True, event=EventNote("Normal", "Retained",
                                                            f"deletion policy {policy}: {model.kind} left in Kafka"))
        async with self._lock(body):
            context, waiting = await self._context_for(key)
            if waiting is not None and (released := _never_applied_and_cannot_be(body, cluster_body, context)):
                metadata = body.get("metadata") or {}
                log.warning("%s %s/%s %s", model.kind, metadata.get("namespace"), metadata.get("name"), released)
                return Result(release=True, event=EventNote("Warning", RELEASED_UNAPPLIED, released))
            if waiting is not None:
                reason, message = waiting
                verdict = Verdict(Phase.RECONCILING, reason, f"{message}; cannot delete in Kafka yet (annotate "
                                                             "kafkaops.io/managed=false to release without deleting)")
                # kopf calls again soon; each call waits up to cluster_wait for the cluster to connect
                return replace(self._result(body, verdict), retry_after=1.0)
            assert context is not None and context.engine is not None and context.gate is not None
            gated = isinstance(model, KafkaTopic)
            if gated:
                context.gate.merge(DeletionRecord.of(cluster_body))
                if not context.gate.admit(mine.uid):
                    message = (f"more than {context.gate.cap} topic deletions within {context.gate.window:g}s on "
                               f"KafkaCluster {context.model.name}: paused until a person annotates the KafkaCluster "
                               "with kafkaops.io/confirm-deletions=true")
                    return self._result(body, Verdict(Phase.RECONCILING, DELETION_CAP_EXCEEDED, message))
                if not await self._record_deletions(context):
                    context.gate.withdraw(mine.uid)
                    return replace(self._result(body, Verdict(
                        Phase.RECONCILING, "DeletionNotRecorded", "the KafkaCluster's status did not take the deletion "
                        "record (the cap must hold across restarts): retrying")), retry_after=2.0)
            sending = False
            try:
                engine = context.engine
                planned = await engine.plan_removal(model)
                sending = bool(planned.plan.pending)
                report = await engine.apply(planned, RunOptions(all_topics=False))
            except KafkaConnectionError as exc:
                return replace(self._connection_lost(body, context, exc), waits_for=None, retry_after=1.0)
            except AuthenticationFailed as exc:
                return replace(self._connection_lost(body, context, exc, AUTHENTICATION_FAILED), waits_for=None,
                               retry_after=1.0)
            finally:
                if gated and sending:  # it may have reached Kafka: its slot is held a window from now
                    context.gate.finish(mine.uid)
                elif gated:  # only read (the topic was gone, or the read failed): nothing reached Kafka
                    context.gate.withdraw(mine.uid)
                if gated:
                    await self._record_deletions(context)  # failed: a restart counts it in flight (safe)
        outcome = report.outcomes[0]
        if outcome.ok:
            self._locks.pop(uid, None)
            self._models.pop(uid, None)
            return Result(release=True, event=EventNote("Normal", "Deleted", f"{model.kind} deleted in Kafka"))
        if outcome.problem is not None and outcome.problem.reason in CONNECTION_LOST:
            self.clusters.mark_down(context, ConnectionError(outcome.problem.message), outcome.problem.reason)
        verdict = Verdict.of(outcome)
        return self._result(body, verdict if verdict.phase is Phase.RECONCILING else
                            Verdict(Phase.RECONCILING, verdict.reason, verdict.message))

    # --- clusters: k8s/cluster_status.py (ClusterStatus) ----------------------------------------------

    async def run_waiting(self, key: ClusterKey) -> None:
        """Run every resource parked on cluster `key`, concurrently (their items join the same batches)."""
        parked = self.waiting.take(key)
        if parked:
            started = time.monotonic()
            await self.rerun_together(parked)  # KafkaUsers' Secrets read first, all together (principals.py)
            log.info("KafkaCluster %s/%s: %d resource(s) that waited for it reconciled in %.2f s", key[0], key[1],
                     len(parked), time.monotonic() - started)

    async def _rerun(self, body: Mapping[str, Any]) -> None:
        try:
            await self.publish(body, await self.reconcile(body))
        except Exception as exc:  # one resource's failure must not stop the others
            # e.g. the API refused the status write after its retries: park it again and try later,
            # or its status would say "waiting" for ever (a resync only looks at settled resources)
            metadata = body.get("metadata") or {}
            log.warning("%s %s/%s: reconcile after waiting failed (%s: %s); trying again in %gs", body.get("kind"),
                        metadata.get("namespace"), metadata.get("name"), type(exc).__name__, exc, self.retry_delay)
            key = cluster_of(body)
            if key is not None and uid_of(body) not in self.waiting:
                self.waiting.add(key, uid_of(body), body)
                self._later(self.retry_delay, lambda: self.run_waiting(key))

    def _later(self, delay: float, work: Callable[[], Awaitable[None]]) -> None:
        async def run() -> None:
            await asyncio.sleep(delay)
            await work()

        task = asyncio.create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def publish(self, body: Mapping[str, Any], result: Result, plural: str | None = None) -> None:
        """Write a result outside a handler of the resource: its status and its Event (never for a
        cluster this replica no longer owns)."""
        if not self.owner.owns(self.cluster_key(body, plural)):
            return
        metadata = body.get("metadata") or {}
        if result.status is not None and self.status_writer is not None:
            await self.status_writer(plural or PLURALS.get(str(body.get("kind")), ""), metadata.get("namespace"),
                                     metadata.get("name"), result.status)
        if result.event is not None and self.event_poster is not None:
            self.event_poster(body, result.event)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await self.clusters.close_all()


def keys_set_ahead(planned: Planned) -> set[str]:
    """The config keys `planned` sets by AlterConfigs on owned resources (not by a creation)."""
    return {op.name for resource in planned.plan.pending if resource.owner is not None
            for step in resource.steps if isinstance(step, AlterConfigs)
            for op in step.ops if op.op is AlterOp.SET}
