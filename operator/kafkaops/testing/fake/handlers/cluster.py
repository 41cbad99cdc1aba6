"""Metadata and DescribeCluster for the fake cluster test double.

Metadata lists live brokers only (as Kafka), reports the controller by the
mode's rule (zk: the controller; kraft: a random live broker), and builds
each topic's entry once per version until the topic changes, so polling
10,000 topics stays cheap.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any

from kio.schema.errors import ErrorCode

from kafkaops.kafka.wire import build, response_class

from ..context import CloseConnection, ItemError, RequestContext
from ..state import NO_LEADER, ClusterStateDouble, TopicDouble
from .common import ZERO_UUID, has_id, respond, topic_name_error

NO_AUTHORIZED_OPERATIONS = -(2**31)
BROKER_ENDPOINTS = 1


@functools.cache
def nested_class(cls: type, field_name: str) -> type:
    """The entity class of a tuple-of-entities field of ``cls``."""
    for f in dataclasses.fields(cls):
        if f.name == field_name:
            tp = f.type
            if typing.get_origin(tp) in (typing.Union, types.UnionType):
                tp = next(a for a in typing.get_args(tp) if a is not type(None))
            return typing.get_args(tp)[0]  # type: ignore[no-any-return]
    raise KeyError(field_name)


def _partition_fields(state: ClusterStateDouble, partition: Any) -> dict[str, Any]:
    leaderless = partition.leader == NO_LEADER
    return {
        "error_code": ErrorCode.leader_not_available if leaderless else ErrorCode.none,
        "partition_index": partition.index,
        "leader_id": partition.leader,
        "leader_epoch": partition.leader_epoch,
        "replica_nodes": list(partition.replicas),
        "isr_nodes": list(partition.isr),
        "offline_replicas": [b for b in partition.replicas if not state.is_alive(b)],
    }


def _topic_entity(state: ClusterStateDouble, topic: TopicDouble, version: int) -> Any:
    cached = topic.cache.get(("metadata", version))
    if cached is None:
        cls = nested_class(response_class(3, version), "topics")
        cached = build(
            cls,
            {
                "error_code": ErrorCode.none,
                "name": topic.name,
                "topic_id": topic.topic_id,
                "is_internal": False,
                "partitions": [_partition_fields(state, p) for p in topic.partitions],
                "topic_authorized_operations": NO_AUTHORIZED_OPERATIONS,
            },
        )
        topic.cache[("metadata", version)] = cached
    return cached


def _topic_error(name: str | None, topic_id: Any, error: ItemError) -> dict[str, Any]:
    return {
        "error_code": error.code,
        "name": name,
        "topic_id": topic_id or ZERO_UUID,
        "is_internal": False,
        "partitions": [],
        "topic_authorized_operations": NO_AUTHORIZED_OPERATIONS,
    }


def _requested_topic(ctx: RequestContext, item: Any) -> Any:
    state = ctx.state
    name, topic_id = item.name, getattr(item, "topic_id", None)
    if name is None and has_id(topic_id):
        topic = state.topic_by_id(topic_id)
        if topic is None:
            return _topic_error(None, topic_id, ItemError(ErrorCode.unknown_topic_id))
        return _topic_entity(state, topic, ctx.version)
    error = topic_name_error(name)
    if error is not None:
        return _topic_error(name, None, error)
    topic = state.topics.get(name)
    if topic is None:
        return _topic_error(name, None, ItemError(ErrorCode.unknown_topic_or_partition))
    return _topic_entity(state, topic, ctx.version)


def _brokers(state: ClusterStateDouble, id_field: str, sasl_listener: bool = False) -> list[dict[str, Any]]:
    """Live brokers, with the ports of the listener the request came in on."""
    return [
        {id_field: b.node_id, "host": b.host, "port": b.sasl_port if sasl_listener else b.port, "rack": b.rack}
        for b in state.brokers.values()
        if b.alive
    ]


def handle_metadata(ctx: RequestContext, body: Any) -> Any:
    if ctx.forced is not None:
        raise CloseConnection(ctx.forced.message)
    state = ctx.state
    if body.topics is None:
        topics = [_topic_entity(state, t, ctx.version) for t in state.topics.values()]
    else:
        topics = [_requested_topic(ctx, item) for item in body.topics]
    return respond(
        ctx,
        {
            "throttle_time": ctx.throttle_time,
            "brokers": _brokers(state, "node_id", ctx.sasl_listener),
            "cluster_id": state.cluster_id,
            "controller_id": state.reported_controller(),
            "topics": topics,
        },
    )


def handle_describe_cluster(ctx: RequestContext, body: Any) -> Any:
    state = ctx.state
    error = ctx.forced
    if error is None and getattr(body, "endpoint_type", BROKER_ENDPOINTS) != BROKER_ENDPOINTS:
        error = ItemError(
            ErrorCode.mismatched_endpoint_type,
            "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of another type",
        )
    return respond(
        ctx,
        {
            "throttle_time": ctx.throttle_time,
            **(error or ItemError(ErrorCode.none)).fields(),
            "endpoint_type": BROKER_ENDPOINTS,
            "cluster_id": state.cluster_id,
            "controller_id": state.reported_controller(),
            "brokers": _brokers(state, "broker_id", ctx.sasl_listener) if error is None else [],
            "cluster_authorized_operations": NO_AUTHORIZED_OPERATIONS,
        },
    )
