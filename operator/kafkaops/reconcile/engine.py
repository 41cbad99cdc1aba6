"""The engine: observe -> plan -> apply -> wait -> an outcome per resource.

    engine = Engine(batcher, ownership=FileOwnershipStore(path), cluster="prod", settings=EngineSettings())
    planned = await engine.plan(desired, RunOptions(prune=True))   # read-only
    report = await engine.apply(planned, RunOptions(prune=True))    # changes Kafka

The CLI runs one engine per cluster; the operator holds one per KafkaCluster
and calls it from many handlers at once, which is why every request goes
through the shared Batcher.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import field, replace

from kafkaops.frozen import frozen
from kafkaops.kafka import AlterOp, Batcher, TopicInfo
from kafkaops.reconcile.actions import (
    Action,
    AlterConfigs,
    CreateTopic,
    DeleteTopic,
    Plan,
    Problem,
    ResourcePlan,
)
from kafkaops.reconcile.apply import INTERRUPTED, Applied, Progress, apply_plans, validate_quotas
from kafkaops.reconcile.configs import sensitive_keys
from kafkaops.reconcile.desired import DesiredState
from kafkaops.reconcile.observe import ObserveScope, observe
from kafkaops.reconcile.observed import ObservedState
from kafkaops.reconcile.outcome import Outcome, Report, State
from kafkaops.reconcile.ownership import NoOwnershipStore, Ownership, OwnershipStore, fingerprint
from kafkaops.reconcile.reassign import ProgressCallback, ReassignmentSettings
from kafkaops.reconcile.reassign.manager import THROTTLE_OWNER, ReassignmentManager, interrupted_moves
from kafkaops.reconcile.settings import EngineSettings
from kafkaops.reconcile.stopping import unless_stopped, until_stopped
from kafkaops.reconcile.principals import scram_ownership_changes
from kafkaops.reconcile.plan import DEFAULT_PROTECTED_TOPICS, PlanOptions, plan, plan_removal
from kafkaops.resources.documents import Source
from kafkaops.resources.models import KafkaAcl, KafkaBrokerConfig, KafkaTopic
from kafkaops.resources.users import KafkaClientQuota, KafkaUser
from kafkaops.reconcile.wait import expectations, wait_for


@frozen
class RunOptions:
    prune: bool = False
    validate_only: bool = False
    wait: bool = True
    # Leave replica changes to the caller (Report.deferred), which runs them in the background
    # (the operator: a reassignment may take hours; a handler must not).
    defer_replica_changes: bool = False
    # Read every topic name (needed to prune and to report undeclared topics); the operator's
    # per-resource reconciles read only their own topics.
    all_topics: bool = True
    protected_topics: str = DEFAULT_PROTECTED_TOPICS
    # Ask the brokers (one validate-only AlterClientQuotas) whether the planned quota changes are
    # acceptable, so that a refused one is a problem of the plan (the CLI's plan and apply).
    validate_quotas: bool = False

    @property
    def plan_options(self) -> PlanOptions:
        return PlanOptions(self.prune, self.protected_topics)


@frozen
class Planned:
    """A plan with what it was made from (apply needs the ownership it was planned against)."""

    plan: Plan
    observed: ObservedState
    ownership: Ownership
    state_key: str
    requests: Mapping[str, int] = field(default_factory=dict)  # sent while observing, by API
    replication_throttle: int | None = None  # bytes/s while replicas move (the KafkaCluster's)


__all__ = ["THROTTLE_OWNER", "Engine", "Planned", "RunOptions", "interrupted_moves", "ownership_changes",
           "unless_stopped", "until_stopped"]


class Engine:
    def __init__(self, batcher: Batcher, *, ownership: OwnershipStore | None = None, cluster: str = "",
                 reassignment: ReassignmentSettings | None = None,
                 on_reassignment: ProgressCallback | None = None,
                 reassignments: ReassignmentManager | None = None, settings: EngineSettings | None = None) -> None:
        self.batcher = batcher
        self.store: OwnershipStore = ownership or NoOwnershipStore()
        self.cluster = cluster
        self._cluster_id: str | None = None  # once seen: the metadata cache may be dropped meanwhile
        self.settings = settings or EngineSettings()
        if reassignment is not None:
            self.settings = replace(self.settings, reassignment=reassignment)
        # the cluster's one owner of partition reassignments (the operator's context passes its own)
        self.reassignments = reassignments or ReassignmentManager(
            batcher.admin, self.store, self.settings.reassignment_settings, cluster=cluster, on_progress=on_reassignment)

    def _requests(self) -> dict[str, int]:
        return dict(self.batcher.admin.requests_by_api)

    def state_key(self) -> str:
        """Where this cluster's ownership is kept: its cluster id (else the name or bootstrap)."""
        meta = self.batcher.admin.cached_metadata
        if meta is not None and meta.cluster_id:
            self._cluster_id = meta.cluster_id
        if self._cluster_id:
            return self._cluster_id  # stable: a request that lost its connection drops the cache
        return self.cluster or ",".join(f"{h}:{p}" for h, p in self.batcher.admin.settings.bootstrap)

    async def observe(self, desired: DesiredState, *, all_topics: bool = False,
                      ownership: Ownership | None = None) -> ObservedState:
        return await observe(self.batcher, ObserveScope.for_desired(desired, all_topics=all_topics, ownership=ownership))

    async def plan(self, desired: DesiredState, options: RunOptions = RunOptions()) -> Planned:
        before = self._requests()
        if self.batcher.admin.cached_metadata is None:
            await self.batcher.admin.refresh_metadata()
        key = self.state_key()
        ownership = self.store.load(key)
        observed = await self.observe(desired, all_topics=options.all_topics or options.prune, ownership=ownership)
        if desired.passwords:  # checking password fingerprints (PBKDF2, 1 ms each) off the event loop
            made = await asyncio.to_thread(plan, desired, observed, ownership, options.plan_options, self.cluster)
        else:
            made = plan(desired, observed, ownership, options.plan_options, self.cluster)
        if options.validate_quotas:
            made = await validate_quotas(self.batcher, made)
        throttle = desired.cluster.spec.replication_throttle if desired.cluster is not None else None
        return Planned(made, observed, ownership, key, _sent(before, self._requests()), throttle)

    async def apply(self, planned: Planned, options: RunOptions = RunOptions(), progress: Progress | None = None,
                    stop: asyncio.Event | None = None) -> Report:
        """Apply `planned`. Once `stop` is set (the CLI's Ctrl-C) no new step or partition batch is
        sent, requests in flight still answer, waiting ends, moving partitions go on in Kafka
        (throttled, recorded in the state) and the report says what was and was not applied."""
        started = time.monotonic()
        before = self._requests()
        pending = planned.plan.pending
        if not options.validate_only:
            await self.reassignments.clean_leftovers(planned.state_key)
        applied = await apply_plans(self.batcher, pending, validate_only=options.validate_only, progress=progress,
                                    stop=stop)
        waited: dict = {}
        led: Mapping[Source, TopicInfo] = {}
        if options.wait and not options.validate_only:
            waiting = wait_for(self.batcher, {a.plan.source: expectations(a) for a in applied if a.problem is None},
                               settings=self.settings)
            done = await unless_stopped(waiting, stop)
            if done is not None:
                waited, led = dict(done.problems), done.led
        if not options.validate_only and not options.defer_replica_changes:
            moved = await self._change_replicas(planned, applied, stop)
            waited.update({source: problem for source, problem in moved.items() if problem is not None})
        by_source = {a.plan.source: a for a in applied}
        outcomes = tuple(
            _outcome(r, by_source.get(r.source), waited.get(r.source), options.validate_only, led.get(r.source))
            for r in planned.plan.resources
        )
        if not options.validate_only:
            # unchanged resources adopt their declared keys too (a key set by hand to the declared value,
            # or a topic created by a run that died before recording it)
            unchanged = [Applied(r) for r in planned.plan.resources if not r.pending and r.owner is not None]
            changes = ownership_changes(planned.ownership, [*applied, *unchanged])
            changes.update(scram_ownership_changes(planned.ownership, [a.done for a in applied]))
            if changes:
                self.store.update(planned.state_key, changes)
        sent = dict(planned.requests)
        for api, count in _sent(before, self._requests()).items():
            sent[api] = sent.get(api, 0) + count
        deferred = {a.plan.source: a.deferred for a in applied if a.deferred and a.problem is None}
        return Report(planned.plan.cluster, planned.plan, outcomes, sent, time.monotonic() - started,
                      deferred if options.defer_replica_changes else {})

    async def plan_removal(self, resource: KafkaTopic | KafkaAcl | KafkaBrokerConfig | KafkaUser | KafkaClientQuota
                           ) -> Planned:
        """A plan that removes what `resource` manages (its Delete policy), read in bulk like plan()."""
        before = self._requests()
        if self.batcher.admin.cached_metadata is None:
            await self.batcher.admin.refresh_metadata()
        key = self.state_key()
        ownership = self.store.load(key)
        desired = DesiredState.of([resource])
        observed = await self.observe(desired, ownership=ownership)
        made = Plan(self.cluster, (plan_removal(resource, observed, ownership),), (), observed.cluster_id)
        return Planned(made, observed, ownership, key, _sent(before, self._requests()))

    # --- replica changes: one reassignment run per apply, by the cluster's ReassignmentManager -------------

    async def _change_replicas(self, planned: Planned, applied: list[Applied],
                               stop: asyncio.Event | None = None) -> dict[Source, Problem | None]:
        """Every deferred ChangeReplicas of this apply, run as ONE reassignment to the end."""
        steps = [(a.plan.source, step) for a in applied if a.problem is None for step in a.deferred]
        if not steps:
            return {}
        if stop is not None and stop.is_set():
            return {source: Problem(INTERRUPTED, "not applied: interrupted before the partitions moved", True)
                    for source, _ in steps}
        plans, results = await self.reassignments.plan(steps)
        results.update(await self.reassignments.run_to_end(planned.state_key, plans, planned.replication_throttle, stop))
        return results

    async def reconcile(self, desired: DesiredState, options: RunOptions = RunOptions(),
                        progress: Progress | None = None) -> Report:
        return await self.apply(await self.plan(desired, options), options, progress)


