"""What the operator does for each event, independent of kopf (handlers.py only wires it).

Every method takes a resource body (and what kopf's indexes know) and returns a `Result`: the
status to write, the Event to post on a transition, and whether to retry later. Kafka is only
reached through the cluster context's engine, whose Batcher joins the single items of all
concurrent handlers into batched requests.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkaops.k8s.context import CLUSTER_NOT_FOUND, ActiveRun, ClusterContext, Clusters
from kafkaops.k8s.kinds import CLAIMED, Claim, claim_key, claim_of, is_paused, is_unmanaged
from kafkaops.k8s.metrics import Metrics
from kafkaops.k8s.status import (
    PAUSED,
    RESOURCE_CONFLICT,
    UNMANAGED,
    EventNote,
    Phase,
    Verdict,
    status_patch,
    transition_event,
)
from kafkaops.reconcile import DesiredState, Problem, RunOptions, State
from kafkaops.reconcile.actions import ChangeReplicas
from kafkaops.reconcile.engine import THROTTLE_OWNER
from kafkaops.reconcile.leaders import Election, elect_preferred
from kafkaops.reconcile.reassign import ReassignmentProgress
from kafkaops.reconcile.ownership import broker_owner, topic_owner
from kafkaops.resources.models import DeletionPolicy, KafkaAcl, KafkaBrokerConfig, KafkaCluster, KafkaTopic
from kafkaops.resources.validation import check_custom_resource

NAMESPACE_NOT_ALLOWED = "NamespaceNotAllowed"
DELETION_CAP_EXCEEDED = "DeletionCapExceeded"


def utc_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class Result:
    status: Mapping[str, Any] | None = None
    event: EventNote | None = None
    retry_after: float | None = None
    release: bool = False  # deletion: the finalizer may go
    message: str = ""


def _generation(body: Mapping[str, Any]) -> int | None:
    value = (body.get("metadata") or {}).get("generation")
    return value if isinstance(value, int) else None


def _winner(mine: Claim, claims: Iterable[Claim]) -> Claim:
    """The claim that wins; the index may hold an older version of `mine` itself, which is skipped."""
    return min([*(c for c in claims if c.uid != mine.uid), mine])


def _still_wanted(topic: KafkaTopic, active: ActiveRun) -> bool:
    """Whether the spec still asks for the run's targets: the same explicit assignment, or the same
    replication factor (the placement was computed from it; recomputing it mid-move would differ)."""
    for tp, target in active.targets.items():
        if topic.replica_assignment is not None:
            if tp.partition >= len(topic.replica_assignment) or tuple(topic.replica_assignment[tp.partition]) != tuple(target):
                return False
        elif topic.replication_factor is not None and topic.replication_factor != len(target):
            return False
    return True


def _owner(resource: KafkaTopic | KafkaAcl | KafkaBrokerConfig) -> str | None:
    if isinstance(resource, KafkaTopic):
        return topic_owner(resource.topic_name)
    if isinstance(resource, KafkaBrokerConfig):
        return broker_owner("" if resource.broker_id is None else str(resource.broker_id))
    return None


StatusWriter = Callable[[str, str, str, Mapping[str, Any]], Awaitable[None]]  # plural, namespace, name, status
THROTTLE_RECORD = "replicationThrottleRecord"  # status field: the throttle a running reassignment set


def _iso(moment: datetime.datetime | None) -> str | None:
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if moment else None


def reassignment_status(progress: ReassignmentProgress) -> dict[str, Any]:
    """status.reassignment of a KafkaTopic from the run's progress."""
    fields = {
        "state": progress.state.value, "partitionsTotal": progress.partitions_total,
        "partitionsDone": progress.partitions_done, "bytesTotal": progress.bytes_total,
        "bytesDone": progress.bytes_done, "startedAt": _iso(progress.started_at),
        "estimatedCompletion": _iso(progress.eta),
    }
    return {k: v for k, v in fields.items() if v is not None}


