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
from dataclasses import dataclass
from typing import Any

from kafkaops.kafka import Batcher, ItemResult, KafkaError
from kafkaops.kafka.errors import KafkaOpsError
from kafkaops.reconcile.acls import exact_filter, to_wire
from kafkaops.reconcile.actions import (
    AlterConfigs,
    ChangeReplicas,
    CreateAcls,
    CreatePartitions,
    CreateTopic,
    DeleteAcls,
    DeleteTopic,
    Problem,
    ResourcePlan,
    Step,
    problem_from_exception,
)

DEFERRED = "deferred"  # run_step's answer for a step the engine runs after the others (ChangeReplicas)
INTERRUPTED = "Interrupted"  # the run was stopped (Ctrl-C, SIGTERM) before this step was sent
Progress = Callable[[ResourcePlan], None]


@dataclass(frozen=True, slots=True)
class Applied:
    """What applying one resource's plan did: the steps that succeeded, and the problem that stopped it."""

    plan: ResourcePlan
    done: tuple[Step, ...] = ()
    problem: Problem | None = None
    notes: tuple[str, ...] = ()
    deferred: tuple[ChangeReplicas, ...] = ()  # replica changes: one reassignment run per cluster, after the rest


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
    raise TypeError(step)


def _problem(step: Step, error: KafkaError) -> Problem:
    detail = f": {error.message}" if error.message else ""
    return Problem(error.name, f"{describe_step(step)} failed with {error.name}{detail}", error.retriable)


def _first_error(results: list[ItemResult]) -> KafkaError | None:
    return next((r.error for r in results if r.error is not None), None)


async def run_step(batcher: Batcher, step: Step, validate_only: bool) -> KafkaError | Problem | str | None:
    """None on success; a KafkaError or Problem on failure; a str when the step was skipped (why), or
    DEFERRED for a replica change, which the engine runs as one reassignment for the whole cluster."""
    match step:
        case CreateTopic(topic):
            return (await batcher.create_topic(topic, validate_only=validate_only)).error
        case CreatePartitions(request):
            return (await batcher.create_partitions(request, validate_only=validate_only)).error
        case AlterConfigs(resource, ops):
            return (await batcher.alter_configs(resource, ops, validate_only=validate_only)).error
        case DeleteAcls(bindings):
            if validate_only:
                return "not validated: DeleteAcls has no validate-only mode"
            return _first_error(await asyncio.gather(*(batcher.delete_acls(exact_filter(b)) for b in bindings)))
        case CreateAcls(bindings):
            if validate_only:
                return "not validated: CreateAcls has no validate-only mode"
            return _first_error(await asyncio.gather(*(batcher.create_acl(to_wire(b)) for b in bindings)))
        case DeleteTopic(name):
            if validate_only:
                return "not validated: DeleteTopics has no validate-only mode"
            return (await batcher.delete_topic(name)).error
        case ChangeReplicas():
            if validate_only:
                return "not validated: partition reassignment has no validate-only mode"
            return DEFERRED
    raise TypeError(step)


async def apply_resource(batcher: Batcher, plan: ResourcePlan, validate_only: bool = False,
                         stop: asyncio.Event | None = None) -> Applied:
    """Run `plan`'s steps in order; once `stop` is set no further step is sent (those in flight answer)."""
    if plan.problem is not None:
        return Applied(plan, problem=plan.problem)
    done: list[Step] = []
    notes: list[str] = []
    deferred: list[ChangeReplicas] = []
    for step in plan.steps:
        if stop is not None and stop.is_set():
            return Applied(plan, tuple(done), Problem(INTERRUPTED, f"not applied: interrupted before "
                                                                   f"{describe_step(step)}", True), tuple(notes))
        try:
            outcome = await run_step(batcher, step, validate_only)
        except KafkaOpsError as exc:
            return Applied(plan, tuple(done), problem_from_exception(exc, describe_step(step)), tuple(notes))
        if isinstance(outcome, KafkaError):
            return Applied(plan, tuple(done), _problem(step, outcome), tuple(notes))
        if isinstance(outcome, Problem):
            return Applied(plan, tuple(done), outcome, tuple(notes))
        if outcome == DEFERRED and isinstance(step, ChangeReplicas):
            deferred.append(step)
            continue
        if isinstance(outcome, str):
            notes.append(f"{describe_step(step)}: {outcome}")
            continue
        done.append(step)
    return Applied(plan, tuple(done), None, tuple(notes), tuple(deferred))


async def apply_plans(
    batcher: Batcher, plans: tuple[ResourcePlan, ...], *, validate_only: bool = False, progress: Progress | None = None,
    stop: asyncio.Event | None = None,
) -> list[Applied]:
    """Apply every resource's plan concurrently; results in the plans' order.

    Resources whose plan is one CreateTopic or one AlterConfigs (a first apply creating
    thousands of topics, a config change across them) are submitted to the Batcher at once
    (no coroutine each); they share its windows with the others and end as `apply_resource`
    would end them."""

    async def one(plan: ResourcePlan) -> Applied:
        try:
            return await apply_resource(batcher, plan, validate_only, stop)
        finally:
            if progress is not None:
                progress(plan)

    creates = [p for p in plans if p.problem is None and len(p.steps) == 1 and isinstance(p.steps[0], CreateTopic)]
    alters = [p for p in plans if p.problem is None and len(p.steps) == 1 and isinstance(p.steps[0], AlterConfigs)]
    bulk = {id(p) for p in (*creates, *alters)}
    others, created, altered = await asyncio.gather(  # one gather: cancelling it cancels every part
        asyncio.gather(*(one(p) for p in plans if id(p) not in bulk)),
        _apply_single_steps(creates, lambda steps, tick: batcher.create_topics_each(
            (s.topic for s in steps), validate_only=validate_only, on_answer=tick), progress, stop),
        _apply_single_steps(alters, lambda steps, tick: batcher.alter_configs_each(
            ((s.resource, s.ops) for s in steps), validate_only=validate_only, on_answer=tick), progress, stop),
    )
    rest = iter(others)
    done = {id(a.plan): a for a in (*created, *altered)}
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
        out = [Applied(p, (), Problem(INTERRUPTED, f"not applied: interrupted before {describe_step(s)}", True))
               for p, s in zip(plans, steps)]
        if progress is not None:
            for plan in plans:
                progress(plan)
    else:
        tick = (lambda i: progress(plans[i])) if progress is not None else None
        out = []
        for plan, step, result in zip(plans, steps, await submit(steps, tick)):
            if isinstance(result, KafkaOpsError):
                out.append(Applied(plan, (), problem_from_exception(result, describe_step(step))))
            elif isinstance(result, Exception):
                raise result
            elif result.error is not None:
                out.append(Applied(plan, (), _problem(step, result.error)))
            else:
                out.append(Applied(plan, (step,)))
    return out