def _sent(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    return {api: n - before.get(api, 0) for api, n in after.items() if n != before.get(api, 0)}


def _outcome(resource: ResourcePlan, applied: Applied | None, waited: Problem | None, validate_only: bool,
             led: TopicInfo | None = None) -> Outcome:
    src, kind, name, action, changes = resource.source, resource.kind, resource.name, resource.action, resource.changes
    if applied is None:  # nothing to do
        return Outcome(src, kind, name, State.UNCHANGED, action, changes)
    # positional, in Outcome's field order (keyword arguments cost a frozen dataclass twice as much)
    notes, results = applied.notes, applied.results
    if applied.problem is not None:
        if applied.done:
            notes = notes + (f"{len(applied.done)} of {len(resource.steps)} step(s) were applied before it stopped",)
        return Outcome(src, kind, name, State.FAILED, action, changes, applied.problem, notes, results)
    if action is Action.NONE:
        return Outcome(src, kind, name, State.UNCHANGED, action, changes, None, notes, results)
    if validate_only:
        return Outcome(src, kind, name, State.VALIDATED, action, changes, None, notes, results)
    if waited is not None:
        return Outcome(src, kind, name, State.FAILED, action, changes, waited, notes, results)
    return Outcome(src, kind, name, State.APPLIED, action, changes, None, notes, results, led)


def ownership_changes(old: Ownership, applied: list[Applied]) -> dict[str, Mapping[str, str | None] | None]:
    """The new ownership entries after an apply: the keys each resource declares (with fresh
    fingerprints for sensitive values it set); keys kept when a reset did not happen; owners of
    deleted topics forgotten. Resources refused before any step leave their entry alone."""
    changes: dict[str, Mapping[str, str | None] | None] = {}
    for item in applied:
        resource = item.plan
        if resource.owner is None or (resource.problem is not None):
            continue
        done = item.done
        if any([isinstance(step, DeleteTopic) for step in done]):
            changes[resource.owner] = None
            continue
        if resource.owned_keys is None:
            continue
        previous = old.owners.get(resource.owner, {})
        entry: dict[str, str | None] = dict.fromkeys(resource.owned_keys)
        sensitive = sensitive_keys(resource.owned_keys)
        if sensitive:
            values_set: dict[str, str] = {}
            for step in done:
                if isinstance(step, CreateTopic):
                    values_set.update(step.topic.configs)
                elif isinstance(step, AlterConfigs):
                    values_set.update({op.name: op.value for op in step.ops if op.op is AlterOp.SET and op.value is not None})
            for key in sensitive:
                entry[key] = fingerprint(values_set[key]) if key in values_set else previous.get(key)
        if item.problem is not None:  # stopped midway: resets not done are still ours to do
            for key, value in previous.items():
                entry.setdefault(key, value)
        if dict(previous) != entry:
            changes[resource.owner] = entry
    return changes
