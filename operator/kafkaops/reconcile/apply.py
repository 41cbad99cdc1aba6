"""apply: run each resource's steps through the cluster's Batcher.

Resources run concurrently and their single items coalesce into batched
requests (one CreateTopics for thousands of topics); steps of one resource
run in order (ACL deletions before creations, new partitions before
configs). A failed step stops the rest of its resource only: one bad item
never stops the others. A resource with a planned problem sends nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import field, replace
from typing import Any

from kafkaops.frozen import frozen
from kafkaops.kafka import Batcher, CreatedTopic, ItemResult, KafkaError, ScramDeletion, ScramUpsertion, scram_upsertion
from kafkaops.kafka.errors import KafkaOpsError
from kafkaops.reconcile.acls import exact_filter, to_wire
from kafkaops.reconcile.actions import (
    AlterConfigs,
    ChangeReplicas,
    CreateAcls,
    CreatePartitions,
    CreateTopic,
    DeleteAcls,
    AlterQuotas,
    DeleteScramCredential,
    DeleteTopic,
    Plan,
    Problem,
    ResourcePlan,
    Step,
    StepResult,
    StepState,
    UpsertScramCredential,
    problem_from_exception,
)

INTERRUPTED = "Interrupted"  # the run was stopped (Ctrl-C, SIGTERM) before this step was sent
Progress = Callable[[ResourcePlan], None]


@frozen
class Applied:
    """What applying one resource's plan did: each step's result, in order, and the problem that
    stopped it (a failed step's, the plan's own, or an interruption before the next step)."""

    plan: ResourcePlan
    results: tuple[StepResult, ...] = ()
    problem: Problem | None = None
    # The steps Kafka accepted: read by the wait, the ownership and the outcome, so kept once.
    done: tuple[Step, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "done", tuple([r.step for r in self.results if r.state is StepState.OK]))

    @property
    def notes(self) -> tuple[str, ...]:
        if len(self.done) == len(self.results):  # every step OK, none skipped: the usual case, asked per resource
            return ()
        return tuple([f"{describe_step(r.step)}: {r.note}" for r in self.results if r.state is StepState.SKIPPED])

    @property
    def deferred(self) -> tuple[ChangeReplicas, ...]:
        """Replica changes: one reassignment run per cluster, after the rest."""
        if len(self.done) == len(self.results):  # every step OK: nothing deferred
            return ()
        return tuple([r.step for r in self.results
                      if r.state is StepState.DEFERRED and isinstance(r.step, ChangeReplicas)])


def describe_step(step: Step) -> str:
    match step:
        case CreateTopic(topic):
            return f"CreateTopics({topic.name})"
        case CreatePartitions(request):
            return f"CreatePartitions({request.topic} -> {request.total_count})"
        case AlterConfigs(resource, ops):
            keys = ", ".join(f"{op.op.name} {op.name}" for op in ops)
            return f"IncrementalAlterConfigs({resource.type.name.lower()} {resource.name or 'default'}: {keys})"
        case DeleteAcls(bindings):
            return f"DeleteAcls({len(bindings)} binding(s))"
        case CreateAcls(bindings):
            return f"CreateAcls({len(bindings)} binding(s))"
        case DeleteTopic(name):
            return f"DeleteTopics({name})"
        case ChangeReplicas(topic=topic, replication_factor=rf):
            return f"replica change of {topic} (replication factor {rf})"
        case UpsertScramCredential(user=user, mechanism=mechanism, iterations=iterations):
            return f"AlterUserScramCredentials(upsert {user} {mechanism.sasl_name}, {iterations} iterations)"
        case DeleteScramCredential(user, mechanism):
            return f"AlterUserScramCredentials(delete {user} {mechanism.sasl_name})"
        case AlterQuotas(alteration):
            keys = ", ".join(f"{'remove' if v is None else 'set'} {k}" for k, v in sorted(alteration.ops.items()))
            return f"AlterClientQuotas({alteration.entity}: {keys})"
    raise TypeError(step)


def _problem(step: Step, error: KafkaError) -> Problem:
    detail = f": {error.message}" if error.message else ""
    return Problem(error.name, f"{describe_step(step)} failed with {error.name}{detail}", error.retriable)


def step_result(step: Step, result: ItemResult[Any] | Exception) -> StepResult:
    """The StepResult of one admin item's answer (or of the client's failure to get one)."""
    if isinstance(result, KafkaOpsError):
        return StepResult.failed(step, problem_from_exception(result, describe_step(step)))
    if isinstance(result, Exception):
        raise result
    if result.error is not None:
        return StepResult.failed(step, _problem(step, result.error), result.error)
    return StepResult.ok(step, result.value if isinstance(result.value, CreatedTopic) else None)


def _all_of(step: Step, results: list[ItemResult[Any]]) -> StepResult:
    """One step made of several items (ACL bindings): failed with the first error, else ok."""
    return step_result(step, next((r for r in results if r.error is not None), ItemResult()))


Salted = dict[int, "ScramUpsertion | ValueError"]  # id(UpsertScramCredential step) -> its salted upsertion
INVALID_CREDENTIAL = "InvalidCredential"


def _salt(step: UpsertScramCredential) -> ScramUpsertion | ValueError:
    """The salted upsertion, or the ValueError naming the user, the field and the reason (never the password)."""
    try:
        return scram_upsertion(step.user, step.mechanism, step.password, step.iterations)
    except ValueError as exc:
        return exc


async def salt_all(plans: tuple[ResourcePlan, ...] | list[ResourcePlan], threads: int = 2) -> Salted:
    """The upsertions of every credential the plans set, salted off the event loop (PBKDF2 costs 1-2 ms
    each and releases the GIL: `threads` chunks in parallel), so that a thousand users' upsertions
    are ready at once and share one AlterUserScramCredentials request."""
    steps = [s for p in plans if p.problem is None for s in p.steps if isinstance(s, UpsertScramCredential)]
    if not steps:
        return {}
    size = -(-len(steps) // threads)
    chunks = [steps[i:i + size] for i in range(0, len(steps), size)]
    salted = await asyncio.gather(*(asyncio.to_thread(lambda chunk: [_salt(s) for s in chunk], c) for c in chunks))
    return {id(step): upsertion for chunk, done in zip(chunks, salted) for step, upsertion in zip(chunk, done)}


async def _send_upsertion(batcher: Batcher, step: UpsertScramCredential, salted: Salted | None) -> StepResult:
    upsertion = (salted or {}).get(id(step)) or await asyncio.to_thread(_salt, step)
    if isinstance(upsertion, ValueError):
        return StepResult.failed(step, Problem(INVALID_CREDENTIAL, str(upsertion)))
    return step_result(step, await batcher.alter_scram_credential(upsertion))


async def run_step(batcher: Batcher, step: Step, validate_only: bool, salted: Salted | None = None) -> StepResult:
    """Send one step; a replica change is DEFERRED (the engine runs one reassignment for the whole
    cluster), a step with no validate-only mode is SKIPPED when validating.
    Raises KafkaOpsError when the client cannot send it (unreachable, unsupported, timed out)."""
    match step:
        case UpsertScramCredential():
            if validate_only:
                return StepResult.skipped(step, "not validated: AlterUserScramCredentials has no validate-only mode")
            return await _send_upsertion(batcher, step, salted)
        case DeleteScramCredential(user, mechanism):
            if validate_only:
                return StepResult.skipped(step, "not validated: AlterUserScramCredentials has no validate-only mode")
            return step_result(step, await batcher.alter_scram_credential(ScramDeletion(user, mechanism)))
        case AlterQuotas(alteration):
            return step_result(step, await batcher.alter_client_quota(alteration, validate_only=validate_only))
        case CreateTopic(topic):
            return step_result(step, await batcher.create_topic(topic, validate_only=validate_only))
        case CreatePartitions(request):
            return step_result(step, await batcher.create_partitions(request, validate_only=validate_only))
        case AlterConfigs(resource, ops):
            return step_result(step, await batcher.alter_configs(resource, ops, validate_only=validate_only))
        case DeleteAcls(bindings):
            if validate_only:
                return StepResult.skipped(step, "not validated: DeleteAcls has no validate-only mode")
            return _all_of(step, await asyncio.gather(*(batcher.delete_acls(exact_filter(b)) for b in bindings)))
        case CreateAcls(bindings):
            if validate_only:
                return StepResult.skipped(step, "not validated: CreateAcls has no validate-only mode")
            return _all_of(step, await asyncio.gather(*(batcher.create_acl(to_wire(b)) for b in bindings)))
        case DeleteTopic(name):
            if validate_only:
                return StepResult.skipped(step, "not validated: DeleteTopics has no validate-only mode")
            return step_result(step, await batcher.delete_topic(name))
        case ChangeReplicas():
            if validate_only:
                return StepResult.skipped(step, "not validated: partition reassignment has no validate-only mode")
            return StepResult.deferred(step)
    raise TypeError(step)


async def validate_quotas(batcher: Batcher, plan: Plan) -> Plan:
    """`plan` with a problem on each resource whose quota alteration the brokers refuse, asked by one
    validate-only AlterClientQuotas (nothing changes): what `kafkaops plan` shows before any apply."""
    items = [(i, step) for i, r in enumerate(plan.resources) if r.problem is None
             for step in r.steps if isinstance(step, AlterQuotas)]
    if not items:
        return plan
    try:
        answers: list[Any] = await batcher.alter_client_quotas_each((s.alteration for _, s in items), validate_only=True)
    except KafkaOpsError as exc:
        answers = [exc] * len(items)
    resources = list(plan.resources)
    for (i, step), answer in zip(items, answers):
        result = step_result(step, answer)
        if result.problem is not None and resources[i].problem is None:
            resources[i] = replace(resources[i], problem=result.problem)
    return replace(plan, resources=tuple(resources))


def _interrupted(step: Step) -> Problem:
    return Problem(INTERRUPTED, f"not applied: interrupted before {describe_step(step)}", True)


async def apply_resource(batcher: Batcher, plan: ResourcePlan, validate_only: bool = False,
                         stop: asyncio.Event | None = None, salted: Salted | None = None) -> Applied:
    """Run `plan`'s steps in order; once `stop` is set no further step is sent (those in flight answer)."""
    if plan.problem is not None:
        return Applied(plan, problem=plan.problem)
    results: list[StepResult] = []
    for step in plan.steps:
        if stop is not None and stop.is_set():
            return Applied(plan, tuple(results), _interrupted(step))
        try:
            result = await run_step(batcher, step, validate_only, salted)
        except KafkaOpsError as exc:
            result = step_result(step, exc)
        results.append(result)
        if result.state is StepState.FAILED:
            return Applied(plan, tuple(results), result.problem)
    return Applied(plan, tuple(results))


