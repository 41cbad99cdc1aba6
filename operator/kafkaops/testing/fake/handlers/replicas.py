"""Reassignments, leader elections and log dirs for the fake cluster test double.

AlterPartitionReassignments / ListPartitionReassignments report errors for
the whole request at the top level (as Kafka does for NOT_CONTROLLER);
reassignments progress with the double's virtual clock.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from ..context import ItemError, RequestContext
from ..state import LOG_DIR, ClusterStateDouble, PartitionDouble, TopicDouble
from .common import replicas_error, respond

TOTAL_BYTES = 1 << 40  # each broker's log dir: 1 TiB
PREFERRED, UNCLEAN = 0, 1


def _unknown_partition() -> ItemError:
    return ItemError(ErrorCode.unknown_topic_or_partition, "This server does not host this topic-partition.")


def _find(state: ClusterStateDouble, name: str, index: int) -> tuple[TopicDouble, PartitionDouble] | None:
    topic = state.topics.get(name)
    if topic is None or not 0 <= index < len(topic.partitions):
        return None
    return topic, topic.partitions[index]


# -------------------------------------------------- AlterPartitionReassignments
def _reassign_one(ctx: RequestContext, name: str, item: Any, index: int) -> ItemError:
    error = ctx.gate(index)
    if error is not None:
        return error
    found = _find(ctx.state, name, item.partition_index)
    if found is None:
        return _unknown_partition()
    topic, partition = found
    if item.replicas is None:
        if ctx.state.cancel_reassignment(topic, partition):
            return ctx.success()
        return ItemError(ErrorCode.no_reassignment_in_progress, f"No ongoing reassignment for partition {name}-"
                         f"{item.partition_index}.")
    error = replicas_error(ctx.state, item.partition_index, item.replicas)
    if error is not None:
        return error
    ctx.state.reassign(topic, partition, list(item.replicas))
    return ctx.success()


def handle_alter_partition_reassignments(ctx: RequestContext, body: Any) -> Any:
    top = ctx.request_error()
    limit = ctx.record_limit_error(sum(len(t.partitions) for t in body.topics))
    responses: list[dict[str, Any]] = []
    if top is None:
        index = 0
        for topic in body.topics:
            partitions = []
            for item in topic.partitions:
                error = limit or _reassign_one(ctx, topic.name, item, index)
                index += 1
                partitions.append({"partition_index": item.partition_index, **error.fields()})
            responses.append({"name": topic.name, "partitions": partitions})
    return respond(
        ctx, {"throttle_time": ctx.throttle_time, **(top or ItemError(ErrorCode.none)).fields(), "responses": responses}
    )


# --------------------------------------------------- ListPartitionReassignments
def handle_list_partition_reassignments(ctx: RequestContext, body: Any) -> Any:
    state = ctx.state
    top = ctx.request_error()
    wanted: dict[str, set[int]] | None = None
    if body.topics is not None:
        wanted = {t.name: set(t.partition_indexes) for t in body.topics}
    grouped: dict[str, list[dict[str, Any]]] = {}
    if top is None:
        for (name, index), r in state.reassignments.items():
            if wanted is not None and index not in wanted.get(name, ()):
                continue
            grouped.setdefault(name, []).append(
                {
                    "partition_index": index,
                    "replicas": r.merged,
                    "adding_replicas": list(r.adding),
                    "removing_replicas": list(r.removing),
                }
            )
    topics = [{"name": name, "partitions": sorted(p, key=lambda x: x["partition_index"])} for name, p in grouped.items()]
    return respond(
        ctx, {"throttle_time": ctx.throttle_time, **(top or ItemError(ErrorCode.none)).fields(), "topics": topics}
    )


# ----------------------------------------------------------------- ElectLeaders
def _elect_all(ctx: RequestContext, unclean: bool) -> dict[str, list[dict[str, Any]]]:
    """topic_partitions = None: every partition. As KRaft's controller, every topic is listed but
    partitions that already have the desired leader (ELECTION_NOT_NEEDED) are left out."""
    results: dict[str, list[dict[str, Any]]] = {}
    for topic in list(ctx.state.topics.values()):
        listed = results.setdefault(topic.name, [])
        for partition in topic.partitions:
            code, message = ctx.state.elect(topic, partition, unclean)
            if code != ErrorCode.election_not_needed:
                error = ctx.success() if code == ErrorCode.none else ItemError(code, message)
                listed.append({"partition_id": partition.index, **error.fields()})
    return results


def _elect_listed(ctx: RequestContext, body: Any, unclean: bool) -> dict[str, list[dict[str, Any]]]:
    results: dict[str, list[dict[str, Any]]] = {}
    index = 0
    for item in body.topic_partitions:
        for partition_id in item.partitions:
            error = ctx.gate(index)
            index += 1
            found = _find(ctx.state, item.topic, partition_id)
            if error is None and found is None:
                error = _unknown_partition()
            if error is None and found is not None:
                code, message = ctx.state.elect(found[0], found[1], unclean)
                error = ctx.success() if code == ErrorCode.none else ItemError(code, message)
            assert error is not None
            results.setdefault(item.topic, []).append({"partition_id": partition_id, **error.fields()})
    return results


def handle_elect_leaders(ctx: RequestContext, body: Any) -> Any:
    unclean = getattr(body, "election_type", PREFERRED) == UNCLEAN
    top = ctx.request_error()
    if top is not None:
        listed = body.topic_partitions or ()
        grouped = {t.topic: [{"partition_id": p, **top.fields()} for p in t.partitions] for t in listed}
    elif body.topic_partitions is None:
        grouped = _elect_all(ctx, unclean)
    else:
        grouped = _elect_listed(ctx, body, unclean)
    results = [{"topic": name, "partition_result": parts} for name, parts in grouped.items()]
    return respond(
        ctx,
        {
            "throttle_time": ctx.throttle_time,
            "error_code": top.code if top is not None else ErrorCode.none,
            "replica_election_results": results,
        },
    )


# ------------------------------------------------------------- DescribeLogDirs
def _log_dir_topics(ctx: RequestContext, body: Any) -> tuple[list[dict[str, Any]], int]:
    state = ctx.state
    wanted = None if body.topics is None else {t.topic: set(t.partitions) for t in body.topics}
    names = state.topics if wanted is None else [n for n in wanted if n in state.topics]
    topics: list[dict[str, Any]] = []
    used = 0
    for name in names:
        partitions = []
        for partition in state.topics[name].partitions:
            if ctx.broker_id not in partition.replicas:
                continue
            if wanted is not None and partition.index not in wanted[name]:
                continue
            size, copying = state.replica_progress(name, partition, ctx.broker_id)
            used += size
            partitions.append(
                {
                    "partition_index": partition.index,
                    "partition_size": size,
                    "offset_lag": partition.size_bytes - size if copying else 0,
                    "is_future_key": copying,
                }
            )
        if partitions:
            topics.append({"name": name, "partitions": partitions})
    return topics, used


def handle_describe_log_dirs(ctx: RequestContext, body: Any) -> Any:
    if ctx.forced is not None:
        return respond(ctx, {"throttle_time": ctx.throttle_time, "error_code": ctx.forced.code, "results": []})
    topics, used = _log_dir_topics(ctx, body)
    result = {
        "error_code": ErrorCode.none,
        "log_dir": LOG_DIR,
        "topics": topics,
        "total_bytes": TOTAL_BYTES,
        "usable_bytes": max(0, TOTAL_BYTES - used),
    }
    return respond(ctx, {"throttle_time": ctx.throttle_time, "error_code": ErrorCode.none, "results": [result]})