@dataclass
class Reconciler:
    clusters: Clusters
    metrics: Metrics = field(default_factory=Metrics)
    now: Callable[[], str] = utc_now
    status_writer: StatusWriter | None = None  # for the throttle record, written ahead of the throttle

    @property
    def retry_delay(self) -> float:
        return self.clusters.settings.retry_delay

    # --- helpers -------------------------------------------------------------------------------------

    def _result(self, body: Mapping[str, Any], verdict: Verdict, fields: Mapping[str, Any] | None = None,
                drift: str | None = None) -> Result:
        previous = body.get("status") if isinstance(body.get("status"), Mapping) else {}
        status = status_patch(previous, verdict, now=self.now(), generation=_generation(body), fields=fields, drift=drift)
        retry = self.retry_delay if verdict.phase is Phase.RECONCILING else None
        return Result(status, transition_event(previous, verdict), retry, message=verdict.message)

    def _gate(self, body: Mapping[str, Any], claims: Iterable[Claim]) -> tuple[Any, ClusterContext | None, Result | None]:
        """Validation, annotations, cluster lookup, admission and conflicts: (model, context, early result)."""
        if is_paused(body):
            return None, None, self._result(body, Verdict(Phase.PAUSED, PAUSED,
                                                          "kafkaops.io/paused is true: not reconciling"))
        if is_unmanaged(body):
            return None, None, self._result(body, Verdict(Phase.PAUSED, UNMANAGED,
                                                          "kafkaops.io/managed is false: released, Kafka untouched"))
        checked = check_custom_resource(body)
        if checked.resource is None:
            errors = [i for i in checked.issues if i.is_error]
            reason = errors[0].rule if errors else "Invalid"
            message = "; ".join(f"{i.path}: {i.reason}" if i.path else i.reason for i in errors)
            return None, None, self._result(body, Verdict(Phase.STALLED, reason, message))
        model = checked.resource
        context = self.clusters.get(model.cluster_ref)
        if context is None:
            return model, None, self._result(body, Verdict(
                Phase.RECONCILING, CLUSTER_NOT_FOUND, f"KafkaCluster {model.cluster_ref} does not exist (yet)"))
        topic_name = model.topic_name if isinstance(model, KafkaTopic) else None
        if problem := context.model.admission_problem(model.namespace, topic_name):
            return model, context, self._result(body, Verdict(Phase.STALLED, NAMESPACE_NOT_ALLOWED, problem))
        mine = claim_of(body)
        winner = _winner(mine, claims)
        if winner.uid != mine.uid:
            what = claim_key(body)
            return model, context, self._result(body, Verdict(
                Phase.STALLED, RESOURCE_CONFLICT,
                f"{what[0] if what else 'it'} {what[3] if what else ''!s} is already managed by "
                f"{model.kind} {winner.namespace}/{winner.name}"), {CLAIMED: None})
        if not context.ready:
            problem = context.problem or Problem("ClusterNotReady", "the cluster is not connected yet", True)
            return model, context, self._result(body, Verdict(Phase.RECONCILING, problem.reason, problem.message))
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
        owner = _owner(model)
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

    async def reconcile(self, body: Mapping[str, Any], claims: Iterable[Claim] = ()) -> Result:
        started = time.monotonic()
        model, context, early = self._gate(body, claims)
        kind = str(body.get("kind"))
        if early is not None:
            self.metrics.record(kind, "skipped", early.status["conditions"][0]["reason"] if early.status else "", 0.0)
            return early
        assert context is not None and context.engine is not None
        self._seed_ownership(context, _owner(model), body)
        extra: dict[str, Any] = {}
        if isinstance(model, KafkaTopic):
            self._seed_throttle(context, model, body)
            active = context.runs.get(model.topic_name)
            if active is not None:
                following = await self._follow_run(body, context, model, active)
                if following is not None:
                    return following
                extra = {"reassignment": reassignment_status(active.run.progress), THROTTLE_RECORD: None}
        options = RunOptions(all_topics=False, defer_replica_changes=True)
        report = await context.engine.reconcile(DesiredState.of([model], context.model), options)
        outcome = next(o for o in report.outcomes if o.source == model.source)
        if outcome.ok and report.deferred.get(model.source):
            return await self._start_run(body, context, model, report.deferred[model.source])
        fields = {**self._fields(context, model), **extra}
        if isinstance(model, KafkaTopic) and outcome.ok:
            info = await context.engine.batcher.describe_topic(model.topic_name)
            if info.value is not None:
                fields.update(topicId=str(info.value.topic_id) if info.value.topic_id else None,
                              partitions=len(info.value.partitions), replicationFactor=info.value.replication_factor)
                fields = {k: v for k, v in fields.items() if v is not None or k == THROTTLE_RECORD}
        verdict = Verdict.of(outcome)
        self.metrics.record(kind, outcome.state.value, outcome.reason, time.monotonic() - started)
        self.metrics.record_requests(context.model.name, context.engine.batcher.admin.requests_by_api)
        self.metrics.record_batcher(context.model.name, context.engine.batcher.stats, context.engine.batcher.queue_depth)
        return self._result(body, verdict, fields)

    # --- replica changes in the background ---------------------------------------------------------

    def _seed_throttle(self, context: ClusterContext, model: KafkaTopic, body: Mapping[str, Any]) -> None:
        """A throttle record in status with no run in this process: an earlier operator died while
        moving. Into the store it goes, so the engine removes that throttle before anything else."""
        record = (body.get("status") or {}).get(THROTTLE_RECORD)
        if not isinstance(record, Mapping) or model.topic_name in context.runs or context.engine is None:
            return
        owner = f"{THROTTLE_OWNER}/{model.topic_name}"
        key = context.engine.state_key()
        if owner not in context.store.load(key).owners:
            context.store.update(key, {owner: {str(k): (None if v is None else str(v)) for k, v in record.items()}})

    async def _start_run(self, body: Mapping[str, Any], context: ClusterContext, model: KafkaTopic,
                         steps: tuple[ChangeReplicas, ...]) -> Result:
        assert context.engine is not None
        plans, problems = await context.engine.plan_replica_changes([(model.source, step) for step in steps])
        if (problem := problems.get(model.source)) is not None:
            return self._result(body, Verdict(Phase.RECONCILING if problem.retriable else Phase.STALLED,
                                              problem.reason, problem.message))
        plan = plans.get(model.source)
        if plan is None:
            return self._result(body, Verdict(Phase.RECONCILING, "ReassignmentPending", "nothing to move yet"))
        metadata = body.get("metadata") or {}

        async def persist(record: Any) -> None:  # written ahead of any throttle config
            if self.status_writer is not None:
                await self.status_writer("kafkatopics", metadata.get("namespace"), metadata.get("name"),
                                         {THROTTLE_RECORD: None if record is None else record.to_entry()})

        run = context.engine.start_reassignment(context.engine.state_key(), plan,
                                                context.model.spec.replication_throttle, persist=persist)
        context.runs[model.topic_name] = ActiveRun(run, plan.targets())
        return self._moving(body, run.progress, f"reassignment of {len(plan)} partition(s) started")

    def _moving(self, body: Mapping[str, Any], progress: ReassignmentProgress, note: str | None = None) -> Result:
        message = "; ".join(m for m in (note, progress.message or "moving partitions") if m)
        return self._result(body, Verdict(Phase.RECONCILING, "Reassigning", message),
                            {"reassignment": reassignment_status(progress), "lastSyncTime": self.now()})

    async def _follow_run(self, body: Mapping[str, Any], context: ClusterContext, model: KafkaTopic,
                          active: ActiveRun) -> Result | None:
        """A run in progress: report it, or revert it when the spec no longer asks for it. A finished
        run is dropped; None means: carry on with a normal reconcile."""
        assert context.engine is not None
        progress = active.run.progress
        if progress.finished:
            context.runs.pop(model.topic_name, None)
            problem = progress.problem_for(model.topic_name)
            if problem is not None and not (progress.cancelled and not progress.external and not progress.failed):
                # failed, or partitions moved by someone else: reported, never fought (retried later)
                return self._result(body, Verdict(Phase.RECONCILING if problem.retriable else Phase.STALLED,
                                                  problem.reason, problem.message),
                                    {"reassignment": reassignment_status(progress)})
            return None
        if not _still_wanted(model, active):
            active.run.revert()
            return self._moving(body, progress, "the spec changed: cancelling the partitions still moving")
        return self._moving(body, progress)

    async def remove(self, body: Mapping[str, Any], claims: Iterable[Claim] = ()) -> Result:
        """A resource is being deleted: apply its deletion policy, then let the finalizer go."""
        if is_unmanaged(body) or is_paused(body):
            return Result(release=True, message="released without touching Kafka (unmanaged or paused)")
        checked = check_custom_resource(body)
        if checked.resource is None:
            return Result(release=True, message="invalid resource: nothing of it was applied")
        model = checked.resource
        context = self.clusters.get(model.cluster_ref)
        if context is None:
            return Result(release=True, event=EventNote("Warning", CLUSTER_NOT_FOUND,
                          f"KafkaCluster {model.cluster_ref} is gone: released without touching Kafka"))
        mine = claim_of(body)
        if _winner(mine, claims).uid != mine.uid:
            return Result(release=True, message="this resource never managed it (conflict): released")
        if isinstance(model, KafkaTopic):
            policy = model.effective_deletion_policy(context.model)
        else:
            policy = context.model.spec.topic_deletion.policy
        if policy is not DeletionPolicy.DELETE:
            return Result(release=True, event=EventNote("Normal", "Retained",
                                                        f"deletion policy {policy}: {model.kind} left in Kafka"))
        if not context.ready:
            problem = context.problem or Problem("ClusterNotReady", "the cluster is not connected", True)
            return self._result(body, Verdict(
                Phase.RECONCILING, problem.reason,
                f"{problem.message}; cannot delete in Kafka yet (annotate kafkaops.io/managed=false to release "
                "without deleting)"))
        assert context.engine is not None and context.gate is not None
        if isinstance(model, KafkaTopic) and not context.gate.admit(mine.uid):
            message = (f"more than {context.gate.cap} topic deletions within {context.gate.window:g}s on KafkaCluster "
                       f"{context.model.name}: paused until a person annotates the KafkaCluster with "
                       "kafkaops.io/confirm-deletions=true")
            return self._result(body, Verdict(Phase.RECONCILING, DELETION_CAP_EXCEEDED, message))
        planned = await context.engine.plan_removal(model)
        report = await context.engine.apply(planned, RunOptions(all_topics=False))
        outcome = report.outcomes[0]
        if outcome.ok:
            return Result(release=True, event=EventNote("Normal", "Deleted", f"{model.kind} deleted in Kafka"))
        verdict = Verdict.of(outcome)
        result = self._result(body, verdict if verdict.phase is Phase.RECONCILING else
                              Verdict(Phase.RECONCILING, verdict.reason, verdict.message))
        return result

    # --- clusters ---------------------------------------------------------------------------------------

    async def cluster_changed(self, body: Mapping[str, Any]) -> Result:
        checked = check_custom_resource(body)
        if checked.resource is None or not isinstance(checked.resource, KafkaCluster):
            errors = [i for i in checked.issues if i.is_error]
            return self._result(body, Verdict(Phase.STALLED, errors[0].rule if errors else "Invalid",
                                              "; ".join(f"{i.path}: {i.reason}" for i in errors)))
        context = await self.clusters.open(checked.resource)
        if context.problem is not None:
            phase = Phase.RECONCILING if context.problem.retriable else Phase.STALLED
            result = self._result(body, Verdict(phase, context.problem.reason, context.problem.message))
            # a cluster whose credentials fail is retried too: the Secret may be fixed without a spec change
            return Result(result.status, result.event, self.retry_delay, message=result.message)
        description = dict(context.description)
        message = (f"connected: {len(description.get('brokers', []))} broker(s), controller "
                   f"{description.get('controllerId')}")
        return self._result(body, Verdict(Phase.READY, "Connected", message), description)

    async def cluster_deleted(self, body: Mapping[str, Any]) -> None:
        metadata = body.get("metadata") or {}
        await self.clusters.close((metadata.get("namespace"), metadata.get("name")))

    def confirm_deletions(self, body: Mapping[str, Any]) -> bool:
        metadata = body.get("metadata") or {}
        for context in self.clusters.contexts():
            if context.key == (metadata.get("namespace"), metadata.get("name")) and context.gate is not None:
                context.gate.confirm(self.clusters.settings.confirm_annotation_ttl)
                return True
        return False

    # --- periodic preferred leader election ---------------------------------------------------------------

    async def maybe_elect_leaders(self, context: ClusterContext, now: float | None = None) -> EventNote | None:
        """spec.preferredLeaderElectionInterval: when due, elect the partitions led by another replica
        than their preferred one (one Metadata + one ElectLeaders); an Event says what happened."""
        interval = context.model.spec.leader_election_seconds
        now = time.monotonic() if now is None else now
        if interval is None or not context.ready or context.admin is None or now - context.last_leader_election < interval:
            return None
        context.last_leader_election = now
        elections, problem = await elect_preferred(context.admin)
        if problem is not None:
            return EventNote("Warning", problem.reason, f"preferred leader election: {problem.message}")
        if not elections:
            return None
        failed = [e for e in elections if e.outcome is Election.FAILED]
        message = (f"preferred leader election: {len(elections) - len(failed)} of {len(elections)} imbalanced "
                   f"partition(s) moved back to their preferred leader"
                   + (f"; failed: {', '.join(f'{e.partition} ({e.reason})' for e in failed[:10])}" if failed else ""))
        return EventNote("Warning" if failed else "Normal", "LeadersElected", message)

    # --- drift ----------------------------------------------------------------------------------------------

    async def resync(self, context: ClusterContext, bodies: Iterable[Mapping[str, Any]],
                     claims: Mapping[Any, Iterable[Claim]]) -> list[tuple[Mapping[str, Any], Result]]:
        """Read every managed resource of the cluster in bulk; restore what drifted; report it.

        Returns (body, result) for the resources whose status must change (drift restored, or a
        previous Drifted condition to clear)."""
        if not context.ready or context.engine is None:
            return []
        started = time.monotonic()
        chosen: dict[Any, Mapping[str, Any]] = {}
        for body in bodies:
            if is_paused(body) or is_unmanaged(body) or (body.get("metadata") or {}).get("deletionTimestamp"):
                continue
            checked = check_custom_resource(body)
            key = claim_key(body)
            if checked.resource is None or key is None:
                continue
            mine = claim_of(body)
            if _winner(mine, claims.get(key, ())).uid != mine.uid:
                continue
            chosen[checked.resource.source] = body
            self._seed_ownership(context, _owner(checked.resource), body)
        if not chosen:
            return []
        models = [check_custom_resource(b).resource for b in chosen.values()]
        # replica changes found by a resync are left to the resource's own reconcile (they run for hours)
        report = await context.engine.reconcile(DesiredState.of(models, context.model),
                                                RunOptions(all_topics=False, defer_replica_changes=True))
        self.metrics.resync.labels(context.model.name).observe(time.monotonic() - started)
        self.metrics.record_requests(context.model.name, context.engine.batcher.admin.requests_by_api)
        changed: list[tuple[Mapping[str, Any], Result]] = []
        for outcome in report.outcomes:
            body = chosen.get(outcome.source)
            if body is None:
                continue
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