async def apply_plans(
    batcher: Batcher, plans: tuple[ResourcePlan, ...], *, validate_only: bool = False, progress: Progress | None = None,
    stop: asyncio.Event | None = None,
) -> list[Applied]:
    """Apply every resource's plan concurrently; results in the plans' order.

    Resources whose plan is one CreateTopic, one AlterConfigs or one credential upsertion (a first
    apply creating thousands of topics or users, a config change across them) are submitted to the Batcher at once
    (no coroutine each); they share its windows with the others and end as `apply_resource`
    would end them."""

    salted = {} if validate_only else await salt_all(plans)

    async def one(plan: ResourcePlan) -> Applied:
        try:
            return await apply_resource(batcher, plan, validate_only, stop, salted)
        finally:
            if progress is not None:
                progress(plan)

    creates = [p for p in plans if p.problem is None and len(p.steps) == 1 and isinstance(p.steps[0], CreateTopic)]
    alters = [p for p in plans if p.problem is None and len(p.steps) == 1 and isinstance(p.steps[0], AlterConfigs)]
    scrams = [p for p in plans if p.problem is None and len(p.steps) == 1
              and isinstance(salted.get(id(p.steps[0])), ScramUpsertion)]
    bulk = {id(p) for p in (*creates, *alters, *scrams)}
    others, created, altered, credentials = await asyncio.gather(  # one gather: cancelling it cancels every part
        asyncio.gather(*(one(p) for p in plans if id(p) not in bulk)),
        _apply_single_steps(creates, lambda steps, tick: batcher.create_topics_each(
            (s.topic for s in steps), validate_only=validate_only, on_answer=tick), progress, stop),
        _apply_single_steps(alters, lambda steps, tick: batcher.alter_configs_each(
            ((s.resource, s.ops) for s in steps), validate_only=validate_only, on_answer=tick), progress, stop),
        _apply_single_steps(scrams, lambda steps, tick: batcher.alter_scram_credentials_each(
            (salted[id(s)] for s in steps), on_answer=tick), progress, stop),
    )
    rest = iter(others)
    done = {id(a.plan): a for a in (*created, *altered, *credentials)}
    return [done[id(p)] if id(p) in bulk else next(rest) for p in plans]


async def _apply_single_steps(
    plans: list[ResourcePlan],
    submit: Callable[[list[Any], Callable[[int], None] | None], Awaitable[list[ItemResult[Any] | Exception]]],
    progress: Progress | None, stop: asyncio.Event | None,
) -> list[Applied]:
    """`apply_resource` of plans of one step each, their steps submitted at once by `submit`
    (which calls its second argument with each step's index as it is answered)."""
    if not plans:
        return []
    steps = [p.steps[0] for p in plans]
    if stop is not None and stop.is_set():
        out = [Applied(p, (), _interrupted(s)) for p, s in zip(plans, steps)]
        if progress is not None:
            for plan in plans:
                progress(plan)
    else:
        tick = (lambda i: progress(plans[i])) if progress is not None else None
        out = []
        for plan, step, answer in zip(plans, steps, await submit(steps, tick)):
            result = step_result(step, answer)
            out.append(Applied(plan, (result,), result.problem))
    return out
