"""CreateTopics, DeleteTopics and CreatePartitions for the fake cluster test double.

Each write validates every item first (Kafka's checks and messages), then
counts the metadata records the valid items would write; over the record
limit every item fails with POLICY_VIOLATION and nothing is applied (KRaft's
rule), otherwise the items are applied unless ``validate_only``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from kafkaops.frozen import frozen

from ..catalog import validate_topic_config
from ..context import ItemError, RequestContext
from ..state import ClusterStateDouble
from .common import (
    assignment_error,
    has_id,
    invalid_request,
    replication_error,
    respond,
    topic_name_error,
    unknown_topic,
)
from .configs import entry_fields

Result = dict[str, Any]


@frozen
class TopicPlan:
    """A CreateTopics item that passed validation."""

    name: str
    partitions: int
    replication_factor: int
    assignments: tuple[tuple[int, ...], ...] | None
    configs: dict[str, str]

    @property
    def records(self) -> int:
        return 1 + self.partitions + len(self.configs)


def _config_error(configs: Sequence[Any]) -> ItemError | None:
    for config in configs:
        message = validate_topic_config(config.name, config.value)
        if message is not None:
            return ItemError(ErrorCode.invalid_config, message)
    return None


def _explicit_plan(state: ClusterStateDouble, topic: Any, configs: dict[str, str]) -> TopicPlan | ItemError:
    if topic.num_partitions != -1 or topic.replication_factor != -1:
        return invalid_request(
            "Both numPartitions or replicationFactor and replicasAssignments were set. "
            "Both cannot be used at the same time."
        )
    by_index = {a.partition_index: tuple(a.broker_ids) for a in topic.assignments}
    if len(by_index) != len(topic.assignments) or sorted(by_index) != list(range(len(by_index))):
        return ItemError(
            ErrorCode.invalid_replica_assignment, "Partitions should be a consecutive 0-based integer sequence"
        )
    assignments = tuple(by_index[i] for i in range(len(by_index)))
    error = assignment_error(state, assignments, 0, None)
    if error is not None:
        return error
    return TopicPlan(topic.name, len(assignments), len(assignments[0]), assignments, configs)


def _default_plan(state: ClusterStateDouble, topic: Any, configs: dict[str, str]) -> TopicPlan | ItemError:
    settings = state.settings
    partitions = settings.default_partitions if topic.num_partitions == -1 else topic.num_partitions
    if partitions <= 0:
        return ItemError(ErrorCode.invalid_partitions, "Number of partitions was set to an invalid non-positive value.")
    rf = settings.default_replication_factor if topic.replication_factor == -1 else topic.replication_factor
    if rf <= 0:
        return ItemError(
            ErrorCode.invalid_replication_factor,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        )
    error = replication_error(rf, len(state.live_brokers()))
    return error if error is not None else TopicPlan(topic.name, partitions, rf, None, configs)


def plan_topic(state: ClusterStateDouble, topic: Any) -> TopicPlan | ItemError:
    """Validate one CreatableTopic as Kafka does."""
    error = topic_name_error(topic.name)
    if error is not None:
        return error
    if topic.name in state.topics:
        state.already_exists[topic.name] += 1
        return ItemError(ErrorCode.topic_already_exists, f"Topic '{topic.name}' already exists.")
    other = state.colliding_topic(topic.name)
    if other is not None:
        return ItemError(ErrorCode.invalid_topic_exception, f"Topic '{topic.name}' collides with existing topic: {other}")
    error = _config_error(topic.configs)
    if error is not None:
        return error
    configs = {c.name: c.value for c in topic.configs}
    if topic.assignments:
        return _explicit_plan(state, topic, configs)
    return _default_plan(state, topic, configs)


def _topic_error(name: str, error: ItemError) -> Result:
    return {"name": name, "topic_id": None, **error.fields(), "num_partitions": -1, "replication_factor": -1,
            "configs": None}


def _topic_created(ctx: RequestContext, plan: TopicPlan, topic_id: Any) -> Result:
    result: Result = {
        "name": plan.name,
        "topic_id": topic_id,
        **ctx.success().fields(),
        "num_partitions": plan.partitions,
        "replication_factor": plan.replication_factor,
        "topic_config_error_code": 0,
    }
    if ctx.version < 5:
        return result
    if not ctx.state.settings.configs_in_create_response:
        # What Kafka answers a principal without DESCRIBE_CONFIGS on the topic.
        result["topic_config_error_code"] = int(ErrorCode.topic_authorization_failed)
        result["configs"] = None
        return result
    entries = ctx.state.topic_config_entries(plan.configs, ctx.broker_id)
    result["configs"] = [entry_fields(e, synonyms=False, docs=False) for e in entries]
    return result


def _plan_batch(ctx: RequestContext, items: Sequence[Any], duplicate: str,
                plan: Any) -> tuple[list[tuple[Any, Any]], ItemError | None]:
    """CreateTopics and CreatePartitions alike: for each distinct name, in order, the item and its
    plan, or why it is refused (an injected fault, a name given twice, the plan's own error); and
    the error of the whole request when its plans exceed KRaft's record limit."""
    counts = Counter(item.name for item in items)
    planned: list[tuple[Any, Any]] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        if item.name in seen:
            continue
        seen.add(item.name)
        outcome = ctx.gate(index)
        if outcome is None and counts[item.name] > 1:
            outcome = invalid_request(duplicate)
        if outcome is None:
            outcome = plan(item)
        planned.append((item, outcome))
    limit = ctx.record_limit_error(sum(o.records for _, o in planned if not isinstance(o, ItemError)))
    return planned, limit


def handle_create_topics(ctx: RequestContext, body: Any) -> Any:
    state = ctx.state
    planned, limit = _plan_batch(ctx, body.topics, "Duplicate topic name.", lambda topic: plan_topic(state, topic))
    results: list[Result] = []
    for topic, outcome in planned:
        if isinstance(outcome, ItemError) or limit is not None:  # its own error first, else the request's
            results.append(_topic_error(topic.name, outcome if isinstance(outcome, ItemError) else limit))
            continue
        topic_id = None
        if not body.validate_only:
            assignments = outcome.assignments or state.place(outcome.partitions, outcome.replication_factor)
            topic_id = state.add_topic(outcome.name, [list(a) for a in assignments], outcome.configs).topic_id
        results.append(_topic_created(ctx, outcome, topic_id))
    return respond(ctx, {"throttle_time": ctx.throttle_time, "topics": results})


# ------------------------------------------------------------------ DeleteTopics
def _delete_items(ctx: RequestContext, body: Any) -> list[tuple[str | None, Any]]:
    if ctx.version >= 6:
        return [(t.name, t.topic_id if has_id(t.topic_id) else None) for t in body.topics]
    return [(name, None) for name in body.topic_names]


def _resolve_delete(state: ClusterStateDouble, name: str | None, topic_id: Any) -> str | ItemError:
    if name is None:
        topic = state.topic_by_id(topic_id) if topic_id is not None else None
        if topic is None:
            return ItemError(ErrorCode.unknown_topic_id, "This server does not host this topic ID.")
        return topic.name
    if name not in state.topics:
        return ItemError(ErrorCode.unknown_topic_or_partition, "This server does not host this topic-partition.")
    return name


def handle_delete_topics(ctx: RequestContext, body: Any) -> Any:
    state = ctx.state
    items = _delete_items(ctx, body)
    resolved = [_resolve_delete(state, name, topic_id) for name, topic_id in items]
    counts = Counter(r for r in resolved if isinstance(r, str))
    results: list[Result] = []
    plans: list[tuple[int, str]] = []
    seen: set[str] = set()
    for index, ((name, topic_id), target) in enumerate(zip(items, resolved, strict=True)):
        if isinstance(target, str):
            if target in seen:
                continue
            seen.add(target)
            topic_id = state.topics[target].topic_id
        error = ctx.gate(index)
        if error is None and isinstance(target, ItemError):
            error = target
        if error is None and counts[target] > 1:
            error = invalid_request("Duplicate topic name.")
        if error is None and isinstance(target, str):
            plans.append((len(results), target))
        results.append({"name": name if name is not None else target if isinstance(target, str) else None,
                        "topic_id": topic_id, **(error or ItemError(ErrorCode.none)).fields()})
    limit = ctx.record_limit_error(len(plans))
    for slot, name in plans:
        if limit is not None:
            results[slot].update(limit.fields())
        else:
            state.remove_topic(name)
            results[slot].update(ctx.success().fields())
    return respond(ctx, {"throttle_time": ctx.throttle_time, "responses": results})


# -------------------------------------------------------------- CreatePartitions
@frozen
class PartitionsPlan:
    name: str
    current: int
    count: int
    replication_factor: int
    assignments: tuple[tuple[int, ...], ...] | None

    @property
    def records(self) -> int:
        return self.count - self.current


def plan_partitions(state: ClusterStateDouble, item: Any) -> PartitionsPlan | ItemError:
    """Validate one CreatePartitions topic as Kafka does."""
    topic = state.topics.get(item.name)
    if topic is None:
        return unknown_topic(item.name)
    current = len(topic.partitions)
    if item.count == current:
        return ItemError(ErrorCode.invalid_partitions, f"Topic already has {current} partition(s).")
    if item.count < current:
        return ItemError(
            ErrorCode.invalid_partitions,
            f"The topic {item.name} currently has {current} partition(s); {item.count} would not be an increase.",
        )
    rf = topic.replication_factor
    if item.assignments is None:
        error = replication_error(rf, len(state.live_brokers()))
        return error if error is not None else PartitionsPlan(item.name, current, item.count, rf, None)
    assignments = tuple(tuple(a.broker_ids) for a in item.assignments)
    if len(assignments) != item.count - current:
        return ItemError(
            ErrorCode.invalid_replica_assignment,
            f"Attempted to add {item.count - current} additional partition(s), but only "
            f"{len(assignments)} assignment(s) were specified.",
        )
    error = assignment_error(state, assignments, current, rf)
    return error if error is not None else PartitionsPlan(item.name, current, item.count, rf, assignments)


def handle_create_partitions(ctx: RequestContext, body: Any) -> Any:
    state = ctx.state
    planned, limit = _plan_batch(ctx, body.topics, "Duplicate topic in request.",
                                 lambda item: plan_partitions(state, item))
    results: list[Result] = []
    for item, outcome in planned:
        if isinstance(outcome, ItemError) or limit is not None:  # its own error first, else the request's
            error = outcome if isinstance(outcome, ItemError) else limit
            results.append({"name": item.name, **error.fields()})
            continue
        if not body.validate_only:
            added = outcome.count - outcome.current
            assignments = outcome.assignments or state.place(added, outcome.replication_factor, outcome.current)
            state.add_partitions(outcome.name, [list(a) for a in assignments])
        results.append({"name": item.name, **ctx.success().fields()})
    return respond(ctx, {"throttle_time": ctx.throttle_time, "results": results})
